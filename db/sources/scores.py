"""Earlier expert scores (a paper form, a spreadsheet, an earlier study) brought in from a CSV:
`nmb import-scores FILE` (docs/bundle-format.md, *Earlier expert scores*).

One row per criterion of one rater's score of one response: `response_id` or `blind_code`,
`rater`, `criterion` (a criterion of the rubric in force, or `correct_diagnosis`), `level`
(an integer of the rubric's scale, `NA` where the criterion allows it; `yes`/`no` for
`correct_diagnosis`), `error_classes` (error classes of the rubric, separated by `;`) and an
optional `comment`. A score's error classes and comments are those of its rows together.

Everything is checked before anything is written, and every problem is reported at once
(`BundleInvalid`): the columns, each row's response, rater (an active expert's account),
criterion, level and error classes, and each score as a whole (every criterion that applies to
the task's family present once, the rubric's comment rule); a rater who has already submitted
a score of a response (through the tool or imported) is refused for it. Then, in one transaction, each score
is recorded as a well-formed revision (`db.raters.scoring.record_submission`) marked
`imported`, on the rater's assignment of the response (one is added, in one assignment design
per import, where the rater has none), with one audit row.
"""

import csv
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.audit import record
from db.bundle.errors import BundleInvalid, Problem
from db.locks import take_turns
from db.models import Assignment, AssignmentDesign, ExpertScore, Response, Task, User
from db.raters.assignments import DESIGN
from db.raters.scoring import record_submission
from db.rubrics import rubric_in_force
from db.sources.answers import read_capped
from db.study.reference import has_reference, judged_against
from errors import UserError, counted
from rubric import Rubric
from rubric.scoring import validate_score

CORRECT = "correct_diagnosis"
REQUIRED = ("rater", "criterion", "level", "error_classes")
COLUMNS = ("response_id", "blind_code", *REQUIRED, "comment")
NOT_APPLICABLE = {"na", "n/a"}
YES, NO = {"yes", "true", "1"}, {"no", "false", "0"}


class ScoresInvalid(BundleInvalid):
    """A scores file was refused; `.problems` lists every problem (file, line, what)."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        super().__init__(file, problems)
        n = len(self.problems)
        self.args = (f"{file} has {n} problem{'s' if n != 1 else ''}; nothing was imported",)

    def __str__(self) -> str:
        return self.args[0]


@dataclass
class ScoresSummary:
    """What an import of scores did (or, `dry_run`, would do)."""

    file: str
    scores: int
    rows: int
    responses: int
    raters: list[str]
    dry_run: bool = False
    design_id: int | None = None  # the design of the assignments it added (None: none added)

    @property
    def changed(self) -> bool:
        return bool(self.scores) and not self.dry_run

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        return (f"{self.file}: {verb} {counted(self.scores, 'expert score')} ({self.rows} rows) "
                f"of {counted(self.responses, 'response')} by {', '.join(self.raters)}, marked "
                "imported (not collected blind)")


@dataclass
class _Score:
    """One rater's score of one response as the rows give it."""

    response_id: str
    rater_id: int
    rater: str
    family: str
    line: int  # its first row's
    criteria: dict[str, int | None] = field(default_factory=dict)
    correct: bool | None = None
    tags: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    rows: int = 0
    broken: bool = False  # a row of it has a problem: the score is refused as a whole


def _rows(path: Path, problems: list[Problem]) -> list[tuple[int, dict[str, str]]]:
    """The file's rows with their line numbers, once its columns are the format's."""
    data = read_capped(path, problems)
    if data is None:
        return []
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's byte order mark
    except UnicodeDecodeError as e:
        problems.append(Problem(path.name, None, f"is not UTF-8 text (byte {e.start})"))
        return []
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = header
    unknown = [h for h in header if h not in COLUMNS]
    missing = [c for c in REQUIRED if c not in header]
    if "response_id" not in header and "blind_code" not in header:
        missing.insert(0, "response_id or blind_code")
    if unknown:
        problems.append(Problem(path.name, 1, f"unknown column {', '.join(map(repr, unknown))} "
                                              f"(the columns: {', '.join(COLUMNS)})"))
    if missing:
        problems.append(Problem(path.name, 1, f"missing column {', '.join(missing)}"))
    if unknown or missing or len(set(header)) != len(header):
        if len(set(header)) != len(header):
            problems.append(Problem(path.name, 1, "a column is named twice"))
        return []
    out = []
    try:
        for row in reader:
            if None in row:  # more cells than columns
                problems.append(Problem(path.name, reader.line_num, "more cells than columns"))
                continue
            cells = {k: (v or "").strip() for k, v in row.items()}
            if any(cells.values()):  # a blank line of a spreadsheet
                out.append((reader.line_num, cells))
    except csv.Error as e:
        problems.append(Problem(path.name, reader.line_num, f"is not valid CSV: {e}"))
    if not out and not problems:
        problems.append(Problem(path.name, None, "holds no score"))
    return out


