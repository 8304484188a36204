"""`nmb import FILE... --from neural-medbench` and `nmb export release` as the README shows
them: a real process, a real study, exit codes, one line per mistake."""

import json
from pathlib import Path

from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Case, Series, Task
from tests.cli.test_cli import nmb
from tests.db.release_files import data_uri, multi_round, write, write_release


def _content(home: Path) -> tuple:
    with Session(engine_for(f"sqlite:///{home / 'study.db'}")) as s:
        return (sorted((c.case_id, c.ehr, json.dumps(c.ground_truth, sort_keys=True))
                       for c in s.exec(select(Case))),
                sorted((x.case_id, x.position, x.sha256) for x in s.exec(select(Series))),
                sorted((t.task_id, t.level, t.prompt, tuple(t.stages))
                       for t in s.exec(select(Task))))


def test_readme_release_import_reimport_and_round_trip(nmb_home: Path, tmp_path: Path) -> None:
    files = [str(f) for f in write_release(tmp_path / "release")]
    key = str(tmp_path / "release" / "answers.json")
    out = nmb("import", *files, "--from", "neural-medbench", "--answers", key)
    assert out.returncode == 0, out.stderr
    assert "imported 5 cases, 6 series, 6 tasks" in out.stdout
    assert "skipped 3 placeholder cases" in out.stdout
    again = nmb("import", *files, "--from", "neural-medbench", "--answers", key, "--json")
    summary = json.loads(again.stdout)
    assert again.returncode == 0 and summary["imported"]["new_cases"] == 0
    assert summary["imported"]["unchanged_cases"] == 5 and summary["placeholders"] == 3

    published, answers = tmp_path / "published", tmp_path / "private" / "answers.json"
    answers.parent.mkdir()
    exported = nmb("export", "release", "--out", str(published), "--answers", str(answers))
    assert exported.returncode == 0, exported.stderr
    assert "wrote direct-diagnosis.json (3 cases, 4 questions)" in exported.stdout
    other = tmp_path / "other-study"
    back = nmb("import", *map(str, sorted(published.glob("*.json"))), "--from",
               "neural-medbench", "--answers", str(answers), env={"NMB_HOME": str(other)})
    assert back.returncode == 0, back.stderr
    assert _content(other) == _content(nmb_home)


def test_release_mistakes_are_one_line_exit_2_nothing_written(nmb_home: Path,
                                                              tmp_path: Path) -> None:
    direct = tmp_path / "direct-diagnosis.json"
    dialogue = tmp_path / "multi-round-dialogue.json"
    cases = [
        (lambda: direct.write_text('{"case_id": "case_1"}'), [direct],
         "nmb: direct-diagnosis.json: is not a JSON list of cases (found an object)"),
        (lambda: write(direct, [{"case_id": "case_1", "text": "t",
                                 "images": ["data:image/jpeg;base64,/9j/4AAQ%%%"],
                                 "questions": [{"question_number": 1,
                                                "question_text": "q"}]}]), [direct],
         "nmb: direct-diagnosis.json[0].images[0]: is not valid base64"),
        (lambda: write(dialogue, [{"case_id": "case_1", "text": "t",
                                   "images": [data_uri(b"GIF89a", "image/gif")],
                                   "turns": [{"role": "doctor", "content": "q"}]}]), [dialogue],
         "nmb: multi-round-dialogue.json: is not in the multi-round shape this tool reads: "
         "cases have case_id, images, text, turns"),
        (lambda: write(dialogue, multi_round()), [direct, dialogue],
         "nmb: direct-diagnosis.json: no such file"),
    ]
    for make, paths, expected in cases:
        direct.unlink(missing_ok=True)
        make()
        out = nmb("import", *map(str, paths), "--from", "neural-medbench")
        assert out.returncode == 2, (expected, out.stdout)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert out.stderr.startswith(expected), out.stderr
    status = json.loads(nmb("status", "--json").stdout)
    assert (status["cases"], status["tasks"]) == (0, 0)
    assert not (nmb_home / "images").exists() or not any((nmb_home / "images").rglob("*.*"))
    assert [p.name for p in (nmb_home / "tmp").iterdir()] == [".lock"]
    write(direct, [])
    for args, expected in (
            (("import", str(direct), str(dialogue)), "nmb: import: a bundle is one folder"),
            (("import", str(direct)), "nmb: " + str(direct) + ": a bundle is a folder or a .zip "
                                      "(a Neural-MedBench release file? nmb import FILE... "
                                      "--from neural-medbench)"),
            (("export", "release", "--out", str(tmp_path / "o"), "--answers",
              str(tmp_path / "o" / "a.json")), "nmb: --answers")):
        out = nmb(*args)
        assert out.returncode == 2 and out.stderr.startswith(expected), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
