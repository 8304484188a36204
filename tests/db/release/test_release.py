"""Importing Neural-MedBench release files as published, and exporting a study back.

The release files are built in the published shape (tests/db/release/release_files.py). Pictures pass
validation once the `pictures` branch is merged (here: the temporary acceptance commit).
"""

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid
from db.engine import database_url as current_url
from db.engine import engine_for, nmb_home, upgrade
from db.models import AuditLog, Case, Series, Task
from db.release import format as release_format
from db.release import reader as release
from db.release.export import export_release, natural_key
from db.release.reader import import_release
from errors import UserError
from grading.config import GraderSettings, store_config
from grading.grader import grade
from tests.db.bundle.bundles import snapshot
from tests.db.release.release_files import (
    ANSWERS,
    COLOUR_JPEG,
    DIALOGUE,
    GREY_JPEG,
    PROMPT,
    REVEALED,
    SAGITTAL_PNG,
    WIDE_PNG,
    data_uri,
    direct_diagnosis,
    multi_round,
    picture,
    write,
    write_release,
)


def _import(url: str, files: list[Path], **kw):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_release(s, files, actor="admin", **kw)


def _content(url: str) -> dict[str, list]:
    """What the import compares (and a package hashes): cases, series by image sha256, tasks."""
    with Session(engine_for(url)) as s:
        return {
            "cases": sorted((c.case_id, c.title, c.ehr, json.dumps(c.ground_truth, sort_keys=True))
                            for c in s.exec(select(Case))),
            "series": sorted((x.case_id, x.position, x.sequence, x.sha256)
                             for x in s.exec(select(Series))),
            "tasks": sorted((t.task_id, t.case_id, t.family, t.level, t.prompt, tuple(t.stages),
                             t.show_masks) for t in s.exec(select(Task))),
        }


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


@pytest.mark.slow
def test_release_files_import_as_published(database_url: str, tmp_path: Path) -> None:
    files = write_release(tmp_path / "release")
    summary = _import(database_url, files, answers=tmp_path / "release" / "answers.json")
    imported = summary.imported
    assert (imported.new_cases, imported.new_series, imported.new_tasks) == (5, 6, 6)
    assert summary.placeholders == 3 and "skipped 3 placeholder cases" in str(summary)
    assert summary.relabelled_images == 1 and summary.ignored_answers == 1
    with Session(engine_for(database_url)) as s:
        cases = {c.case_id: c for c in s.exec(select(Case))}
        tasks = {t.task_id: t for t in s.exec(select(Task))}
        series = {(x.case_id, x.position): x for x in s.exec(select(Series))}
    # The same case_id in two files: two cases, each prefixed by its file's split.
    assert sorted(cases) == ["complex-case_1", "dialogue-case_1", "direct-case_1",
                             "direct-case_3", "direct-case_5"]
    assert cases["direct-case_1"].ehr == "男, 45岁, 头痛三周。\n既往体健。"
    assert cases["direct-case_1"].title == "direct-diagnosis case_1"
    # Prompts exactly as written; levels and families from the file's name.
    assert {tid: (t.family, t.level, t.prompt) for tid, t in tasks.items()
            if tid.startswith("direct-case_3")} == {
        "direct-case_3-q1": ("differential", 1, PROMPT),
        "direct-case_3-q2": ("differential", 1, "病灶位于何处?")}
    assert (tasks["complex-case_1-q1"].level, tasks["complex-case_1-q1"].prompt) == (2, PROMPT)
    dialogue = tasks["dialogue-case_1-dialogue"]
    assert (dialogue.level, dialogue.prompt) == (3, DIALOGUE[0])
    assert dialogue.stages == [f"{info}\n\n{q}" for info, q in zip(REVEALED[1:], DIALOGUE[1:],
                                                                     strict=True)]
    # Ground truth: the answered cases only; lesion and reasoning where the key has them.
    assert cases["direct-case_1"].ground_truth == {
        "final_diagnosis": "胶质母细胞瘤", "differential": ["淋巴瘤", "转移瘤"],
        "lesion": "左额叶", "reasoning": "环形强化"}
    assert cases["direct-case_3"].ground_truth == {"final_diagnosis": "视神经炎",
                                                   "differential": ["缺血性视神经病变"]}
    assert cases["direct-case_5"].ground_truth is None
    assert cases["complex-case_1"].ground_truth is None
    # Pictures: named by their bytes (the PNG labelled image/jpeg is a .png), colour kept.
    wide = series["direct-case_1", 0]
    assert wide.sequence == "Image 1" and wide.path.endswith(".png")
    stored = (nmb_home() / wide.path).read_bytes()
    assert np.array_equal(_pixels(stored), _pixels(WIDE_PNG))  # upright, red mark still red
    assert tuple(_pixels(stored)[5, 5]) == (255, 0, 0)
    # every picture is stored as a metadata-free PNG (imaging.picture), JPEGs included
    assert [series["direct-case_3", k].path[-4:] for k in (0, 1)] == [".png", ".png"]
    with Image.open(nmb_home() / series["direct-case_3", 1].path) as im:
        assert im.size == Image.open(io.BytesIO(COLOUR_JPEG)).size and im.mode == "RGB"
    with Image.open(nmb_home() / series["direct-case_3", 0].path) as im:
        assert im.size == Image.open(io.BytesIO(GREY_JPEG)).size
    assert np.array_equal(_pixels((nmb_home() / series["direct-case_5", 0].path).read_bytes()),
                          _pixels(SAGITTAL_PNG))
    assert series["complex-case_1", 0].path.endswith(".png")  # (a WebP, stored as PNG)
    # The workspace is gone.
    assert [p.name for p in (nmb_home() / "tmp").iterdir()] == [".lock"]

    before = snapshot(database_url)
    again = _import(database_url, files, answers=tmp_path / "release" / "answers.json")
    assert not again.changed and again.imported.unchanged_cases == 5
    assert snapshot(database_url) == before  # no row, no audit entry, no file


