"""The release as published: an empty answer entry for a placeholder case, one case number in
the direct-diagnosis and the multi-round file (one patient: the cases are linked, the answer
keyed by the number is each one's, and an exam holds the dialogue's later stage back until the
direct task is answered), the multi-round file as `dialogue: [{round, information,
question}]`, and other field names through `--map`."""

from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.bundle.importer import BundleInvalid
from db.engine import engine_for
from db.models import AuditLog, Case, Task
from db.release.reader import import_release
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks
from db.users import add_user
from errors import UserError
from tests.db.bundle.bundles import snapshot
from tests.db.release.release_files import (
    DIALOGUE,
    DIALOGUE_PNG,
    REVEALED,
    data_uri,
    direct_diagnosis,
    write,
)

ANSWER = {"diagnosis": "多发性硬化", "differential": ["视神经脊髓炎"]}


def dialogue_shape() -> list[dict]:
    """case_1 (the patient of direct-diagnosis' case_1) as `dialogue` rounds."""
    rounds = [{"round": k + 1, "question": q} | ({"information": info} if info else {})
              for k, (q, info) in enumerate(zip(DIALOGUE, REVEALED, strict=True))]
    return [{"case_id": "case_1", "text": "男, 45岁, 头痛三周。",
             "images": [data_uri(DIALOGUE_PNG, "image/png")], "dialogue": rounds}]


def small_direct() -> list[dict]:
    """direct-diagnosis' case_1 and case_3, with a small picture each."""
    return [{**case, "images": [data_uri(DIALOGUE_PNG, "image/png")]}
            for case in direct_diagnosis() if case["case_id"] in ("case_1", "case_3")]


def _import(url: str, files: list[Path], **kw):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_release(s, files, actor="admin", **kw)


