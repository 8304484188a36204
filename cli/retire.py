"""`nmb retire` and `nmb unretire`: take an item out of the study's future, with a reason, and
bring it back (db.study.retire)."""

import argparse

from cli.common import JSON, adder, open_study, print_json

KIND_HELP = ("case, task, response, model (all its responses), grader-run (its grades) or "
             "collection-run (its responses)")


def cmd_retire(args: argparse.Namespace) -> None:
    from db.study.retire import retire

    with open_study() as s:
        row = retire(s, kind=args.kind, item_id=args.id, reason=args.reason, actor="cli")
        s.commit()
    print(f"retired {row.kind} {row.item_id}: it leaves new exams, rater queues, grading, "
          "collection and the results' tables; what is recorded on it stays")


def cmd_unretire(args: argparse.Namespace) -> None:
    from db.study.retire import unretire

    with open_study() as s:
        row = unretire(s, kind=args.kind, item_id=args.id, reason=args.reason, actor="cli")
        s.commit()
    print(f"restored {row.kind} {row.item_id}")


def cmd_retired(args: argparse.Namespace) -> None:
    from db.study.retire import retired

    with open_study(reading=True) as s:
        items = retired(s)
    if args.json:
        print_json([vars(r) for r in items])
    elif not items:
        print("nothing is retired")
    for r in items if not args.json else ():
        print(r.text())


def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)
    for name, fn, what in (("retire", cmd_retire, "retire an item: it leaves exams not yet "
                            "begun, unscored assignments, grading, collection and the results' "
                            "tables (listed there with the reason); nothing is deleted"),
                           ("unretire", cmd_unretire, "restore a retired item")):
        p = add(name, fn, what)
        p.add_argument("kind", metavar="KIND", help=KIND_HELP)
        p.add_argument("id", metavar="ID", help="the case, task or response id, the model "
                       "name, or the run's number")
        p.add_argument("--reason", required=True, help="why (kept, and shown with the results)")
    ls = add("retired", cmd_retired, "list what is retired and why")
    ls.add_argument("--json", action="store_true", help=JSON)
