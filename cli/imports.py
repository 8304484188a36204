"""`nmb import`, `nmb import-responses` and `nmb import-scores`: every way data comes in
(docs/bundle-format.md)."""

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import (
    JSON,
    adder,
    open_study,
    print_json,
)
from errors import UserError

if TYPE_CHECKING:  # importers is imported where a command runs: `nmb --help` stays quick
    from importers import Options


def _path(text: str | None) -> Path | None:
    return Path(text) if text else None


def _run(source: str, paths: list[str], options: "Options", json: bool) -> None:
    """One importer of the registry, its options checked before the study is opened."""
    from db.bundle.importer import BundleInvalid
    from importers import checked, run_import

    checked(source, [Path(p) for p in paths], options)
    try:
        with open_study() as s:
            summary = run_import(s, source, [Path(p) for p in paths], options)
    except BundleInvalid as e:
        _refused(e)
    if json:
        print_json(summary.as_dict())
        return
    print(summary)
    imported = getattr(summary, "imported", summary)  # a converter's summary holds the import's
    for line in getattr(imported, "revisions", []):  # --revise: the changes, field by field
        print(f"  {line}")


def cmd_import(args: argparse.Namespace) -> None:
    from importers import Options

    _run(args.source, args.paths, Options(
        dry_run=args.dry_run, actor="cli", allow_blank=args.allow_blank,
        case_info=_path(args.case_info), sequence_map=_path(args.sequence_map),
        allow_burned_in=args.allow_burned_in, answers=_path(args.answers), family=args.family,
        level=args.level, field_map=_path(args.map), participants=tuple(args.participants or ()),
        exclude=tuple(args.exclude or ()), with_demo=args.with_demo, revise=args.revise),
         args.json)


def _refused(e: Any) -> None:
    """A refused import: every problem, one per line (one problem: one line), then exit 2."""
    if len(e.problems) == 1:
        raise UserError(str(e.problems[0])) from None
    print(f"nmb: {e.report()}", file=sys.stderr)
    raise SystemExit(2) from None


def cmd_import_responses(args: argparse.Namespace) -> None:
    from importers import Options

    _run(args.source, [args.path], Options(
        dry_run=args.dry_run, actor="cli", model=args.model, task_key=args.task_key,
        filter_name=args.filter, final_stage_only=args.final_stage_only), args.json)


def cmd_import_scores(args: argparse.Namespace) -> None:
    from importers import Options

    _run(args.source, [args.path], Options(dry_run=args.dry_run, actor="cli"), args.json)


def register(sub: argparse._SubParsersAction) -> None:
    from importers import names

    add = adder(sub)

    ip = add("import", cmd_import, "validate a bundle (folder or .zip), or Neural-MedBench "
             "release task files, and import it atomically")
    ip.add_argument("paths", nargs="+", metavar="PATH",
                    help="a bundle, or release task files with --from neural-medbench")
    ip.add_argument("--from", dest="source", choices=names("cases"),
                    default="bundle", help="what PATH is (default: a bundle; dicom: a folder "
                                           "or DICOMDIR of one study; bids: a BIDS dataset)")
    ip.add_argument("--case-info", metavar="CASE.json",
                    help="dicom: the case's record and tasks; bids: CASES.json keyed by subject")
    ip.add_argument("--sequence-map", metavar="MAP.json",
                    help='dicom: {"SeriesDescription pattern": "SEQUENCE" or null}, tried '
                         "before the vendor table")
    ip.add_argument("--allow-burned-in", action="store_true",
                    help="dicom: import series whose pixels may show who the patient is "
                    "(burned-in text, screens, photographs, ultrasound, faces; check them first)")
    ip.add_argument("--participants", nargs="+", action="extend", metavar="LABEL",
                    help="bids: import only these subjects (sub-01) or sessions (sub-01/ses-1); "
                         "give PATH first")
    ip.add_argument("--exclude", nargs="+", action="extend", metavar="LABEL",
                    help="bids: leave out these subjects (sub-01) or sessions (sub-01/ses-1)")
    ip.add_argument("--allow-blank", action="store_true",
                    help="import images whose every voxel or pixel has one value (all zero)")
    ip.add_argument("--answers", metavar="ANSWERS.json",
                    help="release: the maintainer's answer key (reference answers)")
    ip.add_argument("--family", choices=["differential", "lesion", "rationale"],
                    help="release: the task family of every file (default: by file name)")
    ip.add_argument("--level", type=int, choices=[1, 2, 3],
                    help="release: the level of every file (default: by file name)")
    ip.add_argument("--map", metavar="MAP.json",
                    help='release: the files\' field names, e.g. {"questions": "turns", '
                         '"question": "ask", "number": null} (docs/bundle-format.md)')
    ip.add_argument("--with-demo", action="store_true",
                    help="import into a study that holds the synthetic demo, beside it (else: "
                         "nmb demo remove first; docs/demo.md)")
    ip.add_argument("--revise", action="store_true",
                    help="store a changed case record, task or reference answer as a new "
                         "revision (the old one kept; what was made against it is stale); with "
                         "--dry-run: the changes, field by field")
    ip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    ip.add_argument("--json", action="store_true", help=JSON)

    rip = add("import-responses", cmd_import_responses, "import model responses to tasks the "
              "study already holds: a responses.jsonl or responses-only bundle, OpenAI Batch "
              "output, chat.completion or Ollama lines, VLMEvalKit predictions, or "
              "lm-evaluation-harness or lmms-eval sample logs")
    rip.add_argument("path", metavar="FILE", help="the file (nmb: or a responses-only bundle)")
    rip.add_argument("--from", dest="source", required=True, choices=names("responses"),
                     help="the file's format (docs/bundle-format.md)")
    rip.add_argument("--model", help="the model's name (needed where the file does not say; "
                                     "overrides the file's)")
    rip.add_argument("--task-key", metavar="RULE",
                     help="how an answer names its task: field:NAME, map:FILE.json (a key map), "
                          "order:TASKS (index, doc_id or line as the row of the task file the "
                          "harness was given, from 0) or prompt (default: the format's key: "
                          "custom_id, task_id, index, doc_id)")
    rip.add_argument("--filter", metavar="NAME",
                     help="lm-eval: the filter whose lines are read, one per document (default: "
                          "the first the file names; the summary lists the others)")
    rip.add_argument("--final-stage-only", action="store_true",
                     help="store a one-text answer to a staged (level-3) task as its final "
                          "stage's answer alone, flagged in results (default: refused)")
    rip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    rip.add_argument("--json", action="store_true", help=JSON)

    sip = add("import-scores", cmd_import_scores, "import earlier expert scores (a paper form, "
              "a spreadsheet, an earlier study) from a CSV, one row per criterion; validated "
              "against the rubric in force, written atomically and marked imported")
    sip.add_argument("path", metavar="FILE", help="the CSV (docs/bundle-format.md, *Earlier "
                                                   "expert scores*)")
    sip.add_argument("--from", dest="source", choices=names("scores"), default="scores-csv",
                     help="the file's format (default: scores-csv)")
    sip.add_argument("--dry-run", action="store_true", help="validate and count, write nothing")
    sip.add_argument("--json", action="store_true", help=JSON)
