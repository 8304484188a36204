"""`nmb import` and `nmb import-responses`: every way data comes in (docs/bundle-format.md)."""

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.common import (
    JSON,
    adder,
    open_study,
    print_json,
)
from errors import UserError


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
        with open_study() as s:
            if args.source == "dicom":
                from db.sources.dicom import import_dicom

                summary = import_dicom(
                    s, Path(args.paths[0]),
                    case_info=Path(args.case_info) if args.case_info else None,
                    sequence_map=Path(args.sequence_map) if args.sequence_map else None,
                    allow_burned_in=args.allow_burned_in, allow_blank=args.allow_blank,
                    dry_run=args.dry_run, actor="cli")
            elif args.source == "bids":
                from db.sources.bids import import_bids

                summary = import_bids(
                    s, Path(args.paths[0]),
                    case_info=Path(args.case_info) if args.case_info else None,
                    allow_blank=args.allow_blank, dry_run=args.dry_run, actor="cli")
            elif release:
                from db.release.reader import import_release

                summary = import_release(
                    s, [Path(p) for p in args.paths], dry_run=args.dry_run, actor="cli",
                    allow_blank=args.allow_blank,
                    answers=Path(args.answers) if args.answers else None,
                    family=args.family, level=args.level)
            else:
                summary = import_bundle(s, Path(args.paths[0]), dry_run=args.dry_run,
                                        actor="cli", allow_blank=args.allow_blank)
    except BundleInvalid as e:
        _refused(e)
    print_json(summary.as_dict()) if args.json else print(summary)


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
        with open_study() as s:
            summary = import_harness_responses(s, Path(args.path), source=args.source,
                                               model=args.model, task_key=args.task_key,
                                               filter_name=args.filter, dry_run=args.dry_run,
                                               actor="cli")
    except BundleInvalid as e:
        _refused(e)
    print_json(summary.as_dict()) if args.json else print(summary)



def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

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
                         "before the vendor table")
    ip.add_argument("--allow-burned-in", action="store_true",
                    help="dicom: import series marked BurnedInAnnotation YES (check them first)")
    ip.add_argument("--allow-blank", action="store_true",
                    help="import images whose every voxel or pixel has one value (all zero)")
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
    rip.add_argument("--filter", metavar="NAME",
                     help="lm-eval: the filter whose lines are read, one per document (default: "
                          "the first the file names; the summary lists the others)")
    rip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    rip.add_argument("--json", action="store_true", help=JSON)
