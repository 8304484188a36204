"""Text from outside (a bundle's series names and captions, a typed model name, a revocation's
reason, a grader model's name) reaches the browser as literal text: every message, caption and
label that quotes it is markdown-escaped (`ui.plain_text.escape_markdown`), so it can neither
fetch an image, link away, nor set a heading."""

import re
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from db.engine import session
from db.models import Exam, GraderConfig, User
from tests.apptest import page, page_payload
from ui.auth import LoggedIn
from ui.case_panel import VIEWER_MODE_KEY
from ui.plain_text import escape_markdown

HOSTILE = "# Heading ![x](http://127.0.0.1:9/x.png) <img src=x onerror=alert(1)> [l](http://e)"
SHORT = "![x](http://e/x.png)"  # within a series name's 32 characters


def assert_escaped(value: str) -> None:
    """`value` holds no markdown image, link, leading heading or raw tag: none is left once
    every backslash-escaped character is taken out."""
    bare = re.sub(r"\\.", "", value)
    assert "![" not in bare and "](" not in bare and "<img" not in bare, value
    assert not any(line.lstrip().startswith("#") for line in bare.splitlines()), value


def _messages(at: AppTest) -> list[str]:
    return [e.value for kind in (at.error, at.warning, at.info, at.success, at.caption,
                                 at.markdown) for e in kind]


def _panel(series: list[list]) -> None:
    from pathlib import Path

    from db.study.cases import SeriesImage
    from ui.case_panel import case_panel

    case_panel(key="case", title="Case", ehr="", scores={},
               series=[SeriesImage(name, Path(path), picture=picture, caption=caption)
                       for name, path, picture, caption in series])


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    path = tmp_path / "t1.nii.gz"
    nib.save(nib.Nifti1Image(np.ones((8, 8, 8), np.float32), np.eye(4)), path)
    return path


@pytest.mark.parametrize("mode", ["Interactive", "Static"])
def test_series_names_and_captions_from_a_bundle_are_literal(volume, tmp_path, nmb_home,
                                                             mode) -> None:
    broken = tmp_path / "broken.nii.gz"
    broken.write_bytes(b"not an image")
    gone = tmp_path / "gone.png"
    at = AppTest.from_function(_panel, args=([[SHORT, str(volume), False, None],
                                              [SHORT + "2", str(broken), False, None],
                                              ["# FIG", str(gone), True, HOSTILE]],),
                               default_timeout=30)
    at.session_state[VIEWER_MODE_KEY] = mode
    at.run()
    assert not at.exception, at.exception
    assert at.error  # the broken series and the missing picture
    for message in [e.value for e in at.error]:
        assert_escaped(message)
    captions = [img.caption for e in at.get("image") for img in e.proto.imgs]
    if mode == "Static":
        assert captions and captions[0].startswith(escape_markdown(SHORT))
    for caption in captions:  # image captions are markdown
        assert_escaped(caption)


def _admin(name: str = "demo-admin") -> LoggedIn:
    with session() as s:
        return LoggedIn.of(s.exec(select(User).where(User.name == name)).one())


def test_a_refused_model_name_is_quoted_as_text_on_models(demo_study: Path) -> None:
    at = page("pages/models.py", _admin()).run()
    at.text_input(key="collect_model").input(SHORT + "\u202e").run()
    assert not at.exception, at.exception
    assert at.error, "the model name is refused"
    for message in [e.value for e in at.error]:
        assert_escaped(message)


def test_a_grader_model_name_is_literal_on_calibrate(demo_study: Path) -> None:
    from grading.config import GraderSettings, store_config

    model = f"gpt` {SHORT} `"  # printable, so a valid name; undated, so warned about
    with session() as s:
        config = store_config(s, GraderSettings(model=model, name="hostile"))
        s.commit()
        config_id = config.id
    at = page("pages/calibrate.py", _admin())
    at.session_state["grader_config"] = config_id
    at.run()
    assert not at.exception, at.exception
    assert any(escape_markdown(model) in m for m in _messages(at))
    for message in _messages(at):
        assert_escaped(message)


