"""The calibration report in the app: the registered protocol, the held-out looks, a report's
gate with the reasons it failed, its tables and figures."""

import json

import pandas as pd
import streamlit as st

from calibration import calibrate, grras, plan, protocol, report
from calibration.html import (
    ALT_HEADER,
    GATE_HEADER,
    LOOK_HEADER,
    fmt,
    gate_cells,
    look_cells,
    stat_cells,
    tag_cells,
)
from calibration.protocol import Statistics
from calibration.terms import ValidationTerms, for_protocol
from db.engine import session
from errors import UserError, counted
from grading.grader import config_labels
from ui.actions import show_error
from ui.plain_text import escape_markdown


def _table(header: list[str], rows: list[list]) -> None:
    """The rows as the HTML report formats them (`fmt`), under `header`."""
    st.dataframe(pd.DataFrame([[fmt(v) for v in row] for row in rows], columns=header),
                 hide_index=True)


def protocol_section() -> None:
    with session() as s:
        proto = protocol.current(s)
        looked = calibrate.looks(s)
    if proto is None:
        st.warning("No calibration protocol is registered: the held-out part cannot be looked "
                   "at until one is (`nmb protocol register`).")
        return
    g, terms = proto.gate, ValidationTerms.of(proto)
    st.markdown(f"**Registered {proto.label()}**, {escape_markdown(terms.rule_text())}. "
                f"{counted(g.looks, 'held-out look')} allowed in all; "
                f"{proto.statistics.bootstrap} bootstrap resamples over cases "
                f"({proto.statistics.pearson_ci} interval of r). Subset: "
                f"{proto.subset.n_dev} dev + {proto.subset.n_heldout} held-out items.")
    if weaker := terms.weaker_text():
        st.warning(escape_markdown(weaker[0].upper() + weaker[1:] + "."))
    with st.expander("Protocol (JSON)"):
        st.code(json.dumps(proto.content(), indent=1), language="json")
    st.caption(f"Held-out looks so far: {len(looked)} of the {g.looks} the protocol allows. A "
               "grader looks once (configs that differ only in seed, name or endpoint are one "
               "grader); each look is disclosed in every report and package.")


def planner_section() -> None:
    """The sample-size planner (`calibration.plan`) under the protocol in force (or the
    defaults): the chance of passing the r check for a held-out part of a given size."""
    with session() as s:
        proto = protocol.current(s)
    gate = proto.gate if proto else protocol.Gate()
    stats = proto.statistics if proto else protocol.Statistics()
    with st.expander("Plan the held-out part: the chance of passing, by simulation"):
        with st.form("planner"):
            c1, c2, c3, c4 = st.columns(4)
            expected = c1.number_input("Expected r", 0.0, 0.999, 0.95, step=0.01)
            cases = c2.number_input("Held-out cases", 3, 2000, 30)
            per_case = c3.number_input("Items per case", 1, 100, 1)
            within = c4.number_input("Within-case correlation", 0.0, 0.99, 0.0, step=0.05)
            go = st.form_submit_button("Simulate")
        if not go:
            return
        settings = plan.settings_for(gate, stats, expected_r=float(expected),
                                     within_case=float(within), studies=200)
        try:
            chance = plan.pass_probability(settings, cases=int(cases),
                                           items_per_case=int(per_case))
        except UserError as e:
            show_error(e)
            return
        st.markdown(f"P(pass the r check) = **{chance.pass_probability:.2f}** (Monte Carlo SE "
                    f"{chance.mc_se:.2f}; {settings.studies} simulated studies, rule "
                    f"{settings.rule}, {settings.pearson_ci} interval at {settings.level:.1%}, "
                    f"threshold {settings.threshold:g}). `nmb protocol plan` finds the smallest "
                    "size reaching a given power.")


