"""/admin: bundles, flagged responses, the case browser, users, assignments and rater
progress, exams and their takers' progress, exports (admin). One section at a time, kept
over reruns and in the URL."""

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from db.bundle.importer import BundleInvalid
from db.bundle.store import Workspace
from db.bundle.upload_name import safe_upload_name
from db.bundle.zip import extract_zip
from db.engine import session
from db.export import FORMATS, KINDS, export
from db.models import FAMILIES, LEVELS
from db.raters.assignments import (
    assign,
    below_overlap,
    draw_calibration,
    plan_assignment,
    rater_progress,
    response_models,
)
from db.rubrics import rubric_in_force
from db.status import counts
from db.study.cases import case_view, reference_fields, task_list
from db.study.catalog import case_rows, response_detail, response_rows, search, task_rows
from db.study.demo import demo_case_count, remove_demo
from db.study.exams import close_exam, ensure_exam, exam_list, exam_warnings
from db.study.masks import case_masks
from db.study.opening_view import cases_without_view, set_opening_view
from db.study.progress import people_progress
from db.study.reference import HINT, has_reference
from db.study.retire import KINDS as RETIRED_KINDS
from db.study.retire import retire, retired, taken_out, unretire
from db.study.viewer_tools import TOOLS, set_viewer_tools, viewer_tools
from db.text_limits import NAME
from db.users import (
    LEAST_PRIVILEGED_FIRST,
    MIN_PASSWORD,
    add_user,
    change_role,
    check_new_password,
    disable_user,
    list_users,
    reset_password,
    set_email,
)
from errors import UserError, counted, not_permitted
from importers import IMPORTERS, Options, names, run_import
from ui.actions import redraw_after, run_write, show_error, show_written
from ui.admin.flag_review import flag_review
from ui.auth import require_role
from ui.case_panel import case_panel, viewer_answer
from ui.plain_text import escape_markdown, untrusted_text
from ui.response_view import response_view
from ui.volume_viewer import chosen_view

user = require_role("admin")
st.title("Data and users")

with session() as s:
    st.dataframe(pd.DataFrame([counts(s)]), hide_index=True)


def _show_import(label: str, run) -> None:
    """Run an import (`run(progress)` returns its summary) and show its outcome: every
    problem as a table row, or the summary."""
    bar = st.progress(0.0, text="validating")
    try:
        with session() as s:
            summary = run(s, lambda f, what: bar.progress(min(f, 1.0),
                                                          text=escape_markdown(what)))
    except BundleInvalid as e:
        bar.empty()
        show_error(e)
        st.dataframe(pd.DataFrame([{"file": p.file, "line": "" if p.line is None else str(p.line),
                                    "problem": p.message} for p in e.problems]),
                     hide_index=True)
    except UserError as e:
        bar.empty()
        show_error(e)
    except PermissionError as e:  # a server path the app's account may not read: one line
        if (refusal := not_permitted(e)) is None:
            raise
        bar.empty()
        show_error(refusal)
    else:  # the counts at the top changed: the page is drawn again, the summary at the top
        changes = getattr(getattr(summary, "imported", summary), "revisions", [])
        redraw_after(f"{label}: {summary}" + "".join(f"; {line}" for line in changes))


ALLOW_BLANK = "Allow blank images (every voxel or pixel of one value; --allow-blank)"
REVISE = ("Store a changed case record, task or reference answer as a new revision (--revise; "
          "what was made against the old one becomes stale)")


def with_demo_box(key: str) -> bool:
    """The --with-demo checkbox, shown while the study holds the synthetic demo (else False)."""
    with session() as s:
        demo = demo_case_count(s)
    return demo is not None and st.checkbox(
        f"Import beside the synthetic demo ({counted(demo, 'case')}; --with-demo). Or keep real "
        "data apart: remove the demo first (nmb demo remove)", key=key)


def import_bundle_at(path: Path, dry_run: bool, workspace: Workspace | None = None,
                     allow_blank: bool = False, with_demo: bool = False,
                     revise: bool = False) -> None:
    """Validate and import the bundle at `path`; messages name it by `path.name` (an upload is
    stored under its own file name, made safe)."""
    valid = " is valid, nothing was written (dry run)" if dry_run else ""
    _show_import(f"{path.name}{valid}", lambda s, progress: run_import(s, "bundle", [path], Options(
        dry_run=dry_run, actor=user.name, progress=progress, workspace=workspace,
        allow_blank=allow_blank, with_demo=with_demo, revise=revise)))


