"""`nmb leaderboard` and `nmb results`: the paper's tables, the leaderboard and the site."""

import argparse
import sys
from pathlib import Path

from cli.common import (
    ID,
    JSON,
    adder,
    bertscorer,
    open_study,
    positive,
    print_json,
)
from errors import UserError, counted


def cmd_leaderboard(args: argparse.Namespace) -> None:
    from calibration.calibrate import unvalidated_warning
    from calibration.terms import validation_note
    from results.leaderboard import display_rows, leaderboard

    with open_study(reading=True) as s:
        rows = leaderboard(s, config_id=args.config, ks=tuple(args.k), by=args.by)
        warning = unvalidated_warning(s, config_id=args.config)
        note = warning or validation_note(s, config_id=args.config)
    if note:
        print(f"nmb: note: {note}", file=sys.stderr)
    if args.json:
        print_json(rows)
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
    with open_study(reading=True) as s:
        res = results.build(s, config_id=args.config, by=by, ks=tuple(args.k),
                            reveal=args.reveal, judge=args.judge,
                            compare_pairs=tuple(tuple(pair) for pair in args.compare or ()),
                            bertscore=bertscorer(args), splits=splits,
                            answered_only=args.answered_only, version=args.version)
        if args.site:
            written = _site(s, res, Path(args.site), args, by, splits)
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
    if args.format in ("csv", "latex"):  # formats without the flag lines: say it on stderr
        for flag in res.fairness_flags:
            print(f"nmb: note: {flag}", file=sys.stderr)
    if args.compare:
        print(comparison_text(res, args.format))
    elif args.layout == "leaderboard":
        from results.publish import leaderboard_layout

        print(leaderboard_layout.as_text(res, args.format))
    else:
        print(as_text(res, args.format))


def _site(s, res, out: Path, args: argparse.Namespace, by: tuple[str, ...],
          splits: dict[str, tuple[int, ...]] | None) -> list[Path]:
    """The site of `res` in `out` and, when the study has benchmark versions, each version's
    beside it (out/versions/NAME), every page linking to the others (the published
    leaderboard's version switch). With --version, that version's page alone."""
    from db.study.versions import versions
    from results import results
    from results.publish.site import VERSIONS, study_version, version_switch, write_site

    names = [] if args.version else [v.name for v in versions(s)]
    written = write_site(out, res, study_version(s, res), version_switch(names, None))
    for name in names:
        tagged = results.build(s, config_id=args.config, by=by, ks=tuple(args.k),
                               reveal=args.reveal, judge=args.judge, splits=splits,
                               answered_only=args.answered_only, version=name)
        written += write_site(out / VERSIONS / name, tagged, study_version(s, tagged),
                              version_switch(names, name))
    return written


def _splits(args: argparse.Namespace) -> dict[str, tuple[int, ...]] | None:
    from results.splits import parse_splits

    splits = parse_splits(args.splits)  # checked even when unused
    return splits if args.layout == "leaderboard" or args.site else None





def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

    lb = add("leaderboard", cmd_leaderboard, "pass@k and mean score per model and human group")
    lb.add_argument("--config", type=ID, required=True, help="the grader config whose grades count")
    lb.add_argument("--k", type=positive(int, 1000), nargs="+", default=[1],
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
    rs.add_argument("--version", metavar="NAME", help="the tables of a benchmark version (nmb "
                    "version tag): its tasks, each at the revision in force when tagged")
    rs.add_argument("--answered-only", action="store_true",
                    help="the view 'answered tasks only': leave a model's failed or missing "
                    "answers out instead of counting them wrong (named so in every table)")
    rs.add_argument("--compare", nargs=2, action="append", metavar=("A", "B"),
                    help="print only A - B (models or human groups) on the tasks both answered, "
                    "pass@1 and rubric score with paired intervals; may be repeated")
    rs.add_argument("--layout", choices=["paper", "leaderboard"], default="paper",
                    help="what goes to stdout: the paper's tables, or one table per split of the "
                    "published leaderboard")
    rs.add_argument("--splits", help="the leaderboard's splits as name=level[+level],... "
                    "(default direct=1,complex=2,multi-round=3)")
    rs.add_argument("--bertscore-model", metavar="DIR", help="add BERTScore (secondary) with the "
                    "model in this local folder (needs make install-bertscore)")
    rs.add_argument("--site", metavar="DIR", help="write the static leaderboard site (index.html, "
                    "leaderboard.json, figures) into this folder")
