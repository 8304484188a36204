"""The `nmb` command as a user runs it: a real process, real database, exit codes."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[2]


def nmb(*args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, input=stdin, capture_output=True,
        text=True, env={**os.environ, **(env or {})}, timeout=120,
    )


def test_help_lists_commands() -> None:
    out = nmb("--help")
    assert out.returncode == 0
    for command in ("import", "status", "users", "demo", "export", "render", "agreement"):
        assert command in out.stdout


def test_status_json_counts_on_empty_study(nmb_home: Path) -> None:
    out = nmb("status", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("cases", "series", "tasks", "responses", "users", "expert_scores",
                "grader_scores", "exam_attempts"):
        assert got[key] == 0


def test_users_add_list_disable(nmb_home: Path, tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("correct horse battery\n")
    assert nmb("users", "add", "ana", "--role", "expert", "--password-file", str(pw)).returncode == 0
    assert nmb("users", "add", "bo", "--role", "student", stdin="a long passphrase\n"
               ).returncode == 0
    listed = json.loads(nmb("users", "list", "--json").stdout)
    assert [(u["name"], u["role"], u["disabled"]) for u in listed] == [
        ("ana", "expert", False), ("bo", "student", False)]
    assert nmb("users", "disable", "ana").stdout == "disabled ana\n"
    assert json.loads(nmb("users", "list", "--json").stdout)[0]["disabled"] is True
    again = nmb("users", "disable", "ana")  # before: a second audit row, "disabled ana"
    assert again.returncode == 0 and again.stdout == "ana was already disabled\n"
    from sqlmodel import select

    from db.engine import session
    from db.models import AuditLog

    with session() as s:
        assert len(s.exec(select(AuditLog).where(AuditLog.action == "user.disable")).all()) == 1
    db = (nmb_home / "study.db").read_bytes()
    assert b"correct horse" not in db


def test_users_disable_reads_the_account_once(nmb_home: Path, capsys) -> None:
    """`nmb users disable` reads the account once, and says whether it changed anything
    (before: the command read it, then `disable_user` read it again)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    import cli
    from db.engine import session
    from db.users import add_user

    assert cli.main(["db", "upgrade"]) == 0
    with session() as s:
        add_user(s, name="ana", role="expert", password="pw")
        s.commit()
    reads: list[str] = []

    def count(_conn, _cursor, statement: str, *_args) -> None:
        if re.match(r'SELECT\s.*\sFROM\s"?user"?\b', statement, re.DOTALL):
            reads.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        capsys.readouterr()
        assert cli.main(["users", "disable", "ana"]) == 0
        assert capsys.readouterr().out == "disabled ana\n" and len(reads) == 1, reads
        reads.clear()
        assert cli.main(["users", "disable", "ana"]) == 0
        assert capsys.readouterr().out == "ana was already disabled\n" and len(reads) == 1, reads
    finally:
        event.remove(Engine, "before_cursor_execute", count)


def test_roles_and_passwords_change_with_their_rules(nmb_home: Path, tmp_path: Path) -> None:
    """Short passwords are refused; a role change and a reset are audited and end sessions;
    the last admin cannot be demoted."""
    short = nmb("users", "add", "cy", "--role", "student", stdin="elevenchars\n")
    assert short.returncode == 2 and short.stderr.strip() == (
        "nmb: the password must be at least 12 characters (got 11)")
    assert nmb("users", "add", "root", "--role", "admin", stdin="twelve chars\n").returncode == 0
    assert nmb("users", "add", "cy", "--role", "student", stdin="twelve chars\n").returncode == 0
    assert nmb("users", "role", "cy", "expert").returncode == 0
    demote = nmb("users", "role", "root", "expert")
    assert demote.returncode == 2 and demote.stderr.strip() == (
        "nmb: 'root' is the last enabled admin: add another admin before demoting it")
    assert nmb("users", "password", "cy", stdin="short\n").returncode == 2
    nobody = nmb("users", "password", "nobody", stdin="")  # named before a password is read
    assert nobody.returncode == 2 and nobody.stderr.strip() == "nmb: no user named 'nobody'"
    assert nmb("users", "password", "cy", stdin="another long one\n").returncode == 0
    listed = {u["name"]: u["role"] for u in json.loads(nmb("users", "list", "--json").stdout)}
    assert listed == {"root": "admin", "cy": "expert"}
    from sqlmodel import select

    from db.engine import session
    from db.models import AuditLog
    with session() as s:
        actions = [a.action for a in s.exec(select(AuditLog).order_by(AuditLog.id))]
    assert actions[-2:] == ["user.role", "user.password"]
    assert b"another long one" not in (nmb_home / "study.db").read_bytes()