def bundle_import() -> None:
    upload = st.file_uploader("Bundle (.zip)", type=["zip"])
    server_path = st.text_input("…or a path on the server")
    dry_run = st.checkbox("Dry run (validate only)")
    blank = st.checkbox(ALLOW_BLANK, key="bundle_allow_blank")
    beside = with_demo_box("bundle_with_demo")
    revise = st.checkbox(REVISE, key="bundle_revise")
    if st.button("Import", type="primary", disabled=not (upload or server_path)):
        if upload is not None:
            with Workspace("upload") as upload_area:  # NMB_HOME/tmp, swept if the server dies
                path = upload_area.path / safe_upload_name(upload.name)
                path.write_bytes(upload.getvalue())
                import_bundle_at(path, dry_run, upload_area, allow_blank=blank, with_demo=beside,
                                 revise=revise)
        else:
            import_bundle_at(Path(server_path.strip()), dry_run, allow_blank=blank,
                             with_demo=beside, revise=revise)


def release_import() -> None:
    """`nmb import FILE... --from neural-medbench`: uploaded files or paths on the server."""
    uploads = st.file_uploader("Release task files (.json)", type=["json"],
                               accept_multiple_files=True)
    server_paths = st.text_area("…or paths on the server, one per line")
    key = st.file_uploader("Answer key (.json, optional)", type=["json"])
    key_path = st.text_input("…or the answer key's path on the server")
    field_map = st.text_input("Field map's path on the server (optional: files of other field "
                              "names, docs/bundle-format.md)")
    c1, c2, c3 = st.columns(3)
    family = c1.selectbox("Family", ["by file name", *FAMILIES])
    level = c2.selectbox("Level", ["by file name", *LEVELS])
    dry_run = c3.checkbox("Dry run (validate only)", key="release_dry_run")
    blank = st.checkbox(ALLOW_BLANK, key="release_allow_blank")
    beside = with_demo_box("release_with_demo")
    paths = [Path(p.strip()) for p in server_paths.splitlines() if p.strip()]
    if not st.button("Import", type="primary", disabled=not (uploads or paths)):
        return
    with Workspace("upload") as area:  # NMB_HOME/tmp, swept if the server dies
        if uploads:
            paths = []
            for upload in uploads:
                paths.append(area.path / safe_upload_name(upload.name, ".json"))
                paths[-1].write_bytes(upload.getvalue())
        answers = Path(key_path.strip()) if key_path.strip() else None
        if key is not None:
            (area.path / "key").mkdir()
            answers = area.path / "key" / safe_upload_name(key.name, ".json")
            answers.write_bytes(key.getvalue())
        valid = " are valid, nothing was written (dry run)" if dry_run else ""
        _show_import(", ".join(p.name for p in paths) + valid,
                     lambda s, progress: run_import(s, "neural-medbench", paths, Options(
                         answers=answers, dry_run=dry_run, actor=user.name, allow_blank=blank,
                         field_map=Path(field_map.strip()) if field_map.strip() else None,
                         with_demo=beside,
                         family=None if family == "by file name" else family,
                         level=None if level == "by file name" else level, progress=progress)))




