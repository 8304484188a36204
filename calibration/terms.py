"""What "validated" means for one grader: the terms of the protocol its held-out look was judged
under, in one typed object that every place showing a validation renders (`text`).

The terms are the decision rule, the thresholds (which checks are required), the intervals'
level per look with its Bonferroni adjustment for the protocol's looks (Dunn 1961; each look's
interval at 1 - (1 - confidence) / looks, its lower bound a one-sided bound at
1 - (1 - level) / 2, as `calibration.gate.decide` uses it), the held-out part's items and cases,
and whether the protocol is weaker than the default (`calibration.protocol.weaker_than_default`)
and was accepted as such at registration. They are derived from the protocol's content alone,
so a package's protocol.json gives the same terms as the study (`package.verify.verify`
checks the manifest's against it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from sqlmodel import Session

from calibration.protocol import LOWER_BOUND, Protocol, get, weaker_than_default
from db.models import CalibrationReport, GraderConfig
from errors import counted

TERMS_NOT_RECORDED = "terms not recorded"
_LABELS = {"pearson": "Pearson r", "icc2": "ICC(2,1)", "alt_test": "Alt-Test winning rate"}


def _percent(x: float) -> str:
    return f"{x * 100:.4g}%"


@dataclass(frozen=True)
class ValidationTerms:
    """The terms of a validation (see the module docstring); `weaker` lists, in words, how the
    protocol is weaker than the default (empty: it is not)."""

    protocol_id: int | None
    protocol_sha256: str
    rule: str
    pearson_min: float
    icc2_min: float
    alt_test_epsilon: float
    alt_test_q: float
    required: tuple[str, ...]
    confidence: float
    looks: int
    level: float
    pearson_ci: str
    heldout_items: int
    heldout_cases: int | None
    weaker: tuple[str, ...]
    accepted_weaker: bool

    @classmethod
    def of(cls, proto: Protocol) -> ValidationTerms:
        g, st, sub = proto.gate, proto.statistics, proto.subset
        return cls(proto.id, proto.content_hash, g.rule, g.pearson_min, g.icc2_min,
                   g.alt_test_epsilon, g.alt_test_q, tuple(g.required), st.confidence, g.looks,
                   proto.level, st.pearson_ci, sub.n_heldout, sub.n_heldout_cases,
                   tuple(weaker_than_default(g, st, sub)), proto.accepted_weaker)

    def decision(self) -> str:
        """What decides r and ICC, at which level, adjusted for how many looks."""
        adjusted = (f"{_percent(self.confidence)} family-wise, Bonferroni over {self.looks} looks"
                    if self.looks > 1 else "1 held-out look")
        if self.rule == LOWER_BOUND:
            one_sided = 1 - (1 - self.level) / 2
            return (f"the lower bounds of {_percent(self.level)} intervals (one-sided "
                    f"{_percent(one_sided)} bounds; {adjusted})")
        return f"the point estimates, not their {_percent(self.level)} intervals ({adjusted})"

    def thresholds(self) -> str:
        values = {"pearson": f"≥ {self.pearson_min:g}", "icc2": f"≥ {self.icc2_min:g}",
                  "alt_test": f"≥ 0.5 (epsilon {self.alt_test_epsilon:g}, q "
                              f"{self.alt_test_q:g})"}
        return ", ".join(f"{_LABELS[k]} {v}{'' if k in self.required else ' (not required)'}"
                         for k, v in values.items())

    def heldout(self) -> str:
        items = counted(self.heldout_items, "held-out item")
        if self.heldout_cases is None:
            return f"{items} (cases not recorded)"
        return f"{items} in {counted(self.heldout_cases, 'case')}"

    def weaker_text(self) -> str | None:
        """"weaker than the default protocol: ..." or None."""
        if not self.weaker:
            return None
        how = ("accepted at registration" if self.accepted_weaker else
               "registered before a weaker protocol needed accepting")
        return f"weaker than the default protocol: {', '.join(self.weaker)} - {how}"

    def rule_text(self) -> str:
        """The terms but the protocol's name: rule, thresholds, held-out part, weaker."""
        line = (f"rule {self.rule}: decided on {self.decision()}; {self.thresholds()}; "
                f"{self.heldout()}")
        weaker = self.weaker_text()
        return f"{line}; {weaker}" if weaker else line

    def text(self) -> str:
        """The terms on one line, as every place that shows the validation prints them."""
        return (f"protocol {self.protocol_id} (sha256 {self.protocol_sha256[:12]}), "
                f"{self.rule_text()}")

    def to_json(self) -> dict[str, Any]:
        """The fields, and `text` and `weaker_than_default` in words, as JSON reads them back."""
        return json.loads(json.dumps({**asdict(self), "text": self.text(),
                                      "weaker_than_default": self.weaker_text()}))


def for_protocol(s: Session, protocol_id: int) -> ValidationTerms:
    return ValidationTerms.of(get(s, protocol_id))


def for_config(s: Session, config_id: int) -> ValidationTerms | None:
    """The terms of a validated config's validating look; None when it is not validated, or
    its validation predates registered protocols."""
    config = s.get(GraderConfig, config_id)
    if config is None or config.validated_report_id is None:
        return None
    report = s.get(CalibrationReport, config.validated_report_id)
    if report is None or report.protocol_id is None:
        return None
    return for_protocol(s, report.protocol_id)


def validated_words(terms: ValidationTerms | None) -> str:
    """"validated under ...", as results and the site say it."""
    return f"validated under {terms.text()}" if terms else f"validated ({TERMS_NOT_RECORDED})"


def validation_note(s: Session, *, config_id: int) -> str | None:
    """"grader config #N is validated under <terms>", or None when it is not validated
    (`calibration.calibrate.unvalidated_warning` then says why)."""
    config = s.get(GraderConfig, config_id)
    if config is None or config.validated_report_id is None:
        return None
    return f"grader config #{config_id} is {validated_words(for_config(s, config_id))}"
