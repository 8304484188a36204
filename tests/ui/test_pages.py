"""Every page rendered on the demo study for the role that owns it; blinding checked on what
the scoring and exam pages actually send to the browser."""

import json
import re
from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import Assignment, Case, GraderScore, Mask, Response, Series, Task, User
from db.raters.scoring import load_item, queue
from db.rubrics import rubric_by_hash
from demo.bundle import MODELS
from tests.apptest import page, page_payload, viewer_args
from ui.auth import LoggedIn
from ui.plain_text import escape_markdown


def _login(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


VOLUME_URL = re.compile(r"/nmb/volumes/[0-9a-f]{32}/([0-9a-f]{64})\.nii")
PICTURE_URL = re.compile(r"/nmb/volumes/[0-9a-f]{32}/([0-9a-f]{64})\.png")


def _viewer_gets_images_and_labels_only(at, sequences: set[str],
                                        masks: dict[str, str] | None = None,
                                        exam: bool = False) -> None:
    """The viewer component receives sequence labels and volume URLs, and the URLs and labels
    of exactly the `masks` ({sha256: label}) it may show, where it opens (never on the lesion
    in an exam: `exam`), the next item's volume URLs, nothing else; the picture component
    (the demo's picture case) labels, captions, picture URLs and sizes, nothing else."""
    pictures = [json.loads(e.proto.json_args) for e in at.get("component_instance")
                if e.proto.component_name.endswith("nmb_picture_viewer")]
    if pictures:
        [args] = pictures
        assert set(args) == {"pictures", "key", "default"} and args["pictures"]
        for p in args["pictures"]:
            assert set(p) == {"label", "caption", "url", "width", "height"}
            assert p["label"] in sequences and PICTURE_URL.fullmatch(p["url"]), p
        assert not masks
        if not viewer_args(at):
            return
    [args] = viewer_args(at)
    assert {"series", "masks", "height", "key", "default", "item", "tools"} <= set(args) <= {
        "series", "masks", "height", "key", "default", "keys", "start", "fit", "prefetch",
        "item", "tools"}
    # the item: an opaque key (ui.element_keys), never a case or task id; the tools: names
    assert re.fullmatch(r"(case|task)-[0-9a-f]{16}", args["item"]), args["item"]
    assert set(args["tools"]) <= {"ruler", "roi"}
    assert all(VOLUME_URL.fullmatch(url) for url in args.get("prefetch", [])), args["prefetch"]
    assert args.get("fit") in (None, "bottom")
    for jump in args.get("keys", []):  # a key slice: a series label, a plane and a point
        assert set(jump) == {"label", "plane", "mm"} and jump["label"].split()[0] in sequences
        assert all(isinstance(v, float) for v in jump["mm"]), jump
    if "start" in args:  # imaging.opening_view
        start = args["start"]
        assert {"plane", "mm", "source"} <= set(start) <= {"plane", "mm", "source", "layout"}
        assert start["source"] in ({"protocol", "admin", "key slices", "family"}
                                   | (set() if exam else {"lesion mask"})), start
    assert args["series"]
    for s in args["series"]:
        assert set(s) == {"label", "url"} and s["label"] in sequences
        assert VOLUME_URL.fullmatch(s["url"]), s["url"]
    assert {VOLUME_URL.fullmatch(m["url"]).group(1): m["label"] for m in args["masks"]} == (
        masks or {})
    assert all(set(m) == {"label", "url", "series"} for m in args["masks"])


def _masks() -> tuple[dict[str, dict[str, str]], set[str]]:
    """{case_id: {sha256: label}} of the stored masks, and the tasks that show them."""
    with session() as s:
        out: dict[str, dict[str, str]] = {}
        for m in s.exec(select(Mask)):
            out.setdefault(m.case_id, {})[m.sha256] = m.label
        return out, {t.task_id for t in s.exec(select(Task).where(Task.show_masks))}


def test_scoring_page_is_blind_for_every_item(demo_study: Path) -> None:
    expert = _login("demo-expert1")
    with session() as s:
        entries = queue(s, rater_id=expert.id)
        justifications = {g.justification for g in s.exec(select(GraderScore))}
        forbidden = [*MODELS, *[u.name for u in s.exec(select(User)) if u.name != expert.name]]
        sequences = {x.sequence for x in s.exec(select(Series))}
        task_of = {a.id: r.task_id for a, r in s.exec(
            select(Assignment, Response).where(Assignment.response_id == Response.response_id))}
        case_of = {t.task_id: t.case_id for t in s.exec(select(Task))}
    masks, showing = _masks()
    assert masks and showing  # the demo has a mask and a task that shows it
    assert len(entries) == 120
    at = page("pages/score.py", expert)
    shown = 0
    for e in entries:
        at.session_state["score_current"] = e.assignment_id
        at.run()
        assert not at.exception, at.exception
        payload = page_payload(at)
        assert e.blind_code in payload
        # no assignment number: numbered as assigned, it tells a later batch from the rest
        assert f"-a{e.assignment_id}-" not in payload and f"-item-{e.blind_code}-" in payload
        [keys] = [json.loads(c.proto.json_args) for c in at.get("component_instance")
                  if c.proto.component_name.endswith("nmb_score_keys")]
        assert keys == {"item": e.blind_code, "container": "nmb-rubric", "key": "score-keys",
                        "default": None}
        for word in forbidden:
            assert word not in payload, (e.blind_code, word)
        for text in justifications:
            assert text not in payload
        assert "synthetic-demo-grader" not in payload
        task = task_of[e.assignment_id]
        allowed = masks.get(case_of[task], {}) if task in showing else {}
        _viewer_gets_images_and_labels_only(at, sequences, allowed)
        shown += bool(allowed)
    assert shown  # some items show a mask, all others none


def test_scoring_page_saves_a_draft_on_change(demo_study: Path) -> None:
    expert = _login("demo-expert1")
    at = page("pages/score.py", expert).run()
    aid = at.session_state["score_current"]
    at.text_area[0].input("first impressions").run()
    again = page("pages/score.py", expert)  # a new session, as after a closed tab
    again.session_state["score_current"] = aid
    again.run()
    assert again.text_area[0].value == "first impressions"


def test_submitting_a_blank_form_names_every_missing_field_next_to_it(demo_study: Path) -> None:
    expert = _login("demo-expert1")
    at = page("pages/score.py", expert).run()
    aid = at.session_state["score_current"]
    with session() as s:
        item = load_item(s, rater_id=expert.id, assignment_id=aid)
        rubric = rubric_by_hash(s, item.rubric_hash)
    next(b for b in at.button if b.label == "Submit").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    criteria = rubric.applicable_criteria(item.family)
    for c in criteria:  # one message per field, in the rubric's words, next to the field
        assert sum(c.name in e for e in errors) == 2, (c.name, errors)  # and in the summary
    assert any(rubric.correct_diagnosis.question in e for e in errors)
    assert any(e.startswith("Still to answer") for e in errors)
    first = at.radio(key=f"item-{item.blind_code}-{criteria[0].key}")
    first.set_value(first.options[0]).run()  # answered: its message goes
    assert sum(criteria[0].name in e.value for e in at.error) == 0, [e.value for e in at.error]
    with session() as s:
        assert load_item(s, rater_id=expert.id, assignment_id=aid).status != "submitted"


def test_exam_page_hides_reference_and_other_answers(demo_study: Path) -> None:
    student = _login("demo-student")
    with session() as s:
        truths = [c.ground_truth["final_diagnosis"] for c in s.exec(select(Case))]
        titles = {c.case_id: c.title for c in s.exec(select(Case))}
        texts = [r.text[:60] for r in s.exec(select(Response))]
        sequences = {x.sequence for x in s.exec(select(Series))}
    masks, _ = _masks()
    mask_shas = [sha for case in masks.values() for sha in case]
    at = page("pages/exam.py", student).run()
    assert not at.exception
    payload = page_payload(at)
    for word in [*MODELS, *truths, *texts]:
        assert word not in payload
    _viewer_gets_images_and_labels_only(at, sequences, exam=True)
    with session() as s:  # a taker sees at least what a model is shown: its key slices
        keyed = {(k["series"], k["plane"]) for c in s.exec(select(Case)) for k in c.key_slices or []}
    seen, jumps = set(), set()
    for i in range(len(at.selectbox(key="exam_task").options)):  # every task of the exam
        exam = page("pages/exam.py", student)
        exam.session_state["exam_task"] = i
        exam.run()
        assert not exam.exception
        _viewer_gets_images_and_labels_only(exam, sequences, exam=True)  # no mask, ever
        assert not any(sha in page_payload(exam) for sha in mask_shas)
        seen |= {cid for cid, title in titles.items() if title in page_payload(exam)}
        jumps |= {tuple(j["label"].split()[:2]) for args in viewer_args(exam)
                  for j in args.get("keys", [])}
    assert set(masks) <= seen  # the masked case was shown without its mask
    assert keyed and jumps == keyed  # the viewer opens at the slices models are sent
    [key] = [k for k in at.session_state if k.startswith("exam_answer_")]  # the answer box
    at.session_state[key] = {"text": "Left MCA infarct.", "edit": 1}  # typed, not yet left
    at.run()
    reopened = page("pages/exam.py", student).run()  # a new session finds the draft
    [box] = [json.loads(e.proto.json_args) for e in reopened.get("component_instance")
             if e.proto.component_name.endswith("nmb_answer_box")]
    assert box["text"] == "Left MCA infarct."
    at.session_state[key] = {"text": "Left MCA infarct.", "edit": 1, "record": 1}  # its button
    at.run()
    assert not at.exception
    assert any("Answer recorded for task 1" in m.value for m in at.caption)  # inline
    at.selectbox(key="exam_task").set_value(0).run()  # the page moved on to the next task
    assert "Left MCA infarct." in page_payload(at)


def test_admin_and_calibrate_pages_render(demo_study: Path) -> None:
    admin = _login("demo-admin")
    for path in ("pages/admin.py", "pages/calibrate.py"):
        at = page(path, admin).run()
        assert not at.exception, (path, at.exception)
        assert not at.error, (path, [e.value for e in at.error])
    assert any("pass@1" in df.value.columns for df in at.dataframe), "no leaderboard"
    assert any(escape_markdown("is not validated (not held-out tested)") in w.value
               for w in at.warning)


def test_calibrate_page_plans_the_held_out_part(demo_study: Path) -> None:
    at = page("pages/calibrate.py", _login("demo-admin")).run()
    assert any(escape_markdown("decided on the lower bounds of 95% intervals (one-sided 97.5% "
                               "bounds; 1 held-out look)") in m.value for m in at.markdown)
    assert any(escape_markdown("Weaker than the default protocol: 10 held-out cases, fewer than "
                               "the planner's 67") in w.value for w in at.warning)  # the demo's
    assert any("with a 95% interval from resamples of cases (none from fewer than 5 cases)"
               in c.value for c in at.caption)  # the leaderboard's (before: "over tasks")
    next(n for n in at.number_input if n.label == "Expected r").set_value(0.97)
    next(n for n in at.number_input if n.label == "Held-out cases").set_value(20)
    next(b for b in at.button if b.label == "Simulate").click().run(timeout=120)
    assert not at.exception, at.exception
    found = [m.value for m in at.markdown if m.value.startswith("P(pass the r check) = ")]
    assert found and "200 simulated studies, rule lower_bound, studentized_z interval at " \
        "95.0%, threshold 0.9" in found[0], found


def test_calibration_report_renders_in_the_app(demo_study: Path) -> None:
    admin = _login("demo-admin")
    at = page("pages/calibrate.py", admin).run()
    assert any("Registered protocol 1" in m.value for m in at.markdown)
    assert any(escape_markdown("not held-out tested") in c.value for c in at.caption)
    part = next(sb for sb in at.selectbox if sb.label == "Part")
    assert part.value == "dev"  # the default never spends the look
    part.set_value("heldout").run()
    next(b for b in at.button if b.label == "Take the held-out look").click().run()
    assert any("spends the one held-out look of config" in w.value for w in at.warning)
    assert not any("gate passed" in s.value for s in at.subheader)  # not yet
    next(b for b in at.button if b.label == "Yes, take the held-out look").click().run(
        timeout=120)
    assert not at.exception, at.exception
    assert any("gate passed · held-out look" in s.value for s in at.subheader), [
        s.value for s in at.subheader]
    captions = [c.value for c in at.caption]  # before: "0 of the 1", "not held-out tested"
    assert any(c.startswith("Held-out looks so far: 1 of the 1") for c in captions), captions
    assert f"Status: {escape_markdown('passed its held-out look (report 1)')}" in captions
    assert any("synthetic" in w.value for w in at.warning)
    tags = next(df.value for df in at.dataframe if "error class" in df.value.columns)
    assert len(tags) == 5 and "alpha, experts + grader" in tags.columns
    # computed, with the report's bootstrap (a class the grader tags as the experts do: [1, 1])
    assert tags["AC1 95% CI"].str.fullmatch(r"\[[01]\.\d{3}, [01]\.\d{3}\]").all()
    looks = next(df.value for df in at.dataframe if "decided" in df.value.columns)
    assert list(looks["decided"]) == ["passed"]
    at.run()  # (the run that took the look showed no button)
    next(b for b in at.button if b.label == "Take the held-out look").click().run()
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert not any("spends the one" in w.value for w in at.warning)  # cancelled: nothing asked
    next(b for b in at.button if b.label == "Take the held-out look").click().run()
    next(b for b in at.button if b.label == "Yes, take the held-out look").click().run(
        timeout=120)
    assert any("already took its held-out look" in i.value for i in at.info)
    at = page("pages/calibrate.py", admin).run()  # validated now: the leaderboard is not marked
    assert not any("not validated" in w.value for w in at.warning), [w.value for w in at.warning]


def test_calibrate_page_runs_the_grader_against_a_local_server(demo_study: Path) -> None:
    from db.models import GraderFailure
    from grading.config import GraderSettings, store_config
    from tests.openai_server import OpenAIServer

    admin = _login("demo-admin")
    with OpenAIServer() as srv:
        with session() as s:
            config = store_config(s, GraderSettings(base_url=srv.base_url, name="local test"))
            s.commit()
        srv.inject("400")  # the first request fails for good: listed as a failure
        at = page("pages/calibrate.py", admin)
        at.session_state["grader_config"] = config.id
        at.run()
        assert any("items to grade" in m.value for m in at.markdown), "no cost estimate shown"
        at.checkbox(key=f"trust_endpoint_{config.id}").check().run()  # the stored address
        next(b for b in at.button if b.label == "Run grader").click().run(timeout=120)
        assert not at.exception, at.exception
        # one item failed, the others were graded: shown as a warning, not a success
        assert any("graded" in m.value for m in at.warning), [e.value for e in at.error]
        assert 0 < len(srv.chat_requests()) <= 120  # identical requests are sent once
        with session() as s:
            failed = s.exec(select(GraderFailure).where(GraderFailure.config_id == config.id)).all()
            graded = s.exec(select(GraderScore).where(GraderScore.config_id == config.id)).all()
        assert len(failed) >= 1 and len(failed) + len(graded) == 120  # the calibration subset
        assert at.dataframe, "the failure table is shown"


def test_admin_form_reports_mistakes_and_writes(demo_study: Path) -> None:
    from db.models import Exam

    at = page("pages/admin.py", _login("demo-admin"))
    at.query_params["section"] = "Exams"
    at.run()
    opener = next(b for b in at.get("form_submit_button") if b.label == "Open exam")
    opener.click().run()
    assert any("needs a name" in e.value for e in at.error)
    next(t for t in at.text_input if t.label == "Exam name").input("Baseline")
    next(b for b in at.get("form_submit_button") if b.label == "Open exam").click().run()
    assert any("'Baseline' is open with 12 tasks" in m.value for m in at.success)
    with session() as s:
        assert [e.name for e in s.exec(select(Exam).order_by(Exam.name))] == [
            "Baseline", "Demo exam (synthetic cases)"]


def test_admin_warns_of_two_multi_turn_tasks_of_one_case(demo_study: Path) -> None:
    with session() as s:  # a second staged task of syn-02, whose syn-t04 has stages
        s.add(Task(task_id="syn-t04b", case_id="syn-02", family="differential", level=3,
                   prompt="Which diagnosis?", stages=["The CSF shows **bands**."]))
        s.commit()
    at = page("pages/admin.py", _login("demo-admin"))
    at.query_params["section"] = "Exams"
    at.run()
    next(t for t in at.text_input if t.label == "Exam name").input("Baseline")
    next(b for b in at.get("form_submit_button") if b.label == "Open exam").click().run()
    assert any("'Baseline' is open with 13 tasks" in m.value for m in at.success)
    assert [w.value for w in at.warning] == [escape_markdown(  # quoted ids shown as text
        "Multi-turn tasks of one case in one exam (case 'syn-02': 'syn-t04', 'syn-t04b'): the "
        "stages one reveals are known when the other is answered; put them in separate exams.")]


def test_the_bundles_case_and_task_ids_never_reach_the_exam_or_scoring_page(
        demo_study: Path) -> None:
    """Case and task ids are written by whoever made the bundle and may name the diagnosis
    (`gbm-07`, `stroke-localisation-3`); the pages key their elements without them, since
    every widget and container key reaches the browser in an element's id or class."""
    expert = _login("demo-expert1")
    with session() as s:
        ids = [*(c.case_id for c in s.exec(select(Case))),
               *(t.task_id for t in s.exec(select(Task)))]
        entries = queue(s, rater_id=expert.id)
    student = _login("demo-student")
    tasks = len(page("pages/exam.py", student).run().selectbox(key="exam_task").options)
    for i in range(tasks):
        exam = page("pages/exam.py", student)
        exam.session_state["exam_task"] = i
        exam.run()
        assert not exam.exception
        payload = page_payload(exam)
        assert not [x for x in ids if x in payload], i
    for e in entries[:12]:
        at = page("pages/score.py", expert)
        at.session_state["score_current"] = e.assignment_id
        at.run()
        assert not at.exception
        payload = page_payload(at)
        assert not [x for x in ids if x in payload], e.blind_code