def _nmb_under_2_gib(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`nmb ARGS` with its address space capped at 2 GiB: reading an endless source whole ends
    in MemoryError rather than in the machine's memory."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap,
                          stdin=subprocess.DEVNULL if stdin is None else open(stdin, "rb"))  # noqa: SIM115


def test_a_password_source_is_read_only_as_far_as_a_password_goes(nmb_home: Path,
                                                                  tmp_path: Path) -> None:
    """An endless or huge password file or standard input is refused after MAX_PASSWORD
    characters' worth of bytes, not read whole; one that is not UTF-8 is one line, no traceback;
    nothing is added."""
    not_text = tmp_path / "latin1"
    not_text.write_bytes("pass\u00e9word long enough".encode("latin-1"))
    cases = [(("--password-file", "/dev/zero"), None,
              "nmb: the password file /dev/zero is longer than 1024 characters"),
             ((), "/dev/zero", "nmb: the password on standard input is longer than 1024 characters"),
             (("--password-file", str(not_text)), None,
              f"nmb: the password file {not_text} is not UTF-8 text"),
             ((), str(not_text), "nmb: the password on standard input is not UTF-8 text")]
    for source, stdin, line in cases:
        out = _nmb_under_2_gib("users", "add", "cy", "--role", "student", *source, stdin=stdin)
        assert (out.returncode, out.stderr, out.stdout) == (2, line + "\n", ""), source
    assert json.loads(nmb("users", "list", "--json").stdout) == []


@pytest.mark.parametrize("args", [
    ("agreement", "/dev/zero"),
    *(("import-responses", "/dev/zero", "--from", source, "--model", "m")
      for source in ("openai-batch", "chat-completions", "ollama", "vlmevalkit", "lm-eval",
                     "lmms-eval")),
    ("import-responses", "/dev/zero", "--from", "nmb"),
    ("package", "verify", "/dev/null", "--public-key", "/dev/zero"),
    ("assign", "--raters", "x", "--rubric", "/dev/zero"),
], ids=lambda args: " ".join(args[:4]))
def test_a_file_that_never_ends_is_refused_at_its_cap(nmb_home: Path, args: tuple[str, ...]
                                                      ) -> None:
    """A named file whose size says nothing (a device, a pipe such as `<(command)`: size 0) is
    read only up to its cap: one line, exit 2, not the machine's memory."""
    out = _nmb_under_2_gib(*args)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr[-300:]
    assert "/dev/zero" in out.stderr or "zero" in out.stderr


@pytest.mark.parametrize("suffix", [".tsv", ".xlsx"])
def test_a_prediction_file_that_never_ends_is_refused_at_its_cap(nmb_home: Path, tmp_path: Path,
                                                                 suffix: str) -> None:
    """A VLMEvalKit prediction file that is a device (or a pipe) is read only up to the cap of
    a response file: one line naming it, exit 2."""
    endless = tmp_path / f"MyVLM_NeuroBench{suffix}"
    endless.symlink_to("/dev/zero")
    out = _nmb_under_2_gib("import-responses", str(endless), "--from", "vlmevalkit",
                           "--model", "m")
    assert (out.returncode, out.stderr) == (
        2, f"nmb: {endless.name}: is more than the limit of 536,870,912 bytes\n")


LONG = "x" * 3000  # longer than a file name may be (ENAMETOOLONG)


@pytest.mark.parametrize("args, refusal", [
    (("import", LONG), "nmb: a file name is too long: 'xxxx"),
    (("backup", "--out", LONG), "nmb: a file name is too long: 'xxxx"),
    (("package", "verify", LONG), "nmb: a file name is too long: 'xxxx"),
    (("package", "keygen", "--out", ""), "nmb: '.': give the private key a file name"),
    (("package", "keygen", "--out", "."), "nmb: '.': give the private key a file name"),
], ids=["import", "backup", "package verify", "keygen ''", "keygen ."])
def test_a_file_name_that_cannot_be_one_is_one_line(nmb_home: Path, args: tuple[str, ...],
                                                    refusal: str) -> None:
    out = nmb(*args)
    assert (out.returncode, len(out.stderr.splitlines())) == (2, 1), out.stderr[-300:]
    assert out.stderr.startswith(refusal) and len(out.stderr) < 200


