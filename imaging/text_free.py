"""A volume saved with voxels and geometry only: no text a scanner or converter put in it.

Converters write text into NIfTI files (dcm2niix: `descrip` with echo time and acquisition
time; a BIDS file may carry anything in `descrip`, `aux_file`, `intent_name`, `db_name` or a
header extension). The stored copy is a new NIfTI-1 built from the voxel array, its scale
factors and the affine (qform and sform, scanner space, mm): every text field empty, no
extension. nibabel's gzip output is deterministic, so the same input gives the same bytes
(and sha256) every time.
"""

from pathlib import Path

import nibabel as nib
import numpy as np

from imaging.image_file import CORRUPT, open_image, reading, spatial_shape


def save_text_free(src: Path, dst: Path) -> tuple[tuple[int, ...], np.ndarray]:
    """Write `src` (any image nibabel opens) to `dst` (`.nii.gz`) without any text; returns
    (shape, affine). Raises UserError naming `src` if it cannot be read."""
    img = open_image(Path(src))
    name = Path(src).name
    (x, y, z), n = spatial_shape(img, name)
    proxy = img.dataobj
    slope = float(getattr(proxy, "slope", 1.0) or 1.0)
    inter = float(getattr(proxy, "inter", 0.0) or 0.0)
    with reading(name, CORRUPT):
        raw = np.asanyarray(proxy.get_unscaled() if hasattr(proxy, "get_unscaled") else proxy)
    shape = (x, y, z) if n == 1 else (x, y, z, n)
    data = np.ascontiguousarray(raw.reshape(shape))
    affine = np.asarray(img.affine, dtype=np.float64)
    out = nib.Nifti1Image(data, affine, dtype=data.dtype)  # int64 too (nibabel asks)
    header = out.header
    header.set_data_dtype(data.dtype)
    header.set_qform(affine, code=1)
    header.set_sform(affine, code=1)
    header.set_xyzt_units("mm", "sec")
    header.set_slope_inter(slope if np.isfinite(slope) else 1.0,
                           inter if np.isfinite(inter) else 0.0)
    for field in ("descrip", "aux_file", "intent_name", "db_name"):
        header[field] = b""
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    nib.save(out, dst)
    return shape, affine
