"""The sample bundle in examples/: the README's import commands work on it (SQLite), and the
committed files are exactly what its script writes."""

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli import nmb

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample-bundle"
EXPECTED = {"cases": 2, "series": 3, "tasks": 3, "responses": 6}


def _status() -> dict[str, int]:
    out = nmb("status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_readme_imports_the_sample_bundle(nmb_home: Path) -> None:
    dry = nmb("import", "examples/sample-bundle", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would import 2 cases, 3 series, 3 tasks, 6 responses" in dry.stdout
    assert all(_status()[k] == 0 for k in EXPECTED)  # a dry run writes nothing
    done = nmb("import", "examples/sample-bundle")
    assert done.returncode == 0, done.stderr
    status = _status()
    assert {k: status[k] for k in EXPECTED} == EXPECTED
    again = nmb("import", "examples/sample-bundle")  # idempotent: nothing new
    assert again.returncode == 0 and "unchanged 2 cases, 3 tasks, 6 responses" in again.stdout
    assert sum(f.stat().st_size for f in SAMPLE.rglob("*") if f.is_file()) < 200_000


def test_the_committed_sample_bundle_is_what_its_script_writes(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_sample_bundle.py"),
                    "--out", str(out)], check=True, capture_output=True, timeout=300)
    files = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for f in files:
        assert (SAMPLE / f).read_bytes() == (out / f).read_bytes(), f
