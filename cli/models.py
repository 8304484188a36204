"""`nmb models` (model cards), `nmb breadth` (breadth scores), `nmb cases dates` (publication
dates) and `nmb report checklist`: what results, the site and the checklists know beyond the
answers (db.study.model_cards, db.sources.breadth, db.study.case_dates, results.checklist)."""

import argparse

from cli.common import JSON, adder, open_study, print_json
from errors import UserError

CARD_OPTIONS = {
    "maker": "the organisation that made it",
    "version": "the version or snapshot it names",
    "released": "release date, YYYY-MM-DD (or YYYY-MM)",
    "training_cutoff": "training data cutoff, YYYY-MM-DD (YYYY-MM: the month's end)",
    "web_access": "yes or no: whether it could search the web while answering",
    "params": "its size as stated, e.g. 7B, 1.8T, unknown",
    "kind": "base, general or medical",
}


def cmd_models_set(args: argparse.Namespace) -> None:
    from importers import Options, run_import

    change = {k: getattr(args, k) for k in CARD_OPTIONS if getattr(args, k) is not None}
    if args.from_csv:
        if args.name or change:
            raise UserError("models set --from-csv takes the cards from the file: give no NAME "
                            "and no field options with it")
        from pathlib import Path

        with open_study() as s:
            summary = run_import(s, "model-cards", [Path(args.from_csv)],
                                 Options(actor="cli", dry_run=args.dry_run))
        print(summary)
        return
    if not args.name:
        raise UserError("models set: give a model NAME (or --from-csv FILE)")
    from db.study.model_cards import card_row, set_card

    with open_study() as s:
        card = set_card(s, name=args.name, change=change, actor="cli")
        row = card_row(card)
    print(f"model card {args.name}: " + ", ".join(f"{k} {v}" for k, v in row.items()
                                                   if v is not None))


def cmd_models_list(args: argparse.Namespace) -> None:
    from db.study.model_cards import card_row, cards

    with open_study(reading=True) as s:
        rows = [{"name": name, **card_row(card)} for name, card in cards(s).items()]
    if args.json:
        print_json(rows)
        return
    if not rows:
        print("no model cards (nmb models set NAME ...)")
    for r in rows:
        print(" · ".join(f"{k} {v}" if k != "name" else str(v) for k, v in r.items()
                         if v is not None))


def cmd_breadth_import(args: argparse.Namespace) -> None:
    from pathlib import Path

    from importers import Options, run_import

    with open_study() as s:
        summary = run_import(s, "breadth", [Path(args.file)],
                             Options(actor="cli", dry_run=args.dry_run))
    print(summary)


def cmd_breadth_list(args: argparse.Namespace) -> None:
    from db.sources.breadth import breadth_scores

    with open_study(reading=True) as s:
        rows = [{"model": b.model, "benchmark": b.benchmark, "score": b.score, "n": b.n,
                 "source": b.source} for b in breadth_scores(s)]
    if args.json:
        print_json(rows)
        return
    if not rows:
        print("no breadth scores (nmb breadth import FILE)")
    for r in rows:
        print(f"{r['benchmark']} · {r['model']} · {r['score']:g}"
              + (f" (n {r['n']})" if r["n"] else ""))


def cmd_case_dates(args: argparse.Namespace) -> None:
    from pathlib import Path

    from importers import Options, run_import

    with open_study() as s:
        summary = run_import(s, "case-dates", [Path(args.file)],
                             Options(actor="cli", dry_run=args.dry_run))
    print(summary)


def cmd_checklist(args: argparse.Namespace) -> None:
    import sys
    from pathlib import Path

    from calibration.html import prepare_out
    from results.checklist import write

    out = prepare_out(Path(args.out))
    with open_study(reading=True) as s:
        written = write(out, s)
    print(f"nmb: wrote {len(written)} files to {out}: "
          + ", ".join(p.name for p in written), file=sys.stderr)


def register(sub: argparse._SubParsersAction) -> None:
    from cli.common import Parser

    models = sub.add_parser("models", help="model cards: maker, version, dates, size, kind",
                            description="model cards (docs/commands.md)")
    msub = models.add_subparsers(dest="models_command", required=True, parser_class=Parser)
    add = adder(msub)
    st = add("set", cmd_models_set, "set a model's card (only the fields given change; an "
             "empty value empties one), or every card of a CSV (--from-csv)")
    st.add_argument("name", nargs="?", metavar="NAME", help="the model's name, as its "
                    "responses carry it")
    for key, help_ in CARD_OPTIONS.items():
        st.add_argument("--" + key.replace("_", "-"), dest=key, help=help_)
    st.add_argument("--from-csv", metavar="FILE", help="a CSV with a column name and any of "
                    "maker, version, released, training_cutoff, web_access, params, kind")
    st.add_argument("--dry-run", action="store_true", help="with --from-csv: check, write nothing")
    ls = add("list", cmd_models_list, "every model card")
    ls.add_argument("--json", action="store_true", help=JSON)

    breadth = sub.add_parser("breadth", help="breadth scores: each model's score on broad "
                             "benchmarks, set beside its depth in the results",
                             description="breadth scores (docs/commands.md)")
    bsub = breadth.add_subparsers(dest="breadth_command", required=True, parser_class=Parser)
    add = adder(bsub)
    im = add("import", cmd_breadth_import, "import a CSV of model, benchmark, score (optional "
             "n, source); a (model, benchmark) stored before is replaced")
    im.add_argument("file", metavar="FILE")
    im.add_argument("--dry-run", action="store_true", help="check, write nothing")
    bl = add("list", cmd_breadth_list, "every stored breadth score")
    bl.add_argument("--json", action="store_true", help=JSON)

    cases = sub.add_parser("cases", help="what is known of the cases beyond their content",
                           description="cases (docs/commands.md)")
    csub = cases.add_subparsers(dest="cases_command", required=True, parser_class=Parser)
    add = adder(csub)
    cd = add("dates", cmd_case_dates, "import the cases' publication dates from a CSV (case_id, "
             "published: YYYY-MM-DD or YYYY-MM); the checklists judge test-data independence "
             "from them")
    cd.add_argument("file", metavar="FILE")
    cd.add_argument("--dry-run", action="store_true", help="check, write nothing")

    report = sub.add_parser("report", help="reporting checklists and a methods draft, written "
                            "from the study's records", description="reports (docs/commands.md)")
    rsub = report.add_subparsers(dest="report_command", required=True, parser_class=Parser)
    add = adder(rsub)
    ck = add("checklist", cmd_checklist, "write MI-CLEAR-LLM, TRIPOD-LLM (evaluation items) and "
             "GRRAS as Markdown and JSON, and methods.md, each item filled from the records "
             "with its source or marked missing with what to supply")
    ck.add_argument("--out", required=True, metavar="DIR", help="the folder to write into")
