"""`nmb version tag` and `nmb version list`: named versions of the benchmark
(db.study.versions), for `nmb results --version`."""

import argparse

from cli.common import JSON, Parser, open_study, print_json


def cmd_version_tag(args: argparse.Namespace) -> None:
    from db.study.versions import tag

    with open_study() as s:
        row = tag(s, name=args.name, note=args.note or "", actor="cli")
        s.commit()
    print(f"tagged version {row.name}: {len(row.task_ids)} tasks, each at the revision in force "
          f"now (nmb results --version {row.name})")


def cmd_version_list(args: argparse.Namespace) -> None:
    from db.study.versions import versions

    with open_study(reading=True) as s:
        rows = [{"name": v.name, "tasks": len(v.task_ids), "at": v.at.isoformat(),
                 "note": v.note} for v in versions(s)]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no version tagged yet (nmb version tag NAME)")
    for v in rows if not args.json else ():
        print(f"{v['name']}: {v['tasks']} tasks, tagged {v['at'][:16]}"
              + (f"; {v['note']}" if v["note"] else ""))


def register(sub: argparse._SubParsersAction) -> None:
    vp = sub.add_parser("version", help="named versions of the benchmark (for the results)")
    vsub = vp.add_subparsers(dest="version_command", required=True, parser_class=Parser)
    tg = vsub.add_parser("tag", help="record the active tasks, each at its revision in force, "
                                     "as a version (never changed afterwards)")
    tg.add_argument("name", help="the version's name, e.g. 1.0")
    tg.add_argument("--note", help="what changed since the last version (shown in lists)")
    tg.set_defaults(fn=cmd_version_tag)
    ls = vsub.add_parser("list", help="every version, oldest first")
    ls.add_argument("--json", action="store_true", help=JSON)
    ls.set_defaults(fn=cmd_version_list)
