"""The `nmb` command: parse, call a package, print.

A user mistake (`errors.UserError`, a bad argument) is one line on stderr and exit code 2;
programming errors keep their traceback.
"""

import argparse
import contextlib
import errno
import getpass
import json
import math
import os
import select
import signal
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DatabaseError, OperationalError

from errors import UserError, counted, not_permitted, one_line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        command = self.prog.removeprefix("nmb").strip()  # main() puts "nmb: " before it
        raise UserError(f"{command}: {message}" if command else message)


def _study(*, reading: bool = False):
    """A session on the current study, created or migrated (and swept) first; `reading`: for
    commands that only read, whose reads then all see one state (`db.engine.snapshot`)."""
    from db.bundle.store import prepare_study
    from db.engine import session, snapshot

    prepare_study()
    return snapshot() if reading else session()


@contextlib.contextmanager
def _progress_bar(desc: str) -> Iterator[Any]:
    """A tqdm bar on a terminal; None otherwise (tqdm is not even imported then)."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(desc=desc, unit="item", file=sys.stderr) as bar:
        yield bar


class _Terminated(KeyboardInterrupt):
    """Stopped by SIGTERM, handled as Ctrl-C."""


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """While open, SIGTERM does what Ctrl-C does (a KeyboardInterrupt, or under `asyncio.run`
    the cancellation of its task), so a terminated run ends itself as interrupted with what it
    finished committed; the command then ends as `_Terminated`. Only the main thread can set a
    handler: elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def as_ctrl_c(signum: int, frame: Any) -> None:
        received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored: a SIGTERM still stops the command
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, as_ctrl_c)
    try:
        yield
    except KeyboardInterrupt:
        if received:
            raise _Terminated from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _file_out(text: str) -> Path:
    """The path of --out where it names a file: refused when it ends in a slash (a folder the
    user means, which would otherwise become a file of the folder's name)."""
    if text.endswith("/"):
        raise UserError(f"--out {text!r} names a folder (it ends in /): give a file name")
    return Path(text)


def _warn_plain_http(base_url: str | None) -> None:
    from llm.grader_request import plain_http_warning

    if warning := plain_http_warning(base_url, os.environ.get("OPENAI_API_KEY")):
        print(f"nmb: warning: {warning}", file=sys.stderr)


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=None, default=str))


# --- database and users ------------------------------------------------------------------


def cmd_db_upgrade(args: argparse.Namespace) -> None:
    from db.bundle.store import prepare_study
    from db.engine import database_url

    prepare_study()
    print(f"database is at the newest revision: {database_url().split('@')[-1]}")


def cmd_status(args: argparse.Namespace) -> None:
    from db.status import counts

    with _study() as s:
        got = counts(s)
    if args.json:
        _print_json(got)
    else:
        for name, n in got.items():
            print(f"{name:16} {n}")


def cmd_backup(args: argparse.Namespace) -> None:
    from db.backup import backup_study

    manifest = backup_study(_file_out(args.out))
    size = sum(m.size for m in manifest.members)
    print(f"wrote {args.out}: the {manifest.database} database (revision {manifest.revision}) and "
          f"{counted(len(manifest.members) - 1, 'file')}, {size:,} bytes")


def cmd_restore(args: argparse.Namespace) -> None:
    from db.backup import restore_study

    print(restore_study(Path(args.file)))


def _password_from(read: Callable[[int], bytes], source: str) -> str:
    """The password `read` gives from `source`, asked for one byte more than MAX_PASSWORD
    characters' worth of UTF-8 and a line break: a longer source is refused, never read whole."""
    from db.users import MAX_PASSWORD

    raw = read(4 * MAX_PASSWORD + 2)
    if len(raw) > 4 * MAX_PASSWORD + 1:
        raise UserError(f"{source} is longer than {MAX_PASSWORD} characters")
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UserError(f"{source} is not UTF-8 text") from None


def _read_password(args: argparse.Namespace) -> str:
    """The password of --password-file, else of standard input's first line when it is not a
    terminal, else typed twice at a prompt."""
    if args.password_file:
        try:
            with open(args.password_file, "rb") as f:
                return _password_from(f.read, f"the password file {args.password_file}")
        except OSError as e:
            raise UserError(f"cannot read password file {args.password_file}: {e.strerror}") from None
    if not sys.stdin.isatty():
        return _password_from(sys.stdin.buffer.readline, "the password on standard input")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat password: "):
        raise UserError("the two passwords differ")
    return first


def cmd_users_add(args: argparse.Namespace) -> None:
    from db.users import add_user, check_new_password

    password = _read_password(args)
    check_new_password(password)
    with _study() as s:
        add_user(s, name=args.name, role=args.role, password=password, email=args.email, actor="cli")
        s.commit()
    print(f"added {args.role} {args.name}")


def cmd_users_list(args: argparse.Namespace) -> None:
    from db.users import list_users

    with _study() as s:
        users = list_users(s)
    rows = [{"name": u.name, "role": u.role, "disabled": u.disabled, "email": u.email} for u in users]
    if args.json:
        _print_json(rows)
        return
    for r in rows:
        print(f"{r['name']:24} {r['role']:10} {'disabled' if r['disabled'] else 'active':8} "
              f"{r['email'] or ''}".rstrip())


def cmd_users_role(args: argparse.Namespace) -> None:
    from db.users import change_role

    with _study() as s:
        change_role(s, name=args.name, role=args.role, actor="cli")
        s.commit()
    print(f"{args.name} is now {args.role} (their open sessions ended)")


def cmd_users_password(args: argparse.Namespace) -> None:
    from db.users import get_user, reset_password

    with _study() as s:  # a mistyped name is said before a password is asked for
        get_user(s, name=args.name)
    password = _read_password(args)
    with _study() as s:
        reset_password(s, name=args.name, password=password, actor="cli")
        s.commit()
    print(f"new password set for {args.name} (their open sessions ended)")


def cmd_users_email(args: argparse.Namespace) -> None:
    from db.users import set_email

    with _study() as s:
        user = set_email(s, name=args.name, email=args.email, actor="cli")
        s.commit()
    print(f"{args.name} signs on as {user.email}" if user.email
          else f"{args.name} has no single sign-on")


def cmd_users_disable(args: argparse.Namespace) -> None:
    from db.users import disable_user

    with _study() as s:
        disabled = disable_user(s, name=args.name, actor="cli")
        s.commit()
    print(f"disabled {args.name}" if disabled else f"{args.name} was already disabled")


# --- bundles, demo, export -----------------------------------------------------------------


