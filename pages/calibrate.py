"""/calibrate: run the LLM grader and compare it with the experts (admin)."""

import pandas as pd
import streamlit as st

from calibration.calibrate import unvalidated_warning
from calibration.terms import validation_note
from db.engine import database_url, nmb_home, session, snapshot
from db.models import utcnow
from db.rubrics import rubric_in_force
from db.text_limits import MODEL_NAME
from errors import UserError
from grading.config import GraderSettings, is_dated_snapshot, store_config
from grading.grader import config_label, config_labels, configs, estimate, grade, grades_key
from grading.preflight import grader_preflight
from grading.runs import history, run_failures
from llm.grader_request import plain_http_warning
from llm.plan import Plan, spent_text
from llm.run_writer import sweep
from package.freeze import freeze, packages
from results.leaderboard import leaderboard
from stats.intervals import MIN_CASES
from ui.actions import show_error
from ui.admin.calibration_report import report_section, revoke_section
from ui.admin.leaderboard import chart_png, leaderboard_view
from ui.admin.preflight import api_key, show_preflight
from ui.admin.run_outcome import run_outcome
from ui.auth import require_role
from ui.plain_text import escape_markdown

user = require_role("admin")
st.title("Grader calibration")


# Every tab runs on every rerun of the page: what reads all pending requests or all grades is
# cached under `grades_key`, a few COUNT queries that change whenever its inputs do.
@st.cache_data(max_entries=32, show_spinner="Estimating the cost…")
def cached_estimate(database: str, config_id: int, items: str, key: tuple) -> Plan:
    with session() as s:
        return estimate(s, config_id=config_id, items=items)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_leaderboard(database: str, config_id: int, ks: tuple, by: str | None,
                       key: tuple) -> tuple[list[dict], bytes | None]:
    with snapshot() as s:  # one state, while a grader run commits
        rows = leaderboard(s, config_id=config_id, ks=ks, by=by)
    return rows, chart_png(rows, ks)


def current_key(config_id: int) -> tuple:
    with session() as s:  # closed before a cached function opens its own (SQLite write lock)
        return grades_key(s, config_id=config_id)


def runs_section() -> None:
    """Past runs of every config, and the failures a chosen run left."""
    with session() as s:
        sweep(s, actor=user.name)  # a run whose process is gone shows as interrupted
        past = history(s)
    st.subheader("Run history")
    if not past:
        st.info("No grader run yet.")
        return
    st.dataframe(pd.DataFrame([r.row() for r in past]), hide_index=True)
    failing = {r.run_id: f"run {r.run_id} · {r.config} · {r.failed} failed"
               for r in past if r.failed}
    if not failing:
        return
    run_id = st.selectbox("Failures of run", list(failing), format_func=failing.get,
                          key="failures_of_run")
    with session() as s:
        left = run_failures(s, run_id=run_id)
    st.caption("A run's failures as they stand: an item graded since, or failed again by a "
               "later run, is no longer listed here. Run the grader again to retry them.")
    if left:
        st.dataframe(pd.DataFrame([{"response": f.response_id, "error": f.reason,
                                    "attempts": f.attempts} for f in left]), hide_index=True)
    else:
        st.info(f"Every failure of run {run_id} has been retried since.")


grader_tab, report_tab, board_tab, package_tab = st.tabs(
    ["Grader runs", "Calibration report", "Leaderboard", "Packages"])