def test_an_accounts_single_sign_on_email_is_set_changed_and_removed(nmb_home: Path) -> None:
    assert nmb("users", "add", "ana", "--role", "expert", "--email", "Ana@Hospital.example",
               stdin="twelve chars\n").returncode == 0
    assert nmb("users", "add", "bo", "--role", "student", stdin="twelve chars\n").returncode == 0
    taken = nmb("users", "email", "bo", "ANA@hospital.example")
    assert taken.returncode == 2 and taken.stderr.strip() == (
        "nmb: the e-mail 'ana@hospital.example' is already the account 'ana''s")
    wrong = nmb("users", "email", "bo", "bo at hospital")
    assert wrong.returncode == 2 and wrong.stderr.strip() == (
        "nmb: the e-mail 'bo at hospital' is not an address like name@hospital.example")
    out = nmb("users", "email", "bo", "Bo@Hospital.example")
    assert out.returncode == 0 and out.stdout.strip() == "bo signs on as bo@hospital.example"
    assert nmb("users", "email", "ana").stdout.strip() == "ana has no single sign-on"
    assert nmb("users", "list").stdout.splitlines() == [
        "ana                      expert     active",
        "bo                       student    active   bo@hospital.example"]


def test_user_mistakes_are_one_line_and_exit_2(nmb_home: Path) -> None:
    cases = [
        ("users", "add", "x", "--role", "surgeon"),
        ("users", "add", "x", "--role", "admin", "--password-file", "/nonexistent/pw"),
        ("users", "disable", "nobody"),
        ("import", "/nonexistent/bundle"),
        ("frobnicate",),
    ]
    for args in cases:
        out = nmb(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert json.loads(nmb("status", "--json").stdout)["users"] == 0


def test_a_mistaken_argument_names_the_command_once(nmb_home: Path) -> None:
    """argparse's refusals carry the tool's name once (before: "nmb: nmb assign: ...",
    "nmb: nmb: unrecognized arguments: x")."""
    seed = nmb("assign", "--raters", "x", "--seed", "-1")
    assert seed.returncode == 2 and seed.stderr == (
        "nmb: assign: argument --seed: expected a seed from 0 to 2147483647, got '-1'\n")
    extra = nmb("status", "--json", "x")
    assert extra.returncode == 2 and extra.stderr == "nmb: unrecognized arguments: x\n"


def test_disabling_the_last_admin_is_one_line_and_changes_nothing(nmb_home: Path) -> None:
    assert nmb("users", "add", "root", "--role", "admin", stdin="twelve chars\n").returncode == 0
    out = nmb("users", "disable", "root")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "nmb: 'root' is the last enabled admin: add another admin before disabling it"]
    assert json.loads(nmb("users", "list", "--json").stdout)[0]["disabled"] is False


