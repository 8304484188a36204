"""`nmb users`, `assign`, `exam`: the study's people: accounts and roles, raters' assignments, exams."""

import argparse
import getpass
import sys
from collections.abc import Callable

from cli.common import (
    JSON,
    SEED,
    Parser,
    adder,
    open_study,
    print_json,
)
from errors import UserError, counted


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
    with open_study() as s:
        add_user(s, name=args.name, role=args.role, password=password, email=args.email, actor="cli")
        s.commit()
    print(f"added {args.role} {args.name}")


def cmd_users_list(args: argparse.Namespace) -> None:
    from db.users import list_users

    with open_study() as s:
        users = list_users(s)
    rows = [{"name": u.name, "role": u.role, "disabled": u.disabled, "email": u.email} for u in users]
    if args.json:
        print_json(rows)
        return
    for r in rows:
        print(f"{r['name']:24} {r['role']:10} {'disabled' if r['disabled'] else 'active':8} "
              f"{r['email'] or ''}".rstrip())


def cmd_users_role(args: argparse.Namespace) -> None:
    from db.users import change_role

    with open_study() as s:
        change_role(s, name=args.name, role=args.role, actor="cli")
        s.commit()
    print(f"{args.name} is now {args.role} (their open sessions ended)")


def cmd_users_password(args: argparse.Namespace) -> None:
    from db.users import get_user, reset_password

    with open_study() as s:  # a mistyped name is said before a password is asked for
        get_user(s, name=args.name)
    password = _read_password(args)
    with open_study() as s:
        reset_password(s, name=args.name, password=password, actor="cli")
        s.commit()
    print(f"new password set for {args.name} (their open sessions ended)")


def cmd_users_email(args: argparse.Namespace) -> None:
    from db.users import set_email

    with open_study() as s:
        user = set_email(s, name=args.name, email=args.email, actor="cli")
        s.commit()
    print(f"{args.name} signs on as {user.email}" if user.email
          else f"{args.name} has no single sign-on")


def cmd_users_disable(args: argparse.Namespace) -> None:
    from db.users import disable_user

    with open_study() as s:
        disabled = disable_user(s, name=args.name, actor="cli")
        s.commit()
    print(f"disabled {args.name}" if disabled else f"{args.name} was already disabled")


def cmd_assign(args: argparse.Namespace) -> None:
    from db.raters.assignments import assign, draw_calibration, plan_assignment
    from db.rubrics import ensure_rubric, rubric_in_force
    from rubric import load_rubric

    if args.rubric:
        load_rubric(args.rubric)  # a bad --rubric is refused before the study is read
    with open_study() as s:
        if args.calibration:
            parts = draw_calibration(s, n=args.calibration, dev_fraction=args.dev_fraction,
                                     seed=args.seed, actor="cli")
            print(f"calibration subset: {parts['dev']} dev + {parts['heldout']} held-out items")
        options = {"raters": args.raters, "overlap": args.overlap, "selection": args.items,
                   "seed": args.seed}
        plan = plan_assignment(s, **options)
        if args.dry_run:
            print(f"would assign: {plan.describe()}\n  {plan.describe_sources()}")
            return  # (the session closes without a commit: nothing drawn or assigned)
        rubric = (ensure_rubric(s, args.rubric, actor="cli") if args.rubric
                  else rubric_in_force(s, actor="cli"))
        design = assign(s, rubric_hash=rubric.content_hash, actor="cli", **options)
        s.commit()
    print(f"assignment design {design.id}: {plan.describe()} (seed {args.seed})")


def cmd_exam_add(args: argparse.Namespace) -> None:
    from db.study.exams import ensure_exam, exam_warnings

    with open_study() as s:
        exam = ensure_exam(s, name=args.name, task_ids=args.tasks, review=args.review,
                           actor="cli")
        warnings = exam_warnings(s, list(exam.task_ids))
        s.commit()
    print(f"exam {exam.id} {exam.name!r}: {counted(len(exam.task_ids), 'task')}"
          + (", review after finishing" if exam.review else ""))
    for warning in warnings:
        print(f"nmb: warning: {warning}", file=sys.stderr)


