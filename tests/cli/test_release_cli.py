"""`nmb import FILE... --from neural-medbench` and `nmb export release` as docs/commands.md shows
them: a real process, a real study, exit codes, one line per mistake."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.engine import engine_for
from db.models import Case, Series, Task
from tests.cli.test_cli import nmb
from tests.db.bundle import pictures
from tests.db.bundle.bundles import snapshot
from tests.db.release.release_files import (
    PROMPT,
    data_uri,
    direct_diagnosis,
    multi_round,
    write,
    write_release,
)

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


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
    cases, _, tasks = _content(nmb_home)
    assert [c[0] for c in cases] == ["complex-case_1", "dialogue-case_1", "direct-case_1",
                                     "direct-case_3", "direct-case_5"]
    assert ("direct-case_1-q1", 1, PROMPT, ()) in tasks  # the question as written
    assert json.loads(dict((c[0], c[2]) for c in cases)["direct-case_1"]) == {
        "final_diagnosis": "胶质母细胞瘤", "differential": ["淋巴瘤", "转移瘤"],
        "lesion": "左额叶", "reasoning": "环形强化"}
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
         "nmb: multi-round-dialogue.json: is not in a multi-round shape this tool reads: "
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
            (("import", str(direct), str(dialogue)), "nmb: --from bundle imports one path"),
            (("import", str(direct)), "nmb: " + str(direct) + ": a bundle is a folder or a .zip "
                                      "(a Neural-MedBench release file? nmb import FILE... "
                                      "--from neural-medbench)"),
            (("export", "release", "--out", str(tmp_path / "o"), "--answers",
              str(tmp_path / "o" / "a.json")), "nmb: --answers")):
        out = nmb(*args)
        assert out.returncode == 2 and out.stderr.startswith(expected), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def _hostile_pictures(folder: Path) -> dict[str, tuple[Path, str]]:
    """The hostile pictures of issue 23 item 1, as files (what a data URI would decode to),
    with what the one line must say."""
    folder.mkdir()
    big = pictures.save(pictures.Image.new("L", (1, 200_000)), folder / "tall.png", "PNG")
    return {
        "decompression bomb": (pictures.png_bomb(folder / "bomb.png"),
                               "more than the limit of 40,000,000"),
        "truncated JPEG": (pictures.truncated_jpeg(folder / "cut.jpg"),
                           "JPEG data is truncated or corrupt"),
        "1 x 200,000": (big, "1 x 200,000"),
        "animated PNG": (pictures.animated(folder / "anim.png", "PNG"),
                         "animated picture (3 frames)"),
        "GIF": (pictures.animated(folder / "anim.gif", "GIF"),
                "not a PNG, JPEG or WebP picture"),
        "16-bit": (pictures.sixteen_bit(folder / "deep.png"), "8 bits per channel"),
    }


def test_hostile_release_pictures_one_line_exit_2_study_unchanged(nmb_home: Path, tmp_path: Path,
                                                                  capsys) -> None:
    """Each hostile picture of issue 23 item 1 as a data URI in a release file: `nmb import
    --from neural-medbench` prints one line naming the image by its JSON path, exits 2, and
    leaves the database, the image store and the temp area as they were (the study already
    holds the release). A CMYK JPEG is handled: stored as RGB."""
    files = [str(f) for f in write_release(tmp_path / "release")]
    assert cli.main(["import", *files, "--from", "neural-medbench"]) == 0
    capsys.readouterr()
    url = f"sqlite:///{nmb_home / 'study.db'}"
    before = snapshot(url)
    assert before["files"]  # the image store is not empty
    bad = tmp_path / "bad" / "direct-diagnosis.json"
    bad.parent.mkdir()
    for name, (picture_file, expected) in _hostile_pictures(tmp_path / "pictures").items():
        cases = direct_diagnosis()
        cases[0]["case_id"] = "case_99"  # a new case, so an accepted picture would be written
        cases[0]["images"] = [data_uri(picture_file.read_bytes(), "image/jpeg")]
        write(bad, cases)
        assert cli.main(["import", str(bad), "--from", "neural-medbench"]) == 2, name
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (name, err)
        assert err.startswith("nmb: direct-diagnosis.json[0].images[0]"), (name, err)
        assert expected in err, (name, err)
        assert snapshot(url) == before, name

    cmyk = tmp_path / "pictures" / "cmyk.jpg"
    pictures.save(pictures.wide_figure((300, 100)).convert("CMYK"), cmyk, "JPEG", quality=95)
    cases = direct_diagnosis()[:1]
    cases[0]["case_id"] = "case_99"
    cases[0]["images"] = [data_uri(cmyk.read_bytes(), "image/jpeg")]
    write(bad, cases)
    assert cli.main(["import", str(bad), "--from", "neural-medbench"]) == 0, capsys.readouterr()
    with Session(engine_for(url)) as s:
        [row] = s.exec(select(Series).where(Series.case_id == "direct-case_99")).all()
    with pictures.Image.open(nmb_home / row.path) as im:
        assert (im.format, im.mode, im.size) == ("PNG", "RGB", (300, 100))


def test_export_release_to_where_no_file_can_be_is_one_line(nmb_home: Path,
                                                            tmp_path: Path) -> None:
    """`--out` or `--answers` under a regular file, or in /proc (no new file there), ended in a
    NotADirectoryError or FileNotFoundError traceback, exit 1; `--format`, which the help says is
    not for release, was ignored. Now one line naming the option, exit 2, no file written."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    published = tmp_path / "published"
    for args, expected in (
            (("--out", str(a_file / "o")), f"nmb: cannot write --out {a_file / 'o'}: Not a directory"),
            (("--out", "/proc/nmb-release"), "nmb: cannot write --out /proc/nmb-release: No such file"),
            (("--out", str(published), "--answers", "/proc/nmb-answers.json"),
             "nmb: cannot write --answers /proc/nmb-answers.json: No such file"),
            (("--out", str(published), "--format", "parquet"),
             "nmb: export: --format is not for release (its files are JSON)")):
        out = nmb("export", "release", *args)
        assert (out.returncode, len(out.stderr.splitlines())) == (2, 1), out.stderr[-400:]
        assert out.stderr.startswith(expected), out.stderr
    assert not published.exists()
