"""The /score queue's filters and search (`db.raters.scoring`): family, level, unscored, the rater's
own flag (confidence 1, draft or submit), and a blind-code search that ignores case."""

from dataclasses import replace

from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Response, Task, User
from db.raters.assignments import assign
from db.raters.scoring import (
    FLAG_CONFIDENCE,
    QueueEntry,
    QueueFilter,
    filter_queue,
    find_entry,
    queue,
    save_draft,
    submit,
)
from db.rubrics import ensure_rubric
from tests.factories import make_study


def _study(url: str):
    eng = engine_for(url)
    with Session(eng, expire_on_commit=False) as s:
        make_study(s)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=2,
               seed=1)
        s.commit()
        rater = s.exec(select(User).where(User.name == "expert1")).one()
    return eng, rubric, rater


def test_queue_entries_carry_family_level_and_the_raters_flag(database_url: str) -> None:
    eng, rubric, rater = _study(database_url)
    with Session(eng, expire_on_commit=False) as s:
        entries = queue(s, rater_id=rater.id)
        tasks = {r.blind_code: s.get(Task, r.task_id) for r in s.exec(select(Response))}
        for e in entries:
            assert (e.family, e.level) == (tasks[e.blind_code].family, tasks[e.blind_code].level)
        assert not any(e.flagged for e in entries)
        first, second = entries[0], entries[1]
        save_draft(s, rater_id=rater.id, assignment_id=first.assignment_id,
                   values={"confidence": FLAG_CONFIDENCE})
        family = second.family
        values = {"criteria": {c.key: rubric.scale.min for c in rubric.applicable_criteria(family)},
                  "correct_diagnosis": False, "error_tags": [], "comment": "",
                  "confidence": FLAG_CONFIDENCE}
        submit(s, rater_id=rater.id, assignment_id=second.assignment_id, values=values)
        entries = queue(s, rater_id=rater.id)
        assert [e.assignment_id for e in entries if e.flagged] == [
            first.assignment_id, second.assignment_id]
        # a later draft that changes the confidence unflags the item
        save_draft(s, rater_id=rater.id, assignment_id=second.assignment_id,
                   values={**values, "confidence": 3})
        entries = queue(s, rater_id=rater.id)
        assert [e.assignment_id for e in entries if e.flagged] == [first.assignment_id]
        unscored = filter_queue(entries, QueueFilter(unscored=True))
        assert second.assignment_id not in {e.assignment_id for e in unscored}
        assert len(unscored) == len(entries) - 1


def _entries() -> list[QueueEntry]:
    base = QueueEntry(0, 0, "R-00AB12CD34", "new", "differential", 1)
    return [base,
            replace(base, assignment_id=1, position=1, blind_code="R-77FF00EE11", status="draft",
                    family="lesion", level=2, flagged=True),
            replace(base, assignment_id=2, position=2, blind_code="R-123456789A",
                    status="submitted", family="lesion", level=3)]


def test_filters_combine_and_the_default_admits_all() -> None:
    entries = _entries()
    ids = lambda f: [e.assignment_id for e in filter_queue(entries, f)]  # noqa: E731
    assert ids(QueueFilter()) == [0, 1, 2]
    assert ids(QueueFilter(unscored=True)) == [0, 1]
    assert ids(QueueFilter(flagged=True)) == [1]
    assert ids(QueueFilter(family="lesion")) == [1, 2]
    assert ids(QueueFilter(family="lesion", level=3)) == [2]
    assert ids(QueueFilter(family="lesion", unscored=True, level=3)) == []


def test_search_by_position_or_code_ignores_case_and_prefix() -> None:
    entries = _entries()
    found = lambda text: (e := find_entry(entries, text)) and e.assignment_id  # noqa: E731
    assert found("2") == 1  # 1-based position
    assert found("r-77ff00ee11") == 1
    assert found(" R-77FF00EE11 ") == 1
    assert found("77ff00ee11") == 1  # without the prefix
    assert found("ff00") == 1  # a unique part
    assert find_entry(entries, "12") is None  # no position 12, too short for a part
    assert found("123") == 2  # no position 123: a part of a code
    assert found("3456") == 2
    assert find_entry(entries, "00") is None and find_entry(entries, "E") is None
    assert find_entry(entries, "R-") is None  # every code has it: not one item
    assert find_entry(entries, "a") is None  # too short to be a part
    assert find_entry(entries, "") is None
    assert find_entry(entries, "\u00b2") is None  # a digit to str.isdigit, not to int()
    assert find_entry(entries, "R-000") is None


def test_stage_judgments_of_a_multi_turn_item_are_kept_and_checked(database_url: str) -> None:
    from db.models import Assignment, ExpertScore, ScoreRevision
    from errors import UserError

    eng, rubric, rater = _study(database_url)
    with Session(eng, expire_on_commit=False) as s:
        entries = queue(s, rater_id=rater.id)
        multi = next(e for e in entries if e.level == 3)
        single = next(e for e in entries if e.level < 3)
        task = s.get(Task, s.get(Response, s.get(Assignment, multi.assignment_id).response_id)
                     .task_id)
        n = len(task.stages)
        assert n >= 1
        values = {"criteria": {c.key: rubric.scale.max
                               for c in rubric.applicable_criteria(multi.family)},
                  "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 4}
        save_draft(s, rater_id=rater.id, assignment_id=multi.assignment_id,
                   values={**values, "stage_correct": [False] * n})
        from db.raters.scoring import load_item
        item = load_item(s, rater_id=rater.id, assignment_id=multi.assignment_id)
        assert item.values["stage_correct"] == [False] * n  # the draft keeps them
        for wrong in ([True] * (n + 1), "yes", [1] * n):
            try:
                submit(s, rater_id=rater.id, assignment_id=multi.assignment_id,
                       values={**values, "stage_correct": wrong})
            except UserError as e:
                assert "stage_correct" in str(e)
            else:
                raise AssertionError(f"{wrong!r} accepted")
            s.rollback()
        score = submit(s, rater_id=rater.id, assignment_id=multi.assignment_id,
                       values={**values, "stage_correct": [False] * n})
        assert score.stage_correct == [False] * n
        [revision] = s.exec(select(ScoreRevision).where(ScoreRevision.score_id == score.id))
        assert revision.content["stage_correct"] == [False] * n
        score = submit(s, rater_id=rater.id, assignment_id=multi.assignment_id,
                       values={**values, "stage_correct": [None] * n})  # not judged: NULL
        assert score.stage_correct is None
        single_values = {**values, "criteria": {
            c.key: rubric.scale.max for c in rubric.applicable_criteria(single.family)}}
        score = submit(s, rater_id=rater.id, assignment_id=single.assignment_id,
                       values=single_values)  # no stage judgments: fine, NULL
        assert s.get(ExpertScore, score.id).stage_correct is None
        try:
            submit(s, rater_id=rater.id, assignment_id=single.assignment_id,
                   values={**single_values, "stage_correct": [True]})
        except UserError as e:
            assert "one stage" in str(e)
        else:
            raise AssertionError("a stage judgment of a one-stage task accepted")