def cmd_import(args: argparse.Namespace) -> None:
    from db.bundle.importer import BundleInvalid, import_bundle

    release = args.source == "neural-medbench"
    images = args.source in ("dicom", "bids")
    if not release and len(args.paths) > 1:
        raise UserError("import: a bundle is one folder or .zip (release task files: "
                        "--from neural-medbench)")
    if not release and (args.answers or args.family or args.level):
        raise UserError("import: --answers, --family and --level are for --from neural-medbench")
    if not images and args.case_info:
        raise UserError("import: --case-info is for --from dicom and --from bids")
    if args.source != "dicom" and (args.sequence_map or args.allow_burned_in):
        raise UserError("import: --sequence-map and --allow-burned-in are for --from dicom")
    try:
        with _study() as s:
            if args.source == "dicom":
                from db.sources.dicom import import_dicom

                summary = import_dicom(
                    s, Path(args.paths[0]),
                    case_info=Path(args.case_info) if args.case_info else None,
                    sequence_map=Path(args.sequence_map) if args.sequence_map else None,
                    allow_burned_in=args.allow_burned_in, dry_run=args.dry_run, actor="cli")
            elif args.source == "bids":
                from db.sources.bids import import_bids

                summary = import_bids(
                    s, Path(args.paths[0]),
                    case_info=Path(args.case_info) if args.case_info else None,
                    dry_run=args.dry_run, actor="cli")
            elif release:
                from db.release.reader import import_release

                summary = import_release(
                    s, [Path(p) for p in args.paths], dry_run=args.dry_run, actor="cli",
                    answers=Path(args.answers) if args.answers else None,
                    family=args.family, level=args.level)
            else:
                summary = import_bundle(s, Path(args.paths[0]), dry_run=args.dry_run,
                                        actor="cli")
    except BundleInvalid as e:
        _refused(e)
    _print_json(summary.as_dict()) if args.json else print(summary)


def _refused(e: Any) -> None:
    """A refused import: every problem, one per line (one problem: one line), then exit 2."""
    if len(e.problems) == 1:
        raise UserError(str(e.problems[0])) from None
    print(f"nmb: {e.report()}", file=sys.stderr)
    raise SystemExit(2) from None


def cmd_import_responses(args: argparse.Namespace) -> None:
    from collection.batch_responses import import_harness_responses
    from db.bundle.importer import BundleInvalid

    try:
        with _study() as s:
            summary = import_harness_responses(s, Path(args.path), source=args.source,
                                               model=args.model, task_key=args.task_key,
                                               dry_run=args.dry_run, actor="cli")
    except BundleInvalid as e:
        _refused(e)
    _print_json(summary.as_dict()) if args.json else print(summary)


def cmd_demo(args: argparse.Namespace) -> None:
    from demo.study import load_demo

    print(load_demo(if_empty=args.if_empty, resolution_mm=args.resolution))


def cmd_export(args: argparse.Namespace) -> None:
    if args.kind == "release":
        from db.release.export import export_release

        if args.format:
            raise UserError("export: --format is not for release (its files are JSON)")

        with _study(reading=True) as s:
            print(export_release(s, Path(args.out),
                                 answers=Path(args.answers) if args.answers else None))
        return
    if args.answers:
        raise UserError("export: --answers is for nmb export release")
    from db.export import export

    out = _file_out(args.out)
    with _study(reading=True) as s:
        n = export(s, args.kind, fmt=args.format or "csv", out=out, reveal_raters=args.reveal_raters)
    print(f"wrote {counted(n, 'row')} to {args.out}")


def cmd_render(args: argparse.Namespace) -> None:
    from imaging import render_to_file

    out = render_to_file(
        Path(args.image), plane=args.plane, index=args.index, window=args.window,
        volume=args.volume, out=_file_out(args.out), radiological=not args.neurological,
    )
    print(out)


def cmd_agreement(args: argparse.Namespace) -> None:
    from calibration.agreement_csv import agreement_from_csv

    _print_json(agreement_from_csv(
        Path(args.file), reference=args.reference, bootstrap=args.bootstrap, seed=args.seed
    ))


def cmd_assign(args: argparse.Namespace) -> None:
    from db.raters.assignments import assign, draw_calibration, plan_assignment
    from db.rubrics import ensure_rubric
    from rubric import load_rubric

    load_rubric(args.rubric)  # a bad --rubric is refused before the study is read
    with _study() as s:
        if args.calibration:
            parts = draw_calibration(s, n=args.calibration, dev_fraction=args.dev_fraction,
                                     seed=args.seed, actor="cli")
            print(f"calibration subset: {parts['dev']} dev + {parts['heldout']} held-out items")
        options = {"raters": args.raters, "overlap": args.overlap, "selection": args.items,
                   "seed": args.seed}
        plan = plan_assignment(s, **options)
        if args.dry_run:
            print(f"would assign: {plan.describe()}")
            return  # (the session closes without a commit: nothing drawn or assigned)
        rubric = ensure_rubric(s, args.rubric, actor="cli")
        design = assign(s, rubric_hash=rubric.content_hash, actor="cli", **options)
        s.commit()
    print(f"assignment design {design.id}: {plan.describe()} (seed {args.seed})")


def cmd_exam_add(args: argparse.Namespace) -> None:
    from db.study.exams import ensure_exam, staged_tasks_sharing_a_case

    with _study() as s:
        exam = ensure_exam(s, name=args.name, task_ids=args.tasks, review=args.review,
                           actor="cli")
        warning = staged_tasks_sharing_a_case(s, list(exam.task_ids))
        s.commit()
    print(f"exam {exam.id} {exam.name!r}: {counted(len(exam.task_ids), 'task')}"
          + (", review after finishing" if exam.review else ""))
    if warning:
        print(f"nmb: warning: {warning}", file=sys.stderr)


