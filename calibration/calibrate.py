"""Calibrating a grader config: reports under the registered protocol, held-out looks counted
per protocol, recomputation (`check`), suspension when the data change, and revocation.

- The dev part is for exploration: any thresholds, never validates. The "all" part includes
  the held-out items, so it is refused until the protocol's looks are spent.
- The protocol allows `Gate.looks` held-out looks in all. A grader looks once: configs that
  differ only in seed, name or endpoint are one grader (`grading.config.grader_identity`), so
  a seed-only variant is refused a look of its own. A look is taken under the protocol in
  force, and only when every held-out item has a valid grade from the config and all its
  planned expert scores (no peeking at a half-scored part). Its report decides; asking again
  returns it.
- Validation follows the data: a revised or added expert score on a held-out item, or a
  changed held-out response, after a passing look suspends it (`db.raters.looks`; `frozen_look`
  also compares the data's sha256). A suspended config is not validated until it takes a new
  look, which counts against the protocol's looks like any other.
- Every report discloses every held-out look and what it decided, so a reader knows how many
  graders were tried on the held-out part (the "garden of forking paths", Gelman & Loken 2014).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from calibration import protocol
from calibration.protocol import Gate, Statistics
from calibration.report import Look, Report, build, collect, data_hash
from calibration.terms import ValidationTerms
from db.audit import record
from db.locks import for_update, take_turns
from db.models import (
    Assignment,
    CalibrationItem,
    CalibrationReport,
    ExpertScore,
    GraderConfig,
    GraderRun,
    GraderScore,
    HeldoutLook,
    ScoreRevision,
    User,
    utcnow,
)
from db.raters.looks import HELDOUT
from errors import UserError, counted
from grading.config import get_config, grader_identity

if TYPE_CHECKING:
    from calibration.report import CalibrationData


@dataclass
class Outcome:
    """A report as computed now (`fresh`) or as stored by the held-out look that decided."""

    report: Report
    row: CalibrationReport
    fresh: bool
    figures: dict[str, bytes]


def looks(s: Session) -> list[Look]:
    """Every held-out look, oldest first."""
    rows = s.exec(select(HeldoutLook, GraderConfig.name)
                  .join(GraderConfig, GraderConfig.id == HeldoutLook.config_id)
                  .order_by(HeldoutLook.created_at, HeldoutLook.id)).all()
    return [Look(x.config_id, name, x.report_id, x.passed, x.revoked_at is not None,
                 x.created_at.isoformat(timespec="seconds"), x.number,
                 x.suspended_at is not None) for x, name in rows]


def latest_look(s: Session, *, config_id: int, lock: bool = False) -> HeldoutLook | None:
    """The config's newest held-out look (the one that stands), or None; `lock`: locked
    until the commit, as stored now (a change that would suspend it waits, or came first)."""
    q = select(HeldoutLook).where(HeldoutLook.config_id == config_id).order_by(
        HeldoutLook.id.desc())
    if lock:
        q = for_update(q)
    return s.exec(q).first()


def suspended_words(look: HeldoutLook) -> str:
    return f"suspended: data changed after the look (report {look.report_id})"


def looks_taken(s: Session, *, protocol_id: int) -> int:
    return s.exec(select(func.count()).select_from(HeldoutLook)
                  .where(HeldoutLook.protocol_id == protocol_id)).one()


def _same_grader_look(s: Session, config: GraderConfig) -> HeldoutLook | None:
    """The standing look of another config that is the same grader (seed, name or endpoint
    aside), unless that look was suspended."""
    me = grader_identity(config)
    for other in s.exec(select(GraderConfig).where(GraderConfig.id != config.id)):
        if grader_identity(other) == me:
            look = latest_look(s, config_id=other.id)
            if look is not None and look.suspended_at is None:
                return look
    return None


def _may_look(s: Session, proto: protocol.Protocol, config: GraderConfig) -> int:
    """The number the config's new look would have under `proto`, or a one-line refusal."""
    same = _same_grader_look(s, config)
    if same is not None:
        raise UserError(f"grader config {config.id} is the same grader as config "
                        f"{same.config_id} (they differ only in seed, name or endpoint), which "
                        f"took held-out look {same.number} (report {same.report_id}); a grader "
                        "looks once")
    taken = looks_taken(s, protocol_id=proto.id)
    if taken >= proto.gate.looks:
        raise UserError(f"{proto.label()} allows {counted(proto.gate.looks, 'held-out look')} in "
                        f"all and {taken} {'was' if taken == 1 else 'were'} taken: no look is left")
    return taken + 1


