"""The calibration protocol: the gate, registered before anyone looks at the held-out part.

A protocol holds the gate (thresholds for Pearson r, ICC(2,1) and the Alternative Annotator
Test's epsilon and q, which of them must pass, the decision rule, and how many held-out looks
it allows in all), the statistics' settings (bootstrap resamples and seed, the interval of r
and its family-wise level, the Alt-Test's minimum items per expert) and the calibration subset
it applies to (the sha256 of its response ids and dev/held-out split, with the draw's seed).
It is stored as canonical JSON under its sha256 and audited; the newest protocol is the one in
force, and none can be registered once any statistic has touched the held-out part (a held-out
look, or a report of part "all").

This is pre-registration as in clinical trials (ICH E9, section 5.1; the protocol fixes the
analysis before the data are seen). The default rule decides on the interval, not the point
estimate: r (and ICC where required) passes when the lower bound of its interval is at or
above the threshold, so a grader whose true r equals the threshold passes in about
(1 - level) / 2 of studies instead of half. With `looks` held-out looks allowed, each interval
is computed at level 1 - (1 - confidence) / looks (Bonferroni), so the chance that any of the
looks passes a grader at the threshold stays below (1 - confidence) / 2.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, fields

from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import (
    CalibrationItem,
    CalibrationProtocol,
    CalibrationReport,
    HeldoutLook,
    Response,
    Task,
)
from db.raters.looks import HELDOUT
from errors import UserError, counted
from rubric.schema import canonical_json
from stats.correlation import CI_METHODS

FORMAT = "nmb-protocol-3"
CHECKS = ("pearson", "icc2", "alt_test")
LOWER_BOUND, POINT_ESTIMATE = "lower_bound", "point_estimate"
RULES = (LOWER_BOUND, POINT_ESTIMATE)
MAX_LOOKS = 20
#: The planner's fewest held-out cases (one item each) for a grader whose true r is 0.95 to pass
#: the default gate's r check with 80 % chance: `nmb protocol plan --expected-r 0.95 --defaults`
#: (`calibration.plan`, 400 simulated studies, seed 0). Fewer is weaker than the default.
RECOMMENDED_CASES = 67


@dataclass(frozen=True)
class Gate:
    """What a held-out report must show. `required`: the checks that must pass (all three by
    default; a check not required is reported but does not decide). `rule`: "lower_bound"
    (default: the lower bound of the interval of r, and of ICC(2,1), at or above the threshold)
    or "point_estimate" (the estimate itself; a grader at the threshold passes half the time).
    `looks`: how many held-out looks the protocol allows in all, over every grader.
    `count_imported_scores`: whether expert scores brought in by `nmb import-scores` (not
    collected blind through the tool) count in the held-out look (default: left out)."""

    pearson_min: float = 0.90
    icc2_min: float = 0.75
    alt_test_epsilon: float = 0.2
    alt_test_q: float = 0.05
    required: tuple[str, ...] = CHECKS
    rule: str = LOWER_BOUND
    looks: int = 1
    count_imported_scores: bool = False


@dataclass(frozen=True)
class Statistics:
    """How the report's statistics are computed. The bootstrap interval of r (`pearson_ci`:
    "studentized_z", "bca", or "fisher" for Fisher's z without resampling) resamples whole
    cases; see docs/agreement.md for its simulated coverage. `confidence`: the family-wise
    level of the intervals of r and ICC over all the protocol's looks (`Protocol.level`)."""

    bootstrap: int = 2000
    seed: int = 0
    pearson_ci: str = "studentized_z"  # a stats.correlation CI method, or "fisher"
    alt_test_min_items: int = 30
    confidence: float = 0.95


@dataclass(frozen=True)
class Subset:
    """The calibration subset the protocol applies to; `n_heldout_cases`: the cases of its
    held-out items (None in protocols registered before it was recorded)."""

    n_dev: int
    n_heldout: int
    seed: int
    sha256: str
    n_heldout_cases: int | None = None


@dataclass(frozen=True)
class Protocol:
    gate: Gate
    statistics: Statistics
    subset: Subset
    id: int | None = None
    content_hash: str = ""
    accepted_weaker: bool = False  # registered with --accept-weaker-than-default

    def content(self) -> dict:
        return {"format": FORMAT, "gate": {**asdict(self.gate), "required": list(self.gate.required)},
                "statistics": asdict(self.statistics), "subset": asdict(self.subset),
                "accepted_weaker_than_default": self.accepted_weaker}

    @classmethod
    def from_row(cls, row: CalibrationProtocol) -> Protocol:
        return cls.from_content(row.content, id=row.id, content_hash=row.content_hash)

    @classmethod
    def from_content(cls, c: dict, *, id: int | None, content_hash: str) -> Protocol:
        """A protocol from its content; one of format nmb-protocol-1 (before rules and looks
        were registered) reads as what it was judged by: the point estimate, one look. Raises
        TypeError, KeyError or ValueError on content that is not a protocol's."""
        gate = {"rule": POINT_ESTIMATE, **c["gate"], "required": tuple(c["gate"]["required"])}
        accepted = c.get("accepted_weaker_than_default", False)
        if not isinstance(accepted, bool):
            raise ValueError("accepted_weaker_than_default is not true or false")
        return cls(Gate(**gate), Statistics(**c["statistics"]), Subset(**c["subset"]),
                   id=id, content_hash=content_hash, accepted_weaker=accepted)

    @property
    def weaker(self) -> list[str]:
        """What makes it weaker than the default protocol (`weaker_than_default`)."""
        return weaker_than_default(self.gate, self.statistics, self.subset)

    @property
    def level(self) -> float:
        """The level of each look's intervals (`interval_level`)."""
        return interval_level(self.statistics.confidence, self.gate.looks)

    def label(self) -> str:
        return f"protocol {self.id} (sha256 {self.content_hash[:12]})"