def test_one_case_number_in_two_files_is_one_patient_and_exams_respect_it(
        sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = [write(tmp_path / "direct-diagnosis.json", direct_diagnosis()),
             write(tmp_path / "multi-round-dialogue.json", dialogue_shape())]
    key = write(tmp_path / "answers.json", {
        "case_1": ANSWER,  # both files: one patient
        "case_2": {"diagnosis": "", "differential": []},  # a placeholder's empty entry
        "case_4": {}})  # another placeholder's
    summary = _import(sqlite_url, files, answers=key)
    assert summary.ignored_answers == 2 and summary.placeholders == 2
    with Session(engine_for(sqlite_url)) as s:
        cases = {c.case_id: c for c in s.exec(select(Case))}
        dialogue = s.get(Task, "dialogue-case_1-dialogue")
    assert cases["direct-case_1"].patient == cases["dialogue-case_1"].patient is not None
    assert cases["direct-case_3"].patient != cases["direct-case_1"].patient
    truth = {"final_diagnosis": ANSWER["diagnosis"], "differential": ANSWER["differential"]}
    assert cases["direct-case_1"].ground_truth == cases["dialogue-case_1"].ground_truth == truth
    assert (dialogue.prompt, dialogue.stages) == (DIALOGUE[0], [
        f"{info}\n\n{q}" for info, q in zip(REVEALED[1:], DIALOGUE[1:], strict=True)])

    # nmb exam add warns of the linked cases in one exam ...
    assert cli.main(["exam", "add", "baseline", "--tasks", "dialogue-case_1-dialogue",
                     "direct-case_3-q1", "direct-case_1-q1"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tasks of linked cases (one patient) in one exam " \
        "('dialogue-case_1', 'direct-case_1')" in err
    # ... and holds the dialogue's revealed stage back until the other case's task is answered
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        stu = add_user(s, name="stu", role="student", password="pw")
        s.commit()
        attempt = attempt_for(s, exam_id=ensure_exam(s, name="baseline").id, user_id=stu.id)
        answer_stage(s, attempt=attempt, task_id="dialogue-case_1-dialogue", text="a guess")
        shown = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        assert shown["dialogue-case_1-dialogue"].waiting_for == [3]
        assert shown["dialogue-case_1-dialogue"].revealed_stages == []
        with pytest.raises(UserError, match="once task 3 of this exam, about the same patient"):
            answer_stage(s, attempt=attempt, task_id="dialogue-case_1-dialogue", text="x")
        answer_stage(s, attempt=attempt, task_id="direct-case_1-q1", text="answer")
        shown = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        assert shown["dialogue-case_1-dialogue"].revealed_stages == [dialogue.stages[0]]


def test_cases_imported_before_are_linked_when_their_files_come_again(sqlite_url: str,
                                                                      tmp_path: Path) -> None:
    files = [write(tmp_path / "direct-diagnosis.json", small_direct()),
             write(tmp_path / "multi-round-dialogue.json", dialogue_shape())]
    _import(sqlite_url, files)
    with Session(engine_for(sqlite_url)) as s:  # as a study imported before links existed
        for case in s.exec(select(Case)):
            case.patient = None
            s.add(case)
        s.commit()
    again = _import(sqlite_url, files)
    assert again.imported.linked_cases == 3 and "3 cases linked to their patient" in str(again)
    with Session(engine_for(sqlite_url)) as s:
        assert len({c.patient for c in s.exec(select(Case))}) == 2  # case_1 twice, case_3
        assert len([a for a in s.exec(select(AuditLog)) if a.action == "case.patient"]) == 3
    assert not _import(sqlite_url, files).changed


def test_other_field_names_are_read_through_a_field_map(sqlite_url: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    turns = [{"ask": q} | ({"reveal": info} if info else {})
             for q, info in zip(DIALOGUE, REVEALED, strict=True)]
    cases = [{"id": 7, "history": "女, 28岁。", "figures": [data_uri(DIALOGUE_PNG, "image/png")],
              "turns": turns}]
    path = write(tmp_path / "rounds.json", cases)
    field_map = write(tmp_path / "map.json", {"case_id": "id", "text": "history",
                                              "images": "figures", "questions": "turns",
                                              "question": "ask", "information": "reveal",
                                              "number": None})
    args = ["import", str(path), "--from", "neural-medbench", "--family", "differential",
            "--level", "3"]
    before = snapshot(sqlite_url)
    assert cli.main(args) == 2  # without the map: one line naming the fields found
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cases have figures, history, id, turns" in err
    assert "give --map FILE.json" in err and snapshot(sqlite_url) == before
    for bad, why in (({"questions": "turns", "colour": "x"}, "'colour' is not a field"),
                     ({"question": ""}, "question: \"\" is not a field name"),
                     ({"text": "id", "case_id": "id"}, "'id' names two fields")):
        assert cli.main([*args, "--map", str(write(tmp_path / "bad.json", bad))]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err, err
    assert snapshot(sqlite_url) == before
    assert cli.main([*args, "--map", str(field_map)]) == 0, capsys.readouterr().err
    with Session(engine_for(sqlite_url)) as s:
        task = s.get(Task, "rounds-7-dialogue")
        assert (task.prompt, len(task.stages), s.get(Case, "rounds-7").patient) == (
            DIALOGUE[0], 2, None)  # another file than the release's: a case of its own


def test_a_case_number_of_two_patients_needs_a_study_id_in_the_key(sqlite_url: str,
                                                                   tmp_path: Path) -> None:
    """A file of another name is not the release: its case_1 is not the release's patient."""
    files = [write(tmp_path / "direct-diagnosis.json", small_direct()),
             write(tmp_path / "extra.json", small_direct()[:1])]
    key = write(tmp_path / "answers.json", {"case_1": ANSWER})
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, files, answers=key, family="differential", level=1)
    assert [str(p) for p in e.value.problems] == [
        'answers.json["case_1"]: names cases in 2 files (direct-case_1, extra-case_1) that '
        'are not one patient: use one of these ids']


def test_rounds_out_of_order_are_refused(sqlite_url: str, tmp_path: Path) -> None:
    cases = dialogue_shape()
    cases[0]["dialogue"][2]["round"] = 2
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, [write(tmp_path / "multi-round-dialogue.json", cases)])
    assert [str(p) for p in e.value.problems] == [
        "multi-round-dialogue.json[0].dialogue[2].round: 2 does not follow 2: the rounds are "
        "listed in order, each numbered above the one before"]