def _positive(kind: type[int] | type[float], most: float) -> Callable[[str], int | float]:
    """An argparse type: a finite `kind` in (0, most]."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= most):
            what = "integer" if kind is int else "number"
            limit = "" if math.isinf(most) else f" at most {most:g}"
            raise argparse.ArgumentTypeError(f"expected a positive {what}{limit}, got {text!r}")
        return value

    return parse


LARGEST_ID = 2**31 - 1  # of a PostgreSQL integer column (ids, and the seeds stored with a draw)


def _whole(least: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer from `least` to LARGEST_ID (`what`: "an id", "a seed")."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if not least <= value <= LARGEST_ID:
            raise argparse.ArgumentTypeError(f"expected {what} from {least} to {LARGEST_ID}, "
                                             f"got {one_line(text, 40)!r}")
        return value

    return parse


ID, SEED = _whole(1, "an id"), _whole(0, "a seed")


def cmd_grade(args: argparse.Namespace) -> None:
    from grading.config import is_dated_snapshot, load_settings, store_config
    from grading.grader import grade, summary_dict
    from grading.runs import run_failures
    from llm.grader_request import check_base_url, check_destination
    from llm.plan import spent_text

    settings = load_settings(Path(args.config) if args.config else None, model=args.model,
                             base_url=args.base_url)
    check_base_url(settings.base_url)  # before the config is stored
    trusted = args.base_url or args.trust_base_url  # typed in this command
    if args.trust_base_url is not None and args.trust_base_url != settings.base_url:
        raise UserError(f"--trust-base-url {args.trust_base_url!r} is not the base URL requests "
                        f"would go to ({settings.base_url or 'the official API'!s})")
    check_destination(settings.base_url, trusted=trusted,
                      origin=f"the grader config {args.config}")
    _warn_plain_http(settings.base_url)
    if not is_dated_snapshot(settings.model):
        print(f"nmb: warning: {settings.model!r} is an undated alias; reports flag it",
              file=sys.stderr)
    with _study() as s, _progress_bar("grading") as bar, _sigterm_as_ctrl_c():
        config = store_config(s, settings, actor="cli")
        s.commit()

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        summary = grade(s, config_id=config.id, items=args.items,
                        concurrency=args.concurrency, limit=args.limit, batch=args.batch,
                        timeout=args.timeout, progress=progress, actor="cli",
                        trust_base_url=trusted)
    if args.json:
        _print_json(summary_dict(summary))
    else:
        print(f"run {summary.run_id} (config {config.id}): {summary.graded} graded "
              f"({summary.from_cache} from cache), {summary.failed} failed of {summary.items}; "
              f"{summary.prompt_tokens}+{summary.completion_tokens} tokens, "
              f"{spent_text(summary.cost_usd)}")
    if summary.failed and not summary.graded:
        with _study() as s:
            reasons = [f.reason for f in run_failures(s, run_id=summary.run_id)]
        _nothing_done(f"run {summary.run_id} graded nothing", summary.failed, reasons)


def cmd_collect(args: argparse.Namespace) -> None:
    from collection.collect import Selection, collect
    from grading.config import is_dated_snapshot
    from llm.model_request import CollectSettings
    from llm.plan import spent_text

    settings = CollectSettings(model=args.model, base_url=args.base_url, samples=args.samples,
                               images=args.images, temperature=args.temperature,
                               max_tokens=args.max_tokens).check()
    if settings.base_url is None and not is_dated_snapshot(settings.model):
        print(f"nmb: warning: {settings.model!r} is an undated alias: the model behind it may "
              "change", file=sys.stderr)
    _warn_plain_http(settings.base_url)
    selection = Selection(tuple(args.tasks or ()), tuple(args.families or ()),
                          tuple(args.levels or ()))
    with _study() as s, _progress_bar("collecting") as bar, _sigterm_as_ctrl_c():
        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        summary = collect(s, settings, selection, concurrency=args.concurrency,
                          batch=args.batch, timeout=args.timeout,
                          poll_interval=args.poll_interval, progress=progress, actor="cli")
    for f in summary.failures:
        print(f"nmb: failed: task {f['task_id']} sample {f['sample']}: {f['reason']}",
              file=sys.stderr)
    if not args.json:
        print(f"run {summary.run_id} ({summary.model}): {summary.collected} collected "
              f"({summary.from_cache} from cache), {summary.failed} failed of {summary.items}; "
              f"{summary.already_collected} collected before; {summary.prompt_tokens}+"
              f"{summary.completion_tokens} tokens, {counted(summary.image_count, 'image')}, "
              f"{spent_text(summary.cost_usd)}")
    _print_json(summary.as_dict())
    if summary.failed and not summary.collected:
        _nothing_done(f"run {summary.run_id} collected nothing", summary.failed,
                      [f["reason"] for f in summary.failures])


def _nothing_done(what: str, failed: int, reasons: list[str]) -> None:
    """A run that completed none of its items: its failures' reasons (each once, the most
    frequent first, with how many items it failed) in one line on stderr, then exit 1."""
    counts = Counter(one_line(r, 300) for r in reasons).most_common()
    why = "; ".join(f"{reason} ({n} items)" if n > 1 else reason for reason, n in counts[:3])
    more = f"; and {len(counts) - 3} other reasons" if len(counts) > 3 else ""
    print(f"nmb: {what}: {failed} failed: {why or 'no reason recorded'}{more}", file=sys.stderr)
    raise SystemExit(1)


def cmd_calibrate(args: argparse.Namespace) -> None:
    from calibration import calibrate
    from calibration.protocol import Statistics, gate_from_args
    from calibration.terms import for_protocol

    if args.check is not None:
        with _study() as s:
            result = calibrate.check(s, report_id=args.check)
        _print_json(result.__dict__)
        if not result.matches:
            raise SystemExit(1)
        return
    if args.config is None:
        raise UserError("nmb calibrate: --config is required (or --check REPORT_ID)")
    flags = {"pearson_min": args.pearson_min, "icc2_min": args.icc_min,
             "alt_test_epsilon": args.epsilon}
    gate = gate_from_args(**flags) if any(v is not None for v in flags.values()) else None
    stats = None
    if args.bootstrap is not None or args.seed is not None:
        stats = Statistics(**{k: v for k, v in (("bootstrap", args.bootstrap),
                                                ("seed", args.seed)) if v is not None})
    if args.out:
        from calibration.html import prepare_out

        prepare_out(Path(args.out))  # before any report is saved
    with _study() as s:
        out = calibrate.run(s, config_id=args.config, part=args.part, gate=gate,
                            statistics=stats, run_id=args.run, actor="cli")
        status = calibrate.validation_status(s, config_id=args.config)
        terms = for_protocol(s, out.report.protocol_id) if out.report.validates else None
    report, row = out.report, out.row
    if args.out:
        from calibration.html import export

        export(Path(args.out), report, row.html or "", out.figures)
    _print_json({"report_id": row.id, "part": report.part, "n_items": report.n_items,
                 "passed": report.passed, "validates": report.validates,
                 "decided_earlier": not out.fresh, "status": status,
                 "protocol_id": report.protocol_id,
                 "terms": terms.text() if terms else None,
                 "gate": {g.name: g.passed for g in report.gate},
                 "values": {g.name: g.value for g in report.gate},
                 "why_failed": report.why_failed(), "heldout_looks": len(report.heldout_looks),
                 "data_sha256": report.data_hash})
    if warning := report.overall["pearson"].get("warning"):
        print(f"nmb: warning: {warning}", file=sys.stderr)


def cmd_revoke(args: argparse.Namespace) -> None:
    from calibration.calibrate import revoke

    with _study() as s:
        look = revoke(s, config_id=args.config, reason=args.reason, actor="cli")
    print(f"validation of grader config {look.config_id} revoked (report {look.report_id})")


def cmd_protocol_show(args: argparse.Namespace) -> None:
    from calibration import protocol

    with _study() as s:
        proto = protocol.current(s)
    if proto is None:
        raise UserError("no calibration protocol is registered (nmb protocol register)")
    from calibration.terms import ValidationTerms

    _print_json({"id": proto.id, "sha256": proto.content_hash, **proto.content(),
                 "terms": ValidationTerms.of(proto).text()})


def cmd_protocol_register(args: argparse.Namespace) -> None:
    from calibration import protocol

    gate = protocol.gate_from_args(pearson_min=args.pearson_min, icc2_min=args.icc_min,
                                   alt_test_epsilon=args.epsilon, alt_test_q=args.q,
                                   required=args.require, rule=args.rule, looks=args.looks)
    stats = protocol.Statistics(bootstrap=args.bootstrap, seed=args.seed,
                                pearson_ci=args.pearson_ci, alt_test_min_items=args.min_items,
                                confidence=args.confidence)
    with _study() as s:
        proto = protocol.register(s, gate=gate, statistics=stats,
                                  accept_weaker=args.accept_weaker_than_default, actor="cli")
        s.commit()
    from calibration.terms import ValidationTerms

    print(f"{proto.label()} is in force: {ValidationTerms.of(proto).text()}")


def cmd_protocol_plan(args: argparse.Namespace) -> None:
    from dataclasses import asdict, replace

    from calibration import plan, protocol

    gate, stats = protocol.Gate(), protocol.Statistics()
    source = "the default protocol"
    if not args.defaults:
        with _study() as s:
            proto = protocol.current(s)
        if proto is not None:
            gate, stats, source = proto.gate, proto.statistics, proto.label()
    gate = replace(gate, rule=args.rule or gate.rule, looks=args.looks or gate.looks)
    stats = replace(stats, pearson_ci=args.pearson_ci or stats.pearson_ci,
                    bootstrap=args.bootstrap or stats.bootstrap)
    protocol.check_values(gate, stats)
    settings = plan.settings_for(gate, stats, expected_r=args.expected_r,
                                 threshold=args.threshold, within_case=args.within_case,
                                 studies=args.studies, seed=args.seed)
    result = plan.plan(settings, items_per_case=args.items_per_case,
                       cases=tuple(args.cases) if args.cases else None, target=args.power)
    if args.json:
        _print_json(asdict(result) | {"protocol": source})
        return
    st = settings
    print(f"{source}: rule {st.rule}, {st.pearson_ci} interval at {st.level:.1%} "
          f"({counted(gate.looks, 'look')}), {st.bootstrap} resamples; expected r {st.expected_r:g}, "
          f"threshold {st.threshold:g}, within-case correlation {st.within_case:g}; "
          f"{st.studies} simulated studies per size (seed {st.seed})")
    for c in result.rows:
        print(f"  {c.cases:5d} cases x {c.items_per_case} = {c.items:5d} items: P(pass) "
              f"{c.pass_probability:.3f} (MC SE {c.mc_se:.3f})")
    for note in result.notes:
        print(f"note: {note}")
    if result.smallest is not None:
        c = result.smallest
        print(f"smallest held-out part reaching {result.target:.0%}: {c.cases} cases x "
              f"{c.items_per_case} = {c.items} items (P(pass) {c.pass_probability:.3f})")


def cmd_package_freeze(args: argparse.Namespace) -> None:
    from package.package import freeze

    out = _file_out(args.out)
    with _study() as s:
        row = freeze(s, config_id=args.config, out=out, canary_size=args.canary,
                     seed=args.seed, with_images=args.with_images,
                     sign_with=Path(args.sign) if args.sign else None, actor="cli")
    _print_json({"package_id": row.id, "path": row.path, "sha256": row.sha256,
                 "canary_items": row.canary["items"], "signed": bool(args.sign)})


def cmd_package_keygen(args: argparse.Namespace) -> None:
    from package.sign import keygen

    pub, line = keygen(_file_out(args.out))
    _print_json({"private_key": args.out, "public_key_file": str(pub), "public_key": line})


def _verified(args: argparse.Namespace):
    """The package named on the command line, verified (and its digest printed) before use."""
    from package.package import verify

    pkg = verify(Path(args.package), sha256=args.sha256,
                 images=Path(args.images) if args.images else None,
                 public_key=Path(args.public_key) if args.public_key else None)
    if pkg.signer:
        whose = f", signed by {pkg.signer}"
    elif args.sha256:
        whose = ", the digest given"
    else:  # docs/package.md, "What a package can and cannot prove"
        whose = ("; without --sha256 or --public-key it is shown consistent, not shown to be "
                 "its authors': compare this digest with theirs")
    print(f"nmb: verified {args.package} (sha256 {pkg.sha256}{whose})", file=sys.stderr)
    return pkg


def cmd_package_verify(args: argparse.Namespace) -> None:
    pkg = _verified(args)
    report = pkg.report
    _print_json({"ok": True, "sha256": pkg.sha256, "format": pkg.manifest["format"],
                 "tool_version": pkg.manifest["tool_version"], "model": pkg.config.model,
                 "config_hash": pkg.config.config_hash, "rubric_hash": pkg.rubric.content_hash,
                 "tasks": len(pkg.tasks), "canary_items": len(pkg.canary),
                 "protocol_sha256": report.protocol_hash, "report_data_sha256": report.data_hash,
                 **pkg.terms_json(), "gate": {g.name: g.value for g in report.gate},
                 "heldout_looks": len(pkg.manifest["heldout_looks"]), "signed_by": pkg.signer})


def cmd_package_grade(args: argparse.Namespace) -> None:
    from db.files import writable, write_file
    from package.package import (
        bertscore_pairs,
        check_tasks,
        grade_responses,
        kept_rows,
        read_responses,
        summary,
        summary_markdown,
    )
    from package.progress import opened, progress_path

    pkg = _verified(args)
    responses = read_responses(Path(args.responses))
    check_tasks(pkg, responses)
    scorer = _bertscorer(args)
    out = _file_out(args.out)
    try:  # before any request is paid for
        writable(out)
    except OSError as e:
        raise UserError(f"cannot write {args.out}: {e.strerror}") from None
    _warn_plain_http(args.base_url)
    with opened(progress_path(out), pkg.sha256) as progress:
        graded = kept_rows(pkg, responses, progress)
        left = counted(len(responses) - len(graded), "request")
        where = args.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
        print(f"nmb: {len(graded)} of {len(responses)} responses already graded; {left} to "
              f"{pkg.config.model} at {where}, each grade kept in {progress.path} as it comes "
              "back", file=sys.stderr)
        with _progress_bar("grading") as bar, _sigterm_as_ctrl_c():
            try:
                rows = grade_responses(
                    pkg, responses, base_url=args.base_url, concurrency=args.concurrency,
                    timeout=args.timeout, graded=graded, progress=progress,
                    on_row=None if bar is None else lambda answer, row: bar.update(1))
            except KeyboardInterrupt:
                print(f"nmb: stopped; the responses graded so far are kept in {progress.path}: "
                      "the same command sends only the rest", file=sys.stderr)
                raise
    write_file(out, "".join(json.dumps(row) + "\n" for row in rows))
    similar = scorer.scores(bertscore_pairs(pkg, responses)) if scorer else None
    result = summary(pkg, rows, ks=tuple(args.k), bertscore=similar)
    if scorer:
        result["bertscore"] = scorer.info.to_json()
    md = summary_markdown(result)
    write_file(out.with_suffix(".summary.json"), json.dumps(result, indent=1))
    write_file(out.with_suffix(".summary.md"), md)
    if result["failed"]:
        kept = f" (the graded ones are kept in {progress.path})" if result["graded"] else ""
        print(f"nmb: {counted(result['failed'], 'response')} failed (their reasons are in "
              f"{args.out}); the same command sends them again{kept}", file=sys.stderr)
    else:
        progress.path.unlink(missing_ok=True)
    print(md)
    _print_json({"items": len(rows), "graded": result["graded"], "failed": result["failed"],
                 "out": args.out, "summary": str(out.with_suffix(".summary.json"))})


def cmd_package_canary(args: argparse.Namespace) -> None:
    from package.package import canary

    pkg = _verified(args)
    _warn_plain_http(args.base_url)
    result = canary(pkg, base_url=args.base_url, concurrency=args.concurrency,
                    timeout=args.timeout)
    _print_json(result)
    if result["status"] == "could not check":  # exit 3: neither drift (1) nor a mistake (2)
        first = next((i["reason"] for i in result["per_item"] if not i["answered"]), "")
        print(f"nmb: canary could not check: {result['unreached']} of {result['items']} "
              f"requests got no answer ({one_line(first or '', 200)})", file=sys.stderr)
        raise SystemExit(3)
    if result["drift"]:
        raise SystemExit(1)


def cmd_leaderboard(args: argparse.Namespace) -> None:
    from calibration.calibrate import unvalidated_warning
    from calibration.terms import validation_note
    from results.leaderboard import display_rows, leaderboard

    with _study(reading=True) as s:
        rows = leaderboard(s, config_id=args.config, ks=tuple(args.k), by=args.by)
        warning = unvalidated_warning(s, config_id=args.config)
        note = warning or validation_note(s, config_id=args.config)
    if note:
        print(f"nmb: note: {note}", file=sys.stderr)
    if args.json:
        _print_json(rows)
        return
    import pandas as pd

    if not rows:
        print("no graded responses")
        return
    table = pd.DataFrame(display_rows(rows)).convert_dtypes()  # counts stay integers
    print(table.astype(object).where(table.notna(), "–").to_string(index=False))


def cmd_results(args: argparse.Namespace) -> None:
    from results import results
    from results.leaderboard import parse_by
    from results.publish.export import as_text, comparison_text, export, prepare_out

    if args.compare and args.layout == "leaderboard":
        raise UserError("--compare prints the comparison instead of the tables: leave out "
                        "--layout leaderboard (or --compare)")
    by = parse_by(args.by)
    splits = _splits(args)
    for folder in (args.out, args.site):
        if folder:
            prepare_out(Path(folder))  # before anything is computed
    with _study(reading=True) as s:
        res = results.build(s, config_id=args.config, by=by, ks=tuple(args.k),
                            reveal=args.reveal, judge=args.judge,
                            compare_pairs=tuple(tuple(pair) for pair in args.compare or ()),
                            bertscore=_bertscorer(args), splits=splits)
        if args.site:
            from results.publish.site import study_version, write_site

            written = write_site(Path(args.site), res, study_version(s, res))
            print(f"nmb: wrote the leaderboard site ({counted(len(written), 'file')}) to {args.site}",
                  file=sys.stderr)
    if args.out:
        from results.publish.plots import all_figures

        written = export(Path(args.out), res, all_figures(res))
        print(f"nmb: wrote {counted(len(written), 'file')} to {args.out}", file=sys.stderr)
    if b := res.bertscore:
        print(f"nmb: BERTScore ({b.model}, secondary): {counted(b.scored, 'response')}, {b.computed} scored "
              f"by the model, {b.cached} from the cache, {b.without_reference} without a "
              "reference answer", file=sys.stderr)
    if args.compare:
        print(comparison_text(res, args.format))
    elif args.layout == "leaderboard":
        from results.publish import leaderboard_layout

        print(leaderboard_layout.as_text(res, args.format))
    else:
        print(as_text(res, args.format))


def _splits(args: argparse.Namespace) -> dict[str, tuple[int, ...]] | None:
    from results.splits import parse_splits

    splits = parse_splits(args.splits)  # checked even when unused
    return splits if args.layout == "leaderboard" or args.site else None


def _bertscorer(args: argparse.Namespace):
    if not args.bertscore_model:
        return None
    from results.bertscore import BertScorer

    return BertScorer(args.bertscore_model)


# --- the parser ----------------------------------------------------------------------------


JSON = "print JSON instead of text"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nmb", description="Neural-MedBench Studio: the study from the command line.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, fn: Callable[[argparse.Namespace], None], help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.set_defaults(fn=fn)
        return sp

    dbp = sub.add_parser("db", help="database maintenance")
    dbsub = dbp.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    dbsub.add_parser("upgrade", help="create or migrate the database").set_defaults(fn=cmd_db_upgrade)

    add("status", cmd_status, "counts of what the study holds").add_argument(
        "--json", action="store_true", help=JSON)

    add("backup", cmd_backup, "one file with a consistent copy of the database, the images "
        "and the frozen packages (docs/deploy.md)").add_argument(
        "--out", required=True, help="the backup file to write (a new file)")
    add("restore", cmd_restore, "restore a backup into an empty NMB_HOME and database").add_argument(
        "file", help="a file written by nmb backup")

    up = sub.add_parser("users", help="accounts and roles")
    usub = up.add_subparsers(dest="users_command", required=True, parser_class=_Parser)
    roles = ["admin", "expert", "physician", "student"]
    ua = usub.add_parser("add", help="add an account (password from a prompt or --password-file; "
                                     "at least 12 characters)")
    ua.add_argument("name", help="1-64 letters, digits, '.', '-' or '_'")
    ua.add_argument("--role", required=True, choices=roles, help="what the account may do")
    ua.add_argument("--password-file", help="read the password from this file (else a prompt, "
                                            "or one line of standard input)")
    ua.add_argument("--email", help="the identity single sign-on maps to this account")
    ua.set_defaults(fn=cmd_users_add)
    ur = usub.add_parser("role", help="give an account another role (audited; its sessions end)")
    ur.add_argument("name", help="the account")
    ur.add_argument("role", choices=roles, help="its new role")
    ur.set_defaults(fn=cmd_users_role)
    upw = usub.add_parser("password", help="set a new password (audited; its sessions end)")
    upw.add_argument("name", help="the account")
    upw.add_argument("--password-file", help="read the password from this file (else a prompt, "
                                             "or one line of standard input)")
    upw.set_defaults(fn=cmd_users_password)
    ue = usub.add_parser("email", help="set the e-mail single sign-on maps to the account "
                                       "(audited; its sessions end)")
    ue.add_argument("name", help="the account")
    ue.add_argument("email", nargs="?", help="the identity's e-mail, any case (none: no single "
                                              "sign-on for this account)")
    ue.set_defaults(fn=cmd_users_email)
    ul = usub.add_parser("list", help="list accounts")
    ul.add_argument("--json", action="store_true", help=JSON)
    ul.set_defaults(fn=cmd_users_list)
    ud = usub.add_parser("disable", help="disable an account (it can no longer log in)")
    ud.add_argument("name", help="the account")
    ud.set_defaults(fn=cmd_users_disable)

    ip = add("import", cmd_import, "validate a bundle (folder or .zip), or Neural-MedBench "
             "release task files, and import it atomically")
    ip.add_argument("paths", nargs="+", metavar="PATH",
                    help="a bundle, or release task files with --from neural-medbench")
    ip.add_argument("--from", dest="source",
                    choices=["bundle", "neural-medbench", "dicom", "bids"],
                    default="bundle", help="what PATH is (default: a bundle; dicom: a folder "
                                           "or DICOMDIR of one study; bids: a BIDS dataset)")
    ip.add_argument("--case-info", metavar="CASE.json",
                    help="dicom: the case's record and tasks; bids: CASES.json keyed by subject")
    ip.add_argument("--sequence-map", metavar="MAP.json",
                    help='dicom: {"SeriesDescription pattern": "SEQUENCE" or null}, tried '
                         "before the defaults")
    ip.add_argument("--allow-burned-in", action="store_true",
                    help="dicom: import series marked BurnedInAnnotation YES (check them first)")
    ip.add_argument("--answers", metavar="ANSWERS.json",
                    help="release: the maintainer's answer key (reference answers)")
    ip.add_argument("--family", choices=["differential", "lesion", "rationale"],
                    help="release: the task family of every file (default: by file name)")
    ip.add_argument("--level", type=int, choices=[1, 2, 3],
                    help="release: the level of every file (default: by file name)")
    ip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    ip.add_argument("--json", action="store_true", help=JSON)

    rip = add("import-responses", cmd_import_responses, "import model responses to tasks the "
              "study already holds: a responses.jsonl or responses-only bundle, OpenAI Batch "
              "output, VLMEvalKit predictions or lm-evaluation-harness sample logs")
    rip.add_argument("path", metavar="FILE", help="the file (nmb: or a responses-only bundle)")
    rip.add_argument("--from", dest="source", required=True,
                     choices=["nmb", "openai-batch", "vlmevalkit", "lm-eval"],
                     help="the file's format (docs/bundle-format.md)")
    rip.add_argument("--model", help="the model's name (needed where the file does not say; "
                                     "overrides the file's)")
    rip.add_argument("--task-key", metavar="RULE",
                     help="how an answer names its task: field:NAME, map:FILE.json or prompt "
                          "(default: the format's key: custom_id, index, doc_id)")
    rip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    rip.add_argument("--json", action="store_true", help=JSON)

    dp = add("demo", cmd_demo, "build the synthetic demo study offline and import it")
    dp.add_argument("--if-empty", action="store_true", help="only when the database holds no case")
    dp.add_argument("--resolution", type=int, choices=[1, 2], default=1, help="template voxel size (mm)")

    ep = add("export", cmd_export, "export study data for admins and scripts")
    ep.add_argument("kind", choices=["responses", "tasks", "expert-scores", "grader-scores",
                                     "exam-answers", "agreement", "release"],
                    help="what to export; agreement: item, rater, score, part (nmb agreement); "
                    "release: the cases and tasks in the published release shape")
    ep.add_argument("--format", choices=["csv", "jsonl", "parquet"],
                    help="file format (default csv; not for release)")
    ep.add_argument("--out", required=True, help="a file; for release, a folder")
    ep.add_argument("--answers", metavar="FILE",
                    help="release: also write the reference answers to FILE (outside --out)")
    ep.add_argument("--reveal-raters", action="store_true", help="real rater names, not pseudonyms")

    rp = add("render", cmd_render, "render one slice of an image to PNG")
    rp.add_argument("image", help="a .nii, .nii.gz or .mgz file")
    rp.add_argument("--plane", choices=["axial", "coronal", "sagittal"], default="axial",
                    help="the slice's plane (default axial)")
    rp.add_argument("--index", type=int, help="slice index on the RAS+ grid (default: middle)")
    rp.add_argument("--window", default="auto", help="auto | full | tight | LEVEL,WIDTH")
    rp.add_argument("--volume", type=int, default=0, help="the volume of a 4-D image (from 0)")
    rp.add_argument("--neurological", action="store_true", help="patient's right on screen right")
    rp.add_argument("--out", required=True, help="the PNG to write")

    asg = add("assign", cmd_assign, "assign items to expert raters (balanced, seeded design)")
    asg.add_argument("--raters", nargs="+", required=True, metavar="NAME",
                     help="active expert accounts")
    asg.add_argument("--overlap", type=int, default=3, help="raters per item")
    asg.add_argument("--items", choices=["all", "calibration"], default="all",
                     help="every response, or the calibration subset only")
    asg.add_argument("--calibration", type=int, metavar="N",
                     help="first draw a calibration subset of N items (stratified, seeded)")
    asg.add_argument("--dev-fraction", type=float, default=0.5,
                     help="share of the calibration subset for development (the rest is held out)")
    asg.add_argument("--rubric", default="neurology-v1", help="bundled rubric name or TOML file")
    asg.add_argument("--dry-run", action="store_true",
                     help="print what would be added to each rater's queue; write nothing")
    asg.add_argument("--seed", type=SEED, default=0, help="seed of the draw and of the queues")

    exp = sub.add_parser("exam", help="exams for the human baseline")
    exsub = exp.add_subparsers(dest="exam_command", required=True, parser_class=_Parser)
    exa = exsub.add_parser("add", help="open an exam of the given tasks (default: every task)")
    exa.add_argument("name", help="the exam's name (what takers pick)")
    exa.add_argument("--tasks", nargs="+", metavar="TASK_ID", help="its tasks (default: every task)")
    exa.add_argument("--review", action="store_true",
                     help="after finishing, takers may read their answers beside the reference "
                          "answers, except of a case with a task still to answer in an exam "
                          "they have not finished "
                          "(default: off, as a baseline study expects)")
    exa.set_defaults(fn=cmd_exam_add)

    gp = add("grade", cmd_grade, "grade responses with the LLM grader (OpenAI-compatible API)")
    gp.add_argument("--config", help="grader config TOML (default: gpt-4o-2024-08-06, T=0)")
    gp.add_argument("--model", help="the grader model (overrides the config's)")
    gp.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    gp.add_argument("--trust-base-url", metavar="URL",
                    help="send the API key and the study's data to the base URL that --config "
                    "names; the value must be that URL (docs/grader.md)")
    gp.add_argument("--items", choices=["pending", "calibration", "all"], default="pending",
                    help="pending: responses without a valid grade of this config")
    gp.add_argument("--concurrency", type=_positive(int, 1000), default=8,
                    help="requests out at once (at most 1000, the SDK's connection pool)")
    gp.add_argument("--limit", type=_positive(int, math.inf), help="grade at most N responses")
    gp.add_argument("--timeout", type=_positive(float, 86400), default=60.0,
                    help="seconds each request may take in all (connect, wait and read)")
    gp.add_argument("--batch", action="store_true", help="use the OpenAI Batch API")
    gp.add_argument("--json", action="store_true", help=JSON)

    co = add("collect", cmd_collect, "send the tasks to a model (OpenAI-compatible API) and "
             "store its answers as responses (docs/collect.md)")
    co.add_argument("--model", required=True, help="the model name sent and stored")
    co.add_argument("--base-url", help="an OpenAI-compatible server, e.g. "
                    "http://127.0.0.1:8000/v1 (default: the official OpenAI API)")
    co.add_argument("--samples", type=int, default=1, help="answers per task (pass@k)")
    pick = co.add_mutually_exclusive_group()
    pick.add_argument("--tasks", nargs="+", metavar="TASK_ID", help="only these tasks")
    pick.add_argument("--families", nargs="+", metavar="FAMILY",
                      help="differential, lesion, rationale")
    co.add_argument("--levels", nargs="+", type=int, metavar="LEVEL", help="1, 2, 3")
    co.add_argument("--images", choices=["key", "none"], default="key",
                    help="key: the cases' key slices as PNG images; none: text only")
    co.add_argument("--concurrency", type=int, default=4, help="items in flight at once")
    co.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    co.add_argument("--max-tokens", type=int, default=2048, help="per answer")
    co.add_argument("--timeout", type=float, default=120.0,
                    help="seconds each request may take in all")
    co.add_argument("--batch", action="store_true", help="use the OpenAI Batch API (rounds of "
                    "batches: one per turn of the multi-turn tasks)")
    co.add_argument("--poll-interval", type=float, default=10.0, help="seconds between batch polls")
    co.add_argument("--json", action="store_true", help="print only the JSON summary")

    cp = add("calibrate", cmd_calibrate, "calibration report: grader vs experts, and the gate")
    cp.add_argument("--config", type=ID, help="grader config id")
    cp.add_argument("--check", type=ID, metavar="REPORT_ID",
                    help="recompute a stored report from the database; exit 1 if it differs")
    cp.add_argument("--run", type=ID, help="grader run to record (default: the config's latest)")
    cp.add_argument("--part", choices=["heldout", "dev", "all"], default="heldout",
                    help="heldout: the config's one look, under the registered protocol")
    cp.add_argument("--out", help="folder for report.html, report.json and the figures")
    dev = cp.add_argument_group("exploration on --part dev or all (the held-out part refuses them)")
    dev.add_argument("--bootstrap", type=int, help="bootstrap resamples of the intervals")
    dev.add_argument("--seed", type=SEED, help="seed of the bootstrap")
    dev.add_argument("--pearson-min", type=float, help="the gate's threshold of Pearson r")
    dev.add_argument("--icc-min", type=float, help="the gate's threshold of ICC(2,1)")
    dev.add_argument("--epsilon", type=float, help="Alternative Annotator Test margin")

    rv = add("revoke", cmd_revoke, "withdraw a config's validation (audited; it cannot be frozen)")
    rv.add_argument("--config", type=ID, required=True, help="the validated config")
    rv.add_argument("--reason", required=True, help="why (kept in the audit log)")

    pr = sub.add_parser("protocol", help="the calibration protocol, registered before the "
                        "held-out look")
    prsub = pr.add_subparsers(dest="protocol_command", required=True, parser_class=_Parser)
    prsub.add_parser("show", help="the protocol in force (JSON)").set_defaults(fn=cmd_protocol_show)
    prr = prsub.add_parser("register", help="register the gate for the drawn calibration subset; "
                           "refused once a held-out report exists")
    prr.add_argument("--pearson-min", type=float, default=0.90, help="threshold of Pearson r")
    prr.add_argument("--icc-min", type=float, default=0.75, help="threshold of ICC(2,1)")
    prr.add_argument("--epsilon", type=float, default=0.2, help="Alt-Test margin, in (0, 1)")
    prr.add_argument("--q", type=float, default=0.05, help="Alt-Test FDR level, in (0, 1)")
    prr.add_argument("--require", nargs="+", choices=["pearson", "icc2", "alt_test"],
                     default=["pearson", "icc2", "alt_test"], help="checks that must pass")
    prr.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    prr.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap")
    prr.add_argument("--pearson-ci", choices=["studentized_z", "bca", "fisher"],
                     default="studentized_z", help="the interval of r (docs/agreement.md)")
    prr.add_argument("--min-items", type=int, default=30, help="Alt-Test items per expert")
    prr.add_argument("--rule", choices=["lower_bound", "point_estimate"], default="lower_bound",
                     help="decide on the lower bound of the interval of r (and ICC) (default) "
                     "or on the estimate")
    prr.add_argument("--looks", type=int, default=1, help="held-out looks allowed in all "
                     "(each interval's level is Bonferroni-adjusted for them)")
    prr.add_argument("--confidence", type=float, default=0.95,
                     help="family-wise level of the intervals over all looks")
    prr.add_argument("--accept-weaker-than-default", action="store_true",
                     help="register a protocol weaker than the default (point-estimate rule, "
                     "a lower threshold or confidence, a check not required, fewer held-out "
                     "cases than the planner recommends); shown wherever its validation is")
    prr.set_defaults(fn=cmd_protocol_register)
    prp = prsub.add_parser("plan", help="sample-size planner: the chance of passing the r check "
                           "for held-out parts of given sizes, by simulation under the protocol "
                           "in force (or the defaults)")
    prp.add_argument("--expected-r", type=float, required=True,
                     help="the grader's true correlation with the experts' mean")
    prp.add_argument("--threshold", type=float, help="threshold of r (default: the protocol's)")
    prp.add_argument("--cases", type=_positive(int, 2000), nargs="+",
                     help="numbers of held-out cases to try (default 10 to 120, and the "
                     "smallest reaching --power)")
    prp.add_argument("--items-per-case", type=int, default=1, help="held-out items per case")
    prp.add_argument("--within-case", type=float, default=0.0, help="correlation of the items "
                     "of one case (0: independent items)")
    prp.add_argument("--power", type=float, default=0.8, help="the chance of passing to reach")
    prp.add_argument("--studies", type=int, default=400, help="simulated studies per size")
    prp.add_argument("--seed", type=SEED, default=0, help="seed of the simulation")
    prp.add_argument("--rule", choices=["lower_bound", "point_estimate"],
                     help="override the protocol's rule")
    prp.add_argument("--looks", type=_positive(int, 20), help="override the protocol's looks")
    prp.add_argument("--pearson-ci", choices=["studentized_z", "bca", "fisher"],
                     help="override the protocol's interval of r")
    prp.add_argument("--bootstrap", type=_positive(int, 100_000),
                     help="override the protocol's resamples")
    prp.add_argument("--defaults", action="store_true",
                     help="plan under the default protocol, not the one in force")
    prp.add_argument("--json", action="store_true", help=JSON)
    prp.set_defaults(fn=cmd_protocol_plan)

    pp = sub.add_parser("package", help="frozen grader packages: freeze, verify, grade, canary")
    psub = pp.add_subparsers(dest="package_command", required=True, parser_class=_Parser)
    pf = psub.add_parser("freeze", help="write a validated config as a package (.zip)")
    pf.add_argument("--config", type=ID, required=True, help="a validated grader config")
    pf.add_argument("--out", required=True, help="the new .zip file")
    pf.add_argument("--canary", type=int, default=20, help="held-out items kept as the canary (1-500)")
    pf.add_argument("--seed", type=SEED, default=0, help="seed of the canary's draw")
    pf.add_argument("--with-images", action="store_true",
                    help="vision configs: carry the key slice PNGs (else only their sha256)")
    pf.add_argument("--sign", metavar="KEY", help="sign the manifest with this study key "
                    "(nmb package keygen)")
    pf.set_defaults(fn=cmd_package_freeze)
    pk = psub.add_parser("keygen", help="a new Ed25519 study key: KEY (private, mode 0600) and "
                         "KEY's name with .pub (the public key to publish)")
    pk.add_argument("--out", required=True, help="the private key file (new)")
    pk.set_defaults(fn=cmd_package_keygen)
    for name, fn, help in (
            ("verify", cmd_package_verify, "check a package offline: members, hashes, evidence"),
            ("grade", cmd_package_grade, "grade responses (JSONL) with a package, no study needed"),
            ("canary", cmd_package_canary, "re-send the canary; exit 1 when the answers "
             "drifted, 3 when it could not check (too many requests got no answer)")):
        sp = psub.add_parser(name, help=help, description=help)
        sp.add_argument("package", help="the package (.zip)")
        sp.add_argument("--sha256", help="the package digest the authors published")
        sp.add_argument("--public-key", metavar="PUB", help="the study's public key (.pub): "
                        "the package must be signed by it")
        sp.add_argument("--images", help="vision packages without their images: a folder "
                        "holding the key slice PNGs (matched by sha256)")
        sp.set_defaults(fn=fn)
        if name == "verify":
            continue
        if name == "grade":
            sp.add_argument("responses", help="JSONL: response_id, task_id, text[, turns, "
                            "model; an exam taker's: source, user]")
            sp.add_argument("--out", required=True, help="JSONL of scores (a .summary.json and "
                            ".summary.md are written beside it)")
            sp.add_argument("--k", type=_positive(int, 1000), nargs="+", default=[1],
                            help="pass@k for these k")
            sp.add_argument("--bertscore-model", metavar="DIR", help="add BERTScore "
                            "(secondary) with the model in this local folder")
        sp.add_argument("--base-url", help="the endpoint to send to (default: the official API "
                        "or OPENAI_BASE_URL; never an address from the package)")
        sp.add_argument("--concurrency", type=_positive(int, 1000), default=8,
                        help="requests out at once")
        sp.add_argument("--timeout", type=_positive(float, 86400), default=60.0,
                        help="seconds each request may take in all")

    lb = add("leaderboard", cmd_leaderboard, "pass@k and mean score per model and human group")
    lb.add_argument("--config", type=ID, required=True, help="the grader config whose grades count")
    lb.add_argument("--k", type=_positive(int, 1000), nargs="+", default=[1],
                    help="pass@k for these k (default 1)")
    lb.add_argument("--by", help="rows per family, level or family,level")
    lb.add_argument("--json", action="store_true", help=JSON)

    rs = add("results", cmd_results, "the paper's tables: pass@k, top-k, rubric score per model, "
             "human group, person and family x level cell; errors, anchoring, sensitivity, cost")
    rs.add_argument("--config", type=ID, help="the grader config whose grades are the "
                    "grader's judgments (default: the newest validated one, else the newest with "
                    "grades)")
    rs.add_argument("--by", default="family,level", help="cells: family, level or family,level "
                    "(empty: overall only)")
    rs.add_argument("--k", type=int, nargs="+", default=[1, 5], help="pass@k and top-k for these k")
    rs.add_argument("--format", choices=["json", "md", "csv", "latex"], default="md",
                    help="what goes to stdout")
    rs.add_argument("--out", help="folder for results.html, .json, .md, .tex, CSVs and figures")
    rs.add_argument("--reveal", action="store_true", help="people's names, not pseudonyms")
    rs.add_argument("--judge", choices=["grader", "experts"], default="grader",
                    help="whose judgments the main tables use: the grader on every response it "
                    "graded (default), or the experts on the subset they scored; the other "
                    "ways are in the sensitivity table")
    rs.add_argument("--compare", nargs=2, action="append", metavar=("A", "B"),
                    help="print only A - B (models or human groups) on the tasks both answered, "
                    "pass@1 and rubric score with paired intervals; may be repeated")
    rs.add_argument("--layout", choices=["paper", "leaderboard"], default="paper",
                    help="what goes to stdout: the paper's tables, or one table per split of the "
                    "published leaderboard")
    rs.add_argument("--splits", help="the leaderboard's splits as name=level[+level],... "
                    "(default direct=1,complex=2,multi-round=3)")
    rs.add_argument("--bertscore-model", metavar="DIR", help="add BERTScore (secondary) with the "
                    "model in this local folder (needs pip install -e '.[bertscore]')")
    rs.add_argument("--site", metavar="DIR", help="write the static leaderboard site (index.html, "
                    "leaderboard.json, figures) into this folder")

    ag = add("agreement", cmd_agreement, "agreement statistics of a long-format CSV (item,rater,score)")
    ag.add_argument("file", help="CSV with columns item, rater, score (nmb export agreement)")
    ag.add_argument("--reference", help="the rater compared with the others (e.g. grader)")
    ag.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples")
    ag.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap")
    return p


def _shown_url() -> str:
    """The study database's URL as it may be shown: without its password."""
    from sqlalchemy.engine import make_url

    from db.engine import database_url

    return make_url(database_url()).render_as_string(hide_password=True)


