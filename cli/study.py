"""`nmb db`, `status`, `backup`, `restore`, `demo`, `export`, `render`, `agreement`,
`viewer-tools`: the study's housekeeping and tools."""

import argparse
from pathlib import Path

from cli.common import (
    JSON,
    SEED,
    Parser,
    adder,
    file_out,
    open_study,
    print_json,
)
from errors import UserError, counted


def cmd_db_upgrade(args: argparse.Namespace) -> None:
    from db.bundle.store import prepare_study
    from db.engine import database_url

    prepare_study()
    print(f"database is at the newest revision: {database_url().split('@')[-1]}")


def cmd_status(args: argparse.Namespace) -> None:
    from db.status import counts

    with open_study() as s:
        got = counts(s)
    if args.json:
        print_json(got)
    else:
        for name, n in got.items():
            print(f"{name:16} {n}")


def cmd_backup(args: argparse.Namespace) -> None:
    from db.backup import backup_study

    manifest = backup_study(file_out(args.out))
    size = sum(m.size for m in manifest.members)
    print(f"wrote {args.out}: the {manifest.database} database (revision {manifest.revision}) and "
          f"{counted(len(manifest.members) - 1, 'file')}, {size:,} bytes")


def cmd_restore(args: argparse.Namespace) -> None:
    from db.backup import restore_study

    print(restore_study(Path(args.file)))


def cmd_demo(args: argparse.Namespace) -> None:
    if args.action == "remove":
        from db.bundle.store import prepare_study
        from db.study.demo import remove_demo

        if args.if_empty or args.resolution is not None:
            raise UserError("nmb demo remove takes no --if-empty or --resolution")
        prepare_study()
        print(remove_demo(actor="cli"))
        return
    from demo.study import load_demo

    print(load_demo(if_empty=args.if_empty, resolution_mm=args.resolution or 1))


def cmd_export(args: argparse.Namespace) -> None:
    if args.kind == "release":
        from db.release.export import export_release

        if args.format:
            raise UserError("export: --format is not for release (its files are JSON)")

        with open_study(reading=True) as s:
            print(export_release(s, Path(args.out),
                                 answers=Path(args.answers) if args.answers else None))
        return
    if args.answers:
        raise UserError("export: --answers is for nmb export release")
    from db.export import export

    out = file_out(args.out)
    with open_study(reading=True) as s:
        n = export(s, args.kind, fmt=args.format or "csv", out=out, reveal_raters=args.reveal_raters)
    print(f"wrote {counted(n, 'row')} to {args.out}")


def cmd_render(args: argparse.Namespace) -> None:
    from imaging import render_to_file

    out = render_to_file(
        Path(args.image), plane=args.plane, index=args.index, window=args.window,
        volume=args.volume, out=file_out(args.out), radiological=not args.neurological,
    )
    print(out)


def cmd_agreement(args: argparse.Namespace) -> None:
    from calibration.agreement_csv import agreement_from_csv

    print_json(agreement_from_csv(
        Path(args.file), reference=args.reference, bootstrap=args.bootstrap, seed=args.seed
    ))


def cmd_viewer_tools(args: argparse.Namespace) -> None:
    from db.study.viewer_tools import set_viewer_tools, viewer_tools

    with open_study() as s:
        if not args.tools:
            print(", ".join(viewer_tools(s)) or "none")
            return
        message = set_viewer_tools(s, [] if args.tools == ["none"] else args.tools, actor="cli")
        s.commit()
    print(message)


def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

    dbp = sub.add_parser("db", help="database maintenance")
    dbsub = dbp.add_subparsers(dest="db_command", required=True, parser_class=Parser)
    dbsub.add_parser("upgrade", help="create or migrate the database").set_defaults(fn=cmd_db_upgrade)

    add("status", cmd_status, "counts of what the study holds").add_argument(
        "--json", action="store_true", help=JSON)

    add("backup", cmd_backup, "one file with a consistent copy of the database, the images "
        "and the frozen packages (docs/deploy.md)").add_argument(
        "--out", required=True, help="the backup file to write (a new file)")

    add("restore", cmd_restore, "restore a backup into an empty NMB_HOME and database").add_argument(
        "file", help="a file written by nmb backup")

    dp = add("demo", cmd_demo, "build the synthetic demo study offline and import it; nmb demo "
             "remove: remove it (its cases, responses, scores, runs, exams and accounts)")
    dp.add_argument("action", nargs="?", choices=["remove"],
                    help="remove the demo from the study, atomically (docs/demo.md)")
    dp.add_argument("--if-empty", action="store_true", help="only when the database holds no case")
    dp.add_argument("--resolution", type=int, choices=[1, 2],
                    help="template voxel size (mm; default 1)")

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

    ag = add("agreement", cmd_agreement, "agreement statistics of a long-format CSV (item,rater,score)")
    ag.add_argument("file", help="CSV with columns item, rater, score (nmb export agreement)")
    ag.add_argument("--reference", help="the rater compared with the others (e.g. grader)")
    ag.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples")
    ag.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap")

    add("viewer-tools", cmd_viewer_tools, "the measuring tools raters' and exam takers' viewers "
        "offer: ruler, roi (both until set); without TOOL, print them").add_argument(
        "tools", nargs="*", metavar="TOOL", help="ruler, roi, or none")
