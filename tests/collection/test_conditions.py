"""Conditions (`nmb collect --condition`): the exam with text added to the system message
only, responses shown as MODEL@CONDITION, a paired comparison of two conditions, and
self-consistency's majority; real `openai` client against the local server."""

import itertools
import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from cli import main
from db.engine import engine_for
from db.models import CollectedResponse, CollectionRun, Response
from llm.conditions import STRATEGIES
from llm.model_request import TEMPLATE
from tests.factories import grade_all, make_study
from tests.openai_server import OpenAIServer

MODEL = "local-vlm-2026-01-01"


def _answer(body: dict) -> str:
    """Step by step: the right diagnosis every time; zero-shot: right on tasks 0 and 1 only."""
    system = body["messages"][0]["content"]
    first = body["messages"][1]["content"]
    if "step by step" in system:
        return "The lesions are periventricular.\nFinal answer: MS"
    return "Final answer: MS" if ("Prompt 0" in first or "Prompt 1" in first) else "Final answer: stroke"


def test_cot_against_zero_shot_is_paired_and_shown_as_model_at_condition(
        sqlite_url: str, tmp_path: Path, capsys) -> None:
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=6, experts=0)
    scaffold = tmp_path / "scaffold.txt"
    scaffold.write_text("Consider the <b>vascular</b> territories first.\n")
    with OpenAIServer(answer=_answer) as srv:
        common = ["collect", "--model", MODEL, "--base-url", srv.base_url, "--images", "none"]
        assert main([*common, "--condition", "zero-shot"]) == 0
        assert main([*common, "--condition", "cot", "--strategy", "cot",
                     "--system-prompt-file", str(scaffold)]) == 0
        sent = srv.chat_requests()
        # the same name with other text is refused, nothing sent
        scaffold.write_text("Something else.")
        assert main([*common, "--condition", "cot", "--strategy", "cot",
                     "--system-prompt-file", str(scaffold)]) == 2
        assert "give this one another name" in capsys.readouterr().err
        assert len(srv.chat_requests()) == len(sent)
    plain = [r.body for r in sent if r.body["messages"][0]["content"] == TEMPLATE["system"]]
    cot = [r.body for r in sent if r.body not in plain]
    assert len(plain) == len(cot) == 8  # 6 tasks, 2 of them two turns
    added = "Consider the <b>vascular</b> territories first.\n\n\n" + STRATEGIES["cot"]
    for body in cot:  # the exam stays the exam: only the system message gains the added text
        assert body["messages"][0]["content"] == TEMPLATE["system"] + "\n\n" + added
    assert sorted(json.dumps(b["messages"][1:]) for b in cot if len(b["messages"]) == 2) == \
        sorted(json.dumps(b["messages"][1:]) for b in plain if len(b["messages"]) == 2)

    with Session(engine_for(sqlite_url)) as s:
        labels = {(r.model, r.condition) for r in s.exec(select(Response))}
        assert {(f"{MODEL}@cot", "cot"), (f"{MODEL}@zero-shot", "zero-shot")} <= labels
        run = s.exec(select(CollectionRun).where(CollectionRun.model == f"{MODEL}@cot")).one()
        assert run.settings["condition"]["added_text"] == added  # stored verbatim
        grade_all(s, lambda r: r.text.rstrip().endswith("Final answer: MS"))
        s.commit()

    capsys.readouterr()
    assert main(["results", "--format", "json", "--by", ""]) == 0
    res = json.loads(capsys.readouterr().out)
    pass1 = {c["who"]: c["pass_at"]["1"]["value"] for c in res["overall"]}
    assert pass1[f"{MODEL}@cot"] == 1.0 and pass1[f"{MODEL}@zero-shot"] == pytest.approx(2 / 6, abs=1e-3)
    assert any(c["condition"] == "cot" and c["added_text"] == added and c["strategy"] == "cot"
               for c in res["conditions"])
    assert main(["results", "--compare", f"{MODEL}@cot", f"{MODEL}@zero-shot",
                 "--format", "json"]) == 0
    [diff] = json.loads(capsys.readouterr().out)
    d = diff["differences"]["pass@1"]["difference"]
    assert diff["differences"]["pass@1"]["tasks"] == 6
    assert (diff["a"], diff["b"]) == (f"{MODEL}@cot", f"{MODEL}@zero-shot")
    assert d["value"] == pytest.approx(4 / 6, abs=1e-3)
    assert d["ci"] is not None and d["ci"][0] <= d["value"] <= d["ci"][1] and d["ci"][0] > 0


def test_self_consistency_takes_the_majority_final_answer_per_turn(sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=3, experts=0)  # task2 is level 3: two turns
    votes = itertools.cycle(["Reasoning A.\nFinal answer: Stroke", "Final answer: MS",
                             "Reasoning C.\nFINAL ANSWER: ms."])
    with OpenAIServer(answer=lambda body: next(votes)) as srv:
        assert main(["collect", "--model", MODEL, "--base-url", srv.base_url, "--images", "none",
                     "--condition", "sc", "--strategy", "self-consistency", "--samples", "3",
                     "--concurrency", "1"]) == 0
        sent = srv.chat_requests()
    assert len(sent) == 3 * 4  # 3 votes for each of 4 turns
    with Session(engine_for(sqlite_url)) as s:
        rows = s.exec(select(Response).where(Response.model == f"{MODEL}@sc")).all()
        assert len(rows) == 3 and {r.sample for r in rows} == {0}
        for r in rows:
            p = s.get(CollectedResponse, r.response_id)
            assert all(v == ["stroke", "ms", "ms"] for v in p.votes)
            assert len(p.votes) == len(p.request_hashes) // 3 == 1 + len(r.turns or [])
            assert r.text == "Final answer: MS"  # the first answer of the majority
    # the second turn was asked after the majority's answer, not a minority vote's
    second = [rec.body for rec in sent if len(rec.body["messages"]) == 4]
    assert second and all(b["messages"][2]["content"] == "Final answer: MS" for b in second)