with grader_tab:
    with session() as s:
        known = configs(s)
        rubric = rubric_in_force(s).id  # what a config naming no rubric grades with
    with st.expander("New grader config", expanded=not known):
        with st.form("config"):
            st.caption(f"Rubric: {rubric} (the one the experts score with)")
            c1, c2 = st.columns(2)
            model = c1.text_input("Model (a dated snapshot)", "gpt-4o-2024-08-06",
                                  max_chars=MODEL_NAME)
            base_url = c2.text_input("Base URL (empty: OpenAI)", "")
            c1, c2, c3, c4 = st.columns(4)
            temperature = c1.number_input("Temperature", 0.0, 2.0, 0.0, step=0.1)
            seed = c2.number_input("Seed", min_value=0, value=0)
            max_tokens = c3.number_input("Max tokens", 100, 8000, 1200)
            vision = c4.checkbox("Send key slices (vision models)")
            if st.form_submit_button("Save config"):
                if base_url.strip():  # typed here: confirmed for this session (endpoint box)
                    st.session_state.setdefault("typed_base_urls", []).append(base_url.strip())
                try:
                    with session() as s:
                        row = store_config(s, GraderSettings(
                            model=model.strip(), base_url=base_url.strip() or None,
                            temperature=temperature, seed=int(seed), max_tokens=int(max_tokens),
                            vision=vision), actor=user.name)
                        s.commit()
                except UserError as e:
                    show_error(e)
                else:
                    st.session_state["grader_config"] = row.id
                    st.rerun()
    if not known:
        st.stop()
    names = {c.id: config_label(c) for c in known}
    config_id = st.selectbox("Grader config", list(names), format_func=names.get,
                             key="grader_config")
    config = next(c for c in known if c.id == config_id)
    st.caption(f"model {escape_markdown(config.model)} · T={config.temperature} · seed {config.seed} · "
               f"prompt {config.prompt_version} · rubric {config.rubric_hash[:12]} · "
               f"config hash {config.config_hash[:12]}")
    if not is_dated_snapshot(config.model):
        st.warning(f"{escape_markdown(config.model)} is an undated alias: the model behind it may "
                   "change. Reports flag it.")
    trusted = None  # a stored config's address is sent to once the admin confirms it
    if config.base_url:
        confirmed = st.checkbox(
            escape_markdown(f"Send the API key and the study's data to {config.base_url}"),
            value=config.base_url in st.session_state.get("typed_base_urls", []),
            key=f"trust_endpoint_{config.id}",
            help="The address stored with this config. Nothing is sent to it until you tick "
                 "this (ticked already when you typed it in this session).")
        trusted = config.base_url if confirmed else None
        if warning := plain_http_warning(config.base_url, api_key()):
            st.warning(escape_markdown(warning))
    c1, c2 = st.columns(2)
    items = c1.segmented_control("Items", ["calibration", "pending"],
                                 default="calibration") or "calibration"
    concurrency = c2.number_input("Concurrent requests", 1, 64, 8)
    plan = cached_estimate(database_url(), config_id, items,
                           current_key(config_id))
    st.markdown(plan.sentence())
    left, right = st.columns(2)
    if left.button("Preflight (one request)", key="grader_preflight"):
        show_preflight(lambda s: grader_preflight(s, config_id=config_id, items=items,
                                                  api_key=api_key(), trust_base_url=trusted))
    if right.button("Run grader", type="primary", disabled=plan.items == 0):
        bar = st.progress(0.0, text="grading")
        try:
            with session() as s:
                out = grade(s, config_id=config_id, items=items,
                            concurrency=int(concurrency), api_key=api_key(), actor=user.name,
                            trust_base_url=trusted,
                            progress=lambda d, n: bar.progress(d / max(n, 1), text=f"{d}/{n}"))
            show = getattr(st, run_outcome(out.graded, out.failed))
            show(f"Run {out.run_id}: {out.graded} graded ({out.from_cache} from cache), "
                 f"{out.failed} failed; {spent_text(out.cost_usd)}.")
        except UserError as e:
            show_error(e)
    runs_section()

with report_tab:
    report_section(user.name)

with board_tab:
    with session() as s:
        graders = config_labels(s)
    if graders:
        c1, c2, c3 = st.columns(3)
        board_id = c1.selectbox("Grades of config", list(graders), format_func=graders.get)
        ks = c2.multiselect("pass@k", [1, 3, 5, 10], default=[1, 5])
        by = c3.selectbox("Rows", [None, "family", "level"],
                          format_func=lambda b: "per model" if b is None else f"per {b}")
        rows, chart = cached_leaderboard(database_url(), board_id, tuple(sorted(ks)) or (1,),
                                         by, current_key(board_id))
        with session() as s:
            warning = unvalidated_warning(s, config_id=board_id)
            note = validation_note(s, config_id=board_id)
        if warning:
            st.warning(escape_markdown(warning[0].upper() + warning[1:] + "."),
                       icon=":material/warning:")
        elif note:
            st.caption(escape_markdown(note[0].upper() + note[1:] + "."))
        st.caption("pass@k: unbiased estimator over each task's graded samples (Chen et al. "
                   "2021), shown when every task has at least k, with a 95% interval from "
                   f"resamples of cases (none from fewer than {MIN_CASES} cases); human groups "
                   "get pass@1.")
        if rows:
            leaderboard_view(rows, chart)
        else:
            st.info("No grades under this config yet.")

with package_tab:
    with session() as s:
        validated = config_labels(s, validated_only=True)
        frozen = [{"package": p.id, "config": p.config_id, "report": p.report_id,
                   "canary items": p.canary.get("items"), "sha256": p.sha256,
                   "file": p.path, "frozen at": p.created_at} for p in packages(s)]
    st.caption("A package holds a validated config, its rubric and prompt, the tasks and a "
               "canary set: `nmb package grade` scores new models with it, `nmb package canary` "
               "checks the model behind the API has not drifted (docs/package.md).")
    if not validated:
        st.info("A config can be frozen once its held-out look passes the registered gate "
                "(and is not revoked).")
    else:
        c1, c2 = st.columns(2)
        freeze_id = c1.selectbox("Validated config", list(validated), format_func=validated.get,
                                 key="freeze_config")
        with session() as s:
            c1.caption(escape_markdown(validation_note(s, config_id=freeze_id) or ""))
        canary_size = c2.number_input("Canary items (held-out)", 1, 500, 20)
        if st.button("Freeze package", type="primary"):
            out = nmb_home() / "packages" / f"grader-{freeze_id}-{utcnow():%Y%m%dT%H%M%S}.zip"
            try:
                with session() as s:
                    row = freeze(s, config_id=freeze_id, out=out, canary_size=int(canary_size),
                                 actor=user.name)
            except UserError as e:
                show_error(e)
            else:
                st.success(f"Package {row.id} frozen: {out.name}.")
                st.markdown("Publish this sha256 with the package; recipients check it with "
                            "`nmb package verify PACKAGE --sha256 HEX`:")
                st.code(row.sha256, language=None)
                st.download_button("Download package", out.read_bytes(), file_name=out.name,
                                   mime="application/zip")
    if frozen:
        st.dataframe(pd.DataFrame(frozen), hide_index=True)
    revoke_section(user.name)