def _check_part_all(s: Session, proto: protocol.Protocol | None) -> None:
    """`--part all` includes the held-out items: refused until the protocol's looks are spent."""
    if proto is None:
        raise UserError("--part all includes the held-out items: refused before a protocol is "
                        "registered and its looks are spent; use --part dev")
    taken = looks_taken(s, protocol_id=proto.id)
    if taken < proto.gate.looks:
        raise UserError(f"--part all includes the held-out items: refused until {proto.label()}'s"
                        f" held-out looks are spent ({taken} of {proto.gate.looks} taken); use "
                        "--part dev")


def missing_heldout(s: Session, *, config_id: int) -> list[str]:
    """What the held-out part still lacks for this config, as counts in words (empty: complete)."""
    held = select(CalibrationItem.response_id).where(CalibrationItem.part == "heldout")
    n_items = s.exec(select(func.count()).where(CalibrationItem.part == "heldout")).one()
    graded = s.exec(select(func.count()).select_from(GraderScore).where(
        GraderScore.config_id == config_id, GraderScore.response_id.in_(held))).one()
    planned = s.exec(select(func.count()).select_from(Assignment)
                     .where(Assignment.response_id.in_(held))).one()
    submitted = s.exec(select(func.count()).select_from(Assignment)
                       .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
                       .where(Assignment.response_id.in_(held),
                              ExpertScore.status == "submitted")).one()
    unassigned = s.exec(select(func.count()).where(
        CalibrationItem.part == "heldout",
        CalibrationItem.response_id.not_in(select(Assignment.response_id)))).one()
    out = []
    if graded < n_items:
        out.append(f"{n_items - graded} of {n_items} items have no valid grade from config "
                   f"{config_id}")
    if submitted < planned:
        out.append(f"{planned - submitted} of {planned} planned expert scores are not submitted")
    if unassigned:
        out.append(f"{unassigned} of {n_items} items are not assigned to any expert")
    return out


def _figures(data: CalibrationData, report: Report) -> dict[str, bytes]:
    from calibration.plots import all_figures  # matplotlib: only when a report is drawn

    return all_figures(data, report)


def title(row: CalibrationReport) -> str:
    return f"Calibration report {row.id}: grader config {row.config_id}, {row.part} part"


def _save(s: Session, report: Report, data: CalibrationData, *, run_id: int | None,
          actor: str | None, number: int = 0,
          terms: ValidationTerms | None = None) -> tuple[CalibrationReport, dict[str, bytes]]:
    from calibration.html import render

    if run_id is not None:
        run = s.get(GraderRun, run_id)
        if run is None or run.config_id != report.config_id:
            raise UserError(f"grader run {run_id} is not a run of config {report.config_id}")
    else:
        run = s.exec(select(GraderRun).where(GraderRun.config_id == report.config_id)
                     .order_by(GraderRun.id.desc())).first()
    row = CalibrationReport(config_id=report.config_id, run_id=run.id if run else None,
                            part=report.part, protocol_id=report.protocol_id,
                            data_hash=report.data_hash, thresholds=report.gate_settings,
                            results={}, passed=report.passed)
    s.add(row)
    s.flush()
    if report.validates:
        s.add(HeldoutLook(config_id=report.config_id, report_id=row.id, number=number,
                          protocol_id=report.protocol_id, passed=report.passed))
        s.flush()
        report.heldout_looks = looks(s)
        if report.passed:
            config = get_config(s, report.config_id)
            config.validated_report_id = row.id
            s.add(config)
    figures = _figures(data, report)
    row.results = report.to_json()
    row.html = render(report, figures, title=title(row), terms=terms)
    s.add(row)
    record(s, "calibration.report", actor=actor, config=report.config_id, part=report.part,
           report=row.id, passed=report.passed, protocol=report.protocol_id,
           data_sha256=report.data_hash)
    s.commit()
    return row, figures


