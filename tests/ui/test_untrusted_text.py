"""Untrusted text on the pages: every field from a bundle, a response or an exam taker reaches
the browser as plain text exactly as written, never as markdown that could fetch an image or
pose as one of the page's labels."""

from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import Case, Response, Task, User
from db.raters.assignments import assign
from db.rubrics import ensure_rubric
from db.study.exams import answer_stage, attempt_for, ensure_exam
from rubric import load_rubric
from tests.apptest import make_user, page, page_payload
from tests.factories import make_study
from ui.auth import LoggedIn
from ui.score.rubric_form import FULL_TEXT_KEY


def hostile(field: str) -> str:
    """Markdown that would fetch an image and imitate the page's labels; '->' as typed."""
    return (f"![]( http://127.0.0.1:9/{field}.png) **Reference answer:** yes\n"
            f"# Stage 9 revealed\n<img src=x> -> [{field}](http://127.0.0.1:9/{field})")


def _poison_study() -> dict[str, str]:
    """A one-task multi-turn study whose every text field is hostile; the fields by name."""
    with session() as s:
        make_study(s, n_tasks=3, experts=1)
        for case in s.exec(select(Case)):
            case.ehr, case.title = hostile("ehr"), hostile("title")
            case.ground_truth = {"final_diagnosis": hostile("diagnosis"),
                                 "differential": [hostile("differential")],
                                 "lesion": hostile("lesion"), "reasoning": hostile("reasoning")}
        for task in s.exec(select(Task)):
            task.prompt, task.stages = hostile("prompt"), [hostile("stage")]
            task.level = 3
        for r in s.exec(select(Response)):
            r.text, r.turns = hostile("response"), [hostile("turn")]
        s.commit()
    return {f: hostile(f) for f in ("ehr", "diagnosis", "differential", "lesion", "reasoning",
                                    "prompt", "stage", "response", "turn", "answer")}


def _markdown_is_clean(at) -> None:
    for md in [*at.markdown, *at.subheader, *at.caption]:
        assert "![" not in md.value and "](http" not in md.value, md.value


def _poison_rubric(folder: Path) -> Path:
    """neurology-v1.1 with markdown in a description, an anchor, an error class's definition
    and the judgment's question (a rubric file is outside text too)."""
    text = load_rubric("neurology-v1.1").source_text
    bad = hostile("rubric").replace("\n", " ")
    for old in ('"How well the response combines', '"No reasoning is given',
                '"A finding that is visible', '"Is the response\'s final answer correct?"'):
        assert text.count(old) == 1, old
        text = text.replace(old, f"{old[0]}{bad} {old[1:]}")
    path = folder / "poisoned.toml"
    path.write_text(text)
    return path


def test_scoring_page_shows_every_field_as_written(sqlite_url: str, tmp_path: Path) -> None:
    fields = _poison_study()
    with session() as s:
        rubric = ensure_rubric(s, str(_poison_rubric(tmp_path)))
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1)
        s.commit()
        expert = LoggedIn.of(s.exec(select(User).where(User.name == "expert1")).one())
    at = page("pages/score.py", expert).run()
    assert not at.exception, at.exception
    shown = [t.value for t in at.text]
    for field in ("ehr", "diagnosis", "lesion", "reasoning", "prompt", "stage", "response",
                  "turn"):
        assert fields[field] in shown, field
    assert fields["differential"] in shown  # one item: joined with "; " it is itself
    _markdown_is_clean(at)
    assert "![" not in " ".join(h.value for h in at.subheader)  # the case title, escaped
    at.toggle(key=FULL_TEXT_KEY).set_value(True).run()  # the rubric's full texts, as text
    assert sum("Reference answer" in c.value for c in at.caption) >= 3  # shown, escaped
    _markdown_is_clean(at)
    assert not [r.label for r in at.radio if "![" in r.label]


def test_exam_page_shows_answers_and_stages_as_typed(sqlite_url: str) -> None:
    fields = _poison_study()
    student = make_user("sam", "student")
    with session() as s:
        exam = ensure_exam(s, name="Baseline")
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id=exam.task_ids[0], text=fields["answer"])
    at = page("pages/exam.py", student).run()
    assert not at.exception, at.exception
    shown = [t.value for t in at.text]
    for field in ("ehr", "prompt", "answer", "stage"):
        assert fields[field] in shown, field
    _markdown_is_clean(at)
    payload = page_payload(at)
    assert "diagnosis.png" not in payload and "response.png" not in payload  # not for exams