def _show(rep: report.Report, row, figures: dict[str, bytes], fresh: bool) -> None:
    for flag in rep.flags:  # may quote the grader's model name
        st.warning(escape_markdown(flag))
    if rep.validates:  # what its pass means
        with session() as s:
            terms = for_protocol(s, rep.protocol_id)
        st.caption(escape_markdown(f"Terms: {terms.text()}."))
    verdict = "passed" if rep.passed else "failed"
    what = "held-out look" if rep.validates else f"{rep.part} part (exploration, never validates)"
    st.subheader(f"Report {row.id}: gate {verdict} · {what} · {rep.n_items} items")
    if not fresh:
        st.info(f"This config already took its held-out look on {row.created_at:%Y-%m-%d %H:%M} "
                "UTC; this is that decision.")
    for reason in rep.why_failed():
        st.error(reason)
    _table(GATE_HEADER, gate_cells(rep))
    st.caption(escape_markdown(rep.clustering()))  # as the HTML report, under the gate
    st.caption(escape_markdown(rep.icc_items()))
    _table(["criterion", *report.STAT_HEADER[1:]], [stat_cells(r) for r in rep.stat_rows()])
    if alt := rep.alt_sensitivity_rows():
        st.markdown("**Alt-Test: sensitivity to epsilon** (the protocol decides on its own "
                    "epsilon; the others are shown, not used)")
        _table(ALT_HEADER, alt)
    _table(report.TAG_HEADER, [tag_cells(r) for r in rep.tag_rows()])
    with st.expander("Reporting checklist (GRRAS, Kottner et al. 2011)"):
        _table(grras.HEADER, grras.rows())
    if rep.heldout_looks:
        st.markdown("**Held-out looks of every config**")
        _table(LOOK_HEADER, look_cells(rep))
    cols = st.columns(2)
    for i, png in enumerate(figures.values()):
        cols[i % 2].image(png, output_format="PNG")
    if row.html:
        st.download_button("Download HTML report", row.html,
                           file_name=f"calibration-report-{row.id}.html", mime="text/html")


def report_section(actor: str) -> None:
    protocol_section()
    planner_section()
    with session() as s:
        names = config_labels(s)
    if not names:
        st.info("Create a grader config and run it first.")
        return
    c1, c2, c3 = st.columns(3)
    config_id = c1.selectbox("Grader config ", list(names), format_func=names.get)
    part = c2.selectbox("Part", report.PARTS, index=report.PARTS.index("dev"),
                        help="Dev: explore freely; it never validates. Held-out: the config's "
                             "one look, under the registered protocol.")
    with session() as s:
        status = calibrate.validation_status(s, config_id=config_id)
    c1.caption(f"Status: {escape_markdown(status)}")  # may quote a revocation's reason
    boot = None
    taken = f"look-taken-{config_id}"
    if part != "heldout":
        boot = c3.number_input("Bootstrap resamples", 200, 10000, 2000, step=200)
    elif taken in st.session_state:  # the look of the run before, the page above redrawn
        _show(*st.session_state.pop(taken))
        return
    elif not _confirmed_look(config_id, names[config_id]):
        return
    if part != "heldout" and not st.button("Compute report", type="primary"):
        return
    stats = None if boot is None else Statistics(bootstrap=int(boot))
    try:
        with session() as s:
            out = calibrate.run(s, config_id=config_id, part=part, statistics=stats, actor=actor)
    except UserError as e:
        show_error(e)
        return
    if part == "heldout" and out.fresh:  # the looks counted and the status above are stale
        st.session_state[taken] = (out.report, out.row, out.figures, out.fresh)
        st.rerun()
    _show(out.report, out.row, out.figures, out.fresh)


def _confirmed_look(config_id: int, label: str) -> bool:
    """The held-out look spends the config's only look: a button, then a confirmation that
    names what it spends; True in the one run after the confirmation."""
    key = f"confirm-look-{config_id}"
    asked = st.session_state.get(key)
    if asked == "confirmed":
        st.session_state.pop(key)
        return True
    if asked is None:
        if st.button("Take the held-out look", type="primary"):
            st.session_state[key] = "asked"
            st.rerun()
        return False
    st.warning(f"This spends the one held-out look of config {config_id} "
               f"({escape_markdown(label)}) under the registered protocol, one of the looks it "
               "allows in all: its result decides the config's validation (until held-out "
               "data change after it), and is disclosed in every report and package.")
    yes, no, _ = st.columns([2, 1, 3])
    if yes.button("Yes, take the held-out look", type="primary"):
        st.session_state[key] = "confirmed"
        st.rerun()
    if no.button("Cancel"):
        st.session_state.pop(key)
        st.rerun()
    return False


def revoke_section(actor: str) -> None:
    """Withdraw a validation, with a reason (audited)."""
    with session() as s:
        validated = config_labels(s, validated_only=True)
    if not validated:
        return
    with st.expander("Revoke a validation"):
        with st.form("revoke"):
            config_id = st.selectbox("Validated config", list(validated),
                                     format_func=validated.get)
            reason = st.text_input("Reason (kept in the audit log)", max_chars=2000)
            if st.form_submit_button("Revoke"):
                try:
                    with session() as s:
                        calibrate.revoke(s, config_id=config_id, reason=reason, actor=actor)
                except UserError as e:
                    show_error(e)
                else:
                    st.success(f"Validation of config {config_id} revoked.")
