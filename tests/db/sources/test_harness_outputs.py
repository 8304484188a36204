"""Harness outputs in the exact shapes the tools write them: OpenAI Batch output of
/v1/responses, vLLM's run_batch output, bare chat.completion lines (vLLM serve, Ollama's /v1),
Ollama's /api/chat, VLMEvalKit predictions and lmms-eval / lm-eval samples keyed by the row
order of the task file; a one-text answer to a staged task refused or stored as its final
stage only and flagged in results; spreadsheets read to their header's width and a row cap."""

import json
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import CollectionFailure, GraderScore, Response, Task
from db.sources import responses as response_import
from errors import UserError
from tests.db.bundle.bundles import snapshot, write_bundle, write_jsonl
from tests.db.sources.harness import refused, run

ROOT = Path(__file__).resolve().parents[3]
SAME = "Give your differential diagnosis."


def _stored(url: str) -> list[tuple]:
    with Session(engine_for(url)) as s:
        return sorted((r.task_id, r.model, r.sample, r.text, r.turns, r.usage)
                      for r in s.exec(select(Response)))


def _failures(url: str) -> list[tuple]:
    with Session(engine_for(url)) as s:
        return sorted((f.model, f.task_id, f.reason) for f in s.exec(select(CollectionFailure)))


def _responses_line(custom_id: str, text: str, *, status: str = "completed") -> dict:
    """A Batch output line of a /v1/responses request, as OpenAI writes it (a reasoning model:
    a reasoning item before the message)."""
    return {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "error": None, "response": {
        "status_code": 200, "request_id": "req_9f2c", "body": {
            "id": "resp_67cb71b351908190", "object": "response", "created_at": 1741476542,
            "status": status, "error": None,
            "incomplete_details": ({"reason": "max_output_tokens"} if status == "incomplete"
                                   else None),
            "instructions": None, "max_output_tokens": 2048, "model": "o4-mini-2025-04-16",
            "output": [
                {"type": "reasoning", "id": "rs_67cb", "summary": []},
                {"type": "message", "id": "msg_67cb", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": None}, "store": True,
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
            "tools": [], "top_p": 1.0, "truncation": "disabled",
            "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 87, "output_tokens_details": {"reasoning_tokens": 64},
                      "total_tokens": 123},
            "user": None, "metadata": {}}}}


def _chat_completion(text: str, model: str, **extra) -> dict:
    """A chat.completion as vLLM's OpenAI server writes it (its extra fields included)."""
    return {"id": "chatcmpl-8c1f", "object": "chat.completion", "created": 1736420000,
            "model": model, "choices": [{
                "index": 0, "message": {"role": "assistant", "reasoning_content": None,
                                        "content": text, "tool_calls": []},
                "logprobs": None, "finish_reason": "stop", "stop_reason": None}],
            "usage": {"prompt_tokens": 812, "total_tokens": 876, "completion_tokens": 64,
                      "prompt_tokens_details": None},
            "prompt_logprobs": None, "kv_transfer_params": None, **extra}


def test_batch_output_of_v1_responses_and_of_vllm_run_batch(study: str, tmp_path: Path) -> None:
    """/v1/responses lines lost every answer (exit 0, 0 imported, the good answers recorded as
    failures; without --model a refusal naming no model); vLLM's error lines (a string error,
    status 400) refused the file."""
    out = tmp_path / "batch_output.jsonl"
    write_jsonl(out, [_responses_line("t1", "Left MCA infarct."),
                      _responses_line("t2", "Left frontal cortex."),
                      _responses_line("t1-again", "Cardioembolic stroke."),
                      _responses_line("t2-again", "Left fron", status="incomplete")])
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps({"t1": "t1", "t2": "t2", "t1-again": "t1", "t2-again": "t2"}))
    summary = run(study, out, "openai-batch", task_key=f"map:{ids}")
    assert (summary.imported.new_responses, summary.failures) == (3, 1)
    usage = {"prompt_tokens": 36, "completion_tokens": 87}
    assert _stored(study) == [("t1", "o4-mini-2025-04-16", 0, "Left MCA infarct.", None, usage),
                              ("t1", "o4-mini-2025-04-16", 1, "Cardioembolic stroke.", None, usage),
                              ("t2", "o4-mini-2025-04-16", 0, "Left frontal cortex.", None, usage)]
    assert [f[1:] for f in _failures(study)] == [
        ("t2", "answer cut at the token limit (finish_reason=length; raise --max-tokens)")]

    vllm = tmp_path / "vllm_output.jsonl"  # python -m vllm.entrypoints.openai.run_batch -o ...
    write_jsonl(vllm, [
        {"id": "vllm-5a1b", "custom_id": "t1", "response": {
            "status_code": 200, "request_id": "vllm-batch-77e0",
            "body": _chat_completion("Ischemic stroke.", "Qwen/Qwen2.5-VL-7B-Instruct")},
         "error": None},
        {"id": "vllm-5a1c", "custom_id": "t2", "response": {
            "status_code": 400, "request_id": "vllm-batch-77e1", "body": None},
         "error": "The model `Qwen/Qwen2.5-VL-7B` does not exist."}])
    summary = run(study, vllm, "openai-batch")
    assert (summary.imported.new_responses, summary.failures) == (1, 1)
    assert ("t1", "Qwen/Qwen2.5-VL-7B-Instruct", 0, "Ischemic stroke.", None,
            {"prompt_tokens": 812, "completion_tokens": 64}) in _stored(study)
    assert ("Qwen/Qwen2.5-VL-7B-Instruct", "t2", "batch line error: The model "
            "`Qwen/Qwen2.5-VL-7B` does not exist.") in _failures(study)