def _shortened(text: str, most: int = 495) -> str:
    """`text`, or when longer than `most` its start and its end around " ... ": a refusal quoting
    a 10,000-character value keeps what is refused and what to do, not screens of the value."""
    return text if len(text) <= most else f"{text[:300]} ... {text[-(most - 305):]}"


def _reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end is closed (poll reports an error)."""
    poll = select.poll()
    poll.register(sys.stdout.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poll.poll(0))


def main(argv: list[str] | None = None) -> int:
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure:  # a summary naming 脑肿瘤 under an ASCII locale: escaped, not a traceback
        reconfigure(errors="backslashreplace")
    try:
        args = build_parser().parse_args(argv)
        args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:  # `nmb results | head`: the reader has what it wanted
        if not _reader_gone():
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush
        return 128 + signal.SIGPIPE
    except UserError as e:
        print(f"nmb: {_shortened(str(e))}", file=sys.stderr)
        return 2
    except (OperationalError, DatabaseError) as e:
        # the database does not answer (down, wrong address, locked), or the SQLite file is no
        # database (sqlite3.DatabaseError itself: "file is not a database", "malformed");
        # other database errors (integrity, programming) are not the user's: their traceback
        if not isinstance(e, OperationalError) and type(e.orig) is not sqlite3.DatabaseError:
            raise
        print(f"nmb: the database {_shown_url()} failed: {one_line(str(e.orig or e), 300)}",
              file=sys.stderr)
        return 2
    except PermissionError as e:  # a file or folder this account may not read or write
        if (refusal := not_permitted(e)) is None:
            raise
        print(f"nmb: {refusal}", file=sys.stderr)
        return 2
    except OSError as e:  # a name no file can have, given on the command line
        if e.errno != errno.ENAMETOOLONG:
            raise
        print(f"nmb: a file name is too long: {one_line(repr(e.filename), 60)}", file=sys.stderr)
        return 2
    except _Terminated:
        print("nmb: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("nmb: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