def responses_import() -> None:
    """`nmb import-responses FILE --from ...`: an uploaded file or a path on the server."""
    source = st.selectbox("Format", names("responses"), format_func=lambda n: IMPORTERS[n].label)
    upload = st.file_uploader("Responses file", type=["jsonl", "xlsx", "tsv"])
    server_path = st.text_input("…or a path on the server", key="responses_path")
    c1, c2, c3 = st.columns(3)
    model = c1.text_input("Model (where the file does not say)", max_chars=128)
    task_key = c2.text_input("Task key rule (field:NAME, map:FILE.json, order:TASKS, prompt)",
                             max_chars=1000)
    dry_run = c3.checkbox("Dry run (validate only)", key="responses_dry_run")
    takes = IMPORTERS[source].takes
    lm_filter = (st.text_input("Filter whose lines are read (default: the file's first)",
                               max_chars=256, key="responses_filter")
                 if "filter_name" in takes else "")
    final_stage_only = "final_stage_only" in takes and st.checkbox(
        "Staged tasks: store the one answer as the final stage's only (flagged in results)",
        key="responses_final_stage_only")
    if not st.button("Import", type="primary", disabled=not (upload or server_path)):
        return
    with Workspace("upload") as area:  # NMB_HOME/tmp, swept if the server dies
        if upload is not None:
            suffix = next((x for x in (".xlsx", ".tsv") if upload.name.lower().endswith(x)),
                          ".jsonl")
            path = area.path / safe_upload_name(upload.name, suffix)
            path.write_bytes(upload.getvalue())
        else:
            path = Path(server_path.strip())
        valid = " is valid, nothing was written (dry run)" if dry_run else ""
        _show_import(f"{path.name}{valid}", lambda s, progress: run_import(s, source, [path], Options(
            model=model.strip() or None, task_key=task_key.strip() or None,
            filter_name=lm_filter.strip() or None, final_stage_only=final_stage_only,
            dry_run=dry_run, actor=user.name, progress=progress)))


def images_import(kind: str) -> None:
    """`nmb import DIR --from dicom|bids --case-info FILE`: a .zip of the folder or a path on
    the server, and the case info (upload or path)."""
    upload = st.file_uploader("The folder as a .zip", type=["zip"], key=f"{kind}_zip")
    server_path = st.text_input("…or its path on the server (a folder; for DICOM also a "
                                "DICOMDIR)", key=f"{kind}_path")
    info = st.file_uploader("Case info (.json)", type=["json"], key=f"{kind}_info")
    info_path = st.text_input("…or the case info's path on the server", key=f"{kind}_info_path")
    allow = kind == "dicom" and st.checkbox("Allow series whose pixels may show who the patient "
                                            "is (burned-in text, screens, photographs, "
                                            "ultrasound, faces; checked by hand)")
    only = leave = ""
    if kind == "bids":
        only = st.text_input("Only these subjects or sessions (--participants; blank: all)",
                             placeholder="sub-01 sub-02/ses-1", key="bids_participants")
        leave = st.text_input("Leave out these subjects or sessions (--exclude)",
                              placeholder="sub-03 sub-01/ses-2", key="bids_exclude")
    dry_run = st.checkbox("Dry run (validate only)", key=f"{kind}_dry_run")
    blank = st.checkbox(ALLOW_BLANK, key=f"{kind}_allow_blank")
    beside = with_demo_box(f"{kind}_with_demo")
    if not st.button("Import", type="primary", disabled=not (upload or server_path),
                     key=f"{kind}_import"):
        return
    with Workspace("upload") as area:  # NMB_HOME/tmp, swept if the server dies
        try:
            if upload is not None:
                archive = area.path / safe_upload_name(upload.name)
                archive.write_bytes(upload.getvalue())
                path = area.path / kind
                path.mkdir()
                extract_zip(archive, path)
                archive.unlink()
            else:
                path = Path(server_path.strip())
            case_info = Path(info_path.strip()) if info_path.strip() else None
            if info is not None:
                (area.path / "info").mkdir()
                case_info = area.path / "info" / safe_upload_name(info.name, ".json")
                case_info.write_bytes(info.getvalue())
        except BundleInvalid as e:
            show_error(e)
            return
        valid = " is valid, nothing was written (dry run)" if dry_run else ""
        _show_import(f"{kind.upper()} import{valid}", lambda s, progress: run_import(
            s, kind, [path], Options(case_info=case_info, allow_burned_in=allow, allow_blank=blank,
                                     participants=tuple(only.replace(",", " ").split()),
                                     exclude=tuple(leave.replace(",", " ").split()),
                                     with_demo=beside, dry_run=dry_run, actor=user.name,
                                     progress=progress)))