def test_render_and_refusals(nmb_home: Path, tmp_path: Path) -> None:
    import nibabel as nib
    import numpy as np

    img = tmp_path / "t1.nii.gz"
    nib.save(nib.Nifti1Image(np.arange(8 * 9 * 10, dtype=np.int16).reshape(8, 9, 10),
                             np.diag([2.0, 2.0, 2.0, 1.0])), img)
    out = nmb("render", str(img), "--plane", "coronal", "--out", str(tmp_path / "s.png"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fake = tmp_path / "notes.nii.gz"
    fake.write_text("not an image")
    for args in (["render", str(fake), "--out", str(tmp_path / "x.png")],
                 ["render", str(img), "--index", "99", "--out", str(tmp_path / "y.png")],
                 ["assign", "--raters", "nobody"],
                 ["calibrate", "--config", "7"]):
        bad = nmb(*args)
        assert bad.returncode == 2, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_exam_add(nmb_home: Path) -> None:
    from db.engine import session, upgrade
    from tests.factories import make_study

    upgrade()
    with session() as s:
        make_study(s, n_tasks=3, experts=0)
    out = nmb("exam", "add", "baseline", "--tasks", "task0", "task2")
    assert out.returncode == 0 and "2 tasks" in out.stdout and not out.stderr, out.stderr
    bad = nmb("exam", "add", "other", "--tasks", "task9")
    assert bad.returncode == 2 and "unknown task 'task9'" in bad.stderr
    for tasks in (["task0", "task9"], ["task1"]):  # an existing exam is not silently returned
        again = nmb("exam", "add", "baseline", "--tasks", *tasks)
        assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    opened = nmb("exam", "add", "open", "--review")
    assert opened.returncode == 0 and "3 tasks, review after finishing" in opened.stdout
    for args in (["baseline", "--tasks", "task0", "task2", "--review"], ["open"]):
        changed = nmb("exam", "add", *args)  # an exam's review setting does not change
        assert changed.returncode == 2 and "exists with review" in changed.stderr, changed.stderr
        assert len(changed.stderr.strip().splitlines()) == 1
    from sqlmodel import select

    from db.models import Exam, Task

    with session() as s:
        assert {e.name: e.review for e in s.exec(select(Exam))} == {"baseline": False,
                                                                    "open": True}
        s.add(Task(task_id="task2b", case_id="case2", family="differential", level=3,
                   prompt="Which diagnosis?", stages=["The CSF shows oligoclonal bands."]))
        s.commit()
    shared = nmb("exam", "add", "shared", "--tasks", "task2", "task2b")
    assert shared.returncode == 0 and "2 tasks" in shared.stdout  # opened, and warned of
    assert shared.stderr.startswith("nmb: warning: multi-turn tasks of one case in one exam "
                                    "(case 'case2': 'task2', 'task2b')"), shared.stderr
    assert len(shared.stderr.strip().splitlines()) == 1


def test_import_status_reimport_and_refusal(nmb_home: Path, tmp_path: Path) -> None:
    from tests.db.bundle.bundles import CASES, TASKS, responses, write_bundle

    bundle = write_bundle(tmp_path / "tiny")
    out = nmb("import", str(bundle), "--json")
    assert out.returncode == 0, out.stderr
    status = json.loads(nmb("status", "--json").stdout)
    assert (status["cases"], status["series"], status["tasks"], status["responses"]) == (
        len(CASES), sum(len(c["series"]) for c in CASES.values()), len(TASKS), len(responses()))
    again = nmb("import", str(bundle))
    assert again.returncode == 0 and json.loads(nmb("status", "--json").stdout) == status
    bad = tmp_path / "bad"
    write_bundle(bad, name="bad")
    (bad / "tasks.jsonl").write_text((bad / "tasks.jsonl").read_text().replace(
        '"level": 1', '"level": 4', 1) + "{not json\n")
    refused = nmb("import", str(bad))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "tasks.jsonl" in refused.stderr and "4" in refused.stderr
    assert json.loads(nmb("status", "--json").stdout) == status


def test_a_blank_volume_is_one_line_and_imports_with_allow_blank(nmb_home: Path, tmp_path: Path,
                                                                capsys) -> None:
    """`nmb import BUNDLE` with an all-zero NIfTI: exit 2, one line naming the series and case,
    nothing written; `--allow-blank` imports it (in-process: the flag's wiring)."""
    import nibabel as nib
    import numpy as np

    import cli
    from tests.db.bundle.bundles import snapshot, write_bundle

    bundle = write_bundle(tmp_path / "tiny")
    nib.save(nib.Nifti1Image(np.zeros((8, 8, 8), np.float32), np.eye(4)),
             bundle / "cases" / "c1" / "flair.nii")
    assert cli.main(["status"]) == 0  # the study exists before the refusal is compared
    before = snapshot(f"sqlite:///{nmb_home / 'study.db'}")
    capsys.readouterr()
    assert cli.main(["import", str(bundle)]) == 2
    assert capsys.readouterr().err == (
        'nmb: cases/c1/flair.nii: series "FLAIR" of case c1 is blank (every voxel is 0): '
        "--allow-blank imports it anyway\n")
    assert snapshot(f"sqlite:///{nmb_home / 'study.db'}") == before
    assert cli.main(["import", str(bundle), "--allow-blank"]) == 0
    assert "imported 2 cases, 3 series" in capsys.readouterr().out


def test_a_database_that_does_not_answer_is_one_line_without_its_password(nmb_home: Path) -> None:
    from tests.services import free_port

    url = f"postgresql+psycopg://nmb:s3cret-word@127.0.0.1:{free_port()}/study"  # nothing there
    r = nmb("status", env={**os.environ, "NMB_DATABASE_URL": url})
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("nmb: the database postgresql+psycopg://nmb:***@127.0.0.1:")
    assert "Connection refused" in line and "s3cret-word" not in line


@pytest.mark.parametrize("variable, value, says", [
    ("NMB_HOME", "A-FILE", "nmb: NMB_HOME {value} cannot be the study's folder: File exists"),
    ("NMB_HOME", "A-FILE/home", "nmb: NMB_HOME {value} cannot be the study's folder: Not a directory"),
    ("NMB_HOME", "/proc/nmb-home", "nmb: NMB_HOME {value} cannot be the study's folder: No such file"),
    ("NMB_DATABASE_URL", "not a url s3cret-word", "nmb: NMB_DATABASE_URL is not a database URL"),
    ("NMB_DATABASE_URL", "nosuchdb://nmb:s3cret-word@host/study",
     "nmb: NMB_DATABASE_URL is not a database URL"),
    ("NMB_DATABASE_URL", "mysql://nmb:s3cret-word@host/study",
     "nmb: NMB_DATABASE_URL is not a database URL"),
    ("NMB_DATABASE_URL", "postgresql+psycopg://nmb:s3cret-word@host:port/study",
     "nmb: NMB_DATABASE_URL is not a database URL"),
], ids=["home a file", "home under a file", "home in /proc", "url", "url dialect", "url driver",
        "url port"])
def test_a_study_place_that_cannot_be_is_one_line(tmp_path: Path, variable: str, value: str,
                                                  says: str) -> None:
    """NMB_HOME naming a file (or a folder no one can make) and an NMB_DATABASE_URL that is no
    URL ended every command in a traceback, exit 1. Now one line naming the variable (the URL
    itself is not shown: it may hold a password)."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    value = value.replace("A-FILE", str(a_file))
    r = nmb("status", env={variable: value})
    assert (r.returncode, len(r.stderr.splitlines())) == (2, 1), r.stderr[-400:]
    assert r.stderr.startswith(says.format(value=value)) and "s3cret-word" not in r.stderr
    assert a_file.read_text() == "x"


def test_a_study_db_that_is_not_a_database_is_one_line(nmb_home: Path) -> None:
    """NMB_HOME holding a study.db that is no SQLite database (another program's file, a
    damaged copy) ended every command in a DatabaseError traceback, exit 1; now one line naming
    the database, exit 2, the file as it was."""
    nmb_home.mkdir()
    junk = bytes(range(256)) * 64
    (nmb_home / "study.db").write_bytes(junk)
    r = nmb("status")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"nmb: the database sqlite:///{nmb_home / 'study.db'} failed: file is "
                        "not a database\n")
    assert (nmb_home / "study.db").read_bytes() == junk


def test_output_into_a_pipe_its_reader_closed_ends_quietly(tmp_path: Path) -> None:
    """`nmb status | head -0`: the reader is gone before nmb writes; nmb stops with SIGPIPE's
    exit status and no traceback (was a BrokenPipeError traceback)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "cli", "status"], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "NMB_HOME": str(tmp_path)})
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141