def test_a_revocation_reason_and_a_model_name_are_literal_in_reports(demo_study: Path) -> None:
    from calibration import calibrate

    with session() as s:
        [config] = s.exec(select(GraderConfig)).all()
        calibrate.run(s, config_id=config.id, part="heldout", actor="demo-admin")
        calibrate.revoke(s, config_id=config.id, reason=HOSTILE, actor="demo-admin")
        config = s.get(GraderConfig, config.id)
        config.model = SHORT  # undated: the report flags it by name
        s.add(config)
        s.commit()
    admin = _admin()
    at = page("pages/calibrate.py", admin).run()
    assert not at.exception, at.exception
    next(b for b in at.button if b.label == "Compute report").click().run(timeout=120)
    assert not at.exception, at.exception
    messages = _messages(at)
    assert any(escape_markdown(HOSTILE) in m for m in messages), messages  # status, leaderboard
    assert any(escape_markdown(repr(SHORT)) in m for m in messages), messages  # report flag
    for message in messages:
        assert_escaped(message)
    at = page("pages/study_results.py", admin).run(timeout=120)
    assert not at.exception, at.exception
    messages = _messages(at)
    assert any(escape_markdown(HOSTILE) in m for m in messages), messages
    for message in messages:
        assert_escaped(message)


def _everything_markdown(at: AppTest) -> list[str]:
    """Every text of the page Streamlit renders as markdown that quotes a hostile value: bodies,
    alerts, captions, headings, toasts, and the labels (and radio options) of widgets, expanders
    and tabs."""
    texts = [*_messages(at), *(e.value for kind in (at.title, at.header, at.subheader, at.toast)
                               for e in kind)]
    for kind in ("expander", "tab", "radio", "checkbox", "toggle", "selectbox", "multiselect",
                 "text_input", "text_area", "button", "form_submit_button"):
        for widget in at.get(kind):
            texts.append(getattr(widget, "label", "") or "")
            if kind == "radio":
                texts.extend(str(o) for o in widget.options)
    texts += [img.caption for e in at.get("image") for img in e.proto.imgs]
    return [x for x in texts if "x.png" in x or "onerror" in x]  # those quoting outside text


@pytest.mark.slow
def test_case_titles_model_names_and_exam_names_stay_text_on_admin_and_exam(
        sqlite_url: str) -> None:
    """A sweep: a case title, a series name, a model name, an exam name and an exam answer
    hostile; /admin's case browser and /exam, before and after finishing (with review), put
    none of them into markdown unescaped (selectbox options are plain text)."""
    from db.models import Case, Response, Series
    from db.study.exams import answer_stage, attempt_for, ensure_exam, finish
    from tests.apptest import make_user
    from tests.factories import add_series, make_study

    with session() as s:
        make_study(s, n_tasks=1, experts=1)
        add_series(s, ["case0"])
        case = s.get(Case, "case0")
        case.title = HOSTILE
        for series in s.exec(select(Series)):
            series.sequence = SHORT
        for r in s.exec(select(Response)):
            r.model = SHORT + r.response_id  # printable: a valid model name
        s.commit()
        exam = ensure_exam(s, name=HOSTILE, review=True)
        s.commit()
        exam_id = exam.id
    admin = make_user("admin1", "admin")
    at = page("pages/admin.py", admin)
    at.query_params["section"] = "Cases"
    at.run()
    assert not at.exception, at.exception
    assert SHORT in page_payload(at)  # the response's model is offered, as text
    for text in _everything_markdown(at):
        assert_escaped(text)
    student = make_user("sam", "student")
    at = page("pages/exam.py", student).run()
    assert not at.exception, at.exception
    assert HOSTILE in at.selectbox[0].options  # offered as an option (plain text)
    for text in _everything_markdown(at):
        assert_escaped(text)
    with session() as s:
        attempt = attempt_for(s, exam_id=exam_id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id="task0", text=HOSTILE)
        finish(s, attempt=attempt, actor="sam")
    at = page("pages/exam.py", student).run()
    assert not at.exception, at.exception
    assert any(m.value == "Review" for m in at.subheader)
    for text in _everything_markdown(at):
        assert_escaped(text)
    at = page("pages/admin.py", admin)  # the exams section, and its confirmation of a close
    at.query_params["section"] = "Exams"
    at.run()
    at.selectbox(key="exam_to_close").set_value(HOSTILE).run()
    next(b for b in at.button if b.label == "Close exam").click().run()
    assert not at.exception, at.exception
    assert any("Close the exam" in w.value for w in at.warning)
    for text in _everything_markdown(at):
        assert_escaped(text)
    next(b for b in at.button if b.label == "Yes, close it").click().run()
    assert not at.exception, at.exception
    with session() as s:
        assert s.get(Exam, exam_id).closed_by == "admin1"
    at = page("pages/exam.py", make_user("newcomer", "student")).run()  # one line, no attempt
    assert [e.value for e in at.error] == [escape_markdown(
        f"the exam {HOSTILE!r} is closed: it takes no new attempts")]
    for text in _everything_markdown(at):
        assert_escaped(text)