def scores_import() -> None:
    """`nmb import-scores FILE`: an uploaded CSV or a path on the server."""
    [source] = names("scores")
    upload = st.file_uploader("Scores file (.csv)", type=["csv"])
    server_path = st.text_input("…or a path on the server", key="scores_path")
    dry_run = st.checkbox("Dry run (validate only)", key="scores_dry_run")
    if not st.button("Import", type="primary", disabled=not (upload or server_path),
                     key="scores_import"):
        return
    with Workspace("upload") as area:  # NMB_HOME/tmp, swept if the server dies
        if upload is not None:
            path = area.path / safe_upload_name(upload.name, ".csv")
            path.write_bytes(upload.getvalue())
        else:
            path = Path(server_path.strip())
        valid = " is valid, nothing was written (dry run)" if dry_run else ""
        _show_import(f"{path.name}{valid}", lambda s, progress: run_import(s, source, [path], Options(
            dry_run=dry_run, actor=user.name, progress=progress)))


def import_section() -> None:
    labels = [IMPORTERS[name].label for name in names("cases")]
    kind = st.radio("What", [*labels[:2], "Model responses", *labels[2:], "Earlier expert scores"],
                    horizontal=True)
    if kind == "Earlier expert scores":
        st.caption("Expert scores given outside the tool (a paper form, a spreadsheet, an "
                   "earlier study), one CSV row per criterion (docs/bundle-format.md, *Earlier "
                   "expert scores*). They are marked imported (not collected blind); nothing is "
                   "written unless every row is valid.")
        scores_import()
    elif kind == "DICOM study":
        st.caption("One study (a PACS export: a folder or a DICOMDIR) becomes one case; the "
                   "case info gives its record and tasks. No DICOM header value is stored "
                   "(docs/bundle-format.md, *DICOM studies*).")
        images_import("dicom")
    elif kind == "BIDS dataset":
        st.caption("A BIDS dataset: one case per subject (and session); CASES.json gives "
                   "their records and tasks (docs/bundle-format.md, *BIDS datasets*).")
        images_import("bids")
    elif kind == "Model responses":
        st.caption("Responses to tasks the study already holds, from a responses.jsonl or an "
                   "evaluation harness (docs/bundle-format.md, *Responses from evaluation "
                   "harnesses*). Nothing is written unless every answer matches a task.")
        responses_import()
    elif kind == "Bundle":
        st.caption("A bundle is a folder or a .zip in the `nmb-bundle/1` format "
                   "(docs/bundle-format.md). It is validated completely before anything is "
                   "written.")
        bundle_import()
    else:
        st.caption("The release's task files as published (direct-diagnosis.json, "
                   "complex-diseases.json, multi-round-dialogue.json) and, optionally, the "
                   "maintainer's answer key (docs/bundle-format.md, *Neural-MedBench release "
                   "files*). Placeholder cases are skipped; nothing is written unless all of "
                   "it is valid.")
        release_import()


def model_names_section() -> None:
    flag_review(user.name)


def use_this_view(key: str, case_id: str) -> None:
    """Store the view the viewer's "Use this view" sent (once per click) as the case's
    opening view, audited (`db.study.opening_view`)."""
    chosen = chosen_view(viewer_answer(key))
    if chosen is None or st.session_state.get(f"{key}-view-handled") == chosen[0]:
        return
    st.session_state[f"{key}-view-handled"] = chosen[0]
    view = chosen[1]
    run_write(lambda s: set_opening_view(s, case_id=case_id, plane=view["plane"], mm=view["mm"],
                                         layout=view["layout"], actor=user.name))


def opening_caption(stored: dict | None) -> None:
    """Where this case opens for raters and exam takers."""
    if not stored:
        st.caption("Opening view: none of its own (key slices, lesion mask or the family's "
                   "plane apply). Set one with the viewer's “Use this view”.")
    else:
        who = "set by an admin" if stored.get("source") == "admin" else "the bundle's protocol"
        st.caption(f"Opening view: {stored.get('plane')}, {who}. Exam takers see it too: "
                   "choose one that does not give the answer away.")


TOOL_NAMES = {"ruler": "Ruler (length in mm)", "roi": "ROI (mean in a circle)"}


def tools_setting(offered: tuple[str, ...]) -> None:
    """The measuring tools raters' and exam takers' viewers offer (`db.study.viewer_tools`)."""
    with st.form("viewer-tools", border=False):
        chosen = st.pills("Measuring tools in raters' and exam takers' viewers", list(TOOLS),
                          selection_mode="multi", default=list(offered),
                          format_func=TOOL_NAMES.get)
        if st.form_submit_button("Save tools") and tuple(chosen) != offered:
            run_write(lambda s: set_viewer_tools(s, chosen, actor=user.name), redraw=True)


