"""Synthetic DICOM exports made with pydicom for the DICOM import tests: a PACS-style folder
(DICOMDIR, extension-less files), classic one-file-per-slice series, an enhanced multi-frame
series, a localizer and a non-image object. Every identifying value is invented and listed in
`IDENTIFYING` so a test can search NMB_HOME for it."""

from pathlib import Path

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.sequence import Sequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

MR = "1.2.840.10008.5.1.4.1.1.4"
ENHANCED_MR = "1.2.840.10008.5.1.4.1.1.4.1"
BASIC_TEXT_SR = "1.2.840.10008.5.1.4.1.1.88.11"
#: Values a search of NMB_HOME must not find (each long and unusual enough to be unique).
IDENTIFYING = {
    "PatientName": "QUIXOTE^ALONSO", "PatientID": "PID-8372651", "PatientBirthDate": "19610203",
    "AccessionNumber": "ACC5550193", "InstitutionName": "Hospital de La Mancha Example",
    "ReferringPhysicianName": "SANSO^CARRASCO", "StudyDate": "20240117",
    "StudyTime": "134501", "StudyID": "STU77123", "OperatorsName": "PANZA^SANCHO",
    "StationName": "ROCINANTE-MR1", "DeviceSerialNumber": "SN-4471129",
}
AXIAL = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
CORONAL = [1.0, 0.0, 0.0, 0.0, 0.0, -1.0]


def _identify(ds: Dataset, study_uid: str, frame_uid: str) -> None:
    for key, value in IDENTIFYING.items():
        setattr(ds, key, value)
    ds.StudyInstanceUID = study_uid
    ds.FrameOfReferenceUID = frame_uid
    ds.Modality = "MR"
    ds.Manufacturer = "Synthetic"


def _meta(sop_class: str, sop_uid: str) -> FileMetaDataset:
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = sop_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    return meta


def _pixels(ds: Dataset, data: np.ndarray) -> None:
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows, ds.Columns = data.shape[-2:]
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
    ds.PixelData = data.astype("<i2").tobytes()


def volume(rows: int, cols: int, slices: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, size=(slices, rows, cols)).astype(np.int16)


def classic_series(description: str, number: int, *, study_uid: str, frame_uid: str,
                   data: np.ndarray, origin=(-60.0, -80.0, -20.0), iop=AXIAL,
                   spacing=(0.9, 0.8), step: float = 3.0, image_type=("ORIGINAL", "PRIMARY", "M"),
                   positions: list | None = None) -> list[Dataset]:
    """One file per slice: slice k at origin + k*step along the normal of `iop`."""
    series_uid = generate_uid()
    normal = np.cross(iop[:3], iop[3:])
    out = []
    for k, plane in enumerate(data):
        uid = generate_uid()
        ds = Dataset()
        ds.file_meta = _meta(MR, uid)
        ds.SOPClassUID, ds.SOPInstanceUID = MR, uid
        _identify(ds, study_uid, frame_uid)
        ds.SeriesInstanceUID, ds.SeriesNumber, ds.InstanceNumber = series_uid, number, k + 1
        ds.SeriesDescription = description
        ds.ImageType = list(image_type)
        pos = positions[k] if positions else list(np.asarray(origin) + k * step * normal)
        ds.ImagePositionPatient = [float(x) for x in pos]
        ds.ImageOrientationPatient = list(iop)
        ds.PixelSpacing = list(spacing)
        ds.SliceThickness = step
        ds.EchoTime, ds.RepetitionTime = 90, 4000
        _pixels(ds, plane)
        out.append(ds)
    return out


