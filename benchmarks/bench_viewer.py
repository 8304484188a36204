"""Viewer figures: slice change vs its floor and matplotlib, cold load, shared memory.

1. Slice change on a cached 256x256x180 volume (index -> PNG bytes, `take_slice` +
   `render_png` with letters and crosshair), against the floor measured in the same run
   (numpy slice + uint8 windowing + Pillow PNG encode at the same zlib level) and against
   matplotlib `imshow` + `savefig` of the same slice.
2. First view of a 1 mm MNI-sized (182x218x182 int16) `.nii.gz`: cold decode + window
   statistics + first PNG, against `nib.load(...).get_fdata()`; then later slices, counting
   cache misses (file reads) to show they do not touch the file.
3. Memory: 20 threads (Streamlit runs each session as a thread of one process) open the same
   case at once; we report distinct decoded copies (by object identity), the cache's byte
   count and the process RSS growth (from /proc/self/statm) against one volume's size.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
import tracemalloc
from pathlib import Path

import nibabel as nib
import numpy as np
from PIL import Image

from benchmarks.timing import median_seconds
from imaging import load_volume, preset_window, render_png, take_slice, volume_cache
from imaging.render import PNG_COMPRESS_LEVEL


def _phantom(shape: tuple[int, int, int], rng: np.random.Generator) -> np.ndarray:
    """A head-like ellipsoid with smooth texture and noise (compresses like real MRI)."""
    grid = np.ogrid[tuple(slice(0, n) for n in shape)]
    r2 = sum(((g - n / 2) / (0.42 * n)) ** 2 for g, n in zip(grid, shape, strict=True))
    head = (r2 < 1.0) * (600 + 300 * np.cos(r2 * 9))
    return (head + rng.normal(0, 20, shape) * (r2 < 1.0)).astype(np.float32)


def _floor_png(data: np.ndarray, index: int, low: float, high: float) -> bytes:
    grey = np.subtract(data[:, :, index], np.float32(low), dtype=np.float32)
    grey *= np.float32(255 / (high - low))
    np.clip(grey, 0, 255, out=grey)
    grey = grey.astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(grey).save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def _matplotlib_png(data: np.ndarray, index: int, low: float, high: float) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.56, 2.56), dpi=100)
    ax.imshow(data[:, :, index].T, cmap="gray", vmin=low, vmax=high, origin="lower")
    ax.axis("off")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bench_slice_change(tmp: Path, rng: np.random.Generator) -> None:
    path = tmp / "t1_256.nii"
    nib.save(nib.Nifti1Image(_phantom((256, 256, 180), rng), np.eye(4)), path)
    volume = load_volume(path)
    window = preset_window(volume.intensity_stats(), "auto")
    crosshair = volume.center_world()
    counter = iter(range(10**9))

    def viewer() -> bytes:
        index = 30 + next(counter) % 120
        volume_now = load_volume(path)  # what a rerun does: cache lookup by path
        sl = take_slice(volume_now, "axial", index=index, crosshair_mm=crosshair)
        return render_png(sl, window)

    def floor() -> bytes:
        return _floor_png(volume.data, 30 + next(counter) % 120, window.low, window.high)

    def mpl() -> bytes:
        return _matplotlib_png(volume.data, 30 + next(counter) % 120, window.low, window.high)

    t_viewer = median_seconds(viewer, repeat=61, warmup=5)
    t_floor = median_seconds(floor, repeat=61, warmup=5)
    t_mpl = median_seconds(mpl, repeat=15, warmup=2)
    print("slice change, cached 256x256x180 volume, axial 256x256, index -> PNG bytes:")
    print(f"  viewer (take_slice + render_png, letters + crosshair): {t_viewer * 1e3:7.2f} ms")
    print(f"  floor (numpy slice + uint8 window + PNG level {PNG_COMPRESS_LEVEL}):  "
          f"{t_floor * 1e3:7.2f} ms   viewer/floor = {t_viewer / t_floor:.2f} (target <= 1.5)")
    print(f"  matplotlib imshow + savefig:                         {t_mpl * 1e3:7.2f} ms   "
          f"matplotlib/viewer = {t_mpl / t_viewer:.1f}x (target >= 5)")


def bench_cold_load(tmp: Path, rng: np.random.Generator) -> None:
    path = tmp / "mni_1mm.nii.gz"
    data = _phantom((182, 218, 182), rng).astype(np.int16)
    affine = np.array([[1, 0, 0, -90], [0, 1, 0, -126], [0, 0, 1, -72], [0, 0, 0, 1.0]])
    nib.save(nib.Nifti1Image(data, affine), path)
    size_mb = path.stat().st_size / 2**20

    def cold() -> bytes:
        volume_cache().clear()
        volume = load_volume(path)
        sl = take_slice(volume, "axial")
        return render_png(sl, preset_window(volume.intensity_stats(), "auto"))

    def baseline() -> object:
        return nib.load(path).get_fdata()

    t_cold = median_seconds(cold, repeat=5, warmup=1)
    t_base = median_seconds(baseline, repeat=5, warmup=1)
    misses = volume_cache().stats().misses
    volume = load_volume(path)
    window = preset_window(volume.intensity_stats(), "auto")
    t_next = median_seconds(
        lambda: render_png(take_slice(load_volume(path), "axial", index=60), window), repeat=21
    )
    reads = volume_cache().stats().misses - misses
    print(f"first view of a 1 mm MNI-sized .nii.gz (182x218x182 int16, {size_mb:.1f} MB on disk):")
    print(f"  cold: decode + reorient + window stats + first PNG: {t_cold * 1e3:7.1f} ms")
    print(f"  baseline nib.load(...).get_fdata():                 {t_base * 1e3:7.1f} ms   "
          f"cold/baseline = {t_cold / t_base:.2f}")
    print(f"  later slices: {t_next * 1e3:.2f} ms each; file reads during 23 later slices: "
          f"{reads} (0 = never re-read)")


def bench_shared_memory(tmp: Path, rng: np.random.Generator) -> None:
    path = tmp / "case_t1.nii.gz"
    nib.save(nib.Nifti1Image(_phantom((182, 218, 182), rng), np.eye(4)), path)
    volume_cache().clear()
    tracemalloc.start()
    rss_before = _rss_bytes()
    start = threading.Barrier(20)
    seen: list[int] = []

    def session() -> None:
        start.wait()
        volume = load_volume(path)
        render_png(take_slice(volume, "axial"), preset_window(volume.intensity_stats()))
        seen.append(id(volume))

    threads = [threading.Thread(target=session) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rss_growth = _rss_bytes() - rss_before
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    one = load_volume(path).nbytes
    stats = volume_cache().stats()
    print("memory, 20 concurrent sessions (threads) opening the same series:")
    print(f"  distinct decoded copies: {len(set(seen))}; cache holds {stats.entries} entry, "
          f"{stats.nbytes / 2**20:.1f} MiB; one volume = {one / 2**20:.1f} MiB")
    print(f"  allocations still held after all sessions rendered (tracemalloc): "
          f"{retained / 2**20:.1f} MiB = {retained / one:.2f} x one volume "
          f"(20 private copies would be 20 x); peak during decode {peak / 2**20:.1f} MiB")
    print(f"  process RSS growth: {rss_growth / 2**20:.1f} MiB (includes allocator slack)")


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        bench_slice_change(Path(tmp), rng)
        bench_cold_load(Path(tmp), rng)
        bench_shared_memory(Path(tmp), rng)
    volume_cache().clear()


if __name__ == "__main__":
    main()