def cases_section() -> None:
    with session() as s:
        lists = {"Cases": case_rows(s), "Tasks": task_rows(s), "Responses": response_rows(s)}
        without = cases_without_view(s)
        offered = viewer_tools(s)
    if not lists["Cases"]:
        st.info("No case loaded yet.")
        return
    tools_setting(offered)
    if without:
        with st.expander(f"{counted(len(without), 'case')} without an opening view of its own"):
            st.text(", ".join(without))
    query = st.text_input("Search cases, tasks and responses", key="browse_query", max_chars=NAME,
                          placeholder="an id, a title, a bundle, a model, a word of a prompt…")
    found = {label: search(rows, query) for label, rows in lists.items()}
    for label, rows in lists.items():
        st.markdown(f"**{label}** · {len(found[label])} of {len(rows)}")
        st.dataframe(pd.DataFrame([vars(r) for r in found[label]], columns=list(vars(rows[0]))
                                  if rows else None), hide_index=True)
    shown = list(dict.fromkeys(r.case_id for rows in found.values() for r in rows))
    if not shown:
        return
    titles = {r.case_id: f"{r.case_id} · {r.title}" for r in lists["Cases"]}
    chosen_case = st.selectbox("Open a case", shown, key="browse_case", format_func=titles.get)
    use_this_view(f"admin-{chosen_case}", chosen_case)  # before the case is read: shown at once
    with session() as s:
        view = case_view(s, case_id=chosen_case)
        masks = case_masks(s, case_id=chosen_case)
    with case_panel(key=f"admin-{view.case_id}", title=view.title, ehr=view.ehr,
                    scores=view.scores, series=view.series, masks=masks,
                    opening=view.opening_view, key_slices=view.key_slices, offer_view=True):
        opening_caption(view.opening_view)
        st.markdown("##### Ground truth")
        if not has_reference(view.ground_truth):
            st.info(f"No reference answer yet: this case can be sent to models and put in "
                    f"exams, not graded or scored ({HINT}).")
        for label, text in reference_fields(view.ground_truth):
            st.markdown(f"**{label}**")
            untrusted_text(text)
        responses = [r for r in found["Responses"] if r.case_id == chosen_case]
        if responses:
            st.markdown("##### Response")
            authors = {r.response_id: f"{r.task_id} · {r.author} · sample {r.sample}"
                       for r in responses}
            chosen = st.selectbox("Open a response", list(authors), key="browse_response",
                                  format_func=authors.get)
            with session() as s:
                detail = response_detail(s, response_id=chosen)
            response_view(detail.family, detail.level, detail.prompt, detail.stages,
                          detail.answers, missing="No answer given for this stage.")


