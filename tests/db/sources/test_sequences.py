"""The sequence-name table against vendor naming: Siemens, GE, Philips and Canon/Toshiba
SeriesDescriptions, BIDS file names, and every SeriesDescription (and ProtocolName, and Philips
PAR protocol name) of the public DICOM test data shipped in the pydicom and nibabel wheels,
read out of those files. SELF: imported under its own description (made printable, cut to
fit), for the admin to confirm; None: left out (localizers, calibrations, field maps)."""

from pathlib import Path

import nibabel
import pydicom
from nibabel import parrec

from db.sources.sequences import MAX_NAME, label_bids, name_bids, name_series, own_name

SELF = "itself"

VENDOR = [
    # the five, mislabelled by the old patterns (\b took "_" for a letter)
    ("ep2d_diff_3scan_trace_ADC", "ADC"), ("DWI_ADC", "ADC"), ("t2_swi_tra_p2", "SWI"),
    ("t2_tse_dark-fluid_tra", "FLAIR"), ("3D_T1_TFE_gd", "T1C"),
    # Siemens
    ("t1_mprage_sag_p2_iso", "T1"), ("t1_se_tra_KM", "T1C"), ("t1_mprage_tra_p2_iso_Gd", "T1C"),
    ("t2_tse_tra", "T2"), ("t2_blade_tra", "T2"), ("t2_space_dark-fluid_sag_p2_iso", "FLAIR"),
    ("t2_tirm_tra_dark-fluid", "FLAIR"), ("t2_tirm_cor", "STIR"), ("t2_fl2d_tra_hemo", "T2*"),
    ("SWI_Images", "SWI"), ("Mag_Images", SELF), ("pd_tse_tra", "PD"), ("t1_fl2d_tra", "T1"),
    ("ep2d_diff_3scan_trace_p2", "DWI"), ("ep2d_diff_3scan_trace_p2_TRACEW", "DWI"),
    ("ep2d_diff_mddw_20_p2", "DTI"), ("ep2d_diff_mddw_20_p2_FA", "FA"),
    ("ep2d_diff_mddw_20_p2_ColFA", "FA"), ("ep2d_perf", "DSC"), ("relCBV", "CBV"),
    ("relCBF", "CBF"), ("tgse_pcasl_PLD1800", "ASL"), ("Perfusion_Weighted", "Perfusion"),
    ("tof_fl3d_tra_p2_multi-slab", "MRA"), ("AAHead_Scout_32ch-head-coil", None),
    ("localizer", None), ("gre_field_mapping", None), ("ep2d_bold_moco", SELF),
    # GE (T1 FLAIR is a T1-weighted inversion recovery, not a FLAIR)
    ("Ax T2 FRFSE", "T2"), ("Ax T2 PROPELLER", "T2"), ("Sag CUBE FLAIR", "FLAIR"),
    ("AX T1 FLAIR", "T1"), ("Ax T1 FLAIR POST", "T1C"), ("Ax T1 SE +C", "T1C"),
    ("PU:Ax T1 post", "T1C"), ("Sag 3D T1 BRAVO", "T1"), ("SAG FSPGR BRAVO +C", "T1C"),
    ("Ax DWI Asset", "DWI"), ("Apparent Diffusion Coefficient (mm2/s)", "ADC"),
    ("Exponential Apparent Diffusion Coefficient", "eADC"), ("Ax DTI", "DTI"),
    ("Ax SWAN", "SWI"), ("Ax T2* GRE", "T2*"), ("3D ASL (non-contrast)", "ASL"),
    ("Cerebral Blood Flow", "CBF"), ("3D TOF", "MRA"), ("ASSET calibration", None),
    ("3-Plane Loc", None), ("3-pl T2* FGRE S", None),
    # Philips
    ("T1W_3D_TFE", "T1"), ("sT1W_3D_TFE", "T1"), ("sWIP T1W_3D_TFE_+C", "T1C"),
    ("T2W_TSE", "T2"), ("T2W_FFE", "T2*"), ("T2W_FLAIR", "FLAIR"), ("FLAIR_longTR", "FLAIR"),
    ("DWI_SENSE", "DWI"), ("dADC", "ADC"), ("eADC", "eADC"), ("SWIp", "SWI"),
    ("VEN_BOLD", "SWI"), ("PD_TSE", "PD"), ("pCASL", "ASL"), ("DTI_high_iso", "DTI"),
    ("3D_TOF", "MRA"), ("Survey", None), ("SENSE_ref", None), ("Ref_Head_32", None),
    # Canon / Toshiba
    ("Locator", None), ("T1_SE_AX", "T1"), ("T1_SE_AX_Gd", "T1C"), ("T2_FSE_AX", "T2"),
    ("FLAIR_AX", "FLAIR"), ("T2*_AX", "T2*"), ("FE2D_T2*", "T2*"), ("DWI_b1000", "DWI"),
    ("ADC", "ADC"), ("3D_MPRAGE", "T1"), ("mASTAR", "ASL"), ("DTI_ALL_20d", "DTI"),
    ("FASE", SELF),
    # pre-contrast stays T1; quantitative maps are not the weighted image
    ("T1 pre-contrast", "T1"), ("T1 MPRAGE pre", "T1"), ("T1 MPRAGE POST", "T1C"),
    ("T2 map", "T2 map"), ("T1_mapping_MOLLI", "T1 map"), ("Perfusion map", "Perfusion"),
]

