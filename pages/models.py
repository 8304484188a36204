"""/models: send the benchmark to a model under test and keep its answers; the model cards
(admin)."""

import pandas as pd
import streamlit as st
from sqlmodel import select

from collection.collect import Selection, collect, estimate, failures, runs
from db.engine import session
from db.models import FAMILIES, LEVELS, Response
from db.study.model_cards import FIELDS as CARD_FIELDS
from db.study.model_cards import KINDS as CARD_KINDS
from db.study.model_cards import base_model, card_row, cards, set_card
from db.text_limits import MODEL_NAME
from errors import UserError, counted
from grading.preflight import collect_preflight
from grading.runs import outcome
from llm.grader_request import plain_http_warning
from llm.model_request import IMAGES, CollectSettings
from llm.plan import spent_text
from llm.run_writer import sweep
from ui.actions import redraw_after, show_error, show_written
from ui.admin.preflight import api_key, show_preflight
from ui.auth import require_role
from ui.plain_text import escape_markdown

user = require_role("admin")
st.title("Models")
st.caption("Each selected task goes to the model as the exam shows it to people: the record, "
           "the scores, the case's key slices as images, and for multi-turn tasks one stage "
           "after each answer. Answers are stored as responses of the model, with blind codes, "
           "for scoring and grading (docs/collect.md).")


def run_section(settings: CollectSettings, selection: Selection, concurrency: int) -> None:
    """Estimate, preflight and run; a mistake is shown and ends the section."""
    try:
        with session() as s:
            plan = estimate(s, settings, selection)
    except UserError as e:
        show_error(e)
        return
    show_written(settings.model)  # the run's outcome, the page drawn again
    st.markdown(plan.sentence())
    left, right = st.columns(2)
    if left.button("Preflight (one request)"):
        show_preflight(lambda s: collect_preflight(s, settings, selection, api_key=api_key()))
    if right.button("Collect", type="primary", disabled=plan.items == 0):
        bar = st.progress(0.0, text="collecting")
        try:
            with session() as s:
                out = collect(s, settings, selection, concurrency=concurrency,
                              api_key=api_key(), actor=user.name,
                              progress=lambda d, n: bar.progress(d / max(n, 1), text=f"{d}/{n}"))
        except UserError as e:
            show_error(e)
        else:  # the plan above counted the answers just collected: drawn again
            redraw_after(f"Run {out.run_id}: {out.collected} collected ({out.from_cache} "
                         f"from cache), {out.failed} failed; {spent_text(out.cost_usd)}.")


c1, c2 = st.columns(2)
model = c1.text_input("Model", placeholder="gpt-4o-2024-08-06", key="collect_model",
                      max_chars=MODEL_NAME)
base_url = c2.text_input("Base URL (empty: OpenAI)", key="collect_base_url")
if warning := plain_http_warning(base_url.strip() or None, api_key()):
    st.warning(escape_markdown(warning))
c1, c2, c3, c4, c5 = st.columns(5)
samples = c1.number_input("Samples per task", 1, 100, 1)
images = c2.selectbox("Images", IMAGES, format_func={"key": "key slices",
                                                     "none": "none (text only)"}.get)
temperature = c3.number_input("Temperature", 0.0, 2.0, 1.0, step=0.1)
max_tokens = c4.number_input("Max tokens", 1, 1_000_000, 2048)
concurrency = c5.number_input("Concurrent items", 1, 64, 4)
c1, c2 = st.columns(2)
families = c1.multiselect("Families (none: all)", FAMILIES)
levels = c2.multiselect("Levels (none: all)", LEVELS)
if model.strip():
    run_section(CollectSettings(model=model.strip(), base_url=base_url.strip() or None,
                                samples=int(samples), images=images,
                                temperature=float(temperature), max_tokens=int(max_tokens)),
                Selection(families=tuple(families), levels=tuple(levels)), int(concurrency))

with session() as s:
    sweep(s, actor=user.name)  # a run whose process is gone shows as interrupted
    history = runs(s)
    failed = failures(s)
st.subheader("Collection runs")
if history:
    st.dataframe(pd.DataFrame([{
        "run": r.id, "model": r.model, "status": outcome(r.status, r.collected, r.failed),
        "items": r.n_items, "collected": r.collected, "failed": r.failed, "from cache": r.from_cache,
        "tokens": r.prompt_tokens + r.completion_tokens, "images": r.image_count,
        "cost (USD)": r.cost_usd, "samples": r.settings.get("samples"),
        "images shown": r.settings.get("images"), "batch": r.batch,
        "template": f"{r.template_version} · {r.template_hash[:12]}",
        "endpoint": r.base_url or "OpenAI", "started": r.started_at,
        "finished": r.finished_at} for r in history]), hide_index=True)
else:
    st.info("No model has been run yet.")
if failed:
    st.markdown(f"**{counted(len(failed), 'failure')}** (collect again to retry them)")
    st.dataframe(pd.DataFrame([{"model": f.model, "task": f.task_id, "sample": f.sample,
                                "reason": f.reason, "attempts": f.attempts, "run": f.run_id}
                               for f in failed]), hide_index=True)

st.subheader("Model cards")
st.caption("What results, the leaderboard site and the reporting checklists know of each "
           "model: maker, version, release date, training cutoff (test-data independence), "
           "web access, size and kind. Also `nmb models set` and `nmb models set --from-csv`.")
with session() as s:
    known = cards(s)
    answered = sorted({base_model(m) for m in s.exec(
        select(Response.model).where(Response.model.is_not(None)).distinct())})
show_written("model cards")
if known:
    st.dataframe(pd.DataFrame([{"model": name, **card_row(card)}
                               for name, card in known.items()]), hide_index=True)
else:
    st.info("No model card yet.")
choices = sorted(set(answered) | set(known))
c1, c2 = st.columns(2)
picked = c1.selectbox("Card of the model", [""] + choices, key="card_model",
                      format_func=lambda m: m or "(a new name)")
typed = "" if picked else c2.text_input("New model name", key="card_new", max_chars=MODEL_NAME)
current = card_row(known.get(picked)) if picked else dict.fromkeys(CARD_FIELDS)
with st.form("model_card"):  # keyed by the model: each model's form starts from its card
    c1, c2, c3 = st.columns(3)
    values = {
        "maker": c1.text_input("Maker", current["maker"] or "", key=f"card_maker:{picked}"),
        "version": c2.text_input("Version", current["version"] or "",
                                 key=f"card_version:{picked}"),
        "params": c3.text_input("Size (parameters)", current["params"] or "",
                                key=f"card_params:{picked}"),
        "released": c1.text_input("Released (YYYY-MM-DD)", current["released"] or "",
                                  key=f"card_released:{picked}"),
        "training_cutoff": c2.text_input("Training cutoff (YYYY-MM-DD or YYYY-MM)",
                                         current["training_cutoff"] or "",
                                         key=f"card_cutoff:{picked}"),
        "web_access": c3.selectbox("Web access", ["", "yes", "no"], key=f"card_web:{picked}",
                                   index=["", "yes", "no"].index(current["web_access"] or "")),
        "kind": c1.selectbox("Kind", ["", *CARD_KINDS], key=f"card_kind:{picked}",
                             index=["", *CARD_KINDS].index(current["kind"] or "")),
    }
    if st.form_submit_button("Save the card"):
        name = typed.strip() or picked
        try:
            if not name:
                raise UserError("choose a model or type a new name")
            with session() as s:
                set_card(s, name=name, change=values, actor=user.name)
        except UserError as e:
            show_error(e)
        else:
            redraw_after(f"Saved the card of {name}.")