def _level(rubric: Rubric, criterion: str, text: str, na_allowed: bool) -> int | None:
    """The level a cell gives; ValueError naming what is wrong."""
    scale = rubric.scale
    if text.casefold() in NOT_APPLICABLE:
        if not na_allowed:
            raise ValueError(f"level NA is not allowed for {criterion}; choose "
                             f"{scale.min}-{scale.max}")
        return None
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise ValueError(f"level {text!r} of {criterion} is not an integer {scale.min}-{scale.max}"
                         + (" or NA" if na_allowed else ""))
    level = int(text)
    if not scale.min <= level <= scale.max:
        raise ValueError(f"level {level} of {criterion} is outside the scale "
                         f"{scale.min}-{scale.max}")
    return level


def _read_scores(s: Session, rubric: Rubric, file: str, rows: list[tuple[int, dict[str, str]]],
                 problems: list[Problem]) -> list[_Score]:
    """The scores the rows give, grouped by response and rater, every problem said."""
    by_id = {c.key: c for c in rubric.criteria}
    wanted_ids = {r.get("response_id", "") for _, r in rows} - {""}
    wanted_codes = {r.get("blind_code", "") for _, r in rows} - {""}
    responses = {rid: (rid, fam) for rid, fam in s.exec(
        select(Response.response_id, Task.family).join(Task, Task.task_id == Response.task_id)
        .where(Response.response_id.in_(wanted_ids)))}
    codes = {code: (rid, fam) for code, rid, fam in s.exec(
        select(Response.blind_code, Response.response_id, Task.family)
        .join(Task, Task.task_id == Response.task_id)
        .where(Response.blind_code.in_(wanted_codes)))}
    users = {u.name: u for u in s.exec(select(User).where(
        User.name.in_({r["rater"] for _, r in rows})))}
    scores: dict[tuple[str, int], _Score] = {}
    unknown: dict[str, list[int]] = {}  # a response or rater problem: once, with its rows
    for line, row in rows:
        def problem(message: str, line: int = line) -> None:
            problems.append(Problem(file, line, message))

        def once(message: str, line: int = line) -> None:
            unknown.setdefault(message, []).append(line)

        rid, code = row.get("response_id", ""), row.get("blind_code", "")
        if rid and code and (responses.get(rid) or (None,))[0] != (codes.get(code) or (0,))[0]:
            problem(f"response_id {rid!r} and blind_code {code!r} name different responses")
            continue
        found = responses.get(rid) if rid else codes.get(code)
        if not (rid or code):
            problem("names no response (response_id or blind_code)")
            continue
        if found is None:
            once(f"no response {rid!r}" if rid else f"no response with blind code {code!r}")
        user = users.get(row["rater"])
        if user is None:
            once(f"no account named {row['rater']!r}" if row["rater"] else "names no rater")
        elif user.role != "expert" or user.disabled:
            once(f"rater {user.name!r} is not an active expert's account (it is "
                    f"{'disabled' if user.disabled else repr(user.role)})")
            user = None
        if found is None or user is None:
            continue
        score = scores.setdefault((found[0], user.id), _Score(found[0], user.id, user.name,
                                                              found[1], line))
        score.rows += 1
        if not _read_row(rubric, by_id, score, row, problem):
            score.broken = True
    for message, lines in unknown.items():
        more = len(lines) - 1
        problems.append(Problem(file, lines[0], message + (
            f" (and {counted(more, 'row')} more)" if more else "")))
    return list(scores.values())


def _read_row(rubric: Rubric, by_id: dict[str, Any], score: _Score, row: dict[str, str],
              problem: Any) -> bool:
    """Add one row to its score; False (problems said) when the row is wrong."""
    ok = True
    criterion = row["criterion"]
    tags = [t.strip() for t in row["error_classes"].split(";") if t.strip()]
    for tag in tags:
        if tag not in rubric.error_class_keys:
            problem(f"unknown error class {tag!r} (the rubric's: "
                    f"{', '.join(rubric.error_class_keys)})")
            ok = False
    score.tags += [t for t in tags if t not in score.tags]
    if row.get("comment") and row["comment"] not in score.comments:
        score.comments.append(row["comment"])
    if criterion == CORRECT:
        answer = row["level"].casefold()
        if score.correct is not None:
            problem(f"{CORRECT} given twice for response {score.response_id} by {score.rater}")
            return False
        if answer not in YES | NO:
            problem(f"level {row['level']!r} of {CORRECT} is not yes or no")
            return False
        score.correct = answer in YES
        return ok
    c = by_id.get(criterion)
    if c is None:
        problem(f"unknown criterion {criterion!r} (the rubric's: {', '.join(by_id)}, {CORRECT})"
                if criterion else "names no criterion")
        return False
    if c.families is not None and score.family not in c.families:
        problem(f"criterion {criterion} does not apply to response {score.response_id} "
                f"(family {score.family})")
        return False
    if criterion in score.criteria:
        problem(f"criterion {criterion} given twice for response {score.response_id} by "
                f"{score.rater}")
        return False
    try:
        score.criteria[criterion] = _level(rubric, criterion, row["level"], c.na_allowed)
    except ValueError as e:
        problem(str(e))
        return False
    return ok


