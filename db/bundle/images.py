"""Hash and inspect a bundle's images, in parallel.

Hashing (sha256) runs in threads: hashlib releases the GIL and the files are read once more
from the page cache by the inspection. Inspection (`imaging.inspect_image`, which opens each
image and reads every voxel) holds the GIL for much of its work, so many images are inspected
in worker processes (one per core) when they are large enough to pay for starting them, else
in-process (`PROCESS_BYTES`: the bytes the images hold once decoded, read from their headers:
starting two spawned workers costs about 2 s on a loaded 2-core machine, inspecting in-process
runs at 50-340 MiB/s of decoded voxels, so below about 512 MiB one process finishes first;
docs/benchmarks.md). Workers exit when their
parent does, even if it is killed (SIGKILL gives it no chance to stop them). Images whose
content is already in the study (same sha256) were fully checked when first imported and are
not read again: their shape and voxel sizes come from the study.
"""

import contextlib
import hashlib
import math
import multiprocessing
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from errors import UserError

#: Use worker processes when the images to inspect hold this many bytes once decoded (and
#: there are two or more, and two or more cores): below it, starting them costs more.
PROCESS_BYTES = 512 * 2**20
Facts = tuple[list[int], list[float]]  # shape, voxel sizes
#: shape, voxel sizes, and the one value of every voxel of a blank image (else None)
Inspected = tuple[list[int], list[float], float | None]
Progress = Callable[[float, str], None]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _hash(path: Path) -> str | OSError:
    try:
        return sha256_file(path)
    except OSError as e:
        return e


def inspect_file(path: Path) -> Inspected | str:
    """(shape, voxel sizes, constant) of a usable image, or why it cannot be used (one line)."""
    from imaging import inspect_image

    try:
        info = inspect_image(Path(path))
    except UserError as e:
        return str(e).removeprefix(f"{Path(path).name}: ")
    return [int(x) for x in info.shape], [float(x) for x in info.voxel_sizes], info.constant


def decoded_bytes(path: Path) -> int:
    """About the bytes inspecting the image reads: voxels x bytes per voxel from a NIfTI-1
    header (the first 348 bytes, decompressed if gzipped), else the file's size (also for a
    header that cannot be read: the inspection reports why)."""
    import gzip
    import struct

    try:
        size = path.stat().st_size
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            head = fh.read(348)
    except (OSError, EOFError):
        return 0
    for order in "<>":
        if len(head) == 348 and struct.unpack(order + "i", head[:4])[0] == 348:
            dims = struct.unpack(order + "8h", head[40:56])
            bitpix = struct.unpack(order + "h", head[72:74])[0]
            if 1 <= dims[0] <= 7 and all(d > 0 for d in dims[1:1 + dims[0]]) and bitpix > 0:
                return math.prod(dims[1:1 + dims[0]]) * bitpix // 8
    return size


def hash_all(paths: Sequence[Path]) -> list[str | OSError]:
    workers = max(1, min(len(paths), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_hash, paths))


def inspect_all(paths: Sequence[Path], progress: Progress | None = None,
                start: float = 0.0, span: float = 1.0) -> list[Inspected | str]:
    """`inspect_file` of every path, in worker processes when they hold `PROCESS_BYTES` or
    more once decoded."""
    n = len(paths)
    workers = min(n, os.cpu_count() or 1)
    if workers < 2 or sum(decoded_bytes(Path(p)) for p in paths) < PROCESS_BYTES:
        results = []
        for i, p in enumerate(paths, start=1):
            results.append(inspect_file(p))
            if progress:
                progress(start + span * i / n, f"checked {i}/{n} images")
        return results
    # "spawn": never fork a process that may be running threads (Streamlit, thread pools).
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=exit_with_parent,
                             initargs=(os.getpid(),)) as pool:
        with _workers_skip_main():  # map() submits every chunk, so every worker starts here
            chunks = pool.map(inspect_file, paths, chunksize=4)
        results = []
        for i, r in enumerate(chunks, start=1):
            results.append(r)
            if progress:
                progress(start + span * i / n, f"checked {i}/{n} images")
        return results


def exit_with_parent(parent: int, every: float = 0.2) -> None:
    """In a worker: exit as soon as the process `parent` is gone (checked `every` seconds).

    A killed parent cannot stop its pool, and a spawned worker waiting for work never notices
    (it holds its queue's write end itself), nor does the resource tracker it keeps alive.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


_main_lock = threading.Lock()


@contextlib.contextmanager
def _workers_skip_main() -> Iterator[None]:
    """Processes started inside do not run this process's `__main__` script.

    A spawned worker re-runs the parent's `__main__` from its file. Under Streamlit that is the
    page being run (its script runner installs the page as `__main__`), so every worker would
    run the admin page and die. An empty `__main__` while workers start gives them nothing to
    re-run; `inspect_file` lives in this module, which workers import by name.
    """
    with _main_lock:
        saved = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = saved


def timed(timings: dict[str, float], key: str) -> Callable[[], None]:
    """Start a stopwatch; calling the result adds the elapsed seconds to timings[key]."""
    t0 = time.perf_counter()

    def stop() -> None:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0

    return stop