def test_bare_chat_completion_and_ollama_lines_keyed_by_the_task_file(study: str,
                                                                      tmp_path: Path) -> None:
    """Lines with no key of their own: line i answers row i of the task file the harness was
    given (--task-key order:tasks.jsonl); without it, one line saying so."""
    tasks = tmp_path / "base" / "tasks.jsonl"
    bare = tmp_path / "completions.jsonl"
    write_jsonl(bare, [
        _chat_completion("Left MCA stroke.", "Qwen/Qwen2.5-VL-7B-Instruct"),  # vllm serve
        {"id": "chatcmpl-466", "object": "chat.completion", "created": 1736420100,  # Ollama /v1
         "model": "qwen2.5vl:7b", "system_fingerprint": "fp_ollama", "choices": [
             {"index": 0, "message": {"role": "assistant", "content": "Left frontal."},
              "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 700, "completion_tokens": 12, "total_tokens": 712}}])
    assert refused(study, bare, "chat-completions", model="m") == [
        'completions.jsonl: 2 task_ids are not tasks of this study: "0" (row 1), "1" (row 2); '
        "these line values look like row numbers, not task ids: --task-key order:TASKS reads "
        "them as rows (from 0) of the task file the harness was given, map:FILE.json through a "
        "key map"]
    summary = run(study, bare, "chat-completions", model="local-vlm",
                   task_key=f"order:{tasks}")
    assert summary.imported.new_responses == 2
    assert [r[:4] for r in _stored(study)] == [("t1", "local-vlm", 0, "Left MCA stroke."),
                                               ("t2", "local-vlm", 0, "Left frontal.")]

    chat = tmp_path / "ollama.jsonl"  # POST /api/chat {"stream": false}, one response a line
    write_jsonl(chat, [
        {"model": "llava:13b", "created_at": "2025-01-09T10:12:01.13Z",
         "message": {"role": "assistant", "content": "Ischemic stroke, left MCA."},
         "done_reason": "stop", "done": True, "total_duration": 4883583458,
         "load_duration": 1334875, "prompt_eval_count": 626, "prompt_eval_duration": 342546000,
         "eval_count": 28, "eval_duration": 4535599000},
        {"model": "llava:13b", "created_at": "2025-01-09T10:12:09.51Z",
         "message": {"role": "assistant", "content": "The lesion lies in the"},
         "done_reason": "length", "done": True, "prompt_eval_count": 610, "eval_count": 128}])
    summary = run(study, chat, "ollama", task_key=f"order:{tasks}")
    assert (summary.imported.new_responses, summary.failures) == (1, 1)
    assert ("t1", "llava:13b", 0, "Ischemic stroke, left MCA.", None,
            {"prompt_tokens": 626, "completion_tokens": 28}) in _stored(study)
    assert ("llava:13b", "t2", "answer cut at the token limit (finish_reason=length; raise "
            "--max-tokens)") in _failures(study)
    streamed = tmp_path / "streamed.jsonl"
    write_jsonl(streamed, [{"model": "llava:13b", "created_at": "2025-01-09T10:12:01Z",
                            "message": {"role": "assistant", "content": "Isch"}, "done": False}])
    assert refused(study, streamed, "ollama", task_key=f"order:{tasks}") == [
        'streamed.jsonl:1: has done False, a streamed chunk: save whole responses ("stream": '
        "false), not a stream's chunks"]


def _same_sentence_tasks(url: str) -> None:
    """Two more tasks asking the sentence t1 asks: the prompt cannot tell t1, t4, t5 apart."""
    with Session(engine_for(url)) as s:
        for tid in ("t4", "t5"):
            s.add(Task(task_id=tid, case_id="c2", family="differential", level=1, prompt=SAME,
                       stages=[]))
        s.commit()


def test_vlmevalkit_lmms_eval_and_lm_eval_by_the_row_order_of_the_task_file(
        study: str, tmp_path: Path) -> None:
    """VLMEvalKit's `index` and lm-eval's and lmms-eval's `doc_id` count the rows of the
    dataset the harness read, from 0: with order:TASKS each is the task on that row, where
    matching by prompt is ambiguous (every task asks the same sentence)."""
    _same_sentence_tasks(study)
    tasks = tmp_path / "tasks.jsonl"  # the dataset the harness read: t1, t4, t5
    write_jsonl(tasks, [{"task_id": t, "prompt": SAME} for t in ("t1", "t4", "t5")])
    book = openpyxl.Workbook()  # VLMEvalKit's <model>_<dataset>.xlsx: the dataset's columns
    for row in (["index", "question", "answer", "category", "prediction"],
                [0, SAME, "Stroke", "differential", "Ischemic stroke."],
                [1, SAME, "MS", "differential", "Multiple sclerosis."],
                [2, SAME, "Glioma", "differential", "Glioblastoma."]):
        book.active.append(row)
    preds = tmp_path / "MyVLM_NeuroBench.xlsx"
    book.save(preds)
    [line] = refused(study, preds, "vlmevalkit", model="MyVLM", task_key="prompt")
    assert line.startswith("MyVLM_NeuroBench.xlsx: 1 question is the prompt of more than one "
                           "task, which the prompt cannot tell apart: 'Give your differential "
                           "diagnosis.' (MyVLM_NeuroBench.xlsx row 2, "), line
    assert run(study, preds, "vlmevalkit", model="MyVLM",
                task_key=f"order:{tasks}").imported.new_responses == 3
    assert [r[:4] for r in _stored(study)] == [("t1", "MyVLM", 0, "Ischemic stroke."),
                                               ("t4", "MyVLM", 0, "Multiple sclerosis."),
                                               ("t5", "MyVLM", 0, "Glioblastoma.")]

    def sample(doc_id: int, answer: str) -> dict:  # lmms-eval's logged sample: no filter field
        return {"doc_id": doc_id, "doc": {"question_id": f"q{doc_id}", "question": SAME},
                "target": "Stroke", "arguments": [{"max_new_tokens": 512}],
                "resps": [[answer]], "filtered_resps": [answer],
                "doc_hash": f"{doc_id:064x}", "exact_match": 0.0}

    log = tmp_path / "20250109_101500_samples_neurobench.jsonl"  # two filters: docs twice
    write_jsonl(log, [sample(d, a) for _ in range(2)
                      for d, a in ((0, "Stroke."), (2, "Glioma."))])
    summary = run(study, log, "lmms-eval", model="llava-ov", task_key=f"order:{tasks}")
    assert (summary.imported.new_responses, summary.repeated_lines) == (2, 2)
    assert "2 lines repeating a document's answers (one per further filter) read once" in str(
        summary)
    assert [r[:4] for r in _stored(study) if r[1] == "llava-ov"] == [
        ("t1", "llava-ov", 0, "Stroke."), ("t5", "llava-ov", 0, "Glioma.")]
    lm = tmp_path / "samples_neurobench_2025-01-09T10-15-00.jsonl"
    write_jsonl(lm, [{**sample(1, "MS."), "filter": "none"}, {**sample(3, "x"), "filter": "none"}])
    assert refused(study, lm, "lm-eval", model="hf", task_key=f"order:{tasks}") == [
        f"{lm.name}: 1 key is not a row of tasks.jsonl (rows 0 to 2): '3'"]
    with pytest.raises(UserError, match=r"--task-key order:.*tasks\.txt holds no task"):
        (tmp_path / "tasks.txt").write_text("\n\n")
        run(study, lm, "lm-eval", model="hf", task_key=f"order:{tmp_path / 'tasks.txt'}")


def test_a_one_text_answer_to_a_staged_task_is_refused_or_its_final_stage_flagged(
        study: str, tmp_path: Path) -> None:
    """A harness answer is one text; t3 takes one per stage. Refused in one line; with
    --final-stage-only stored as the last stage's answer alone (no first answer, none to the
    middle stage), counted, flagged in results and left out of the anchoring table."""
    from results.results import build
    from tests.factories import grade_all

    tsv = tmp_path / "preds.tsv"
    tsv.write_text("index\ttask_id\tprediction\n0\tt1\tStroke.\n2\tt3\tMultiple sclerosis.\n")
    assert refused(study, tsv, "vlmevalkit", model="MyVLM") == [
        'preds.tsv: 1 answer is one text for a staged task, which takes one answer per stage: '
        '"t3" (row 3); a harness file holds no per-stage answers: --final-stage-only stores the '
        "text as the final stage's answer (flagged in results), or leave these tasks out"]
    summary = run(study, tsv, "vlmevalkit", model="MyVLM", final_stage_only=True)
    assert (summary.imported.new_responses, summary.final_stage_only) == (2, 1)
    assert "1 answer to staged tasks stored as the final stage's answer only" in str(summary)
    assert [r[:5] for r in _stored(study)] == [("t1", "MyVLM", 0, "Stroke.", None),
                                               ("t3", "MyVLM", 0, "", ["", "Multiple sclerosis."])]
    with Session(engine_for(study)) as s:
        config = grade_all(s)
        staged = s.exec(select(GraderScore).join(Response, Response.response_id ==
                                                 GraderScore.response_id)
                        .where(Response.task_id == "t3")).one()
        staged.stages = [{"leading_diagnosis": "", "correct": False, "changed": False},
                         {"leading_diagnosis": "", "correct": False, "changed": False},
                         {"leading_diagnosis": "MS", "correct": True, "changed": True}]
        s.add(staged)
        s.commit()
        res = build(s, config_id=config)
    assert ("final stage only: 1 response to staged tasks (1 of MyVLM) hold one answer, "
            "imported as the final stage's (--final-stage-only): their earlier stages have no "
            "answer and count as not answered in stage judgments; the anchoring table leaves "
            "them out") in res.flags
    [row] = [r for r in res.anchoring if r.who == "MyVLM"]
    assert row.conversations == 0  # not a revision from a wrong first answer


def _hostile_sheet(good: Path, out: Path, rows: int, *, header_xfd: bool = False) -> Path:
    """`good` (a VLMEvalKit-shaped workbook) with its sheet replaced: `<dimension
    ref="A1:XFD1048576">` and `rows` rows each with a cell at column XFD (a 500 KB file)."""
    head = ('<row r="1"><c r="A1" t="inlineStr"><is><t>index</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>prediction</t></is></c>'
            + ('<c r="XFD1" t="inlineStr"><is><t>x</t></is></c>' if header_xfd else "")
            + "</row>")
    body = "".join(f'<row r="{n}"><c r="A{n}" t="inlineStr"><is><t>t{1 + n % 2}</t></is></c>'
                   f'<c r="B{n}" t="inlineStr"><is><t>answer {n}</t></is></c>'
                   f'<c r="XFD{n}"><v>1</v></c></row>' for n in range(2, rows + 2))
    xml = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns='
           '"http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension '
           f'ref="A1:XFD1048576"/><sheetData>{head}{body}</sheetData></worksheet>')
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            dst.writestr(name, xml if name == "xl/worksheets/sheet1.xml" else src.read(name))
    return out


def _good_book(path: Path) -> Path:
    book = openpyxl.Workbook()
    book.active.append(["index", "prediction"])
    book.save(path)
    return path


def test_a_spreadsheet_is_read_to_its_header_width_and_a_row_cap(study: str, tmp_path: Path,
                                                                 monkeypatch) -> None:
    """Cells right of the header are not read (a cell at XFD, a declared A1:XFD1048576); a
    header wider than the cap, or more rows than the cap, is one line, nothing written."""
    good = _good_book(tmp_path / "good.xlsx")
    wide = _hostile_sheet(good, tmp_path / "wide.xlsx", 2)
    summary = run(study, wide, "vlmevalkit", model="m", task_key="field:index")
    assert summary.imported.new_responses == 2
    assert [r[:4] for r in _stored(study)] == [("t1", "m", 0, "answer 2"),
                                               ("t2", "m", 0, "answer 3")]
    header = _hostile_sheet(good, tmp_path / "header.xlsx", 2, header_xfd=True)
    assert refused(study, header, "vlmevalkit", model="n") == [
        "header.xlsx: has a header of 16,384 columns (row 1 reaches column XFD), more than the "
        "limit of 256"]
    monkeypatch.setattr(response_import, "MAX_ROWS", 5)
    long = _hostile_sheet(good, tmp_path / "long.xlsx", 6)
    assert refused(study, long, "vlmevalkit", model="n") == [
        "long.xlsx: has more than 5 rows below its header"]
    tsv = tmp_path / "long.tsv"
    tsv.write_text("index\tprediction\n" + "t1\tx\n" * 6)
    assert refused(study, tsv, "vlmevalkit", model="n") == [
        "long.tsv: has more than 5 rows below its header"]


@pytest.mark.slow
def test_a_hostile_spreadsheet_stays_within_1_gb(nmb_home: Path, tmp_path: Path) -> None:
    """A 45,000-row prediction file declaring A1:XFD1048576, a cell at XFD in every row (about
    500 KB): `import-responses --dry-run` took 5.9 GB (each row padded to 16,384 cells); now
    a real process stays under 1 GB and refuses it in one line, exit 2, nothing written."""
    from tests.cli.test_cli import nmb
    from tests.peak_memory import run_measured

    assert nmb("import", str(write_bundle(tmp_path / "b", with_responses=[]))).returncode == 0
    url = f"sqlite:///{nmb_home / 'study.db'}"
    before = snapshot(url)
    hostile = _hostile_sheet(_good_book(tmp_path / "good.xlsx"), tmp_path / "preds.xlsx", 45_000)
    assert 300_000 < hostile.stat().st_size < 700_000
    out, peak = run_measured(
        [sys.executable, "-m", "cli", "import-responses", str(hostile), "--from", "vlmevalkit",
         "--model", "m", "--dry-run"], tmp_path / "peak", cwd=ROOT, capture_output=True,
        text=True, timeout=300, address_space=3 * 2**30)
    assert peak < 2**30, f"peak {peak / 2**20:.0f} MiB"
    assert (out.returncode, out.stderr.count("\n")) == (2, 1), out.stderr
    assert out.stderr.startswith("nmb: preds.xlsx: 2 indexes are answered on more than one row"), (
        out.stderr)
    assert snapshot(url) == before