def run(s: Session, *, config_id: int, part: str, gate: Gate | None = None,
        statistics: Statistics | None = None, run_id: int | None = None,
        actor: str | None = None) -> Outcome:
    """Compute and store a report of `part`; on the held-out part, the config's look.

    `gate` and `statistics` are for the dev part only: the held-out part is judged by the
    registered protocol, and asking again for a standing look returns its report.
    """
    config = get_config(s, config_id)
    if part == "heldout":  # held-out changes and registrations wait for this look, or came
        take_turns(s, HELDOUT)  # before it (the protocol is read after)
    proto = protocol.current(s)
    number = 0
    if part == "heldout":
        if gate is not None or statistics is not None:
            where = proto.label() if proto else "a registered protocol (nmb protocol register)"
            raise UserError(f"the held-out part is judged only under {where}; threshold and "
                            "statistics options apply to --part dev")
        look = latest_look(s, config_id=config_id)
        if look is not None and look.suspended_at is None:
            row = s.get(CalibrationReport, look.report_id)
            return Outcome(Report.from_json(row.results), row, fresh=False, figures={})
        if look is not None and look.revoked_at is not None:
            raise UserError(f"grader config {config_id}'s validation was revoked "
                            f"({look.revoke_reason}); it cannot look again")
        if proto is None:
            raise UserError("no calibration protocol is registered: register the gate before "
                            "the held-out look (nmb protocol register)")
        subset = protocol.subset_now(s)
        if subset is None or subset.sha256 != proto.subset.sha256:
            raise UserError(f"the calibration subset is not the one {proto.label()} was "
                            "registered for")
        number = _may_look(s, proto, config)
        missing = missing_heldout(s, config_id=config_id)
        if missing:
            raise UserError(f"the held-out part is not complete for config {config_id}: "
                            f"{'; '.join(missing)}")
        gate, statistics = proto.gate, proto.statistics
    else:
        if part == "all":
            _check_part_all(s, proto)
        gate = gate or (proto.gate if proto else Gate())
        statistics = statistics or (proto.statistics if proto else Statistics())
        protocol.check_values(gate, statistics)
    data = collect(s, config_id=config_id, part=part,
                   count_imported=gate.count_imported_scores)
    validating = part == "heldout"
    report = build(data, config_id=config_id, part=part, gate=gate, statistics=statistics,
                   protocol_id=proto.id if validating else None,
                   protocol_hash=proto.content_hash if validating else None, looks=looks(s))
    try:
        row, figures = _save(s, report, data, run_id=run_id, actor=actor, number=number,
                             terms=ValidationTerms.of(proto) if validating else None)
    except IntegrityError:  # another session took this look meanwhile: its look stands
        s.rollback()
        return run(s, config_id=config_id, part=part, actor=actor)
    return Outcome(report, row, fresh=True, figures=figures)


@dataclass
class CheckResult:
    report_id: int
    matches: bool
    data_hash_stored: str
    data_hash_now: str | None
    differences: list[str]


def changes_after(s: Session, look: HeldoutLook) -> list[str]:
    """In words, each expert score submitted on a held-out item after `look`, and why the look
    was suspended."""
    rows = s.exec(select(ScoreRevision, Assignment.response_id, User.name)
                  .join(ExpertScore, ExpertScore.id == ScoreRevision.score_id)
                  .join(Assignment, Assignment.id == ExpertScore.assignment_id)
                  .join(CalibrationItem, CalibrationItem.response_id == Assignment.response_id)
                  .join(User, User.id == ScoreRevision.rater_id)
                  .where(CalibrationItem.part == "heldout",
                         ScoreRevision.created_at > look.created_at)
                  .order_by(ScoreRevision.id)).all()
    out = [f"{name} {'added' if rev.revision == 1 else 'revised'} the expert score of held-out "
           f"item {rid} (revision {rev.revision}, {rev.created_at:%Y-%m-%d %H:%M} UTC) after "
           f"the look (report {look.report_id})" for rev, rid, name in rows]
    if look.suspended_at is not None:
        out.append(f"validation {suspended_words(look)}: {look.suspend_reason}")
    return out


def check(s: Session, *, report_id: int) -> CheckResult:
    """Recompute a stored report from the database under its own settings: does it still hold?
    (It does not when, say, an expert revised a held-out score after the look; the change is
    named.)"""
    row = s.get(CalibrationReport, report_id)
    if row is None:
        raise UserError(f"no calibration report {report_id}")
    try:
        stored = Report.from_json(row.results)
    except (TypeError, KeyError):
        raise UserError(f"report {report_id} predates typed reports (database revision 0003) "
                        "and cannot be recomputed") from None
    look = s.exec(select(HeldoutLook).where(HeldoutLook.report_id == report_id)).first()
    named = changes_after(s, look) if look is not None else []
    settings = stored.gate_settings  # reports before rules were registered: the estimate
    gate = Gate(**{"rule": protocol.POINT_ESTIMATE, **settings,
                   "required": tuple(settings["required"])})
    try:
        data = collect(s, config_id=row.config_id, part=row.part,
                       count_imported=gate.count_imported_scores)
    except UserError as e:
        return CheckResult(report_id, False, row.data_hash, None,
                           [f"cannot recompute: {e}", *named])
    now = build(data, config_id=row.config_id, part=row.part, gate=gate,
                statistics=Statistics(**stored.statistics), protocol_id=stored.protocol_id,
                protocol_hash=stored.protocol_hash)
    diffs = []
    if now.data_hash != row.data_hash:
        diffs.append(f"the scores differ: {now.n_items} items now, {stored.n_items} then")
    for then, g in zip(stored.gate, now.gate, strict=True):
        if (then.value, then.passed) != (g.value, g.passed):
            diffs.append(f"{g.label}: {then.value} ({'pass' if then.passed else 'fail'}) then, "
                         f"{g.value} ({'pass' if g.passed else 'fail'}) now")
    if diffs or (look is not None and look.suspended_at is not None):
        diffs += named
    return CheckResult(report_id, not diffs, row.data_hash, now.data_hash, diffs)