def users_section() -> None:
    with session() as s:
        users = list_users(s)
    st.dataframe(pd.DataFrame([{"name": u.name, "role": u.role, "email": u.email,
                                "active": not u.disabled, "demo": u.demo} for u in users]),
                 hide_index=True)
    with st.form("add_user", clear_on_submit=True):
        st.markdown("**Add an account**")
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("Name")
        role = c2.selectbox("Role", LEAST_PRIVILEGED_FIRST)
        email = c3.text_input("E-mail (for single sign-on)")
        password = st.text_input(f"Initial password (at least {MIN_PASSWORD} characters)",
                                 type="password")
        if st.form_submit_button("Add"):
            def add(s) -> str:
                check_new_password(password)
                add_user(s, name=name.strip(), role=role, password=password,
                         email=email.strip() or None, actor=user.name)
                return f"Added {role} {name}."

            run_write(add, redraw=True)
    others = [u.name for u in users if u.name != user.name]
    with st.form("change_role"):
        st.markdown("**Change a role** (the account's open sessions end)")
        c1, c2 = st.columns(2)
        who_role = c1.selectbox("Account", others, index=None)
        new_role = c2.selectbox("New role", LEAST_PRIVILEGED_FIRST)
        if st.form_submit_button("Change role") and who_role:
            def move(s) -> str:
                change_role(s, name=who_role, role=new_role, actor=user.name)
                return f"{who_role} is now {new_role}."

            run_write(move, redraw=True)
    with st.form("reset_password", clear_on_submit=True):
        st.markdown("**Reset a password** (the account's open sessions end)")
        c1, c2 = st.columns(2)
        who_pw = c1.selectbox("Account ", others, index=None)
        new_password = c2.text_input(f"New password (at least {MIN_PASSWORD} characters)",
                                     type="password")
        if st.form_submit_button("Reset password") and who_pw:
            def reset(s) -> str:
                reset_password(s, name=who_pw, password=new_password, actor=user.name)
                return f"New password set for {who_pw}."

            run_write(reset)
    with st.form("set_email", clear_on_submit=True):
        st.markdown("**Single sign-on e-mail** (empty: none; the account's open sessions end)")
        c1, c2 = st.columns(2)
        who_email = c1.selectbox("Account", [u.name for u in users], index=None, key="email_of")
        new_email = c2.text_input("E-mail the identity provider sends")
        if st.form_submit_button("Set e-mail") and who_email:
            def mail(s) -> str:
                account = set_email(s, name=who_email, email=new_email.strip() or None,
                                    actor=user.name)
                return (f"{who_email} signs on as {account.email}." if account.email
                        else f"{who_email} has no single sign-on.")

            run_write(mail, redraw=True)
    active = [u.name for u in users if not u.disabled and u.name != user.name]
    who = st.selectbox("Disable an account", active, index=None)
    if st.button("Disable", disabled=who is None):
        try:
            with session() as s:
                disable_user(s, name=who, actor=user.name)
                s.commit()
        except UserError as e:  # the last enabled admin: one line, nothing changed
            show_error(e)
        else:
            st.rerun()


def progress_section() -> None:
    """Every rater and exam taker: done of total, time per item, an estimate of the time left
    (`db.study.progress`)."""
    with session() as s:
        rows = people_progress(s)
    if not rows:
        st.info("No rater has an assignment and no one has started an exam yet.")
        return
    st.dataframe(pd.DataFrame([{
        "person": p.person, "role": p.role, "doing": p.what, "done": f"{p.done} of {p.total}",
        "min per item": None if p.seconds_per_item is None else round(p.seconds_per_item / 60, 1),
        "time left (min)": p.minutes_left,
        "practice": f"{p.practice_done} of {p.practice_total}" if p.practice_total else ""}
        for p in rows]), hide_index=True, width="stretch")
    st.caption("Time per item: a rater's active scoring time over the items submitted; an exam "
               "taker's time over the tasks fully answered. Time left: the items left at the "
               "person's own pace (none before their first item). Practice items are counted "
               "apart, in none of the other columns.")


def assignments_section() -> None:
    with session() as s:
        experts = [u.name for u in list_users(s) if u.role == "expert" and not u.disabled]
        models = response_models(s)
        progress = rater_progress(s)
        pending = below_overlap(s)
    st.markdown("**Rater progress**")
    st.dataframe(pd.DataFrame([vars(p) for p in progress]), hide_index=True)
    st.caption(f"{counted(len(pending), 'item')} still below their overlap.")
    with st.form("calibration"):
        st.markdown("**Calibration subset** (drawn once, stratified by family, level and source)")
        c1, c2, c3 = st.columns(3)
        n = c1.number_input("Items", min_value=1, value=120)
        dev = c2.number_input("Development fraction", 0.1, 0.9, 0.5, step=0.1)
        seed = c3.number_input("Seed", min_value=0, value=0)
        if st.form_submit_button("Draw"):
            def draw(s) -> str:
                parts = draw_calibration(s, n=int(n), dev_fraction=dev, seed=int(seed),
                                         actor=user.name)
                return f"Drawn: {parts['dev']} development, {parts['heldout']} held out."

            run_write(draw, redraw=True)
    with st.form("assign"):
        st.markdown("**Assign items to raters** (balanced design, seeded queues)")
        chosen = st.multiselect("Raters", experts, default=experts)
        c1, c2, c3 = st.columns(3)
        overlap = c1.number_input("Raters per item", min_value=1, value=3)
        selection = c2.selectbox("Items", ["calibration", "all", "human",
                                           *(f"model:{m}" for m in models)],
                                 help="Among the responses not assigned yet: the calibration "
                                      "subset, all, the exams' human answers, or one model's")
        aseed = c3.number_input("Seed ", min_value=0, value=0)
        if st.form_submit_button("Preview"):
            options = {"raters": chosen, "overlap": int(overlap), "selection": selection,
                       "seed": int(aseed)}
            try:
                with session() as s:
                    st.session_state["assign-plan"] = (options, plan_assignment(s, **options))
            except UserError as e:
                st.session_state.pop("assign-plan", None)
                show_error(e)
    if planned := st.session_state.get("assign-plan"):
        options, plan = planned
        st.info(f"This {escape_markdown(plan.describe())}.", icon=":material/preview:")
        st.caption(escape_markdown("F" + plan.describe_sources()[1:] + "."))
        yes, no, _ = st.columns([2, 1, 3])
        if yes.button(f"Assign {'this' if len(plan.items) == 1 else 'these'} "
                      f"{counted(len(plan.items), 'item')}", type="primary"):
            st.session_state.pop("assign-plan")

            def make_design(s) -> str:
                # the study's rubric: its newest design's, else the default (nmb assign --rubric)
                rubric = rubric_in_force(s, actor=user.name)
                design = assign(s, rubric_hash=rubric.content_hash, actor=user.name,
                                expect=plan, **options)
                return f"Assignment design {design.id} created: {plan.describe()}."

            run_write(make_design, redraw=True)
        elif no.button("Cancel", key="assign-cancel"):
            st.session_state.pop("assign-plan")
            st.rerun()