@pytest.mark.slow
def test_answers_imported_later_are_added_and_audited(sqlite_url: str,
                                                                      tmp_path: Path) -> None:
    files = write_release(tmp_path / "release")
    _import(sqlite_url, files)
    summary = _import(sqlite_url, files, answers=tmp_path / "release" / "answers.json")
    assert summary.imported.new_answers == 3 and summary.imported.new_cases == 0
    with Session(engine_for(sqlite_url)) as s:
        audit = sorted(a.detail["case"] for a in s.exec(select(AuditLog))
                       if a.action == "case.answer")
        assert audit == ["dialogue-case_1", "direct-case_1", "direct-case_3"]
        missing = release_missing(s)
    assert missing == ("2 tasks have no reference answer: complex-case_1-q1, direct-case_5-q1 "
                       "(import the answers with nmb import FILE... --from neural-medbench "
                       "--answers ANSWERS.json)")


def release_missing(s: Session) -> str:
    from db.study.reference import require_reference

    with pytest.raises(UserError) as e:
        require_reference(s, task_ids=[t.task_id for t in s.exec(select(Task))])
    return str(e.value)


def test_grading_release_tasks_without_answers_is_refused(sqlite_url: str, tmp_path: Path,
                                                         ) -> None:
    from db.bundle.importer import new_blind_codes
    from db.models import Response

    _import(sqlite_url, write_release(tmp_path / "release"))
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        [code] = new_blind_codes(s, 1)
        s.add(Response(response_id="r1", task_id="direct-case_5-q1", source="model", model="m",
                       text="Glioma.", blind_code=code))
        config = store_config(s, GraderSettings(base_url="http://127.0.0.1:9/v1"))
        s.commit()
        with pytest.raises(UserError) as e:
            grade(s, config_id=config.id, api_key="sk-test")
    assert str(e.value).startswith("1 task has no reference answer: direct-case_5-q1 (import")


@pytest.mark.slow
def test_family_and_level_overrides_and_other_file_names(sqlite_url: str, tmp_path: Path) -> None:
    other = write(tmp_path / "Extra Cases.json", direct_diagnosis())
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, [other])
    assert [str(p) for p in e.value.problems] == [
        "Extra Cases.json: is not a release task file name (direct-diagnosis.json, "
        "complex-diseases.json, multi-round-dialogue.json): give --family and --level"]
    summary = _import(sqlite_url, [other], family="lesion", level=2)
    assert summary.imported.new_tasks == 4
    direct = write_release(tmp_path / "r", answers=False)[0]
    _import(sqlite_url, [direct], family="rationale")
    with Session(engine_for(sqlite_url)) as s:
        tasks = {t.task_id: (t.family, t.level) for t in s.exec(select(Task))}
    assert tasks["extra-cases-case_1-q1"] == ("lesion", 2)
    assert tasks["direct-case_1-q1"] == ("rationale", 1)


