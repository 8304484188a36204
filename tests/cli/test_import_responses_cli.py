"""`nmb import-responses` as docs/commands.md runs it: a real process, exit codes, one line per
mistake, nothing written on a refusal."""

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import nmb
from tests.db.bundle.bundles import snapshot, write_bundle, write_jsonl

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def test_readme_import_responses_from_batch_output(nmb_home: Path, tmp_path: Path) -> None:
    assert nmb("import", str(write_bundle(tmp_path / "b", with_responses=[]))).returncode == 0
    out = tmp_path / "batch_output.jsonl"
    write_jsonl(out, [{"custom_id": "t1", "error": None, "response": {"status_code": 200, "body": {
        "model": "gpt-4o-mini", "choices": [{"finish_reason": "stop", "message": {
            "role": "assistant", "content": "Stroke."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}}}},
        {"custom_id": "t2", "response": None, "error": {"code": "x", "message": "boom"}}])
    done = nmb("import-responses", str(out), "--from", "openai-batch")
    assert done.returncode == 0, done.stderr
    assert "imported 0 cases, 0 series, 0 tasks, 1 response;" in done.stdout
    assert "1 failed answer recorded as collection failures" in done.stdout
    again = json.loads(nmb("import-responses", str(out), "--from", "openai-batch",
                           "--json").stdout)
    assert again["imported"]["unchanged_responses"] == 1


def test_import_responses_mistakes(nmb_home: Path, tmp_path: Path) -> None:
    assert nmb("import", str(write_bundle(tmp_path / "b", with_responses=[]))).returncode == 0
    url = f"sqlite:///{nmb_home / 'study.db'}"
    before = snapshot(url)
    tsv = tmp_path / "p.tsv"
    tsv.write_text("index\tprediction\nt9\tx\n")
    out = nmb("import-responses", str(tsv), "--from", "vlmevalkit", "--model", "m")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert out.stderr == 'nmb: p.tsv: 1 task_id is not a task of this study: "t9" (row 2)\n'
    out = nmb("import-responses", str(tsv), "--from", "vlmevalkit", "--task-key", "columns")
    assert out.returncode == 2 and "is not field:NAME, map:FILE.json, order:TASKS or prompt" in out.stderr
    log = tmp_path / "samples.jsonl"
    write_jsonl(log, [{"doc_id": 0, "doc": {"task_id": "t1"}, "resps": [["a"]],
                       "filtered_resps": ["a"], "filter": f} for f in ("strict", "flexible")])
    out = nmb("import-responses", str(log), "--from", "lm-eval", "--model", "m", "--filter", "x")
    assert (out.returncode, out.stderr) == (
        2, "nmb: --filter x: samples.jsonl has the filters strict, flexible\n"), out.stderr
    assert snapshot(url) == before


def test_an_empty_responses_file_holds_no_answer_in_every_format(nmb_home: Path,
                                                                 tmp_path: Path) -> None:
    """An empty (or blank) responses.jsonl with --from nmb printed "imported ... 0 responses",
    exit 0, where the harness formats refuse an empty file: now the same one line, exit 2."""
    assert nmb("import", str(write_bundle(tmp_path / "b", with_responses=[]))).returncode == 0
    before = snapshot(f"sqlite:///{nmb_home / 'study.db'}")
    for name, text in (("responses.jsonl", ""), ("blank.jsonl", "\n  \n")):
        (tmp_path / name).write_text(text)
        out = nmb("import-responses", str(tmp_path / name), "--from", "nmb")
        assert (out.returncode, out.stderr) == (2, f"nmb: {name}: holds no answer\n"), out.stderr
    assert snapshot(f"sqlite:///{nmb_home / 'study.db'}") == before