#: (package, file, attribute, the value read, label); pydicom's files under data/test_files,
#: nibabel's under nicom/tests/data (DICOM) and tests/data (Philips PAR: "protocol name").
REAL = [
    ("pydicom", "693_J2KI.dcm", "SeriesDescription", "5/5mm Plain", SELF),
    ("pydicom", "dicomdirtests/98892003/MR700/4467", "SeriesDescription",
     "ANGIO Projected from   C", "MRA"),
    ("pydicom", "dicomdirtests/77654033/CR1/6154", "SeriesDescription", "Cervical LAT", SELF),
    ("pydicom", "dicomdirtests/77654033/CR2/6247", "SeriesDescription", "Cervical OBLI 1", SELF),
    ("pydicom", "dicomdirtests/77654033/CR3/6278", "SeriesDescription", "Cervical OBLI 2", SELF),
    ("pydicom", "test-SR.dcm", "SeriesDescription", "Demonstration of SR Features", SELF),
    ("pydicom", "dicomdirtests/98892003/MR1/15820", "SeriesDescription", "FAST LOCALIZER", None),
    ("pydicom", "reportsi.dcm", "SeriesDescription", "IHE Year 2 - Simple Image Report", SELF),
    ("pydicom", "liver_1frame.dcm", "SeriesDescription", "Liver Segmentation", SELF),
    ("pydicom", "J2K_pixelrep_mismatch.dcm", "SeriesDescription", "Lv2", SELF),
    ("pydicom", "J2K_pixelrep_mismatch.dcm", "ProtocolName", "194", SELF),
    ("pydicom", "dicomdirtests/77654033/CT2/17106", "SeriesDescription", "Routine Brain", SELF),
    ("pydicom", "dicomdirtests/77654033/CT2/17106", "ProtocolName", "1.1 Routine Brain", SELF),
    ("pydicom", "dicomdirtests/98892001/CT2N/6293", "SeriesDescription", "Scout", None),
    ("pydicom", "dicomdirtests/98892001/CT5N/2062", "SeriesDescription",
     "SmartScore - Gated 0.5 sec", SELF),
    ("pydicom", "dicomdirtests/98892003/MR2/4950", "SeriesDescription", "T/S/C RF FAST PILOT",
     None),
    ("pydicom", "examples_overlay.dcm", "SeriesDescription", "marked lesion<MPR Collection>",
     SELF),
    ("pydicom", "examples_overlay.dcm", "ProtocolName", "t1_vibe_fs_tra_bh_dyn", "DCE"),
    ("pydicom", "JPEG-lossy.dcm", "ProtocolName", "Whole Body Bone", SELF),
    ("nibabel", "nicom/tests/data/slicethickness_empty_string.dcm", "SeriesDescription",
     "<MIP Range>", SELF),
    ("nibabel", "nicom/tests/data/slicethickness_empty_string.dcm", "ProtocolName",
     "TOF_3D_multi-slab", "MRA"),
    ("nibabel", "nicom/tests/data/0.dcm", "SeriesDescription", "CBU_DTI_64D_1A", "DTI"),
    ("nibabel", "nicom/tests/data/decimal_rescale.dcm", "SeriesDescription",
     "CV_map_neuro_qT1_FA12nTI128", "T1 map"),
    ("nibabel", "nicom/tests/data/csa_slice_norm.dcm", "SeriesDescription",
     "RESTING_STATE_Yerkes", SELF),
    ("nibabel", "tests/data/ADC_Map.PAR", "protocol_name", "ADC_Map", "ADC"),
    ("nibabel", "tests/data/DTI.PAR", "protocol_name", "WIP DTI SENSE", "DTI"),
    ("nibabel", "tests/data/NA.PAR", "protocol_name", "Survey_32ch_HeadCoil", None),
    ("nibabel", "tests/data/R11_T2W_TSE.PAR", "protocol_name", "WIP T2W_TSE", "T2"),
    ("nibabel", "tests/data/T1.PAR", "protocol_name", "T1 SENSE", "T1"),
    ("nibabel", "tests/data/T2.PAR", "protocol_name", "T2 SENSE", "T2"),
    ("nibabel", "tests/data/T2-interleaved.PAR", "protocol_name", "T2-interleaved SENSE", "T2"),
    ("nibabel", "tests/data/T2_.PAR", "protocol_name", "T2* SENSE", "T2*"),
    ("nibabel", "tests/data/T2_-interleaved.PAR", "protocol_name", "T2*-interleaved SENSE",
     "T2*"),
    ("nibabel", "tests/data/fieldmap.PAR", "protocol_name", "WIP fieldmap SENSE", None),
    ("nibabel", "tests/data/phantom_EPI_asc_CLEAR_2_1.PAR", "protocol_name", "EPI_asc CLEAR",
     SELF),
    *[("nibabel", f"tests/data/Phantom_EPI_3mm_{p}_SENSE_{n}_1.PAR", "protocol_name",
       f"EPI_3mm_{p} SENSE", SELF) for p, n in (
        ("cor_20APtrans_15RLrot", 15), ("cor", 8), ("sag_15AP", 13), ("sag_15FH", 12),
        ("sag_15RL", 11), ("sag", 7), ("tra_-30AP_10RL_20FH", 14), ("tra_15FH", 9),
        ("tra_15RL", 10), ("tra", 6))],
]