def _bad_case(**change) -> list[dict]:
    cases = direct_diagnosis()
    cases[0] = {**cases[0], **change}
    return cases


GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
HOSTILE = {
    "not a list": ("direct-diagnosis.json", {"case_id": "case_1"},
                   "direct-diagnosis.json: is not a JSON list of cases (found an object)"),
    "invalid JSON": ("direct-diagnosis.json", "RAW:[{", "direct-diagnosis.json: invalid JSON"),
    "case not an object": ("direct-diagnosis.json", ["case_1"],
                           'direct-diagnosis.json[0]: is not an object (found "case_1")'),
    "text not a string": ("direct-diagnosis.json", _bad_case(text=5),
                          "direct-diagnosis.json[0].text: is not a string"),
    "images not a list": ("direct-diagnosis.json", _bad_case(images="data:image/png;base64,"),
                          "direct-diagnosis.json[0].images: is not a list of data URIs"),
    "bad base64": ("direct-diagnosis.json", _bad_case(images=["data:image/png;base64,iV!!"]),
                   "direct-diagnosis.json[0].images[0]: is not valid base64"),
    "not base64": ("direct-diagnosis.json", _bad_case(images=["data:image/png,abc"]),
                   "direct-diagnosis.json[0].images[0]: is not a base64 data URI"),
    "not a data URI": ("direct-diagnosis.json", _bad_case(images=["https://x.org/a.png"]),
                       "direct-diagnosis.json[0].images[0]: is not a data URI"),
    "a GIF": ("direct-diagnosis.json", _bad_case(images=[data_uri(GIF, "image/png")]),
              "direct-diagnosis.json[0].images[0]: not a PNG, JPEG or WebP picture"),
    "text, no image": ("direct-diagnosis.json", _bad_case(images=[]),
                       "direct-diagnosis.json[0].images: is empty: a case needs at least one "
                       "image (a placeholder has neither text nor images)"),
    "case id escapes": ("direct-diagnosis.json", _bad_case(case_id="../x"),
                        'direct-diagnosis.json[0].case_id: "../x" is not usable as a case id'),
    "question number twice": (
        "direct-diagnosis.json",
        _bad_case(questions=[{"question_number": 3, "question_text": PROMPT}]),
        "direct-diagnosis.json[2].questions[0].question_number: 3 is used twice in the file "
        "(first at direct-diagnosis.json[0].questions[0])"),
    "empty prompt": ("direct-diagnosis.json",
                     _bad_case(questions=[{"question_number": 1, "question_text": " "}]),
                     "direct-diagnosis.json[0].questions[0].question_text: is empty"),
    "unknown field": ("direct-diagnosis.json", _bad_case(answer="x"),
                      "direct-diagnosis.json: is not in the release shape this tool reads: "
                      "cases have answer, case_id, images, questions, text"),
    "unknown multi-round shape": (
        "multi-round-dialogue.json",
        [{"case_id": "case_1", "text": "t", "images": [], "dialogue": [{"role": "user"}]}],
        "multi-round-dialogue.json: is not in a multi-round shape this tool reads: cases "
        "have case_id, dialogue, images, text, dialogue have role (expected cases of case_id, "
        "text, images, questions; questions of question_number, question_text and, "
        "optionally, information; or cases of case_id, text, images, dialogue; dialogue of "
        "round, question and, optionally, information; give --map FILE.json for other field "
        "names;"),
    "unknown round fields": (
        "multi-round-dialogue.json",
        [{**multi_round()[0], "questions": [{"question_number": 1, "question_text": "q",
                                             "answer": "a"}]}],
        "multi-round-dialogue.json: is not in a multi-round shape this tool reads: cases "
        "have case_id, images, questions, text, questions have answer, question_number, "
        "question_text"),
    "one round": ("multi-round-dialogue.json",
                  [{**multi_round()[0], "questions": multi_round()[0]["questions"][:1]}],
                  "multi-round-dialogue.json[0].questions: holds 1 round: a multi-round case "
                  "needs at least two"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_release_files_are_refused_with_one_line(sqlite_url: str, tmp_path: Path,
                                                         name: str) -> None:
    file, content, expected = HOSTILE[name]
    path = tmp_path / file
    if isinstance(content, str):
        path.write_text(content.removeprefix("RAW:"))
    else:
        write(path, content)
    before = snapshot(sqlite_url)
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, [path])
    assert len(e.value.problems) == 1, e.value.report()
    assert str(e.value.problems[0]).startswith(expected), str(e.value.problems[0])
    assert snapshot(sqlite_url) == before  # nothing written, the workspace removed


def test_caps_apply_before_decoding(sqlite_url: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "direct-diagnosis.json", direct_diagnosis())
    before = snapshot(sqlite_url)
    for module, cap, value, expected in (
            (release_format, "MAX_DATA_URI_CHARS", 100_000,
             "direct-diagnosis.json[0].images[0]: is a data URI of "),
            (release, "MAX_IMAGES_PER_CASE", 1,
             "direct-diagnosis.json[2].images: holds 2 images, more than the limit of 1"),
            (release, "MAX_CASES", 4,
             "direct-diagnosis.json: holds 5 cases, more than the limit of 4"),
            (release, "MAX_RELEASE_FILE_BYTES", 100, "direct-diagnosis.json: is ")):
        with monkeypatch.context() as m:
            m.setattr(module, cap, value)
            with pytest.raises(BundleInvalid) as e:
                _import(sqlite_url, [path])
        assert [str(p)[:len(expected)] for p in e.value.problems] == [expected]
    assert snapshot(sqlite_url) == before


def test_answer_key_problems_name_the_key(sqlite_url: str, tmp_path: Path) -> None:
    files = write_release(tmp_path / "r", answers=False)
    key = write(tmp_path / "key.json", {
        "case_9": {"diagnosis": "x", "differential": []},  # no such case
        "direct-case_5": {"differential": []},
        "direct-case_3": {"diagnosis": "x", "differential": [], "notes": "?"},
    })
    before = snapshot(sqlite_url)
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, files, answers=key)
    assert sorted(str(p) for p in e.value.problems) == [
        'key.json["case_9"]: names no case of the files imported',
        'key.json["direct-case_3"]: unknown field "notes"',
        'key.json["direct-case_5"]: missing required field "diagnosis"']
    assert snapshot(sqlite_url) == before