def interval_level(confidence: float, looks: int) -> float:
    """The Bonferroni-adjusted level of each of `looks` intervals whose family-wise level is
    `confidence` (Bonferroni 1936; Dunn 1961): 1 - (1 - confidence) / looks."""
    return 1 - (1 - confidence) / looks


def subset_now(s: Session) -> Subset | None:
    """The calibration subset as drawn (None before the draw), with its sha256 over the sorted
    "response_id part" lines and the number of cases of its held-out items."""
    rows = sorted(s.exec(select(CalibrationItem.response_id, CalibrationItem.part,
                                CalibrationItem.seed)).all())
    if not rows:
        return None
    digest = hashlib.sha256("".join(f"{rid} {part}\n" for rid, part, _ in rows).encode())
    cases = s.exec(select(Task.case_id).distinct()
                   .join(Response, Response.task_id == Task.task_id)
                   .join(CalibrationItem, CalibrationItem.response_id == Response.response_id)
                   .where(CalibrationItem.part == "heldout")).all()
    return Subset(n_dev=sum(p == "dev" for _, p, _ in rows),
                  n_heldout=sum(p == "heldout" for _, p, _ in rows), seed=rows[0][2],
                  sha256=digest.hexdigest(), n_heldout_cases=len(cases))


def weaker_than_default(gate: Gate, stats: Statistics, subset: Subset) -> list[str]:
    """In words, each way the protocol is weaker than the default (`Gate()`, `Statistics()`,
    `RECOMMENDED_CASES` held-out cases): easier to pass for a grader at the threshold, or
    decided on less evidence. Empty: at least as strict."""
    gd, sd = Gate(), Statistics()
    out = []
    if gate.rule != gd.rule:
        out.append(f"rule {gate.rule} (default {gd.rule})")
    for name, value, default in (("Pearson r", gate.pearson_min, gd.pearson_min),
                                 ("ICC(2,1)", gate.icc2_min, gd.icc2_min)):
        if value < default:
            out.append(f"{name} threshold {value:g} (default {default:g})")
    for name, value, default in (("Alt-Test epsilon", gate.alt_test_epsilon, gd.alt_test_epsilon),
                                 ("Alt-Test q", gate.alt_test_q, gd.alt_test_q)):
        if value > default:
            out.append(f"{name} {value:g} (default {default:g})")
    if missing := [c for c in gd.required if c not in gate.required]:
        out.append(f"{' and '.join(missing)} not required (default: all of "
                   f"{' '.join(gd.required)})")
    if gate.count_imported_scores:
        out.append("imported expert scores counted (not collected blind; default: left out)")
    if stats.confidence < sd.confidence:
        out.append(f"confidence {stats.confidence:g} (default {sd.confidence:g})")
    if stats.alt_test_min_items < sd.alt_test_min_items:
        out.append(f"Alt-Test minimum {stats.alt_test_min_items} items per expert (default "
                   f"{sd.alt_test_min_items})")
    cases = subset.n_heldout_cases
    if cases is not None and cases < RECOMMENDED_CASES:
        out.append(f"{counted(cases, 'held-out case')}, fewer than the planner's "
                   f"{RECOMMENDED_CASES}")
    return out


