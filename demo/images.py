"""Synthetic MRI series for the demo bundle, derived from the MNI152 template shipped in nilearn.

The T1 is the real ICBM152 2009a nonlinear template (Fonov et al., NeuroImage 2009;47:S102 and
2011;54:313-327), skull-stripped, as bundled in the nilearn wheel
(`mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz`, the file `load_mni152_template` reads).
T2, FLAIR, DWI, ADC, SWI and T1C are synthetic:
a weighted sum of the bundled grey/white-matter probability maps (CSF = brain minus GM minus
WM), with relative tissue intensities chosen after typical 3 T contrasts (CSF bright on T2 and
ADC, dark on FLAIR and DWI). Lesions are painted in world (RAS+ mm) coordinates through the
affine, so a negative x is the patient's left. Nothing here comes from a patient.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np
from scipy import ndimage

from imaging.geometry import world_to_voxel

SYNTHETIC_DESCRIP = "SYNTHETIC demo, not patient data; from MNI152 2009a"

_TEMPLATE_FILES = {
    "t1": "mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz",
    "gm": "mni_icbm152_gm_tal_nlin_sym_09a_converted.nii.gz",
    "wm": "mni_icbm152_wm_tal_nlin_sym_09a_converted.nii.gz",
}

# Tissue intensities (CSF, GM, WM) of the derived sequences; ADC in 10^-6 mm^2/s.
_CONTRAST = {
    "T2": (950.0, 430.0, 290.0),
    "FLAIR": (60.0, 500.0, 360.0),
    "DWI": (50.0, 450.0, 380.0),
    "ADC": (3000.0, 850.0, 720.0),
    "SWI": (620.0, 400.0, 520.0),
}


@dataclass(frozen=True)
class Template:
    """MNI152 T1 (0-1), GM/WM/CSF fractions and brain mask on one grid, with its affine."""

    t1: np.ndarray
    gm: np.ndarray
    wm: np.ndarray
    csf: np.ndarray
    brain: np.ndarray
    affine: np.ndarray

    @property
    def voxel_mm(self) -> float:
        return float(abs(self.affine[0, 0]))


def _nilearn_data_dir() -> Path | None:
    """Folder of nilearn's bundled data files, found without importing nilearn (slow import)."""
    spec = importlib.util.find_spec("nilearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"
    return folder if all((folder / f).is_file() for f in _TEMPLATE_FILES.values()) else None


def _load_1mm() -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The 1 mm template and tissue maps, read from the files inside the nilearn wheel.

    Falls back to `nilearn.datasets.load_mni152_*` (which read the same bundled files and
    make no network call) if the file names ever change.
    """
    folder = _nilearn_data_dir()
    if folder is not None:
        images = {k: nib.load(folder / f) for k, f in _TEMPLATE_FILES.items()}
    else:  # pragma: no cover - depends on the installed nilearn layout
        from nilearn import datasets

        images = {
            "t1": datasets.load_mni152_template(resolution=1),
            "gm": datasets.load_mni152_gm_template(resolution=1),
            "wm": datasets.load_mni152_wm_template(resolution=1),
        }
    arrays = {k: np.asarray(img.get_fdata(dtype=np.float32)) for k, img in images.items()}
    for k in arrays:
        top = float(arrays[k].max()) or 1.0
        arrays[k] = np.clip(arrays[k] / (top if top > 1.5 else 1.0), 0.0, 1.0)
    return arrays, images["t1"].affine


def _downsample(a: np.ndarray, r: int) -> np.ndarray:
    """Every r-th voxel after a triangular (linear-interpolation adjoint) anti-alias filter.

    Keeps voxel 0 where it is, so the grid equals nilearn's `resolution=r` grid.
    """
    if r == 1:
        return a
    weights = np.array([r - abs(k) for k in range(-r + 1, r)], dtype=np.float32) / r**2
    for axis in range(3):
        a = ndimage.convolve1d(a, weights, axis=axis, mode="nearest")
    return np.ascontiguousarray(a[::r, ::r, ::r])


def coarsen(data: np.ndarray, affine: np.ndarray, factor: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A series on a grid `factor` times coarser (as DWI is often acquired), with its affine.

    Voxel 0 keeps its world position, so both grids cover the same anatomy with other voxels.
    """
    coarse = affine.copy()
    coarse[:3, :3] *= factor
    return _downsample(data, factor), coarse


@functools.lru_cache(maxsize=4)
def load_template(resolution_mm: int = 2) -> Template:
    """The MNI152 template and its tissue fractions at an integer resolution in mm."""
    if resolution_mm < 1:
        raise ValueError(f"resolution_mm must be >= 1, got {resolution_mm}")
    arrays, affine = _load_1mm()
    t1, gm, wm = (_downsample(arrays[k], resolution_mm) for k in ("t1", "gm", "wm"))
    affine = affine.copy()
    affine[:3, :3] *= resolution_mm
    brain = (gm + wm > 0.05) | (t1 > 0.2)
    brain = ndimage.binary_fill_holes(ndimage.binary_closing(brain, iterations=2))
    total = gm + wm
    scale = np.where(total > 1.0, 1.0 / np.maximum(total, 1e-6), 1.0)
    gm, wm = gm * scale, wm * scale
    csf = np.where(brain, np.clip(1.0 - gm - wm, 0.0, 1.0), 0.0).astype(np.float32)
    for arr in (t1, gm, wm, csf):
        arr.setflags(write=False)
    return Template(t1=t1, gm=gm, wm=wm, csf=csf, brain=brain, affine=affine)


class Canvas:
    """Mutable tissue maps and series of one synthetic case, painted in world coordinates."""

    def __init__(self, template: Template, sequences: list[str], rng: np.random.Generator):
        self.tpl = template
        self.rng = rng
        self.affine = template.affine
        self.gm = template.gm.copy()
        self.wm = template.wm.copy()
        self.csf = template.csf.copy()
        self.t1 = template.t1 * 1000.0
        self.sequences = sequences
        self.overlays: list[tuple[np.ndarray, tuple[slice, ...], dict[str, float]]] = []

    def ellipsoid(
        self,
        centre: tuple[float, float, float],
        radii: tuple[float, float, float],
        *,
        tilt_x_deg: float = 0.0,
        edge: float = 0.15,
        rough: float = 0.0,
        hollow: float = 0.0,
    ) -> tuple[np.ndarray, tuple[slice, ...]]:
        """Soft ellipsoid (1 inside, 0 outside) in world mm, returned with its bounding box.

        `tilt_x_deg` rotates the y-z axes about x (positive: anterior end goes down);
        `rough` adds smoothed seeded noise to the boundary; `hollow` (0-1) leaves a shell
        by removing the inner ellipsoid scaled by that factor.
        """
        vox = world_to_voxel(self.affine, centre)
        mm = self.tpl.voxel_mm
        reach = max(radii) * (1.0 + edge * 3 + rough) / mm + 2
        shape = self.gm.shape
        box = tuple(
            slice(max(0, int(np.floor(vox[a] - reach))),
                  min(shape[a], int(np.ceil(vox[a] + reach)) + 1))
            for a in range(3)
        )
        d = self.world_coords(box) - np.asarray(centre, np.float32)[:, None, None, None]
        th = np.deg2rad(tilt_x_deg)
        dy = np.cos(th) * d[1] + np.sin(th) * d[2]
        dz = -np.sin(th) * d[1] + np.cos(th) * d[2]
        r = np.sqrt((d[0] / radii[0]) ** 2 + (dy / radii[1]) ** 2 + (dz / radii[2]) ** 2)
        if rough:
            noise = ndimage.gaussian_filter(self.rng.standard_normal(r.shape), 2.0 / mm)
            r = r - rough * noise / (noise.std() + 1e-6)
        m = 1.0 / (1.0 + np.exp((r - 1.0) / edge))
        if hollow:
            m = m - 1.0 / (1.0 + np.exp((r - hollow) / edge))
        return m.astype(np.float32), box

    def world_coords(self, box: tuple[slice, ...]) -> np.ndarray:
        idx = np.meshgrid(*[np.arange(s.start, s.stop) for s in box], indexing="ij")
        pts = np.stack([i.astype(np.float32) for i in idx] + [np.ones_like(idx[0], np.float32)])
        return np.tensordot(self.affine[:3], pts, axes=1)

    # ----- edits ------------------------------------------------------------------------
    def paint(
        self,
        mask: tuple[np.ndarray, tuple[slice, ...]],
        values: dict[str, float],
        *,
        tissue: str = "parenchyma",
        keep: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        """Blend target intensities into the series where `mask` (restricted to `tissue`) is on.

        `values` maps a sequence to a target intensity (ADC in 10^-6 mm^2/s), or
        "scale_<sequence>" to a factor (e.g. "scale_T1": 0.8 for mild T1 hypointensity).
        `keep(world_xyz)` returns a 0-1 weight, e.g. to keep a lesion on one side of the midline.
        """
        m, box = mask
        weight = {
            "parenchyma": self.gm[box] + self.wm[box],
            "wm": np.clip(self.wm[box] * 1.3, 0, 1),
            "gm": np.clip(self.gm[box] * 1.3, 0, 1),
            "brain": self.tpl.brain[box].astype(np.float32),
        }[tissue]
        m = m * weight
        if keep is not None:
            m = m * keep(self.world_coords(box))
        self.overlays.append((m.astype(np.float32), box, values))

    def atrophy(self, mask: tuple[np.ndarray, tuple[slice, ...]], fraction: float) -> None:
        """Replace a fraction of the tissue under `mask` by CSF (volume loss)."""
        m, box = mask
        m = m * fraction * self.tpl.brain[box]
        lost_gm, lost_wm = self.gm[box] * m, self.wm[box] * m
        self.gm[box] -= lost_gm
        self.wm[box] -= lost_wm
        self.csf[box] += lost_gm + lost_wm
        csf_t1 = 250.0
        self.t1[box] = self.t1[box] * (1 - m) + csf_t1 * m * (self.gm[box] + self.wm[box] + self.csf[box] > 0)

    def expand_csf(self, region: np.ndarray, grow_mm: float, *, keep_midline_mm: float = 0.0) -> None:
        """Grow the CSF spaces in `region` (bool mask) outward by `grow_mm` (hydrocephalus)."""
        seed = region & (self.csf > 0.5)
        dist = ndimage.distance_transform_edt(~seed, sampling=self.tpl.voxel_mm)
        m = np.clip((grow_mm - dist) / (0.5 * self.tpl.voxel_mm + 1e-6) + 0.5, 0.0, 1.0)
        m[seed] = 0.0
        if keep_midline_mm:
            x = self.affine[0, 0] * np.arange(m.shape[0]) + self.affine[0, 3]
            m[np.abs(x) < keep_midline_mm] = 0.0
        full = tuple(slice(0, s) for s in m.shape)
        self.atrophy((m.astype(np.float32), full), 1.0)

    # ----- rendering --------------------------------------------------------------------
    def lesion_mask(self, threshold: float = 0.5) -> np.ndarray:
        """The painted lesions as a label image on the template grid: 1 where any painted
        weight reaches `threshold`, else 0 (uint8)."""
        out = np.zeros(self.gm.shape, np.uint8)
        for m, box, _ in self.overlays:
            out[box] |= (m >= threshold).astype(np.uint8)
        return out

    def render(self, *, noise: float = 0.012) -> dict[str, np.ndarray]:
        """Every requested series as float32, with the painted lesions and seeded Gaussian
        noise (`noise` times the full scale, 0 for none)."""
        out: dict[str, np.ndarray] = {}
        brain = self.tpl.brain
        for seq in self.sequences:
            if seq in ("T1", "T1C"):
                img = self.t1.copy()
            else:
                c, g, w = _CONTRAST[seq]
                img = c * self.csf + g * self.gm + w * self.wm
            for m, box, values in self.overlays:
                if seq in values:
                    img[box] = img[box] * (1 - m) + values[seq] * m
                if f"scale_{seq}" in values:
                    img[box] = img[box] * (1 - m + values[f"scale_{seq}"] * m)
            top = 3000.0 if seq == "ADC" else 1000.0
            if noise:
                jitter = self.rng.standard_normal(img.shape, dtype=np.float32)
                img = img + jitter * np.float32(noise * top) * brain
            out[seq] = np.clip(img * brain, 0, 32767).astype(np.float32)
        return out


def save_series(data: np.ndarray, affine: np.ndarray, path: Path, *, sequence: str,
                dtype: type = np.int16) -> Path:
    """Write one series (or, with `dtype` uint8, a mask) as NIfTI-1 with qform/sform in MNI
    space and a synthetic descrip."""
    img = nib.Nifti1Image(np.rint(data).astype(dtype), affine)
    hdr = img.header
    hdr.set_data_dtype(dtype)
    hdr.set_qform(affine, code="mni")
    hdr.set_sform(affine, code="mni")
    hdr.set_xyzt_units("mm")
    hdr["descrip"] = f"{SYNTHETIC_DESCRIP} {sequence}"[:79].encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(img, path)
    return path


# ----- the painted cases ----------------------------------------------------------------
def _side(sign: int, margin_mm: float = 2.0) -> Callable[[np.ndarray], np.ndarray]:
    """Weight 1 on one side of the midline (sign -1: left, x < 0 in RAS), 0 on the other."""
    return lambda xyz: (1.0 / (1.0 + np.exp(-(sign * xyz[0] - margin_mm) / 1.5))).astype(np.float32)


def _paint_stroke(c: Canvas) -> None:
    """Left MCA territory acute infarct: DWI bright, ADC dark, FLAIR not yet changed."""
    acute = {"DWI": 960.0, "ADC": 430.0, "scale_T1": 0.93, "scale_T2": 1.12}
    for centre, radii in [
        ((-40, 10, 6), (9, 13, 11)),  # insula and frontal operculum
        ((-47, -14, 20), (10, 17, 13)),  # pre/postcentral gyri, supramarginal
        ((-34, -4, 24), (7, 12, 9)),  # corona radiata
    ]:
        c.paint(c.ellipsoid(centre, radii, rough=0.25), acute, keep=_side(-1, 22.0))


_DEMYELINATING = {"FLAIR": 880.0, "T2": 820.0, "scale_T1": 0.85, "DWI": 470.0, "ADC": 1150.0}


def _paint_ms(c: Canvas) -> None:
    """Periventricular ovoid (Dawson's finger), juxtacortical and infratentorial FLAIR lesions."""
    for centre, radii, tilt in [
        ((-20, -18, 26), (3.0, 4.0, 7.5), -20),
        ((-22, 8, 22), (3.0, 3.5, 6.5), 10),
        ((21, -30, 24), (3.0, 4.0, 7.0), -30),
        ((19, 14, 20), (2.5, 3.5, 6.0), 15),
        ((-26, -40, 16), (3.0, 4.5, 5.0), -10),
        ((-27, 38, 30), (3.0, 3.0, 3.5), 0),  # left frontal juxtacortical
        ((19, -46, -30), (3.0, 3.5, 3.5), 0),  # right middle cerebellar peduncle
    ]:
        radii = tuple(1.3 * r for r in radii)
        c.paint(c.ellipsoid(centre, radii, tilt_x_deg=tilt, rough=0.1), _DEMYELINATING, tissue="wm")
    black_hole = {"scale_T1": 0.55}
    c.paint(c.ellipsoid((-20, -18, 26), (2.0, 2.5, 4.0), tilt_x_deg=-20), black_hole, tissue="wm")


def _hippocampus(c: Canvas, sign: int, scale: float = 1.0) -> tuple[np.ndarray, tuple[slice, ...]]:
    return c.ellipsoid((sign * 29, -22, -13), (5.5 * scale, 16 * scale, 5.5 * scale), tilt_x_deg=-25)


def _paint_mts(c: Canvas) -> None:
    """Right mesial temporal sclerosis: small, FLAIR/T2-bright right hippocampus."""
    c.paint(_hippocampus(c, +1, 0.8), {"FLAIR": 840.0, "T2": 700.0}, tissue="parenchyma")
    c.atrophy(_hippocampus(c, +1), 0.45)


def _paint_hsv(c: Canvas) -> None:
    """Left mesial/anterior temporal and insular cortical swelling, FLAIR and DWI bright."""
    edema = {"FLAIR": 860.0, "T2": 760.0, "DWI": 760.0, "ADC": 780.0, "scale_T1": 0.88}
    for centre, radii in [((-30, -6, -26), (11, 20, 10)), ((-38, 2, 4), (5, 14, 10))]:
        c.paint(c.ellipsoid(centre, radii, rough=0.2), edema, keep=_side(-1, 18.0))


def _paint_gbm(c: Canvas) -> None:
    """Right frontal necrotic mass with an irregular enhancing rim and vasogenic edema."""
    centre = (30, 28, 22)
    right = _side(+1, 6.0)
    c.paint(c.ellipsoid(centre, (26, 30, 24), rough=0.15), {"FLAIR": 780.0, "T2": 700.0},
            tissue="wm", keep=right)
    c.paint(c.ellipsoid(centre, (15, 17, 14), rough=0.08), {"T1": 560.0, "T1C": 1600.0,
            "FLAIR": 700.0, "T2": 650.0}, tissue="brain", keep=right)
    c.paint(c.ellipsoid(centre, (10, 12, 9), rough=0.12, edge=0.08), {"T1": 300.0, "T1C": 290.0,
            "FLAIR": 560.0, "T2": 900.0}, tissue="brain", keep=right)


def _paint_alzheimer(c: Canvas) -> None:
    """Bilateral hippocampal volume loss (left more than right) and widened parietal sulci."""
    c.atrophy(_hippocampus(c, -1, 1.1), 0.6)
    c.atrophy(_hippocampus(c, +1, 1.1), 0.45)
    sulci = ndimage.gaussian_filter(c.csf, 1.2 / c.tpl.voxel_mm) > 0.18
    for sign in (-1, 1):
        m, box = c.ellipsoid((sign * 35, -55, 40), (25, 30, 25), edge=0.3)
        c.atrophy((m * sulci[box] * c.gm[box], box), 0.5)
    c.paint(c.ellipsoid((0, -10, 20), (28, 40, 14)), {"FLAIR": 560.0}, tissue="wm",
            keep=lambda xyz: np.float32(1.0) - _side(1, 14.0)(xyz) - _side(-1, 14.0)(xyz))


def _paint_cadasil(c: Canvas) -> None:
    """Confluent symmetric WMH with anterior temporal pole and external capsule involvement."""
    wmh = {"FLAIR": 840.0, "T2": 760.0, "scale_T1": 0.9}
    for sign in (-1, 1):
        for centre, radii in [
            ((sign * 24, -5, 24), (11, 38, 12)),  # confluent periventricular/deep WM
            ((sign * 34, 12, -28), (9, 9, 8)),  # anterior temporal pole
            ((sign * 31, 0, 2), (3, 14, 9)),  # external capsule
        ]:
            tissue = "parenchyma" if centre[2] < -20 else "wm"
            c.paint(c.ellipsoid(centre, radii, rough=0.2), wmh, tissue=tissue)
    for centre in [(-20, 4, 2), (22, -6, 6), (-14, -18, 6)]:  # lacunes in basal ganglia/thalamus
        m = c.ellipsoid(centre, (2.5, 2.5, 3.0), edge=0.1)
        c.paint(m, {"T1": 250.0, "FLAIR": 120.0, "T2": 900.0}, tissue="brain")


def _paint_pml(c: Canvas) -> None:
    """Right parieto-occipital subcortical lesion reaching the U-fibres, no mass effect."""
    centre = (30, -62, 28)
    c.paint(c.ellipsoid(centre, (14, 20, 15), rough=0.3), {"FLAIR": 900.0, "T2": 820.0,
            "scale_T1": 0.6, "DWI": 420.0, "ADC": 1400.0}, tissue="wm", keep=_side(+1, 8.0))
    rim = c.ellipsoid(centre, (17, 23, 18), rough=0.3, hollow=0.8)
    c.paint(rim, {"DWI": 820.0, "ADC": 900.0}, tissue="wm", keep=_side(+1, 8.0))


def _paint_caa(c: Canvas) -> None:
    """Lobar cortico-subcortical microbleeds (posterior predominance) and right siderosis."""
    rng = np.random.default_rng(1729)  # fixed so the layout does not depend on the seed
    sites = [(-44, -60, 30), (-30, -78, 20), (-52, -40, 38), (-20, -84, 8), (-38, -30, 50),
             (40, -66, 34), (26, -82, 24), (52, -44, 30), (34, -50, 52), (18, -88, 12),
             (-48, 10, 30), (46, 20, 26), (-24, -62, 54)]
    for centre in sites:
        jitter = rng.normal(0, 1.0, 3)
        m = c.ellipsoid(tuple(np.add(centre, jitter)), (2.2, 2.2, 2.2), edge=0.12)
        c.paint(m, {"SWI": 40.0}, tissue="brain")
    siderosis, box = c.ellipsoid((46, -40, 46), (10, 22, 12))
    surface = (c.csf[box] > 0.35) & (c.gm[box] > 0.2)
    c.paint((siderosis * surface, box), {"SWI": 60.0}, tissue="brain")
    c.paint(c.ellipsoid((0, -20, 22), (30, 34, 12)), {"FLAIR": 600.0}, tissue="wm",
            keep=lambda xyz: np.float32(1.0) - _side(1, 12.0)(xyz) - _side(-1, 12.0)(xyz))


def _paint_nph(c: Canvas) -> None:
    """Enlarged lateral/third ventricles, transependymal FLAIR halo, tight high-convexity sulci."""
    x, y, z = np.meshgrid(*[c.affine[a, a] * np.arange(n) + c.affine[a, 3]
                            for a, n in enumerate(c.gm.shape)], indexing="ij")
    central = (np.abs(x) < 28) & (y > -45) & (y < 38) & (z > -6) & (z < 36)
    before = c.csf.copy()
    c.expand_csf(central, 6.0, keep_midline_mm=1.5)
    grown = (c.csf - before) > 0.3
    halo = ndimage.binary_dilation(grown, iterations=max(1, int(round(3 / c.tpl.voxel_mm))))
    halo &= ~grown
    full = tuple(slice(0, s) for s in halo.shape)
    c.paint((halo.astype(np.float32) * 0.8, full), {"FLAIR": 700.0, "T2": 640.0}, tissue="wm")
    tight = ((z > 45) & (c.csf > 0.05) & (c.csf < 0.9) & ~central).astype(np.float32) * 0.8
    moved = c.csf * tight
    c.csf -= moved
    c.gm += moved
    c.t1 += moved * 450.0


PAINTERS: dict[str, Callable[[Canvas], None]] = {
    "stroke": _paint_stroke,
    "ms": _paint_ms,
    "mts": _paint_mts,
    "hsv": _paint_hsv,
    "gbm": _paint_gbm,
    "alzheimer": _paint_alzheimer,
    "cadasil": _paint_cadasil,
    "pml": _paint_pml,
    "caa": _paint_caa,
    "nph": _paint_nph,
}


def render_case(kind: str, sequences: list[str], *, resolution_mm: int, seed: int) -> tuple[
        dict[str, np.ndarray], np.ndarray]:
    """The series of one synthetic case (`kind` in PAINTERS) and their shared affine."""
    series, affine, _ = render_case_with_lesions(kind, sequences, resolution_mm=resolution_mm,
                                                 seed=seed)
    return series, affine


def render_case_with_lesions(kind: str, sequences: list[str], *, resolution_mm: int, seed: int
                             ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """`render_case`, and the painted lesions as a 0/1 mask on the same grid."""
    tpl = load_template(resolution_mm)
    canvas = Canvas(tpl, sequences, np.random.default_rng(seed))
    PAINTERS[kind](canvas)
    return canvas.render(), tpl.affine, canvas.lesion_mask()