HUGE = "9" * 23  # more than a database integer column holds


@pytest.mark.parametrize("args, option", [
    (("calibrate", "--config", HUGE), "--config"),
    (("calibrate", "--check", HUGE), "--check"),
    (("calibrate", "--config", "1", "--run", HUGE), "--run"),
    (("revoke", "--config", HUGE, "--reason", "x"), "--config"),
    (("package", "freeze", "--config", HUGE, "--out", "p.zip"), "--config"),
    (("leaderboard", "--config", HUGE), "--config"),
    (("results", "--config", HUGE), "--config"),
    (("calibrate", "--config", "1", "--part", "dev", "--seed", "-1"), "--seed"),
    (("assign", "--raters", "x", "--seed", "-1"), "--seed"),
    (("assign", "--raters", "x", "--seed", HUGE), "--seed"),
    (("protocol", "register", "--seed", "-1"), "--seed"),
    (("protocol", "plan", "--expected-r", "0.9", "--seed", "-1"), "--seed"),
    (("package", "freeze", "--config", "1", "--out", "p.zip", "--seed", "-1"), "--seed"),
    (("agreement", "agreement.csv", "--reference", "r1", "--seed", "-1"), "--seed"),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_an_id_or_seed_out_of_range_is_one_line(nmb_home: Path, tmp_path: Path,
                                                args: tuple[str, ...], option: str) -> None:
    """An id larger than an integer column holds (SQLite: OverflowError) and a negative or
    huge seed (numpy: ValueError) ended in a traceback, exit 1; now one line naming the option,
    exit 2, before the study is opened."""
    csv = tmp_path / "agreement.csv"
    csv.write_text("item,rater,score\n" + "".join(f"i{i},r{r},{(i * r) % 5}\n"
                                                 for i in range(12) for r in (1, 2, 3)))
    args = tuple(str(csv) if a == "agreement.csv" else a for a in args)
    out = nmb(*args)
    assert (out.returncode, len(out.stderr.splitlines())) == (2, 1), out.stderr[-500:]
    assert f"argument {option}: expected" in out.stderr and "Traceback" not in out.stderr
    assert not (nmb_home / "study.db").exists()


@pytest.mark.parametrize("args", [
    ("backup",), ("export", "responses"), ("render", "IMAGE"), ("package", "keygen")],
    ids=lambda args: " ".join(args))
def test_an_out_file_named_as_a_folder_is_refused(nmb_home: Path, tmp_path: Path,
                                                   args: tuple[str, ...]) -> None:
    """`--out backups/` (a folder that does not exist yet) wrote a file named `backups`: the
    trailing slash was dropped with the user's intent. Now one line naming --out, nothing
    written."""
    import nibabel as nib
    import numpy as np

    image = tmp_path / "t1.nii.gz"
    nib.save(nib.Nifti1Image(np.arange(64, dtype=np.float32).reshape(4, 4, 4), np.eye(4)), image)
    args = tuple(str(image) if a == "IMAGE" else a for a in args)
    folder = tmp_path / "new"
    out = nmb(*args, "--out", f"{folder}/")
    assert (out.returncode, len(out.stderr.splitlines())) == (2, 1), out.stderr[-300:]
    assert out.stderr == f"nmb: --out '{folder}/' names a folder (it ends in /): give a file name\n"
    assert not folder.exists() and not (tmp_path / "new.pub").exists()


LONGER = "a" * 10_000


@pytest.mark.parametrize("args, ending", [
    (("results", "--by", LONGER), "is not one of family, level, family,level"),
    (("grade", "--model", LONGER, "--base-url", "http://127.0.0.1:9/v1"),
     "(a model name is 1-128 printable characters, no surrounding blanks)"),
    (("agreement", f"/tmp/{LONGER}"), ""),
    (("results", "--splits", LONGER), "e.g. direct=1,complex=2,multi-round=3"),
    (("protocol", "plan", "--expected-r", LONGER), ""),
], ids=["results --by", "grade --model", "agreement FILE", "results --splits",
        "protocol plan --expected-r"])
def test_a_10000_character_value_is_echoed_in_one_short_line(nmb_home: Path,
                                                             args: tuple[str, ...],
                                                             ending: str) -> None:
    """A refusal quoting a 10,000-character value printed it whole: one line of 10,000
    characters, many screens on a terminal. The line is cut in the middle, keeping its start
    (what is refused) and its end (what to do)."""
    out = nmb(*args)
    assert (out.returncode, len(out.stderr.splitlines())) == (2, 1), out.stderr[-300:]
    assert len(out.stderr) <= 501 and "Traceback" not in out.stderr
    assert out.stderr.startswith("nmb: ") and " ... " in out.stderr
    assert out.stderr.endswith(ending + "\n")


@pytest.mark.parametrize("args, says", [
    (("import", "FOLDER", "--from", "neural-medbench"), "nmb: FOLDER: is a folder, not a file"),
    (("render", "FOLDER", "--out", "o.png"), "nmb: FOLDER: is a folder, not a file"),
    (("render", "/dev/zero", "--out", "o.png"), "nmb: zero: is not a regular file"),
], ids=["import --from neural-medbench", "render", "render /dev/zero"])
def test_a_folder_or_device_given_as_a_file_is_named_as_such(nmb_home: Path, tmp_path: Path,
                                                              args: tuple[str, ...],
                                                              says: str) -> None:
    """A folder (or a device) where a file is expected was refused as "no such file" or "file
    not found", which sent the user looking for a file that is there."""
    folder = tmp_path / "direct-diagnosis.json"
    folder.mkdir()
    args = tuple(str(folder) if a == "FOLDER" else a for a in args)
    out = nmb(*args)
    assert (out.returncode, out.stderr) == (2, says.replace("FOLDER", folder.name) + "\n")