def _check_scores(s: Session, rubric: Rubric, file: str, scores: list[_Score],
                  problems: list[Problem]) -> dict[tuple[str, int], dict[str, Any]]:
    """Each whole score, validated against the rubric, and not one its rater has already
    submitted through the tool: (response, rater) -> the values to record."""
    done = set(s.exec(select(Assignment.response_id, Assignment.rater_id)
                      .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
                      .where(ExpertScore.status == "submitted",
                             Assignment.response_id.in_({x.response_id for x in scores}))))
    against = judged_against(s, list({x.response_id for x in scores}))
    out = {}
    for x in scores:
        def problem(message: str, x: _Score = x) -> None:
            problems.append(Problem(file, x.line, f"response {x.response_id}, rater {x.rater}: "
                                                  f"{message}"))

        if x.broken:
            continue
        if (x.response_id, x.rater_id) in done:
            problem("already scored (a submitted score, through the tool or imported; an import "
                    "does not revise it)")
            continue
        if not has_reference(against[x.response_id][2]):
            problem("its case has no reference answer to score against")
            continue
        missing = [c.key for c in rubric.applicable_criteria(x.family) if c.key not in x.criteria]
        if x.correct is None:
            missing.append(CORRECT)
        if missing:
            problem(f"missing {', '.join(missing)} (every criterion of a score is needed; "
                    "the score is refused)")
            continue
        values = {"criteria": x.criteria, "correct_diagnosis": x.correct, "error_tags": x.tags,
                  "comment": "\n".join(x.comments), "confidence": None}
        try:
            validate_score(rubric, values, family=x.family, require_confidence=False)
        except UserError as e:
            problem(str(e))
            continue
        out[x.response_id, x.rater_id] = values
    return out


def import_scores(s: Session, path: Path, *, dry_run: bool = False, actor: str | None = None,
                  progress: Any = None) -> ScoresSummary:
    """Validate the scores file at `path` against the rubric in force and record its scores as
    imported expert scores in one transaction of `s` (see the module docstring); raises
    ScoresInvalid listing every problem, the study unchanged. Imports take turns with
    assignments (`db.raters.assignments.DESIGN`)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path.name}: no such file" if not path.exists()
                        else f"{path.name}: is not a file")
    problems: list[Problem] = []
    rows = _rows(path, problems)
    if progress:
        progress(0.2, f"{path.name}: {counted(len(rows), 'row')} read")
    try:
        take_turns(s, DESIGN)  # a second import or an assign plans on what this one wrote
        rubric = rubric_in_force(s, actor=actor)
        scores = _read_scores(s, rubric, path.name, rows, problems) if rows else []
        values = _check_scores(s, rubric, path.name, scores, problems) if scores else {}
        if problems:
            raise ScoresInvalid(path.name, sorted(problems, key=lambda p: p.line or 0))
        names = sorted({x.rater for x in scores})
        summary = ScoresSummary(path.name, len(values), len(rows),
                                len({rid for rid, _ in values}), names, dry_run)
        if dry_run:
            s.rollback()
            return summary
        summary.design_id = _write(s, rubric, values, actor)
        record(s, "scores.import", actor=actor, file=path.name, scores=len(values),
               rows=len(rows), raters=names, design=summary.design_id,
               rubric=rubric.content_hash)
        s.commit()
    except BaseException:
        s.rollback()
        raise
    if progress:
        progress(1.0, str(summary))
    return summary


def _write(s: Session, rubric: Rubric, values: dict[tuple[str, int], dict[str, Any]],
           actor: str | None) -> int | None:
    """Record each score on the rater's assignment of the response, adding those missing in
    one design; returns that design's id (None: every assignment existed)."""
    have = {(a.response_id, a.rater_id): a for a in s.exec(select(Assignment).where(
        Assignment.response_id.in_({rid for rid, _ in values})))}
    last = dict(s.exec(select(Assignment.rater_id, func.max(Assignment.position))
                       .group_by(Assignment.rater_id)).all())
    design = None
    for (rid, rater_id), score in sorted(values.items()):
        a = have.get((rid, rater_id))
        if a is None:
            if design is None:
                design = AssignmentDesign(rubric_hash=rubric.content_hash, selection="all",
                                          overlap=0, seed=0, created_by=actor)
                s.add(design)
                s.flush()
            last[rater_id] = last.get(rater_id, -1) + 1
            a = Assignment(design_id=design.id, rater_id=rater_id, response_id=rid,
                           position=last[rater_id])
            s.add(a)
            s.flush()
        record_submission(s, assignment=a, values=score, imported=True)
    return design.id if design else None