def revoke(s: Session, *, config_id: int, reason: str, actor: str | None) -> HeldoutLook:
    """Withdraw a config's validation for good (it can no longer be frozen), with a reason.
    Revocations take turns with each other and with held-out looks (`HELDOUT`): a second one
    finds the first's, and a look being taken is the one revoked."""
    reason = " ".join(reason.split())  # on one line: refusals quote it
    if not reason:
        raise UserError("a revocation needs a reason")
    take_turns(s, HELDOUT)
    look = latest_look(s, config_id=config_id, lock=True)
    if look is None or not look.passed:
        raise UserError(f"grader config {config_id} has no passing held-out look to revoke")
    if look.revoked_at is not None:
        raise UserError(f"grader config {config_id}'s validation was already revoked")
    look.revoked_at, look.revoked_by, look.revoke_reason = utcnow(), actor, reason[:2000]
    config = get_config(s, config_id)
    config.validated_report_id = None
    s.add_all([look, config])
    record(s, "calibration.revoke", actor=actor, config=config_id, report=look.report_id,
           reason=reason[:2000])
    s.commit()
    return look


def validation_status(s: Session, *, config_id: int) -> str:
    """In words, where a config stands with the gate."""
    look = latest_look(s, config_id=config_id)
    if look is not None:
        if look.revoked_at is not None:
            return f"validation revoked ({look.revoke_reason})"
        if look.suspended_at is not None:
            return suspended_words(look)
        verdict = "passed" if look.passed else "failed"
        return f"{verdict} its held-out look (report {look.report_id})"
    dev = s.exec(select(CalibrationReport).where(CalibrationReport.config_id == config_id,
                                                 CalibrationReport.part != "heldout")
                 .order_by(CalibrationReport.id.desc())).first()
    if dev is not None and dev.passed:
        return "passed on dev only: never held-out tested"
    return "not held-out tested"


def unvalidated_warning(s: Session, *, config_id: int) -> str | None:
    """The warning that goes with a config's numbers wherever they are shown, unless it is
    validated (a passing, unrevoked, unsuspended held-out look)."""
    config = s.get(GraderConfig, config_id)
    if config is None or config.validated_report_id is not None:
        return None
    status = validation_status(s, config_id=config_id)
    return f"grader config #{config_id} is not validated ({status}): its grades are not a " \
           "validated measure"


def frozen_look(s: Session, *, config_id: int) -> HeldoutLook:
    """The passing, unrevoked held-out look a package needs, on the data it was taken on, or a
    one-line refusal. The look stays locked until the caller's commit: a held-out change
    (`db.raters.looks.suspend_after_change`) made meanwhile waits for the package, or, made
    first, is seen here and refuses it."""
    look = latest_look(s, config_id=config_id, lock=True)
    if look is None or not look.passed:
        raise UserError(f"grader config {config_id} is not validated: its held-out look under "
                        f"the registered protocol must pass (nmb calibrate --config {config_id})")
    if look.revoked_at is not None:
        raise UserError(f"grader config {config_id}'s validation was revoked "
                        f"({look.revoke_reason}); it cannot be frozen")
    if look.suspended_at is not None:
        raise UserError(f"grader config {config_id}'s validation is {suspended_words(look)}: "
                        f"{look.suspend_reason}; it needs a new held-out look")
    row = s.get(CalibrationReport, look.report_id)
    try:
        counting = protocol.get(s, look.protocol_id).gate.count_imported_scores
        now = data_hash(collect(s, config_id=config_id, part="heldout",
                                count_imported=counting))
    except UserError as e:
        now = f"({e})"
    if now != row.data_hash:
        raise UserError(f"grader config {config_id}'s validation is {suspended_words(look)}: "
                        f"the held-out scores' sha256 is not report {row.id}'s (nmb calibrate "
                        f"--check {row.id}); it needs a new held-out look")
    return look
