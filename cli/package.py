"""`nmb package`: frozen grader packages: keygen, freeze, verify, grade, canary."""

import argparse
import json
import os
import sys
from pathlib import Path

from cli.common import (
    ID,
    SEED,
    Parser,
    bertscorer,
    file_out,
    open_study,
    positive,
    print_json,
    progress_bar,
    sigterm_as_ctrl_c,
    warn_plain_http,
)
from errors import UserError, counted, one_line


def cmd_package_freeze(args: argparse.Namespace) -> None:
    from package.freeze import freeze

    out = file_out(args.out)
    with open_study() as s:
        row = freeze(s, config_id=args.config, out=out, canary_size=args.canary,
                     seed=args.seed, with_images=args.with_images,
                     sign_with=Path(args.sign) if args.sign else None, actor="cli")
    print_json({"package_id": row.id, "path": row.path, "sha256": row.sha256,
                 "canary_items": row.canary["items"], "signed": bool(args.sign)})


def cmd_package_keygen(args: argparse.Namespace) -> None:
    from package.sign import keygen

    pub, line = keygen(file_out(args.out))
    print_json({"private_key": args.out, "public_key_file": str(pub), "public_key": line})


def _verified(args: argparse.Namespace):
    """The package named on the command line, verified (and its digest printed) before use."""
    from package.verify import verify

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
    print_json({"ok": True, "sha256": pkg.sha256, "format": pkg.manifest["format"],
                 "tool_version": pkg.manifest["tool_version"], "model": pkg.config.model,
                 "config_hash": pkg.config.config_hash, "rubric_hash": pkg.rubric.content_hash,
                 "tasks": len(pkg.tasks), "canary_items": len(pkg.canary),
                 "protocol_sha256": report.protocol_hash, "report_data_sha256": report.data_hash,
                 **pkg.terms_json(), "gate": {g.name: g.value for g in report.gate},
                 "heldout_looks": len(pkg.manifest["heldout_looks"]), "signed_by": pkg.signer})


def cmd_package_grade(args: argparse.Namespace) -> None:
    from db.files import writable, write_file
    from package.grade import (
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
    scorer = bertscorer(args)
    out = file_out(args.out)
    try:  # before any request is paid for
        writable(out)
    except OSError as e:
        raise UserError(f"cannot write {args.out}: {e.strerror}") from None
    warn_plain_http(args.base_url)
    with opened(progress_path(out), pkg.sha256) as progress:
        graded = kept_rows(pkg, responses, progress)
        left = counted(len(responses) - len(graded), "request")
        where = args.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
        print(f"nmb: {len(graded)} of {len(responses)} responses already graded; {left} to "
              f"{pkg.config.model} at {where}, each grade kept in {progress.path} as it comes "
              "back", file=sys.stderr)
        with progress_bar("grading") as bar, sigterm_as_ctrl_c():
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
    print_json({"items": len(rows), "graded": result["graded"], "failed": result["failed"],
                 "out": args.out, "summary": str(out.with_suffix(".summary.json"))})


def cmd_package_canary(args: argparse.Namespace) -> None:
    from package.canary import canary

    pkg = _verified(args)
    warn_plain_http(args.base_url)
    result = canary(pkg, base_url=args.base_url, concurrency=args.concurrency,
                    timeout=args.timeout)
    print_json(result)
    if result["status"] == "could not check":  # exit 3: neither drift (1) nor a mistake (2)
        first = next((i["reason"] for i in result["per_item"] if not i["answered"]), "")
        print(f"nmb: canary could not check: {result['unreached']} of {result['items']} "
              f"requests got no answer ({one_line(first or '', 200)})", file=sys.stderr)
        raise SystemExit(3)
    if result["drift"]:
        raise SystemExit(1)



def register(sub: argparse._SubParsersAction) -> None:
    pp = sub.add_parser("package", help="frozen grader packages: freeze, verify, grade, canary")
    psub = pp.add_subparsers(dest="package_command", required=True, parser_class=Parser)
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
            sp.add_argument("--k", type=positive(int, 1000), nargs="+", default=[1],
                            help="pass@k for these k")
            sp.add_argument("--bertscore-model", metavar="DIR", help="add BERTScore "
                            "(secondary) with the model in this local folder")
        sp.add_argument("--base-url", help="the endpoint to send to (default: the official API "
                        "or OPENAI_BASE_URL; never an address from the package)")
        sp.add_argument("--concurrency", type=positive(int, 1000), default=8,
                        help="requests out at once")
        sp.add_argument("--timeout", type=positive(float, 86400), default=60.0,
                        help="seconds each request may take in all")