def enhanced_series(description: str, number: int, *, study_uid: str, frame_uid: str,
                    data: np.ndarray, origin=(-50.0, -60.0, -30.0), spacing=(1.0, 1.0),
                    step: float = 2.0) -> Dataset:
    """One enhanced MR file holding every slice as a frame (axial)."""
    uid = generate_uid()
    ds = Dataset()
    ds.file_meta = _meta(ENHANCED_MR, uid)
    ds.SOPClassUID, ds.SOPInstanceUID = ENHANCED_MR, uid
    _identify(ds, study_uid, frame_uid)
    ds.SeriesInstanceUID, ds.SeriesNumber, ds.InstanceNumber = generate_uid(), number, 1
    ds.SeriesDescription = description
    ds.ImageType = ["ORIGINAL", "PRIMARY", "M", "NONE"]
    ds.NumberOfFrames = len(data)
    measures = Dataset()
    measures.PixelSpacing, measures.SliceThickness = list(spacing), step
    measures.SpacingBetweenSlices = step
    orientation = Dataset()
    orientation.ImageOrientationPatient = AXIAL
    shared = Dataset()
    shared.PixelMeasuresSequence = Sequence([measures])
    shared.PlaneOrientationSequence = Sequence([orientation])
    ds.SharedFunctionalGroupsSequence = Sequence([shared])
    dim_uid = generate_uid()
    index = Dataset()
    index.DimensionOrganizationUID = dim_uid
    index.DimensionIndexPointer = 0x00209057  # InStackPositionNumber
    index.FunctionalGroupPointer = 0x00209111  # FrameContentSequence
    ds.DimensionIndexSequence = Sequence([index])
    org = Dataset()
    org.DimensionOrganizationUID = dim_uid
    ds.DimensionOrganizationSequence = Sequence([org])
    frames = []
    for k in range(len(data)):
        position = Dataset()
        position.ImagePositionPatient = [origin[0], origin[1], origin[2] + k * step]
        content = Dataset()
        content.StackID, content.InStackPositionNumber = "1", k + 1
        content.DimensionIndexValues = [k + 1]
        frame = Dataset()
        frame.PlanePositionSequence = Sequence([position])
        frame.FrameContentSequence = Sequence([content])
        frames.append(frame)
    ds.PerFrameFunctionalGroupsSequence = Sequence(frames)
    ds.EchoTime = 10
    _pixels(ds, data)
    return ds


def text_report(*, study_uid: str) -> Dataset:
    """A non-image object (a Basic Text SR), which the import leaves out and lists."""
    uid = generate_uid()
    ds = Dataset()
    ds.file_meta = _meta(BASIC_TEXT_SR, uid)
    ds.SOPClassUID, ds.SOPInstanceUID = BASIC_TEXT_SR, uid
    _identify(ds, study_uid, generate_uid())
    ds.Modality = "SR"
    ds.CompletionFlag, ds.VerificationFlag = "COMPLETE", "UNVERIFIED"
    ds.ContentDate, ds.ContentTime = IDENTIFYING["StudyDate"], IDENTIFYING["StudyTime"]
    code = Dataset()
    code.CodeValue, code.CodingSchemeDesignator, code.CodeMeaning = "18748-4", "LN", "Report"
    ds.ConceptNameCodeSequence = Sequence([code])
    ds.ValueType = "CONTAINER"
    ds.SeriesInstanceUID, ds.SeriesNumber, ds.InstanceNumber = generate_uid(), 99, 1
    return ds


def pacs_export(dest: Path, *, dicomdir: bool = True) -> dict[str, list[Dataset] | Dataset]:
    """A study of an invented patient: T2 AX (classic, 5 slices), FLAIR COR (classic,
    coronal, 4 slices), T1 MPRAGE (enhanced, 6 frames), a 3-slice localizer and a text SR,
    written as a DICOMDIR file set (extension-less names) or, without `dicomdir`, as plain
    extension-less files in nested folders. Returns the datasets by name."""
    study_uid, frame_uid = generate_uid(), generate_uid()
    made = {
        "t2": classic_series("T2 AX TSE", 3, study_uid=study_uid, frame_uid=frame_uid,
                             data=volume(12, 10, 5, 1)),
        "flair": classic_series("Ax FLAIR", 4, study_uid=study_uid, frame_uid=frame_uid,
                                data=volume(8, 10, 4, 2), iop=CORONAL, step=4.0,
                                origin=(-40.0, 30.0, 50.0), spacing=(1.2, 1.1)),
        "t1": enhanced_series("sag T1 MPRAGE", 5, study_uid=study_uid, frame_uid=frame_uid,
                              data=volume(9, 11, 6, 3)),
        "localizer": classic_series("3-plane loc", 1, study_uid=study_uid, frame_uid=frame_uid,
                                    data=volume(8, 8, 3, 4),
                                    image_type=("ORIGINAL", "PRIMARY", "LOCALIZER")),
        "report": text_report(study_uid=study_uid),
    }
    everything = [*made["t2"], *made["flair"], made["t1"], *made["localizer"], made["report"]]
    dest.mkdir(parents=True, exist_ok=True)
    if dicomdir:
        from pydicom.fileset import FileSet

        fs = FileSet()
        for ds in everything:
            fs.add(ds)
        fs.write(dest)
    else:
        for n, ds in enumerate(everything):
            folder = dest / f"S{ds.SeriesNumber:03d}"
            folder.mkdir(exist_ok=True)
            ds.save_as(folder / f"IM{n:05d}", enforce_file_format=True)
    return made


def write_series(folder: Path, datasets: list[Dataset]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, ds in enumerate(datasets):
        ds.save_as(folder / f"IM{n:05d}", enforce_file_format=True)
    return folder