@pytest.mark.slow
def test_a_changed_release_case_is_refused_where_it_is_written(sqlite_url: str,
                                                               tmp_path: Path) -> None:
    files = write_release(tmp_path / "r")
    _import(sqlite_url, files)
    cases = direct_diagnosis()
    cases[4]["text"] = "changed"
    write(files[0], cases)
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, files)
    assert [str(p) for p in e.value.problems] == [
        "direct-diagnosis.json[4]: case direct-case_5 already exists with different content "
        "(ehr); nmb import --revise stores it as a new revision"]


@pytest.mark.slow
def test_export_release_round_trips(sqlite_url: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_release(tmp_path / "release")
    _import(sqlite_url, files, answers=tmp_path / "release" / "answers.json")
    first = _content(sqlite_url)
    out = tmp_path / "published"
    with Session(engine_for(sqlite_url)) as s:
        with pytest.raises(UserError, match="inside --out"):
            export_release(s, out, answers=out / "answers.json")
        written = export_release(s, out, answers=tmp_path / "key.json")
    assert written.files == {"direct-diagnosis.json": (3, 4), "complex-diseases.json": (1, 1),
                             "multi-round-dialogue.json": (1, 3)}
    assert written.answers == 3
    direct = json.loads((out / "direct-diagnosis.json").read_text())
    assert [c["case_id"] for c in direct] == ["case_1", "case_3", "case_5"]
    assert [q["question_number"] for c in direct for q in c["questions"]] == [1, 2, 3, 4]
    assert direct[0]["images"][0].startswith("data:image/png;base64,")  # its true type
    assert direct[1]["images"][1].startswith("data:image/png;base64,")  # a JPEG, kept as PNG
    [dialogue] = json.loads((out / "multi-round-dialogue.json").read_text())
    assert dialogue["questions"][1] == {"question_number": 2, "question_text": DIALOGUE[1],
                                        "information": REVEALED[1]}
    key = json.loads((tmp_path / "key.json").read_text())
    assert key["direct-case_1"] == ANSWERS["direct-case_1"]

    monkeypatch.setenv("NMB_HOME", str(tmp_path / "empty-study"))
    url = current_url()
    upgrade(url)
    _import(url, sorted(out.glob("*.json")), answers=tmp_path / "key.json")
    assert _content(url) == first  # same ids, records, image sha256s, prompts, answers


def test_export_skips_cases_with_volumes(sqlite_url: str, tmp_path: Path) -> None:
    from db.bundle.importer import import_bundle
    from tests.db.bundle.bundles import write_bundle

    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "b"))
    _import(sqlite_url, [write(tmp_path / "direct-diagnosis.json", direct_diagnosis()[:1])])
    with Session(engine_for(sqlite_url)) as s:
        written = export_release(s, tmp_path / "out")
    assert written.volume_cases == 2 and written.files["direct-diagnosis.json"] == (1, 1)
    assert "skipped 2 cases with MRI volumes" in str(written)


