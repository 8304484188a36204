"""Exams: stage-by-stage reveal, answers fixed once recorded, human responses on finish."""

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import AuditLog, Case, Exam, ExamAttempt, Response, Task, User
from db.study.exams import (
    answer_stage,
    attempt_for,
    ensure_exam,
    exam_tasks,
    finish,
    review_tasks,
    save_draft,
    staged_tasks_sharing_a_case,
)
from db.users import add_user
from errors import UserError
from tests.factories import make_study


def test_stages_reveal_in_order_and_finish_makes_blind_responses(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3 with one extra stage
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        assert tasks["task2"].n_stages == 2 and tasks["task2"].revealed_stages == []
        for blank in (" \n\t", "\u200b\u200b", "\u2060\u00a0"):  # spaces, zero-width marks
            with pytest.raises(UserError, match="the answer is empty"):
                answer_stage(s, attempt=attempt, task_id="task2", text=blank)
        assert answer_stage(s, attempt=attempt, task_id="task2", text="First guess") == 0
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        stage_text = s.get(Task, "task2").stages[0]
        assert tasks["task2"].revealed_stages == [stage_text] and not tasks["task2"].done
        assert answer_stage(s, attempt=attempt, task_id="task2", text="Revised") == 1
        with pytest.raises(UserError, match="already fully answered"):
            answer_stage(s, attempt=attempt, task_id="task2", text="Again")
        with pytest.raises(UserError, match="not part of this exam"):
            answer_stage(s, attempt=attempt, task_id="task1", text="x")
        answer_stage(s, attempt=attempt, task_id="task0", text="Only answer")
        assert finish(s, attempt=attempt) == 2
        human = s.exec(select(Response).where(Response.source == "student")).all()
        assert sorted((r.task_id, r.text, r.turns) for r in human) == [
            ("task0", "Only answer", None), ("task2", "First guess", ["Revised"])]
        assert all(r.model is None and r.blind_code.startswith("R-") for r in human)
        with pytest.raises(UserError, match="finished"):
            answer_stage(s, attempt=attempt, task_id="task0", text="late")


def test_a_later_stage_waits_for_the_tasks_of_its_case_with_fewer_stages(
        database_url: str) -> None:
    """A multi-turn task's revealed stage (a CSF result, say) must not reach the taker before
    a single-stage task about the same case is answered: a model answering that task never
    gets it."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3 with one extra stage
        s.get(Task, "task0").case_id = "case2"  # a single-stage task about the same case
        stu = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task2", "task1", "task0"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=stu.id)

        def tasks() -> dict:
            return {t.task_id: t for t in exam_tasks(s, attempt=attempt)}

        assert tasks()["task2"].waiting_for == [3] and tasks()["task2"].answerable
        assert tasks()["task1"].waiting_for == tasks()["task0"].waiting_for == []
        answer_stage(s, attempt=attempt, task_id="task2", text="first guess")  # stage 1: free
        multi = tasks()["task2"]
        assert multi.revealed_stages == [] and not multi.answerable  # stage 2 held back
        with pytest.raises(UserError, match="stage 2 of this task is revealed once task 3 "):
            answer_stage(s, attempt=attempt, task_id="task2", text="a guess in the dark")
        answer_stage(s, attempt=attempt, task_id="task1", text="other case")  # no effect
        assert tasks()["task2"].revealed_stages == []
        answer_stage(s, attempt=attempt, task_id="task0", text="the single-stage answer")
        multi = tasks()["task2"]
        assert multi.waiting_for == [] and multi.answerable
        assert multi.revealed_stages == ["More information."]
        assert answer_stage(s, attempt=attempt, task_id="task2", text="revised") == 1


def test_two_multi_turn_tasks_of_one_case_in_one_exam_are_warned_of(database_url: str) -> None:
    """No order keeps two staged tasks of a case apart (`_waiting_for` protects a task without
    stages only): the exam opens, and the admin is told which cases and tasks."""
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=4)  # task2 (case2) is level 3 with one extra stage
        s.get(Task, "task0").case_id = "case2"  # a single-stage task of that case: protected
        assert staged_tasks_sharing_a_case(s, ["task0", "task1", "task2"]) is None
        s.add(Task(task_id="task2b", case_id="case2", family="differential", level=3,
                   prompt="Which diagnosis?", stages=["The CSF shows oligoclonal bands.",
                                                     "The biopsy is read."]))
        assert staged_tasks_sharing_a_case(s, ["task2", "task1"]) is None
        warning = staged_tasks_sharing_a_case(s, ["task2b", "task0", "task2", "nope"])
        assert warning == ("multi-turn tasks of one case in one exam (case 'case2': 'task2', "
                           "'task2b'): the stages one reveals are known when the other is "
                           "answered; put them in separate exams")
        for k in range(4):  # more than three such cases: three named, the rest counted
            s.add_all(Task(task_id=f"t{k}{x}", case_id=f"case{k}", family="differential",
                           level=3, prompt="?", stages=["More."]) for x in "ab")
        warning = staged_tasks_sharing_a_case(s, [f"t{k}{x}" for k in range(4) for x in "ab"])
        assert warning.startswith("multi-turn tasks of one case in one exam (case 'case0': "
                                  "'t0a', 't0b'; case 'case1'") and "'case3'" not in warning
        assert "'t2b'; 1 more case):" in warning and "\n" not in warning


def test_an_exam_with_unknown_or_other_tasks_is_refused(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=3)
        ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        s.commit()
        with pytest.raises(UserError, match=r"exam 'baseline': unknown tasks 'nope', 'gone'"):
            ensure_exam(s, name="baseline", task_ids=["task0", "nope", "gone"])
        with pytest.raises(UserError, match="exists with 2 other tasks"):
            ensure_exam(s, name="baseline", task_ids=["task1"])
        with pytest.raises(UserError, match="unknown task 'nope'"):
            ensure_exam(s, name="new", task_ids=["nope"])
        with pytest.raises(UserError, match="exam 'new': task 'task0' is listed twice"):
            ensure_exam(s, name="new", task_ids=["task0", "task1", "task0"])
        for name, why in (("   ", "the exam needs a name"),
                          ("bad\nname\x1b[31m", "the exam name contains U\\+000A"),
                          (" padded ", "the exam name has blanks around it")):
            with pytest.raises(UserError, match=why):  # the audit's names, all accepted before
                ensure_exam(s, name=name, task_ids=["task1"])
        assert [e.name for e in s.exec(select(Exam))] == ["baseline"]
        assert ensure_exam(s, name="baseline", task_ids=["task0", "task2"]).task_ids == [
            "task0", "task2"]
        assert ensure_exam(s, name="baseline").task_ids == ["task0", "task2"]


def test_an_exam_opens_without_review_and_keeps_its_setting(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=2)
        assert ensure_exam(s, name="baseline").review is False  # off by default
        assert ensure_exam(s, name="open", review=True).review is True
        s.commit()
        with pytest.raises(UserError, match="exists with review off"):
            ensure_exam(s, name="baseline", review=True)
        with pytest.raises(UserError, match="exists with review on"):
            ensure_exam(s, name="open")
        assert {e.name: e.review for e in s.exec(select(Exam))} == {"baseline": False,
                                                                    "open": True}


@pytest.mark.slow
def test_review_shows_own_answers_and_references_only_when_allowed_and_finished(
        database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3 with one extra stage
        s.get(Case, "case1").ground_truth = None  # imported without its reference answer
        s.get(Case, "case0").ground_truth = {"final_diagnosis": "MS", "differential": ["NMOSD"],
                                             "reasoning": "Dawson fingers."}
        stu, other = (add_user(s, name=n, role="student", password="pw") for n in ("a", "b"))
        closed = ensure_exam(s, name="baseline")
        open_ = ensure_exam(s, name="open", review=True)
        s.commit()
        for exam in (open_, closed):  # the closed one asks nothing again (answered once)
            for user in (stu, other):
                attempt = attempt_for(s, exam_id=exam.id, user_id=user.id)
                for t in exam_tasks(s, attempt=attempt):
                    for k in range(0 if t.done else t.n_stages):
                        answer_stage(s, attempt=attempt, task_id=t.task_id,
                                     text=f"{user.name} {t.task_id} {k}")
                if exam is open_ and user is stu:
                    with pytest.raises(UserError, match="finish the exam to review it"):
                        review_tasks(s, attempt=attempt)
                finish(s, attempt=attempt)
        with pytest.raises(UserError, match="'baseline' does not show reference answers"):
            review_tasks(s, attempt=attempt_for(s, exam_id=closed.id, user_id=stu.id))
        mine = review_tasks(s, attempt=attempt_for(s, exam_id=open_.id, user_id=stu.id))
        assert [(t.task_id, t.answers, t.stages) for t in mine] == [
            ("task0", ["a task0 0"], []), ("task1", ["a task1 0"], []),
            ("task2", ["a task2 0", "a task2 1"], ["More information."])]
        assert mine[0].reference == [("Final diagnosis", "MS"), ("Differential", "NMOSD"),
                                     ("Reasoning", "Dawson fingers.")]
        assert mine[1].reference == []  # no reference answer: nothing to show
        assert mine[2].reference == [("Final diagnosis", "MS")]


def test_a_review_withholds_the_cases_another_unfinished_exam_still_asks(
        database_url: str) -> None:
    """A practice exam with review shares cases with a baseline exam: finishing the practice
    exam must not hand the taker the reference answer (the case's) nor the stages not reached
    of a case with a task they may still answer in the baseline: the same task left
    unanswered, or another task of the case. A task answered in practice is not asked in the
    baseline, so its case is shown unless another of its tasks is still to answer."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        s.get(Task, "task2").stages = ["More information.", "The answer."]  # 3 stages
        s.get(Case, "case0").ground_truth = {"final_diagnosis": "MS", "differential": ["NMOSD"]}
        s.add(Task(task_id="task1b", case_id="case1", family="rationale", level=1,
                   prompt="Why?", stages=[]))
        stu = add_user(s, name="stu", role="student", password="pw")
        practice = ensure_exam(s, name="practice", task_ids=["task0", "task1", "task2"],
                               review=True)
        baseline = ensure_exam(s, name="baseline", task_ids=["task2", "task0", "task1b"])
        s.commit()
        attempt = attempt_for(s, exam_id=practice.id, user_id=stu.id)
        answer_stage(s, attempt=attempt, task_id="task1", text="stu task1")
        answer_stage(s, attempt=attempt, task_id="task2", text="stu task2 first")  # stage 0 only
        finish(s, attempt=attempt)  # task0 left unanswered
        review = {t.task_id: t for t in review_tasks(s, attempt=attempt)}
        assert review["task0"].withheld == ["baseline"] and review["task0"].reference == []
        assert review["task1"].withheld == ["baseline"]  # task1b, same case, still to answer
        assert review["task1"].reference == [] and review["task1"].stages == []
        assert review["task2"].withheld == []  # answered: the baseline does not ask it again
        assert review["task2"].stages == ["More information.", "The answer."]
        base = attempt_for(s, exam_id=baseline.id, user_id=stu.id)
        assert review_tasks(s, attempt=attempt)[0].withheld == ["baseline"]  # started: still
        for t in exam_tasks(s, attempt=base):
            for k in range(0 if t.done else t.n_stages):
                answer_stage(s, attempt=base, task_id=t.task_id, text=f"b {k}")
        assert finish(s, attempt=base) == 2  # task0 and task1b; task2 was the practice's
        review = {t.task_id: t for t in review_tasks(s, attempt=attempt)}
        assert all(not t.withheld for t in review.values())
        assert review["task0"].reference == [("Final diagnosis", "MS"), ("Differential", "NMOSD")]


@pytest.mark.slow
def test_a_person_answers_a_task_once_across_exams(database_url: str) -> None:
    """A task answered (or begun) in one exam is not asked in another, nor a task of a case
    whose later stage the taker saw there (task2's first stage reveals what task2b, of the
    same case, asks about): a second answer, or one written after more of the case was seen,
    is no baseline answer, and the results would count the person twice on the task. Another
    taker is not affected."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        s.add(Task(task_id="task2b", case_id="case2", family="differential", level=1,
                   prompt="Which diagnosis?", stages=[]))
        stu = add_user(s, name="stu", role="student", password="pw")
        other = add_user(s, name="other", role="student", password="pw")
        first = ensure_exam(s, name="first", task_ids=["task2", "task0"])
        second = ensure_exam(s, name="second", task_ids=["task0", "task1", "task2", "task2b"])
        s.commit()
        a = attempt_for(s, exam_id=first.id, user_id=stu.id)
        answer_stage(s, attempt=a, task_id="task0", text="MS.")
        answer_stage(s, attempt=a, task_id="task2", text="MS.")  # stage 1 of 2: begun
        b = attempt_for(s, exam_id=second.id, user_id=stu.id)
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=b)}
        assert {k: t.elsewhere for k, t in tasks.items()} == {
            "task0": "first", "task1": None, "task2": "first", "task2b": "first"}
        assert tasks["task2"].done and tasks["task2"].revealed_stages == []
        with pytest.raises(UserError, match="in the exam 'first' you answered this task, or"):
            answer_stage(s, attempt=b, task_id="task0", text="MS again.")
        s.rollback()
        answer_stage(s, attempt=b, task_id="task1", text="MS.")
        assert finish(s, attempt=b) == 1
        answer_stage(s, attempt=a, task_id="task2", text="Still MS.")  # the first goes on
        assert finish(s, attempt=a) == 2
        assert sorted(r.task_id for r in s.exec(select(Response).where(
            Response.user_id == stu.id))) == ["task0", "task1", "task2"]
        c = attempt_for(s, exam_id=second.id, user_id=other.id)
        assert all(t.elsewhere is None for t in exam_tasks(s, attempt=c))


def test_a_review_withholds_a_case_whose_task_the_taker_began_elsewhere(
        database_url: str) -> None:
    """The taker began task0b in the baseline (its first stage answered), then finished the
    practice exam: its review must not show case0's reference answer while the baseline's
    task0b still waits for its last stage (before: shown, since a begun task counted as
    answered, and the taker went on with the diagnosis in hand)."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        s.get(Case, "case0").ground_truth = {"final_diagnosis": "MS", "differential": ["NMOSD"]}
        s.get(Task, "task0").stages = ["A follow-up MRI shows new lesions."]  # as many stages
        s.add(Task(task_id="task0b", case_id="case0", family="differential", level=3,
                   prompt="Which diagnosis?", stages=["The CSF shows oligoclonal bands."]))
        stu = add_user(s, name="stu", role="student", password="pw")
        practice = ensure_exam(s, name="practice", task_ids=["task0", "task1"], review=True)
        baseline = ensure_exam(s, name="baseline", task_ids=["task0b", "task1"])
        s.commit()
        base = attempt_for(s, exam_id=baseline.id, user_id=stu.id)
        answer_stage(s, attempt=base, task_id="task0b", text="MS?")
        prac = attempt_for(s, exam_id=practice.id, user_id=stu.id)
        for text in ("MS?", "MS."):
            answer_stage(s, attempt=prac, task_id="task0", text=text)
        finish(s, attempt=prac)
        review = {t.task_id: t for t in review_tasks(s, attempt=prac)}
        assert review["task0"].withheld == ["baseline"] and review["task0"].reference == []
        assert s.get(ExamAttempt, prac.id).reviewed_cases is None  # nothing handed out
        answer_stage(s, attempt=base, task_id="task0b", text="MS.")
        assert [t.task_id for t in exam_tasks(s, attempt=base) if t.answerable] == ["task1"]
        finish(s, attempt=base)
        review = {t.task_id: t for t in review_tasks(s, attempt=prac)}
        assert review["task0"].reference == [("Final diagnosis", "MS"), ("Differential", "NMOSD")]


def test_an_exam_opened_after_a_review_does_not_ask_the_cases_it_showed(
        database_url: str) -> None:
    """The practice exam's review showed case0's reference answer before the baseline, which
    holds task0b of case0, was opened; the baseline does not ask task0b (before: asked, an
    answer written with the diagnosis known). The review records what it handed out: a
    withheld case is not recorded, and another taker is not affected."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        s.get(Case, "case0").ground_truth = {"final_diagnosis": "MS", "differential": ["NMOSD"]}
        s.get(Case, "case1").ground_truth = None
        s.add(Task(task_id="task0b", case_id="case0", family="differential", level=3,
                   prompt="Which diagnosis?", stages=["The CSF shows oligoclonal bands."]))
        stu = add_user(s, name="stu", role="student", password="pw")
        other = add_user(s, name="other", role="student", password="pw")
        practice = ensure_exam(s, name="practice", task_ids=["task0", "task1"], review=True)
        s.commit()
        prac = attempt_for(s, exam_id=practice.id, user_id=stu.id)
        answer_stage(s, attempt=prac, task_id="task0", text="MS.")
        finish(s, attempt=prac)
        review_tasks(s, attempt=prac)
        review_tasks(s, attempt=prac)  # seen again: recorded once
        assert s.get(ExamAttempt, prac.id).reviewed_cases == ["case0"]  # case1 has no answer
        assert [a.detail["cases"] for a in s.exec(select(AuditLog))
                if a.action == "exam.review"] == [["case0"]]
        baseline = ensure_exam(s, name="baseline", task_ids=["task0b", "task1"])
        s.commit()
        base = attempt_for(s, exam_id=baseline.id, user_id=stu.id)
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=base)}
        assert tasks["task0b"].elsewhere == "practice" and tasks["task0b"].done
        assert tasks["task1"].elsewhere is None
        with pytest.raises(UserError, match="its reference answer"):
            answer_stage(s, attempt=base, task_id="task0b", text="MS.")
        s.rollback()
        theirs = attempt_for(s, exam_id=baseline.id, user_id=other.id)
        assert all(t.elsewhere is None for t in exam_tasks(s, attempt=theirs))


def test_a_draft_is_capped_and_kept_only_for_an_open_attempt(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        stu = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=stu.id)
        save_draft(s, attempt=attempt, task_id="task0", text="half a thought")
        with pytest.raises(UserError, match="more than the limit of 200,000"):
            save_draft(s, attempt=attempt, task_id="task0", text="x" * 200_001)
        with pytest.raises(UserError, match="not part of this exam"):
            save_draft(s, attempt=attempt, task_id="task1", text="elsewhere")
        assert s.get(ExamAttempt, attempt.id).drafts == {"task0": "half a thought"}
        answer_stage(s, attempt=attempt, task_id="task0", text="whole thought")
        assert s.get(ExamAttempt, attempt.id).drafts == {}  # recorded: the draft goes
        finish(s, attempt=attempt)
        with pytest.raises(UserError, match="finished"):
            save_draft(s, attempt=attempt, task_id="task0", text="late")


def test_only_physicians_and_students_take_exams(database_url: str) -> None:
    """A human response's source is the taker's role, which must be a response source."""
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=1)  # expert1..3
        exam = ensure_exam(s, name="baseline")
        s.commit()
        expert = s.exec(select(User).where(User.role == "expert")).first()
        with pytest.raises(UserError, match="only physicians and students take exams; this "
                                            "account is 'expert'"):
            attempt_for(s, exam_id=exam.id, user_id=expert.id)
        assert s.exec(select(ExamAttempt)).all() == []


def test_linked_cases_count_as_one_patient_across_exams(sqlite_url: str) -> None:
    """case0 and case2 describe one patient (`Case.patient`): once the taker saw the later
    stage of case2's task in one exam, case0's task is not asked in another; and the review
    of the first withholds the reference while the other exam still asks about the patient."""
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 (case2) is level 3 with one extra stage
        for case_id in ("case0", "case2"):
            s.get(Case, case_id).patient = "neural-medbench:case_1"
        stu = add_user(s, name="stu", role="student", password="pw")
        first = ensure_exam(s, name="first", task_ids=["task2"], review=True)
        second = ensure_exam(s, name="second", task_ids=["task0", "task1"])
        s.commit()
        attempt = attempt_for(s, exam_id=first.id, user_id=stu.id)
        answer_stage(s, attempt=attempt, task_id="task2", text="first guess")
        answer_stage(s, attempt=attempt, task_id="task2", text="revised")
        finish(s, attempt=attempt)
        [reviewed] = review_tasks(s, attempt=attempt)
        assert reviewed.withheld == ["second"] and reviewed.reference == []
        other = {t.task_id: t for t in exam_tasks(
            s, attempt=attempt_for(s, exam_id=second.id, user_id=stu.id))}
        assert other["task0"].elsewhere == "first" and other["task1"].elsewhere is None


def test_exams_are_listed_with_their_takers_and_a_closed_one_takes_no_new_answer(
        database_url: str, capsys) -> None:
    """`nmb exam list` shows each taker's progress; `nmb exam close` (audited, once) refuses
    new attempts and answers, keeps what was recorded, lets a taker finish, and no longer
    withholds a review's reference answers for the tasks the closed exam can no longer ask."""
    import json

    import cli
    from db.models import StageAnswer

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3 with one extra stage
        stu = add_user(s, name="stu", role="student", password="pw")
        ana = add_user(s, name="ana", role="physician", password="pw")
        bob = add_user(s, name="bob", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        quiz = ensure_exam(s, name="quiz", task_ids=["task2"], review=True)
        s.commit()
        mine = attempt_for(s, exam_id=exam.id, user_id=stu.id)
        answer_stage(s, attempt=mine, task_id="task0", text="one")
        answer_stage(s, attempt=mine, task_id="task2", text="first of two")
        theirs = attempt_for(s, exam_id=exam.id, user_id=ana.id)
        for task_id in ("task0", "task2", "task2"):
            answer_stage(s, attempt=theirs, task_id=task_id, text="an answer")
        finish(s, attempt=theirs)
        quizzed = attempt_for(s, exam_id=quiz.id, user_id=stu.id)
        finish(s, attempt=quizzed)  # task2 not asked: begun in "baseline"
        assert review_tasks(s, attempt=quizzed)[0].withheld == ["baseline"]
    capsys.readouterr()
    assert cli.main(["exam", "list", "--json"]) == 0
    listed = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert (listed["baseline"]["state"], listed["baseline"]["tasks"]) == ("open", 2)
    takers = {t["name"]: t for t in listed["baseline"]["takers"]}
    assert (takers["stu"]["answered"], takers["stu"]["total"]) == (1, 2)
    assert takers["stu"]["started_at"] and takers["stu"]["finished_at"] is None
    assert takers["ana"]["answered"] == 2 and takers["ana"]["finished_at"]
    assert [(t["name"], t["not_asked"]) for t in listed["quiz"]["takers"]] == [("stu", 0)]

    assert cli.main(["exam", "close", "baseline"]) == 0
    assert capsys.readouterr().out == ("closed exam 'baseline': no new attempt or answer; 2 "
                                       "takers, 1 not finished (what they recorded stays; "
                                       "they may still finish)\n")
    assert cli.main(["exam", "close", "baseline"]) == 0
    assert capsys.readouterr().out == "exam 'baseline' was already closed\n"
    assert cli.main(["exam", "close", "nope"]) == 2
    assert capsys.readouterr().err == ("nmb: no exam named 'nope' (exams: 'baseline', "
                                       "'quiz')\n")
    assert cli.main(["exam", "list"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("baseline: closed, 2 tasks, review off, 2 takers\n")
    assert "  stu " in text and "1/2 answered" in text and "not finished" in text
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        closes = s.exec(select(AuditLog).where(AuditLog.action == "exam.close")).all()
        assert [(a.actor, a.detail) for a in closes] == [
            ("cli", {"exam": "baseline", "unfinished_attempts": 1})]
        kept = len(s.exec(select(StageAnswer)).all())
        with pytest.raises(UserError, match="the exam 'baseline' is closed: it takes no new "
                                            "attempts"):
            attempt_for(s, exam_id=exam.id, user_id=bob.id)
        mine = s.get(ExamAttempt, mine.id)
        with pytest.raises(UserError, match="is closed: it takes no new answers"):
            answer_stage(s, attempt=mine, task_id="task2", text="after the close")
        with pytest.raises(UserError, match="is closed: it takes no new answers"):
            save_draft(s, attempt=mine, task_id="task2", text="a draft")
        assert len(s.exec(select(StageAnswer)).all()) == kept
        assert s.exec(select(ExamAttempt).where(ExamAttempt.user_id == bob.id)).first() is None
        assert finish(s, attempt=mine) == 1  # what was recorded is handed in
        assert review_tasks(s, attempt=s.get(ExamAttempt, quizzed.id))[0].withheld == []


def test_an_answer_reads_the_same_whatever_the_exam_size(sqlite_url: str) -> None:
    """Issue 47: an answer re-read every task of the exam and every answer of the taker (52 ms
    per answer at 50 tasks, 167 ms at 200); now only the answered task's patient. The same
    number of statements for an answer in an exam of 6 tasks and of 60 (each taker with three
    answers before it, and one in another exam)."""
    from sqlalchemy import event

    engine = engine_for(sqlite_url)
    with Session(engine, expire_on_commit=False) as s:
        make_study(s, n_tasks=61, experts=0)
        earlier = ensure_exam(s, name="earlier", task_ids=["task60"])
        attempts = {}
        for n in (6, 60):
            exam = ensure_exam(s, name=f"exam{n}", task_ids=[f"task{t}" for t in range(n)])
            taker = add_user(s, name=f"stu{n}", role="student", password="pw")
            s.commit()
            answer_stage(s, attempt=attempt_for(s, exam_id=earlier.id, user_id=taker.id),
                         task_id="task60", text="a")
            attempts[n] = attempt_for(s, exam_id=exam.id, user_id=taker.id)
            for t in range(3):
                answer_stage(s, attempt=attempts[n], task_id=f"task{t}", text="x")
    cost = {}
    for n, attempt in attempts.items():
        statements: list[str] = []
        listen = lambda *args, into=statements: into.append(args[2])  # noqa: E731
        event.listen(engine, "before_cursor_execute", listen)
        try:
            with Session(engine, expire_on_commit=False) as s:  # a new session, as a page's
                answer_stage(s, attempt=s.get(ExamAttempt, attempt.id), task_id="task2",
                             text="stage 2", stage=1)  # task2 is level 3: a second stage
        finally:
            event.remove(engine, "before_cursor_execute", listen)
        cost[n] = len(statements)
    assert cost[6] == cost[60]
