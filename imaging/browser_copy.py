"""The copy of a series that the in-browser viewer downloads: voxels and geometry, nothing else.

A bundle's image may carry text that must not reach a rater or an examinee: the NIfTI
`descrip`, `aux_file`, `intent_name` and `db_name` fields, header extensions (which can hold a
whole DICOM header), an MGH footer, the file name. The copy is a new NIfTI-1 built from the
voxel data, its scale factors and the affine only, gzip-compressed (level 1) and written
atomically. Non-finite voxels become 0 (shown as background, as in the PNG viewer).
`cal_min`/`cal_max` hold the "auto" window of volume 0 (the PNG viewer's default), which the
viewer opens with instead of computing its own percentiles in the browser.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import nibabel as nib
import numpy as np

from imaging.image_file import CORRUPT, open_image, reading, spatial_shape
from imaging.window import intensity_stats, preset_window

#: Voxel types NiiVue draws as they are; anything else is sent as float32 in real units.
BROWSER_DTYPES = frozenset(np.dtype(t) for t in ("uint8", "int8", "int16", "uint16", "int32", "float32"))


def write_browser_copy(src: Path, dst: Path) -> Path:
    """Write the viewer's copy of image `src` to `dst` (a `.nii.gz` path) and return `dst`.

    Raises UserError (one line naming the file) if `src` cannot be read.
    """
    img = open_image(Path(src))
    name = Path(src).name
    (x, y, z), n_volumes = spatial_shape(img, name)
    shape = (x, y, z) if n_volumes == 1 else (x, y, z, n_volumes)
    proxy = img.dataobj
    slope = float(getattr(proxy, "slope", 1.0))
    inter = float(getattr(proxy, "inter", 0.0))
    with reading(name, CORRUPT):
        raw = np.asanyarray(proxy.get_unscaled() if hasattr(proxy, "get_unscaled") else proxy)
        if raw.dtype not in BROWSER_DTYPES or not np.isfinite([slope, inter]).all():
            raw, slope, inter = np.asanyarray(img.dataobj, dtype=np.float32), 1.0, 0.0
    data = raw.reshape(shape)
    if data.dtype.kind == "f" and not np.isfinite(data).all():
        data = np.nan_to_num(data, nan=0.0, posinf=0.0, neginf=0.0)
    affine = np.asarray(img.affine, dtype=np.float64)
    copy = nib.Nifti1Image(data, affine)
    header = copy.header
    header.set_data_dtype(data.dtype)
    header.set_qform(affine, code=1)
    header.set_sform(affine, code=1)
    header.set_xyzt_units("mm")
    header.set_slope_inter(slope, inter)
    first = data if n_volumes == 1 else data[..., 0]
    window = preset_window(intensity_stats(np.asarray(first, np.float32) * slope + inter,
                                           all_finite=True), "auto")
    header["cal_min"], header["cal_max"] = window.low, window.high
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(f".{dst.name}.{os.getpid()}-{threading.get_ident()}.partial.nii.gz")
    nib.save(copy, partial)
    os.replace(partial, dst)
    return dst
