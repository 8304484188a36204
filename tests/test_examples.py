"""The sample bundle in examples/: the import commands of docs/commands.md work on it (SQLite), and the
committed files are exactly what its script writes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import nmb

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

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


def test_the_demo_after_the_sample_bundle_refuses_cleanly(nmb_home: Path) -> None:
    """The order of docs/guide.md (import the sample, then `nmb demo`): one line, exit 2, nothing
    half-loaded; `--if-empty` (make run) leaves the study alone and succeeds."""
    assert nmb("import", "examples/sample-bundle").returncode == 0
    before = _status()
    out = nmb("demo", "--resolution", "2")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == ("nmb: the study holds 2 cases that are not the demo's: the "
                                  "demo needs a study of its own (e.g. NMB_HOME=~/nmb-demo nmb "
                                  "demo); nothing was loaded")
    assert _status() == before
    kept = nmb("demo", "--if-empty")
    assert kept.returncode == 0 and "not empty" in kept.stdout and _status() == before


def test_the_example_harness_files_import_into_the_sample_study(nmb_home: Path) -> None:
    assert nmb("import", "examples/sample-bundle").returncode == 0
    batch = nmb("import-responses", "examples/responses/batch_output.jsonl", "--from",
                "openai-batch")
    assert batch.returncode == 0, batch.stderr
    assert "1 response;" in batch.stdout and "1 failed answer recorded" in batch.stdout
    tsv = nmb("import-responses", "examples/responses/MyVLM_NeuroBench.tsv", "--from",
              "vlmevalkit", "--model", "MyVLM", "--task-key", "prompt")
    assert tsv.returncode == 0 and "1 response;" in tsv.stdout, tsv.stderr