def exams_section() -> None:
    """Each exam's state and each taker's progress (how far, never what they wrote); close an
    exam (with a confirmation); open one."""
    with session() as s:
        summaries = exam_list(s)
    if not summaries:
        st.info("No exam yet.")
    for e in summaries:
        st.markdown(f"**{escape_markdown(e.name)}** · {e.state} · {counted(e.tasks, 'task')} · "
                    f"review {'on' if e.review else 'off'}")
        if e.takers:
            st.dataframe(pd.DataFrame([{
                "taker": p.name, "role": p.role, "answered": f"{p.answered} of {p.total}",
                "not asked here": p.elsewhere, "started": p.started_at,
                "finished": p.finished_at} for p in e.takers]), hide_index=True)
        else:
            st.caption("No one has started it yet.")
    open_ones = [e for e in summaries if not e.closed]
    if open_ones:
        closing = st.selectbox("Close an exam (no new attempt or answer; what was recorded "
                               "stays, and its takers may still finish)",
                               [e.name for e in open_ones], index=None, key="exam_to_close")
        if closing and st.button("Close exam", key="exam_close"):
            st.session_state["exam_close_confirm"] = closing
        if (confirming := st.session_state.get("exam_close_confirm")) is not None:
            unfinished = sum(p.finished_at is None for e in open_ones if e.name == confirming
                             for p in e.takers)
            st.warning(escape_markdown(
                f"Close the exam {confirming!r}? It takes no new attempt or answer from now on"
                + (f"; {counted(unfinished, 'taker')} not finished can only hand in what they "
                   "recorded." if unfinished else ".")))
            yes, no, _ = st.columns([2, 1, 3])
            if yes.button("Yes, close it", type="primary", key="exam_close_yes"):
                st.session_state.pop("exam_close_confirm")

                def close(s) -> str:
                    close_exam(s, name=confirming, actor=user.name)
                    return f"Exam {confirming!r} is closed."

                run_write(close, redraw=True)
            elif no.button("Cancel", key="exam_close_no"):
                st.session_state.pop("exam_close_confirm")
                st.rerun()

    with st.form("exam"):
        st.markdown("**Open an exam** (students and physicians; the human baseline)")
        with session() as s:
            out = taken_out(s).tasks  # a retired task is not offered for a new exam
            task_ids = [t.task_id for t in task_list(s) if t.task_id not in out]
        exam_name = st.text_input("Exam name", max_chars=NAME)
        exam_tasks = st.multiselect("Tasks", task_ids, default=task_ids)
        exam_review = st.checkbox(
            "Review after finishing", value=False,
            help="Takers who have finished may read their answers beside the reference "
                 "answers. Leave it off for a baseline study (the references stay unseen).")
        if st.form_submit_button("Open exam"):
            warnings: list[str] = []

            def open_exam(s) -> str:
                exam = ensure_exam(s, name=exam_name.strip(), task_ids=exam_tasks,
                                   review=exam_review, actor=user.name)
                warnings.extend(w[0].upper() + w[1:] + "."
                                for w in exam_warnings(s, list(exam.task_ids)))
                return (f"Exam {exam.name!r} is open with {counted(len(exam.task_ids), 'task')}"
                        + (", review after finishing." if exam.review else "."))

            run_write(open_exam)
            for warning in warnings:
                st.warning(escape_markdown(warning))