def cmd_exam_list(args: argparse.Namespace) -> None:
    from db.study.exams import exam_list

    with open_study(reading=True) as s:
        summaries = exam_list(s)
    if args.json:
        print_json([e.as_dict() for e in summaries])
        return
    if not summaries:
        print("no exam yet (nmb exam add NAME)")
    for e in summaries:
        print(f"{e.name}: {e.state}, {counted(e.tasks, 'task')}, review "
              f"{'on' if e.review else 'off'}, {counted(len(e.takers), 'taker')}")
        for p in e.takers:
            skipped = f" (+{p.elsewhere} not asked here)" if p.elsewhere else ""
            state = (f"finished {p.finished_at:%Y-%m-%d %H:%M}" if p.finished_at
                     else "not finished")
            print(f"  {p.name:24} {p.role:9} {p.answered}/{p.total} answered{skipped}, "
                  f"started {p.started_at:%Y-%m-%d %H:%M}, {state}")


def cmd_exam_close(args: argparse.Namespace) -> None:
    from db.study.exams import close_exam, exam_list

    with open_study() as s:
        closed = close_exam(s, name=args.name, actor="cli")
        s.commit()
        summary = exam_list(s, name=args.name)[0]
    if not closed:
        print(f"exam {args.name!r} was already closed")
        return
    open_ = sum(p.finished_at is None for p in summary.takers)
    print(f"closed exam {args.name!r}: no new attempt or answer; "
          f"{counted(len(summary.takers), 'taker')}"
          + (f", {open_} not finished (what they recorded stays; they may still finish)"
             if open_ else ""))


def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

    up = sub.add_parser("users", help="accounts and roles")
    usub = up.add_subparsers(dest="users_command", required=True, parser_class=Parser)
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

    asg = add("assign", cmd_assign, "assign items to expert raters (balanced, seeded design)")
    asg.add_argument("--raters", nargs="+", required=True, metavar="NAME",
                     help="active expert accounts")
    asg.add_argument("--overlap", type=int, default=3, help="raters per item")
    asg.add_argument("--items", default="all", metavar="{all,unassigned,calibration,human,"
                                                      "model:NAME}",
                     help="which responses not assigned yet: all (the same as unassigned: an "
                          "item is assigned once), the calibration subset, the exams' human "
                          "answers, or one model's responses (default: all)")
    asg.add_argument("--calibration", type=int, metavar="N",
                     help="first draw a calibration subset of N items (stratified, seeded)")
    asg.add_argument("--dev-fraction", type=float, default=0.5,
                     help="share of the calibration subset for development (the rest is held out)")
    asg.add_argument("--rubric", help="bundled rubric name (e.g. neurology-v1) or TOML file "
                     "(default: the study's rubric, that of its newest assignment design, "
                     "else the default rubric, docs/rubric.md)")
    asg.add_argument("--dry-run", action="store_true",
                     help="print what would be added to each rater's queue; write nothing")
    asg.add_argument("--seed", type=SEED, default=0, help="seed of the draw and of the queues")

    exp = sub.add_parser("exam", help="exams for the human baseline")
    exsub = exp.add_subparsers(dest="exam_command", required=True, parser_class=Parser)
    exa = exsub.add_parser("add", help="open an exam of the given tasks (default: every task)")
    exa.add_argument("name", help="the exam's name (what takers pick)")
    exa.add_argument("--tasks", nargs="+", metavar="TASK_ID", help="its tasks (default: every task)")
    exa.add_argument("--review", action="store_true",
                     help="after finishing, takers may read their answers beside the reference "
                          "answers, except of a case with a task still to answer in an exam "
                          "they have not finished "
                          "(default: off, as a baseline study expects)")
    exa.set_defaults(fn=cmd_exam_add)
    exl = exsub.add_parser("list", help="each exam: open or closed, tasks, review; each taker: "
                                        "tasks answered of total, started, finished")
    exl.add_argument("--json", action="store_true", help=JSON)
    exl.set_defaults(fn=cmd_exam_list)
    exc = exsub.add_parser("close", help="close an exam: no new attempt or answer; what was "
                                         "recorded stays (audited)")
    exc.add_argument("name", help="the exam's name")
    exc.set_defaults(fn=cmd_exam_close)
