"""Import of the scale bundle (120 cases x 3 sequences of 1 mm MNI-sized volumes, 16,000
responses) into a fresh SQLite study, with where the time goes.

Baselines measured in the same run on the same files: sha256 of every image and a plain
gzip decompression of every image (the least any import that hashes and fully reads the
images must do). One run each: the import takes tens of seconds, so no median over repeats.
"""

import gzip
import hashlib
import os
import resource
import tempfile
import time
from pathlib import Path

N_CASES, N_SEQUENCES, N_RESPONSES = 120, 3, 16000


def _sha256_all(files: list[Path]) -> None:
    for f in files:
        hashlib.sha256(f.read_bytes()).hexdigest()


def _gunzip_all(files: list[Path]) -> None:
    for f in files:
        with gzip.open(f) as z:
            while z.read(1 << 24):
                pass


def _cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the inspection workers)."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    from demo.bundle import write_scale_bundle

    with tempfile.TemporaryDirectory(prefix="nmb-bench-import-") as tmp:
        tmp_path = Path(tmp)
        old_home, old_url = os.environ.get("NMB_HOME"), os.environ.pop("NMB_DATABASE_URL", None)
        os.environ["NMB_HOME"] = str(tmp_path / "home")
        try:
            start = time.perf_counter()
            bundle = write_scale_bundle(tmp_path / "scale", n_cases=N_CASES,
                                        n_sequences=N_SEQUENCES, n_responses=N_RESPONSES)
            files = sorted(bundle.glob("cases/*/*.nii.gz"))
            size = sum(f.stat().st_size for f in files)
            print(f"scale bundle: {len(files)} images, {size / 2**20:.0f} MiB on disk, "
                  f"written in {time.perf_counter() - start:.1f} s (not part of the import)")
            _run(bundle, files)
        finally:
            if old_home is None:
                os.environ.pop("NMB_HOME", None)
            else:
                os.environ["NMB_HOME"] = old_home
            if old_url is not None:
                os.environ["NMB_DATABASE_URL"] = old_url


def _run(bundle: Path, files: list[Path]) -> None:
    from db.bundle.importer import import_bundle
    from db.engine import session, upgrade
    from db.status import counts

    upgrade()
    cpu0 = _cpu_seconds()
    with session() as s:
        summary = import_bundle(s, bundle)
    cpu = _cpu_seconds() - cpu0
    with session() as s:
        got = counts(s)
    t = summary.timings
    total = t["total"]
    print(f"import: {total:.1f} s for {got['cases']} cases, {got['series']} series, "
          f"{got['tasks']} tasks, {got['responses']} responses "
          f"({'under' if total < 60 else 'OVER'} the 60 s target)")
    print("where the time goes (wall seconds):")
    for key, label in [("parse", "parse JSON/JSONL, check fields and references"),
                       ("image_hash", "sha256 of every image (threads)"),
                       ("image_inspect", "open + fully read new images (worker processes)"),
                       ("db_check", "compare with the study (existing ids)"),
                       ("model_names", "search new responses for model names"),
                       ("copy", "copy images into NMB_HOME (hash-verified)"),
                       ("db_insert", "insert rows (executemany)"),
                       ("commit", "commit")]:
        if key in t:
            print(f"  {label:<52} {t[key]:7.2f} s  {100 * t[key] / total:5.1f} %")
    print(f"  {summary.images_inspected} images inspected; CPU used by the import: "
          f"{cpu:.1f} s of {2 * total:.1f} s available on 2 cores (the rest went to other "
          f"processes on this machine or to I/O)")

    with session() as s:
        again = import_bundle(s, bundle)
    print(f"re-import (no-op): {again.timings['total']:.1f} s, "
          f"{again.unchanged_responses} responses unchanged, {again.new_responses} new, "
          f"{again.images_inspected} images inspected (known content is not read again)")

    hash_s = _timed(_sha256_all, files)
    gunzip_s = _timed(_gunzip_all, files)
    floor = hash_s + gunzip_s
    print(f"baseline, one thread: sha256 of all images {hash_s:.1f} s, gunzip of all images "
          f"{gunzip_s:.1f} s, together {floor:.1f} s")
    print(f"ratio import / baseline: {total / floor:.2f}; image phase / baseline: "
          f"{t['images'] / floor:.2f}")