def test_a_picture_stored_once_for_two_cases(sqlite_url: str, tmp_path: Path) -> None:
    png = picture("PNG", (32, 32), seed=9)  # 16 x 16 was all red square: blank
    cases = [{"case_id": f"c{k}", "text": "t", "images": [data_uri(png, "image/png")],
              "questions": [{"question_number": k, "question_text": "q"}]} for k in (1, 2)]
    _import(sqlite_url, [write(tmp_path / "direct-diagnosis.json", cases)])
    with Session(engine_for(sqlite_url)) as s:
        shas = {x.sha256 for x in s.exec(select(Series))}
    assert len(shas) == 1
    assert len(list((nmb_home() / "images").rglob("*.png"))) == 1
    assert hashlib.sha256((next((nmb_home() / "images").rglob("*.png"))).read_bytes()
                          ).hexdigest() in shas


def test_the_natural_order_takes_every_printable_id() -> None:
    """Ids sort with their digit runs as numbers; an id holding a digit `int` cannot read
    ("²", allowed in a case id) is text, not a ValueError that stopped the export."""
    ids = ["case_10", "case_2", "case1\u00b2", "case1", "case_\u0663"]
    assert sorted(ids, key=natural_key) == ["case1", "case1\u00b2", "case_2", "case_\u0663",
                                            "case_10"]


def test_export_release_refuses_an_answer_file_it_cannot_write(sqlite_url: str,
                                                               tmp_path: Path) -> None:
    """`--answers private/answers.json` with no folder `private` (or a folder as the file) is one
    line naming it, before the release files are written (it was a FileNotFoundError traceback
    after them)."""
    files = write_release(tmp_path / "release")
    _import(sqlite_url, files, answers=tmp_path / "release" / "answers.json")
    out = tmp_path / "published"
    (tmp_path / "a-folder").mkdir()
    with Session(engine_for(sqlite_url)) as s:
        with pytest.raises(UserError, match="no folder .*private"):
            export_release(s, out, answers=tmp_path / "private" / "answers.json")
        with pytest.raises(UserError, match="a-folder is a folder"):
            export_release(s, out, answers=tmp_path / "a-folder")
    assert not out.exists()


def test_export_release_never_writes_through_a_link_at_a_temporary_name(sqlite_url: str,
                                                                        tmp_path: Path) -> None:
    """Another user may plant `.FILE.partial` (the name the export wrote to before it renamed)
    in a shared folder, as a link to a file of whoever exports."""
    files = write_release(tmp_path / "release")
    _import(sqlite_url, files, answers=tmp_path / "release" / "answers.json")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / ".key.json.partial").symlink_to(victim)
    with Session(engine_for(sqlite_url)) as s:
        assert export_release(s, tmp_path / "out", answers=tmp_path / "key.json").answers == 3
    assert victim.read_text() == "precious"
    assert json.loads((tmp_path / "key.json").read_text())
    assert [p.name for p in tmp_path.glob(".key.json*")] == [".key.json.partial"]