#: BIDS file names (without .nii.gz) -> name; the entities of an unknown suffix name it.
BIDS = [
    ("sub-01_T1w", "T1"), ("sub-01_ce-gadolinium_T1w", "T1C"), ("sub-01_ses-pre_T2w", "T2"),
    ("sub-01_FLAIR", "FLAIR"), ("sub-01_T2starw", "T2*"), ("sub-01_PDw", "PD"),
    ("sub-01_acq-multishell_dwi", "DWI"), ("sub-01_angio", "MRA"), ("sub-01_asl", "ASL"),
    ("sub-01_part-phase_swi", "SWI phase"), ("sub-01_T2starmap", "T2* map"),
    ("sub-01_defacemask", None), ("sub-01_dwi_sbref", None), ("sub-01_m0scan", None),
    ("sub-01_ses-1_inv-1_MP2RAGE", f"{SELF}: inv-1_MP2RAGE"),
]

#: BIDS file names -> series label: the entities but sub-, ses- and those the name says kept.
LABELS = [
    *BIDS[:4],  # no other entity: the name alone
    ("sub-01_ses-mri_acq-mprage_T1w", "T1 (acq-mprage)"),  # ds000117
    ("sub-01_acq-mp2rage_T1w", "T1 (acq-mp2rage)"),
    ("sub-01_acq-mprage_ce-gadolinium_run-2_T1w", "T1C (acq-mprage, run-2)"),
    ("sub-01_ce-gadolinium_FLAIR", "FLAIR (ce-gadolinium)"), ("sub-01_rec-norm_T2w", "T2 (rec-norm)"),
    ("sub-01_part-phase_swi", "SWI phase"), ("sub-01_echo-2_MEGRE", "T2* (echo-2)"),
    ("sub-01_dir-AP_dwi", "DWI (dir-AP)"), ("sub-01_acq-highresolution_rec-moco_run-12_T2map",
                                            "T2 map (acq-highresoluti..."),
    ("sub-01_acq-mprage_defacemask", None), ("sub-01_ses-1_inv-1_MP2RAGE", f"{SELF}: inv-1_MP2RAGE"),
]


def _read(package: str, file: str, attribute: str) -> str:
    """The attribute as stored in the file of the installed wheel."""
    if package == "pydicom":
        path = Path(pydicom.data.__file__).parent / "test_files" / file
        return str(pydicom.dcmread(path, stop_before_pixels=True, force=True).get(attribute))
    path = Path(nibabel.__file__).parent / file
    if path.suffix == ".PAR":
        with open(path) as f:
            return parrec.parse_PAR_header(f)[0][attribute]
    return str(pydicom.dcmread(path, stop_before_pixels=True).get(attribute))


def _label(naming) -> str | None:
    return naming.name if naming.known else f"{SELF}: {naming.name}"


def test_vendor_bids_and_real_descriptions_get_their_names() -> None:
    """Every row at once, so one run shows every name that is wrong."""
    assert len(REAL) >= 30
    expected, got = [], []
    for description, name in VENDOR:
        expected.append((description, f"{SELF}: {own_name(description, '')}" if name == SELF
                         else name))
        got.append((description, _label(name_series(description))))
    for package, file, attribute, value, name in REAL:
        read = _read(package, file, attribute)
        expected.append((file, value, f"{SELF}: {own_name(value, '')}" if name == SELF else name))
        got.append((file, read, _label(name_series(read))))
    for file, name in BIDS:
        stem, suffix = file.rsplit("_", 1)
        expected.append((file, name))
        got.append((file, _label(name_bids(stem, suffix))))
    for file, name in LABELS:
        stem, suffix = file.rsplit("_", 1)
        expected.append((file, "label", name))
        got.append((file, "label", _label(label_bids(stem, suffix))))
    assert got == expected


def test_an_own_name_is_printable_one_line_and_short_and_the_users_map_comes_first() -> None:
    import re

    long = name_series("Research \x1b[31mprotocol\u202e  with\na very long description")
    assert not long.known and long.name.isprintable() and len(long.name) <= MAX_NAME - 5
    assert long.name == "Research \\u001b[31mproto..."
    assert name_series("", fallback="series 7").name == "series 7"
    rules = [(re.compile("swi", re.I), "SWI minIP"), (re.compile("scout"), "SCOUT")]
    assert [name_series(d, rules).name for d in ("t2_swi_tra", "scout", "Scout")] == [
        "SWI minIP", "SCOUT", None]