def check_values(gate: Gate, stats: Statistics) -> None:
    """Refuse values outside their meaningful range (one line naming the value)."""
    def unit(name: str, value: float, lo_open: bool, hi_open: bool) -> None:
        ok = math.isfinite(value) and (0 < value if lo_open else 0 <= value) and (
            value < 1 if hi_open else value <= 1)
        if not ok:
            span = f"{'(' if lo_open else '['}0, 1{')' if hi_open else ']'}"
            raise UserError(f"protocol: {name} must be in {span}, got {value!r}")

    unit("pearson_min", gate.pearson_min, False, False)
    unit("icc2_min", gate.icc2_min, False, False)
    unit("alt_test_epsilon", gate.alt_test_epsilon, True, True)
    unit("alt_test_q", gate.alt_test_q, True, True)
    if gate.rule not in RULES:
        raise UserError(f"protocol: rule must be one of {', '.join(RULES)}, got {gate.rule!r}")
    if not isinstance(gate.count_imported_scores, bool):
        raise UserError(f"protocol: count_imported_scores must be true or false, got "
                        f"{gate.count_imported_scores!r}")
    if not isinstance(gate.looks, int) or not 1 <= gate.looks <= MAX_LOOKS:
        raise UserError(f"protocol: looks must be 1 to {MAX_LOOKS}, got {gate.looks!r}")
    if not (math.isfinite(stats.confidence) and 0.5 <= stats.confidence < 1):
        raise UserError(f"protocol: confidence must be in [0.5, 1), got {stats.confidence!r}")
    unknown = set(gate.required) - set(CHECKS)
    if unknown or not gate.required:
        raise UserError(f"protocol: required checks must be a non-empty choice of "
                        f"{', '.join(CHECKS)}, got {', '.join(gate.required) or 'none'}")
    if not 200 <= stats.bootstrap <= 100_000:
        raise UserError(f"protocol: bootstrap must be 200 to 100000 resamples, got {stats.bootstrap}")
    if not 3 <= stats.alt_test_min_items <= 10_000:
        raise UserError(f"protocol: alt_test_min_items must be 3 to 10000, got "
                        f"{stats.alt_test_min_items}")
    if stats.pearson_ci not in (*CI_METHODS, "fisher"):
        raise UserError(f"protocol: pearson_ci must be one of {', '.join((*CI_METHODS, 'fisher'))}"
                        f", got {stats.pearson_ci!r}")


def current(s: Session) -> Protocol | None:
    row = s.exec(select(CalibrationProtocol).order_by(CalibrationProtocol.id.desc())).first()
    return Protocol.from_row(row) if row else None


def get(s: Session, protocol_id: int) -> Protocol:
    row = s.get(CalibrationProtocol, protocol_id)
    if row is None:
        raise UserError(f"no calibration protocol {protocol_id}")
    return Protocol.from_row(row)


def register(s: Session, *, gate: Gate | None = None, statistics: Statistics | None = None,
             accept_weaker: bool = False, actor: str | None = None) -> Protocol:
    """Register `gate` and `statistics` (defaults where None) for the drawn calibration subset;
    refused once any statistic has touched the held-out part (`touched_heldout`), and refused
    when weaker than the default (`weaker_than_default`) unless `accept_weaker`, which is then
    stored in the protocol's content (and is not, for a protocol that is not weaker). Registering
    the protocol in force again returns it unchanged. Registrations and held-out looks take
    turns (`HELDOUT`): a second registration judges what the first wrote, and a look being
    taken is seen here (or reads this protocol)."""
    gate, statistics = gate or Gate(), statistics or Statistics()
    take_turns(s, HELDOUT)
    touched = touched_heldout(s)
    if touched is not None:
        raise UserError(f"{touched}: the protocol can no longer change")
    check_values(gate, statistics)
    subset = subset_now(s)
    if subset is None:
        raise UserError("no calibration subset drawn yet (nmb assign --calibration N)")
    if subset.n_heldout < 3:
        raise UserError(f"the held-out part has {counted(subset.n_heldout, 'item')}; at least 3 are "
                        "needed")
    weaker = weaker_than_default(gate, statistics, subset)
    if weaker and not accept_weaker:
        raise UserError(f"weaker than the default protocol: {', '.join(weaker)}; register it "
                        "with --accept-weaker-than-default, or make it as strict")
    proto = Protocol(gate, statistics, subset, accepted_weaker=bool(weaker))
    content = proto.content()
    digest = hashlib.sha256(canonical_json(content).encode()).hexdigest()
    latest = current(s)
    if latest is not None and latest.content_hash == digest:
        return latest
    row = s.exec(select(CalibrationProtocol)
                 .where(CalibrationProtocol.content_hash == digest)).first()
    if row is not None:  # the newest protocol is the one in force: no going back silently
        raise UserError(f"this protocol was registered before as protocol {row.id}, replaced "
                        f"by protocol {latest.id}; change a value to register it again")
    row = CalibrationProtocol(content_hash=digest, content=content, created_by=actor)
    s.add(row)
    s.flush()
    record(s, "calibration.protocol", actor=actor, protocol=row.id, sha256=digest)
    return Protocol.from_row(row)


def touched_heldout(s: Session) -> str | None:
    """In words, the first statistic that touched the held-out part (a held-out look, or a
    report of part "all" on its items), or None."""
    looked = s.exec(select(HeldoutLook).order_by(HeldoutLook.id)).first()
    if looked is not None:
        return (f"a held-out report exists (report {looked.report_id}, config "
                f"{looked.config_id})")
    whole = s.exec(select(CalibrationReport).where(CalibrationReport.part == "all")
                   .order_by(CalibrationReport.id)).first()
    if whole is not None:
        return (f"report {whole.id} (config {whole.config_id}, part all) was computed on the "
                "held-out items")
    return None


def gate_from_args(**values: object) -> Gate:
    """A `Gate` from command-line values (None: the default)."""
    given = {k: v for k, v in values.items() if v is not None}
    if "required" in given:
        given["required"] = tuple(given["required"])  # type: ignore[arg-type]
    names = {f.name for f in fields(Gate)}
    return Gate(**{k: v for k, v in given.items() if k in names})  # type: ignore[arg-type]