def retire_section() -> None:
    """`nmb retire` / `nmb unretire`: take an item out of the study's future, or restore it."""
    st.caption("A retired item leaves exams not yet begun, rater queues (unscored items), "
               "grading, collection and the results' tables, which list it with the reason. "
               "Nothing recorded is deleted: its scores stay in the database and the exports "
               "(column 'retired').")
    with session() as s:
        items = retired(s)
    if items:
        st.dataframe(pd.DataFrame([{"kind": r.kind, "item": r.item_id, "reason": r.reason,
                                    "by": r.actor, "at": r.at} for r in items]),
                     hide_index=True)
    else:
        st.caption("Nothing is retired.")
    with st.form("retire", clear_on_submit=True):
        c1, c2 = st.columns([1, 2])
        kind = c1.selectbox("Kind", RETIRED_KINDS,
                            help="model: all its responses; grader-run: its grades; "
                                 "collection-run: its responses")
        item_id = c2.text_input("Id (case, task or response id, model name, or run number)")
        reason = st.text_input("Reason (kept, and shown with the results)")
        b1, b2, _ = st.columns([1, 1, 4])
        retire_it = b1.form_submit_button("Retire")
        restore_it = b2.form_submit_button("Restore")
        if retire_it or restore_it:
            def write(s) -> str:
                change = retire if retire_it else unretire
                row = change(s, kind=kind, item_id=item_id.strip(), reason=reason,
                             actor=user.name)
                return f"{'Retired' if retire_it else 'Restored'} {row.kind} {row.item_id}."

            run_write(write, redraw=True)
    demo_section()


def demo_section() -> None:
    """`nmb demo remove`: the synthetic demo out of the study, in one audited transaction."""
    with session() as s:
        demo = demo_case_count(s)
    if demo is None:
        return
    st.subheader("The synthetic demo")
    st.caption(f"This study holds the synthetic demo ({counted(demo, 'case')}, its responses, "
               "scores, runs and accounts). Removing it deletes them at once; what is not the "
               "demo's stays, and a removal that would touch it is refused.")
    sure = st.checkbox("I want the demo's cases, scores and accounts deleted", key="demo_sure")
    if st.button("Remove the demo", disabled=not sure):
        try:
            removed = remove_demo(actor=user.name)
        except UserError as e:
            show_error(e)
        else:
            redraw_after(str(removed))


def export_section() -> None:
    st.caption("Exports are the one place where model names and blind codes meet.")
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("What", list(KINDS))
    fmt = c2.selectbox("Format", FORMATS)
    reveal = c3.checkbox("Real rater names (not pseudonyms)")
    if st.button("Prepare export"):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / f"{kind}.{fmt}"
            with session() as s:
                rows = export(s, kind, fmt=fmt, out=out, reveal_raters=reveal)
            st.download_button(f"Download {counted(rows, 'row')}", out.read_bytes(), file_name=out.name,
                               on_click="ignore")


SECTIONS = {"Import a bundle": import_section, "Model names": model_names_section,
            "Cases": cases_section, "Progress": progress_section, "Users": users_section,
            "Assignments": assignments_section,
            "Exams": exams_section, "Retire": retire_section, "Export": export_section}
# Stateful tabs: the open one survives every rerun (a button in it) and sits in the URL
# (?section=Export), so a reload stays on it; only the open tab's content runs.
tabs = st.tabs(list(SECTIONS), key="section", on_change="rerun", bind="query-params")
for tab, (name, draw) in zip(tabs, SECTIONS.items(), strict=True):
    if tab.open:
        with tab:
            show_written(name)  # the message of a write that drew the page again
            draw()
