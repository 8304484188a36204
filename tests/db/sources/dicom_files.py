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


# ---------------------------------------------------------------- compressed pixels


def jpeg_lossless(plane: np.ndarray, precision: int = 16) -> bytes:
    """`plane` (unsigned, `precision` bits) as a JPEG lossless codestream, process 14 with
    selection value 1 (ITU-T T.81 H.1: predictor Ra, point transform 0): the syntax PACS use
    for lossless archives, for which no Python package has an encoder. One Huffman table of 17
    five-bit codes (difference categories 0-16)."""
    rows, cols = plane.shape
    x = plane.astype(np.int64)
    bits: list[str] = []
    for r in range(rows):
        for c in range(cols):
            if r == 0 and c == 0:
                pred = 1 << (precision - 1)
            else:
                pred = x[r, c - 1] if c else x[r - 1, c]
            diff = (int(x[r, c]) - int(pred)) % (1 << 16)
            diff = diff - (1 << 16) if diff > 32768 else diff
            size = 16 if diff == 32768 else abs(diff).bit_length()
            bits.append(format(size, "05b"))
            if 0 < size < 16:
                extra = diff if diff > 0 else diff + (1 << size) - 1
                bits.append(format(extra, f"0{size}b"))
    stream = "".join(bits)
    stream += "1" * (-len(stream) % 8)
    data = bytearray()
    for k in range(0, len(stream), 8):
        byte = int(stream[k:k + 8], 2)
        data += bytes([byte, 0]) if byte == 0xFF else bytes([byte])

    def segment(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + (len(body) + 2).to_bytes(2, "big") + body

    frame = bytes([precision]) + rows.to_bytes(2, "big") + cols.to_bytes(2, "big") + bytes(
        [1, 1, 0x11, 0])
    counts = [0, 0, 0, 0, 17] + [0] * 11
    table = bytes([0x00]) + bytes(counts) + bytes(range(17))
    scan = bytes([1, 1, 0x00, 1, 0, 0])  # one component, table 0, predictor 1, Se 0, Pt 0
    return (b"\xff\xd8" + segment(0xC3, frame) + segment(0xC4, table) + segment(0xDA, scan)
            + bytes(data) + b"\xff\xd9")


def compressed(datasets: list[Dataset], syntax: str) -> list[Dataset]:
    """`datasets` (16-bit, values 0-1000) with their pixels in `syntax`: JPEG lossless SV1 by
    `jpeg_lossless`, JPEG baseline as 8-bit pixels by Pillow, the others by pydicom's encoders
    (pylibjpeg-openjpeg for JPEG 2000, pydicom's own RLE)."""
    import io

    from PIL import Image
    from pydicom import uid
    from pydicom.encaps import encapsulate

    for ds in datasets:
        plane = ds.pixel_array.astype(np.uint16)
        ds.PixelRepresentation = 0
        if syntax == uid.JPEGBaseline8Bit:
            plane = (plane // 4).astype(np.uint8)
            ds.BitsAllocated, ds.BitsStored, ds.HighBit = 8, 8, 7
            buf = io.BytesIO()
            Image.fromarray(plane, "L").save(buf, "JPEG", quality=90)
            frame = buf.getvalue()
        elif syntax == uid.JPEGLosslessSV1:
            frame = jpeg_lossless(plane)
        else:
            ds.PixelData = plane.astype("<u2").tobytes()
            ds.compress(syntax)
            continue
        ds.PixelData = encapsulate([frame])
        ds["PixelData"].VR = "OB"
        ds.file_meta.TransferSyntaxUID = syntax
    return datasets
