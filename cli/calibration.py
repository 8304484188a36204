"""`nmb calibrate`, `revoke`, `protocol`: the grader against the experts, and the gate."""

import argparse
import sys
from pathlib import Path

from cli.common import (
    ID,
    JSON,
    SEED,
    Parser,
    adder,
    open_study,
    positive,
    print_json,
)
from errors import UserError, counted


def cmd_calibrate(args: argparse.Namespace) -> None:
    from calibration import calibrate
    from calibration.protocol import Statistics, gate_from_args
    from calibration.terms import for_protocol

    if args.check is not None:
        with open_study() as s:
            result = calibrate.check(s, report_id=args.check)
        print_json(result.__dict__)
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
    with open_study() as s:
        out = calibrate.run(s, config_id=args.config, part=args.part, gate=gate,
                            statistics=stats, run_id=args.run, actor="cli")
        status = calibrate.validation_status(s, config_id=args.config)
        terms = for_protocol(s, out.report.protocol_id) if out.report.validates else None
    report, row = out.report, out.row
    if args.out:
        from calibration.html import export

        export(Path(args.out), report, row.html or "", out.figures)
    print_json({"report_id": row.id, "part": report.part, "n_items": report.n_items,
                 "passed": report.passed, "validates": report.validates,
                 "decided_earlier": not out.fresh, "status": status,
                 "protocol_id": report.protocol_id,
                 "terms": terms.text() if terms else None,
                 "gate": {g.name: g.passed for g in report.gate},
                 "values": {g.name: g.value for g in report.gate},
                 "why_failed": report.why_failed(), "heldout_looks": len(report.heldout_looks),
                 "icc_items": report.icc_items(), "clustering": report.clustering(),
                 "data_sha256": report.data_hash})
    if warning := report.overall["pearson"].get("warning"):
        print(f"nmb: warning: {warning}", file=sys.stderr)


def cmd_revoke(args: argparse.Namespace) -> None:
    from calibration.calibrate import revoke

    with open_study() as s:
        look = revoke(s, config_id=args.config, reason=args.reason, actor="cli")
    print(f"validation of grader config {look.config_id} revoked (report {look.report_id})")


def cmd_protocol_show(args: argparse.Namespace) -> None:
    from calibration import protocol

    with open_study() as s:
        proto = protocol.current(s)
    if proto is None:
        raise UserError("no calibration protocol is registered (nmb protocol register)")
    from calibration.terms import ValidationTerms

    print_json({"id": proto.id, "sha256": proto.content_hash, **proto.content(),
                "terms": ValidationTerms.of(proto).text()})


def cmd_protocol_register(args: argparse.Namespace) -> None:
    from calibration import protocol

    gate = protocol.gate_from_args(pearson_min=args.pearson_min, icc2_min=args.icc_min,
                                   alt_test_epsilon=args.epsilon, alt_test_q=args.q,
                                   required=args.require, rule=args.rule, looks=args.looks,
                                   count_imported_scores=args.count_imported_scores)
    stats = protocol.Statistics(bootstrap=args.bootstrap, seed=args.seed,
                                pearson_ci=args.pearson_ci, alt_test_min_items=args.min_items,
                                confidence=args.confidence)
    with open_study() as s:
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
        with open_study() as s:
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
        print_json(asdict(result) | {"protocol": source})
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



def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

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
    prsub = pr.add_subparsers(dest="protocol_command", required=True, parser_class=Parser)
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
    prr.add_argument("--count-imported-scores", action="store_true",
                     help="count expert scores brought in by nmb import-scores (not collected "
                     "blind) in the held-out look (default: left out; weaker than the default)")
    prr.add_argument("--accept-weaker-than-default", action="store_true",
                     help="register a protocol weaker than the default (point-estimate rule, "
                     "a lower threshold or confidence, a check not required, fewer held-out "
                     "cases than the planner recommends, imported scores counted); shown "
                     "wherever its validation is")
    prr.set_defaults(fn=cmd_protocol_register)
    prp = prsub.add_parser("plan", help="sample-size planner: the chance of passing the r check "
                           "for held-out parts of given sizes, by simulation under the protocol "
                           "in force (or the defaults)")
    prp.add_argument("--expected-r", type=float, required=True,
                     help="the grader's true correlation with the experts' mean")
    prp.add_argument("--threshold", type=float, help="threshold of r (default: the protocol's)")
    prp.add_argument("--cases", type=positive(int, 2000), nargs="+",
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
    prp.add_argument("--looks", type=positive(int, 20), help="override the protocol's looks")
    prp.add_argument("--pearson-ci", choices=["studentized_z", "bca", "fisher"],
                     help="override the protocol's interval of r")
    prp.add_argument("--bootstrap", type=positive(int, 100_000),
                     help="override the protocol's resamples")
    prp.add_argument("--defaults", action="store_true",
                     help="plan under the default protocol, not the one in force")
    prp.add_argument("--json", action="store_true", help=JSON)
    prp.set_defaults(fn=cmd_protocol_plan)
