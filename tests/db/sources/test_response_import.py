"""Responses to tasks the study already holds: a responses-only bundle, and harness files
(OpenAI Batch output, VLMEvalKit predictions, lm-evaluation-harness samples) converted into
one; refusals name the file and row, and leave the study unchanged."""

import json
import shutil
import zipfile
from pathlib import Path

import openpyxl
import pytest
from sqlmodel import Session, select

from db.bundle.importer import import_bundle
from db.engine import engine_for
from db.models import CollectionFailure, Response, ResponseFlag
from db.sources import answers
from db.sources import responses as response_import
from tests.db.bundle.bundles import snapshot, write_jsonl
from tests.db.sources.harness import refused, run


def _responses(url: str) -> list[tuple]:
    with Session(engine_for(url)) as s:
        return sorted((r.task_id, r.model, r.sample, r.text, json.dumps(r.usage))
                      for r in s.exec(select(Response)))


def _batch_line(custom_id: str, text: str | None = None, *, error: str | None = None,
                model: str = "gpt-4o-2024-08-06", status: int = 200) -> dict:
    if error:
        return {"id": "batch_req_1", "custom_id": custom_id, "response": None,
                "error": {"code": "server_error", "message": error}}
    return {"id": "batch_req_2", "custom_id": custom_id, "error": None, "response": {
        "status_code": status, "request_id": "req", "body": {
            "id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}}}


def test_a_responses_only_bundle_adds_responses_to_the_study(study: str, tmp_path: Path) -> None:
    bundle = tmp_path / "answers"
    bundle.mkdir()
    (bundle / "bundle.json").write_text(json.dumps({"format": "nmb-bundle/1", "name": "more"}))
    write_jsonl(bundle / "responses.jsonl", [
        {"response_id": "x-1", "task_id": "t1", "model": "model-x", "sample": 0, "text": "a"},
        {"response_id": "x-3", "task_id": "t3", "model": "model-x", "sample": 0, "text": "b",
         "turns": ["c", "d"]}])
    with Session(engine_for(study)) as s:
        summary = import_bundle(s, bundle)
    assert (summary.new_cases, summary.new_tasks, summary.new_responses) == (0, 0, 2)
    with Session(engine_for(study)) as s:  # again: unchanged
        assert import_bundle(s, bundle).unchanged_responses == 2
    # a bare responses.jsonl through import-responses --from nmb
    write_jsonl(tmp_path / "r.jsonl", [{"response_id": "y-1", "task_id": "t2",
                                        "model": "model-y", "sample": 0, "text": "e"}])
    assert run(study, tmp_path / "r.jsonl", "nmb").imported.new_responses == 1
    assert len(_responses(study)) == 3


def test_unknown_tasks_and_level_rules_are_checked_against_the_study(study: str,
                                                                    tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", [
        {"response_id": "z-1", "task_id": "nope", "model": "m", "sample": 0, "text": "a"},
        {"response_id": "z-2", "task_id": "nope", "model": "m", "sample": 1, "text": "a"},
        {"response_id": "z-3", "task_id": "gone", "model": "m", "sample": 0, "text": "a"},
        {"response_id": "z-4", "task_id": "t3", "model": "m", "sample": 0, "text": "a",
         "turns": ["only one"]}])
    assert refused(study, tmp_path / "r.jsonl", "nmb") == [
        "r.jsonl:4: turns has 1 answer but task \"t3\" has 2 stages (one answer per stage)",
        'r.jsonl: 2 task_ids are not tasks of this study: "nope" (lines 1, 2), "gone" (line 3)']


def test_batch_output_becomes_responses_failures_and_flags(study: str, tmp_path: Path) -> None:
    """Two samples of each task, under their own custom_ids (one batch holds each once)."""
    out = tmp_path / "batch_output.jsonl"
    write_jsonl(out, [_batch_line("t1-0", "Left MCA infarct."),
                      _batch_line("t2-0", "As GPT-4o, a model developed by OpenAI, I see a lesion."),
                      _batch_line("t1-1", error="The server had an error"),
                      _batch_line("t2-1", "", status=200)])  # empty: a failure too
    (tmp_path / "ids.json").write_text(json.dumps({f"t{t}-{k}": f"t{t}" for t in (1, 2)
                                                   for k in (0, 1)}))
    by_map = f"map:{tmp_path / 'ids.json'}"
    summary = run(study, out, "openai-batch", task_key=by_map)
    assert summary.imported.new_responses == 2 and summary.failures == 2
    assert summary.imported.flagged_responses == 1
    rows = _responses(study)
    assert rows[0][:3] == ("t1", "gpt-4o-2024-08-06", 0)
    assert json.loads(rows[0][4]) == {"prompt_tokens": 120, "completion_tokens": 30}
    with Session(engine_for(study)) as s:
        failures = sorted((f.task_id, f.sample, f.reason[:17])
                          for f in s.exec(select(CollectionFailure)))
        flagged = s.exec(select(ResponseFlag)).all()
    assert failures == [("t1", 1, "batch line error "), ("t2", 1, "empty answer")]
    assert len(flagged) == 1 and "[name removed]" in rows[1][3]
    assert _held_back(study) == {flagged[0].response_id}  # not assigned until reviewed
    before = snapshot(study)
    again = run(study, out, "openai-batch", task_key=by_map)  # the same file again: nothing new
    assert again.imported.new_responses == 0 and again.imported.unchanged_responses == 2
    assert again.failures == 0 and not again.changed  # no second run of the same failures
    assert snapshot(study) == before
    # --model overrides the file's, so the same answers are another model's
    assert run(study, out, "openai-batch", model="mine",
                task_key=by_map).imported.new_responses == 2


def test_batch_mistakes_are_named_by_line(study: str, tmp_path: Path) -> None:
    out = tmp_path / "b.jsonl"
    bad_usage = _batch_line("t1", "x")
    bad_usage["response"]["body"]["usage"]["prompt_tokens"] = "many"
    write_jsonl(out, [_batch_line("t9", "x"), bad_usage, {"custom_id": "t1"}, [1, 2],
                      _batch_line("t1", {"text": "an object"})])
    assert refused(study, out, "openai-batch") == [
        "b.jsonl:2: response.body.usage is not an object of token counts (integers >= 0)",
        "b.jsonl:3: has neither response nor error",
        "b.jsonl:4: is not a JSON object",
        "b.jsonl:5: response.body.choices[0].message.content is not a string",
        'b.jsonl: 1 task_id is not a task of this study: "t9" (row 1)']


def _xlsx(path: Path, rows: list[list]) -> Path:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    book.save(path)
    return path


def _held_back(url: str) -> set[str]:
    """The responses an assignment of every response to experts leaves out: held for review."""
    from db.raters.assignments import plan_assignment
    from db.users import add_user

    with Session(engine_for(url)) as s:
        if s.exec(select(Response)).first() is None:
            return set()
        add_user(s, name="held-check", role="expert", password="held-check-password")
        s.flush()
        plan = plan_assignment(s, raters=["held-check"], overlap=1)
        everything = set(s.exec(select(Response.response_id)))
        s.rollback()
    return everything - set(plan.items)


def test_vlmevalkit_xlsx_and_tsv_with_each_task_key_rule(study: str, tmp_path: Path) -> None:
    xlsx = _xlsx(tmp_path / "MyVLM_NeuroBench.xlsx", [
        ["index", "question", "prediction", "task_id"],
        [0, "Give your differential diagnosis.", "Stroke.", "t1"],
        [1, "Where is the lesion?", 42, "t2"],  # a number is its text
        [2, "Give your differential diagnosis.", "As MyVLM, I would say MS.", "t1"]])
    summary = run(study, xlsx, "vlmevalkit", model="MyVLM")
    assert summary.imported.new_responses == 3 and summary.imported.flagged_responses == 1
    assert [r[:4] for r in _responses(study)] == [("t1", "MyVLM", 0, "Stroke."),
                                                  ("t1", "MyVLM", 1, "As [name removed], I "
                                                                     "would say MS."),
                                                  ("t2", "MyVLM", 0, "42")]
    with Session(engine_for(study)) as s:
        [named] = s.exec(select(Response.response_id).where(Response.sample == 1)).all()
    assert _held_back(study) == {named}
    index_map = tmp_path / "map.json"
    index_map.write_text(json.dumps({"0": "t1", "1": "t2", "2": "t1"}))
    assert run(study, xlsx, "vlmevalkit", model="Other",
                task_key=f"map:{index_map}").imported.new_responses == 3
    tsv = tmp_path / "preds.tsv"
    tsv.write_text("index\tquestion\tprediction\n7\tWhere is the lesion?\tleft frontal\n")
    assert run(study, tsv, "vlmevalkit", model="Third",
                task_key="prompt").imported.new_responses == 1


def test_vlmevalkit_refusals(study: str, tmp_path: Path, monkeypatch) -> None:
    formula = _xlsx(tmp_path / "f.xlsx", [["index", "prediction"],
                                          ["t1", '=HYPERLINK("http://x","click")']])
    assert refused(study, formula, "vlmevalkit", model="m") == [
        "f.xlsx: row 2, cell B2 holds a formula: prediction files hold values only"]
    columns = _xlsx(tmp_path / "c.xlsx", [["idx", "answer"], [1, "x"]])
    assert refused(study, columns, "vlmevalkit", model="m") == [
        "c.xlsx: has no column index, prediction (found: idx, answer)"]
    nameless = _xlsx(tmp_path / "n.xlsx", [["index", "prediction"], ["t1", "x"]])
    assert refused(study, nameless, "vlmevalkit") == [
        "n.xlsx: 1 answer names no model (first: n.xlsx row 2): give --model NAME"]
    unknown = _xlsx(tmp_path / "u.xlsx", [["index", "prediction"], [3, "x"], [4, "y"]])
    assert refused(study, unknown, "vlmevalkit", model="m") == [
        'u.xlsx: 2 task_ids are not tasks of this study: "3" (row 2), "4" (row 3); these '
        "index values look like row numbers, not task ids: --task-key order:TASKS reads them as "
        "rows (from 0) of the task file the harness was given, map:FILE.json through a key map"]
    fake = tmp_path / "fake.xlsx"
    fake.write_text("index,prediction\n")
    assert refused(study, fake, "vlmevalkit", model="m")[0].startswith(
        "fake.xlsx: is not an .xlsx workbook")
    same = tmp_path / "same.tsv"  # two tasks with one prompt: ambiguous
    with Session(engine_for(study)) as s:
        from db.models import Task
        s.add(Task(task_id="t4", case_id="c1", family="lesion", level=1,
                   prompt="Where is the lesion?", stages=[]))
        s.commit()
    same.write_text("index\tquestion\tprediction\n1\tWhere is the lesion?\tx\n")
    assert refused(study, same, "vlmevalkit", model="m", task_key="prompt") == [
        "same.tsv: 1 question is the prompt of more than one task, which the prompt cannot "
        "tell apart: 'Where is the lesion?' (same.tsv row 2); use --task-key order:TASKS (the "
        "row order of the task file the harness was given), map:FILE.json or field:NAME"]
    twice = tmp_path / "twice.tsv"  # which prediction is the answer? (the last one was taken)
    twice.write_text("index\tprediction\tprediction\nt1\tStroke.\tMS.\n")
    assert refused(study, twice, "vlmevalkit", model="m") == [
        "twice.tsv: has the column prediction twice"]
    monkeypatch.setattr(answers, "MAX_FILE_BYTES", 10)
    big = tmp_path / "big.tsv"
    big.write_text("index\tprediction\nt1\t" + "x" * 100 + "\n")
    assert refused(study, big, "vlmevalkit", model="m") == [
        f"big.tsv: is {big.stat().st_size:,} bytes, more than the limit of 10"]


def _damaged_sheet(good: Path, out: Path, damage) -> Path:
    """`good` with its first sheet's XML replaced by `damage(xml)` (the zip itself sound)."""
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(name, damage(data) if name == "xl/worksheets/sheet1.xml" else data)
    return out


def test_a_workbook_whose_sheet_cannot_be_read_is_one_line(study: str, tmp_path: Path) -> None:
    """The sheet is read row by row after the workbook opens: a cut or invalid sheet is
    refused like a workbook that does not open, naming the file; nothing is written."""
    good = _xlsx(tmp_path / "good.xlsx", [["index", "prediction"], ["t1", "x"], ["t2", "y"]])
    for name, damage in (("cut.xlsx", lambda xml: xml[: len(xml) // 2]),
                         ("garbage.xlsx", lambda xml: b"\x00\xff not XML")):
        bad = _damaged_sheet(good, tmp_path / name, damage)
        [line] = refused(study, bad, "vlmevalkit", model="m")
        assert line.startswith(f"{name}: is not a readable .xlsx workbook: "), line


def test_lm_eval_samples_each_repeat_is_a_sample(study: str, tmp_path: Path) -> None:
    log = tmp_path / "samples_neuro_2025-01-01T00-00-00.jsonl"
    write_jsonl(log, [
        {"doc_id": 0, "doc": {"task_id": "t1", "question": "q"}, "target": "",
         "arguments": [["prompt", {}]], "resps": [["first", "second"]],
         "filtered_resps": ["first"]},
        {"doc_id": 1, "doc": {"task_id": "t2"}, "resps": [["third"]]}])
    summary = run(study, log, "lm-eval", model="hf-model")
    assert summary.imported.new_responses == 3
    assert [r[:4] for r in _responses(study)] == [
        ("t1", "hf-model", 0, "first"), ("t1", "hf-model", 1, "second"),
        ("t2", "hf-model", 0, "third")]
    bad = tmp_path / "bad.jsonl"
    write_jsonl(bad, [{"doc_id": 0, "resps": "text"}, {"doc_id": 1, "resps": [[3]]}])
    assert refused(study, bad, "lm-eval", model="m") == [
        "bad.jsonl:1: is not an lm-evaluation-harness sample (needs doc_id and resps, a list "
        "of lists of answers)",
        "bad.jsonl:2: resps[0] is not a list of answer texts"]


def test_text_over_the_limit_is_named_by_its_row(study: str, tmp_path: Path) -> None:
    tsv = tmp_path / "long.tsv"
    tsv.write_text("index\tprediction\nt1\tok\nt2\t" + "x" * 200_001 + "\n")
    assert refused(study, tsv, "vlmevalkit", model="m") == [
        "long.tsv row 3: text is 200,001 characters, more than the limit of 200,000"]
    shutil.rmtree(tmp_path / "base")


def _lm_eval_line(doc_id: int, task_id: str, answer: str, filter_name: str,
                  extracted: str) -> dict:
    """A line as lm-evaluation-harness writes it (evaluator.evaluate's logged sample, saved by
    EvaluationTracker.save_results_samples): one per document per filter, `resps` the same
    under every filter, `arguments` sanitized to gen_args_i/arg_j."""
    prompt = f"Question {doc_id}: give your differential diagnosis.\nAnswer:"
    return {"doc_id": doc_id, "doc": {"task_id": task_id, "question": prompt},
            "target": "Glioblastoma",
            "arguments": {"gen_args_0": {"arg_0": prompt,
                                         "arg_1": {"until": ["Question:"], "do_sample": False}}},
            "resps": [[answer]], "filtered_resps": [extracted], "filter": filter_name,
            "metrics": ["exact_match"], "doc_hash": f"{doc_id:064x}",
            "prompt_hash": f"{doc_id + 1:064x}", "target_hash": f"{doc_id + 2:064x}",
            "exact_match": float(extracted == "Glioblastoma")}


def test_lm_eval_filters_count_each_answer_once(study: str, tmp_path: Path) -> None:
    """A two-filter log holds each document twice (all strict-match lines, then all
    flexible-extract lines): one sample per document, under the first filter unless --filter
    names another; a filter the file does not hold is one line listing those it does."""
    answers = {0: ("t1", "Glioblastoma, then lymphoma."), 1: ("t2", "Probably a metastasis.")}
    log = tmp_path / "samples_neuro_2025-01-01T00-00-00.jsonl"
    write_jsonl(log, [_lm_eval_line(d, t, a, f, a.split(",")[0] if f == "flexible-extract"
                                    else "[invalid]")
                      for f in ("strict-match", "flexible-extract")
                      for d, (t, a) in answers.items()])
    summary = run(study, log, "lm-eval", model="hf-model")
    assert summary.imported.new_responses == 2
    assert (summary.filter, summary.other_filters) == ("strict-match", ["flexible-extract"])
    assert "filter strict-match read, not flexible-extract" in str(summary)
    assert [r[:4] for r in _responses(study)] == [
        ("t1", "hf-model", 0, "Glioblastoma, then lymphoma."),
        ("t2", "hf-model", 0, "Probably a metastasis.")]
    before = snapshot(study)
    with pytest.raises(response_import.UserError) as info:
        run(study, log, "lm-eval", model="hf-model", filter_name="none")
    assert str(info.value) == ("--filter none: samples_neuro_2025-01-01T00-00-00.jsonl has the "
                               "filters strict-match, flexible-extract")
    assert snapshot(study) == before
    other = run(study, log, "lm-eval", model="hf-model", filter_name="flexible-extract")
    assert (other.filter, other.other_filters) == ("flexible-extract", ["strict-match"])
    assert (other.imported.new_responses, other.imported.unchanged_responses) == (0, 2)
    assert len(_responses(study)) == 2


def test_an_answer_given_twice_in_one_file_is_refused(study: str, tmp_path: Path) -> None:
    """Two runs in one file (a doc_id twice under one filter, an index twice): one line naming
    them, nothing written, where they were imported as samples 0 and 1 of one task."""
    log = tmp_path / "two_runs.jsonl"
    write_jsonl(log, [_lm_eval_line(d, t, "x", "none", "x")
                      for _ in range(2) for d, t in ((0, "t1"), (1, "t2"))])
    assert refused(study, log, "lm-eval", model="m") == [
        "two_runs.jsonl: 2 doc_ids are answered on more than one line for one model, which "
        "would count one answer as two samples: \"0\" (lines 1, 3); \"1\" (lines 2, 4)"]
    tsv = tmp_path / "preds.tsv"
    tsv.write_text("index\tprediction\nt1\ta\nt2\tb\nt1\tc\n")
    assert refused(study, tsv, "vlmevalkit", model="m") == [
        "preds.tsv: 1 index is answered on more than one row for one model, which would count "
        "one answer as two samples: \"t1\" (rows 2, 4)"]
    batch = tmp_path / "batch.jsonl"
    write_jsonl(batch, [_batch_line("t1", "a"), _batch_line("t1", error="boom")])
    assert refused(study, batch, "openai-batch") == [
        "batch.jsonl: 1 custom_id is answered on more than one line for one model, which would "
        "count one answer as two samples: \"t1\" (lines 1, 2)"]
    write_jsonl(tmp_path / "responses.jsonl", [
        {"response_id": f"x-{i}", "task_id": "t1", "model": "m", "sample": 0, "text": "a"}
        for i in range(2)])
    assert refused(study, tmp_path / "responses.jsonl", "nmb") == [
        'responses.jsonl:2: model "m" has two responses with sample 0 for task "t1" (first on '
        "line 1)"]
