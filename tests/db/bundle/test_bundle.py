"""Bundle import: exact counts, idempotent re-import, additive responses, zip input, atomicity."""

import hashlib
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlalchemy import event, text
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid, import_bundle, validate_bundle
from db.bundle.store import sweep
from db.engine import engine_for, nmb_home
from db.models import AuditLog, Mask, Response, Series, Task
from db.status import counts
from db.study.masks import case_masks
from errors import UserError
from tests.db.bundle.bundles import MODELS, responses, snapshot, write_bundle, write_image

EXPECTED = {"cases": 2, "series": 3, "tasks": 3, "responses": 12}


def _import(url: str, path: Path, **kw):
    with Session(engine_for(url)) as s:
        return import_bundle(s, path, **kw)


def _counts(url: str) -> dict[str, int]:
    with Session(engine_for(url)) as s:
        return {k: v for k, v in counts(s).items() if k in EXPECTED}


def test_import_then_reimport_is_a_no_op(database_url: str, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    steps: list[float] = []
    summary = _import(database_url, bundle, actor="admin",
                      progress=lambda done, _msg: steps.append(done))
    assert (summary.new_cases, summary.new_series, summary.new_tasks, summary.new_responses) \
        == (2, 3, 3, 12)
    assert summary.images_inspected == 3 and summary.images_copied == 3
    assert steps == sorted(steps) and steps[-1] == 1.0
    assert _counts(database_url) == EXPECTED
    assert set(summary.timings) >= {"parse", "images", "copy", "db_insert", "total"}

    with Session(engine_for(database_url)) as s:
        series = s.exec(select(Series).order_by(Series.case_id, Series.position)).all()
        resp = s.exec(select(Response)).all()
        audit = s.exec(select(AuditLog)).all()
    shutil.rmtree(bundle / "cases")  # the study no longer depends on the bundle folder
    for row in series:
        stored = nmb_home() / row.path
        assert not Path(row.path).is_absolute()
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == row.sha256
    assert [r.sequence for r in series] == ["T1", "FLAIR", "DWI"]
    assert series[2].shape == [8, 8, 8, 2] and series[0].voxel_sizes == [2.0, 2.0, 2.0]
    codes = [r.blind_code for r in resp]
    assert len(set(codes)) == 12 and all(re.fullmatch(r"R-[0-9A-F]{10}", c) for c in codes)
    assert all(r.source == "model" and r.model in MODELS for r in resp)
    assert {r.response_id: r.turns for r in resp}["model-a-t3-0"] == ["turn 0", "turn 1"]
    assert [(a.action, a.actor, a.detail["responses"]) for a in audit] \
        == [("bundle.import", "admin", 12)]

    before = snapshot(database_url)
    again = _import(database_url, write_bundle(tmp_path / "b"))
    assert (again.new_cases, again.new_tasks, again.new_responses) == (0, 0, 0)
    assert (again.unchanged_cases, again.unchanged_tasks, again.unchanged_responses) == (2, 3, 12)
    assert again.images_inspected == 0  # content already in the study is not read again
    assert snapshot(database_url) == before  # no row, no audit entry, no file


def test_bundle_adding_responses_adds_just_those(database_url: str, tmp_path: Path) -> None:
    _import(database_url, write_bundle(tmp_path / "a", with_responses=responses(MODELS[:1])))
    assert _counts(database_url)["responses"] == 6
    with Session(engine_for(database_url)) as s:
        first = {r.response_id: r.blind_code for r in s.exec(select(Response))}
    summary = _import(database_url, write_bundle(tmp_path / "b", with_responses=responses()))
    assert (summary.new_responses, summary.unchanged_responses, summary.new_cases) == (6, 6, 0)
    assert _counts(database_url) == EXPECTED
    with Session(engine_for(database_url)) as s:
        now = {r.response_id: r.blind_code for r in s.exec(select(Response))}
    assert {k: now[k] for k in first} == first  # existing responses keep their blind codes


@pytest.mark.slow
def test_many_images_are_inspected_in_worker_processes(tmp_path: Path, monkeypatch) -> None:
    import db.bundle.images
    from tests.db.bundle.malformed.corpus import build

    monkeypatch.setattr(db.bundle.images, "PROCESS_BYTES", 1)
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(build("image_truncated_gz", tmp_path / "b"))
    assert [p.file for p in info.value.problems] == ["cases/c1/t1.nii.gz"]
    assert "truncated" in info.value.problems[0].message


@pytest.mark.slow
def test_workers_do_not_rerun_a_streamlit_page(tmp_path: Path, monkeypatch) -> None:
    """Streamlit installs the running page as `__main__`; spawned workers must not re-run it."""
    import types

    import db.bundle.images
    from tests.db.bundle.malformed.corpus import build

    marker = tmp_path / "page-ran"
    page = tmp_path / "page.py"
    page.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit('page ran')\n")
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(page)
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    monkeypatch.setattr(db.bundle.images, "PROCESS_BYTES", 1)
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(build("image_truncated_gz", tmp_path / "b"))
    assert [p.file for p in info.value.problems] == ["cases/c1/t1.nii.gz"]
    assert not marker.exists()
    assert sys.modules["__main__"] is fake_main


def test_dry_run_writes_nothing(sqlite_url: str, tmp_path: Path) -> None:
    before = snapshot(sqlite_url)
    summary = _import(sqlite_url, write_bundle(tmp_path / "b"), dry_run=True)
    assert summary.dry_run and summary.new_responses == 12
    assert snapshot(sqlite_url) == before


def test_dry_run_runs_the_inserts_then_rolls_back(sqlite_url: str, tmp_path: Path) -> None:
    """What only the database would refuse, the dry run meets as well."""
    before = snapshot(sqlite_url)
    remove = _inject(sqlite_url, "INSERT INTO RESPONSE", _raise)
    try:
        with pytest.raises(RuntimeError, match="injected"):
            _import(sqlite_url, write_bundle(tmp_path / "b"), dry_run=True)
    finally:
        remove()
    assert snapshot(sqlite_url) == before


def test_zip_of_the_bundle_folder(sqlite_url: str, tmp_path: Path) -> None:
    folder = write_bundle(tmp_path / "study-2026")
    archive = Path(shutil.make_archive(str(tmp_path / "study"), "zip", tmp_path, "study-2026"))
    assert _import(sqlite_url, archive).new_responses == 12
    assert _counts(sqlite_url) == EXPECTED
    flat = Path(shutil.make_archive(str(tmp_path / "flat"), "zip", folder))  # no top folder
    assert _import(sqlite_url, flat).unchanged_responses == 12


@pytest.mark.parametrize("entry", ["../evil.txt", "/etc/evil.txt"])
def test_zip_entry_leaving_the_bundle_is_refused(tmp_path: Path, entry: str) -> None:
    archive = tmp_path / "b.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bundle.json", "{}")
        zf.writestr(entry, "x")
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(archive)
    assert str(info.value.problems[0]).startswith(f"{entry}: zip entry")
    assert not (tmp_path.parent / "evil.txt").exists()


def test_zip_is_extracted_into_the_temp_area_and_removed(sqlite_url: str, tmp_path: Path,
                                                         nmb_home: Path) -> None:
    write_bundle(tmp_path / "study")
    archive = Path(shutil.make_archive(str(tmp_path / "study"), "zip", tmp_path, "study"))
    with validate_bundle(archive) as vb:
        assert vb.root.is_relative_to(nmb_home / "tmp") and (vb.root / "bundle.json").is_file()
    assert [p.name for p in (nmb_home / "tmp").iterdir()] == [".lock"]


def test_oversized_json_file_is_refused_before_it_is_read(tmp_path: Path, monkeypatch) -> None:
    import db.bundle.validate

    bundle = write_bundle(tmp_path / "b")
    size = (bundle / "responses.jsonl").stat().st_size
    monkeypatch.setattr(db.bundle.validate, "MAX_TEXT_FILE_BYTES", size - 1)
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    assert [str(p) for p in info.value.problems] == [
        f"responses.jsonl: is {size:,} bytes, more than the limit of {size - 1:,}"]


def test_text_over_its_limit_is_reported_field_by_field_at_once_and_text_at_it_imports(
        database_url: str, tmp_path: Path) -> None:
    """docs/bundle-format.md "Text limits": one problem per field over its limit, with the
    other problems; the same bundle with every field exactly at its limit imports whole."""
    from db.text_limits import ANSWER, PROMPT, RECORD, STAGES, TITLE

    def bundle(over: int) -> Path:
        root = write_bundle(tmp_path / f"b{over}")
        case = json.loads((root / "cases/c1/case.json").read_text())
        case.update(ehr="e" * (RECORD + over), title="t" * (TITLE + over))
        (root / "cases/c1/case.json").write_text(json.dumps(case))
        tasks = [json.loads(x) for x in (root / "tasks.jsonl").read_text().splitlines()]
        tasks[0]["prompt"] = "p" * (PROMPT + over)
        tasks[2]["stages"] = [f"s{i}" for i in range(STAGES - 1)] + ["s" * (PROMPT + over)]
        (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
        rows = [json.loads(x) for x in (root / "responses.jsonl").read_text().splitlines()]
        rows[1]["text"] = "a" * (ANSWER + over)
        rows = [r for r in rows if r["task_id"] != "t3"]  # its turns would not match the stages
        rows[2]["sample"] = "three" if over else 2  # a problem of another kind, reported too
        (root / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return root

    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle(1))
    assert [str(p) for p in info.value.problems] == [
        "cases/c1/case.json: title is 1,001 characters, more than the limit of 1,000",
        "cases/c1/case.json: ehr is 1,000,001 characters, more than the limit of 1,000,000",
        "tasks.jsonl:1: prompt is 100,001 characters, more than the limit of 100,000",
        "tasks.jsonl:3: stages[19] is 100,001 characters, more than the limit of 100,000",
        "responses.jsonl:2: text is 200,001 characters, more than the limit of 200,000",
        'responses.jsonl:3: sample "three" is not an integer',
    ]
    summary = _import(database_url, bundle(0))
    assert (summary.new_cases, summary.new_tasks, summary.new_responses) == (2, 3, 8)
    with Session(engine_for(database_url)) as s:
        assert len(s.get(Task, "t3").stages) == STAGES
        assert len(s.get(Response, "model-a-t1-1").text) == ANSWER


def test_zip_bomb_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bundle.json", b"\0" * 10_000_000)
    assert archive.stat().st_size < 100_000
    with pytest.raises(BundleInvalid, match="1 problem") as info:
        validate_bundle(archive, max_unzipped_bytes=1_000_000)
    assert "10,000,000 bytes" in str(info.value.problems[0])


def test_a_text_file_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(BundleInvalid, match="1 problem"):
        validate_bundle(tmp_path / "notes.txt")
    with pytest.raises(BundleInvalid, match="1 problem"):
        validate_bundle(tmp_path / "missing")


def _edit_first(path: Path, **changes) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[0].update(changes)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_existing_ids_with_different_content_are_problems(sqlite_url: str,
                                                          tmp_path: Path) -> None:
    _import(sqlite_url, write_bundle(tmp_path / "a"))
    before = snapshot(sqlite_url)
    changed = write_bundle(tmp_path / "b", with_responses=responses(samples=(0, 1, 2)))
    case = json.loads((changed / "cases/c2/case.json").read_text())
    case["title"] = "Something else"
    (changed / "cases/c2/case.json").write_text(json.dumps(case))
    _edit_first(changed / "tasks.jsonl", prompt="A new prompt")
    _edit_first(changed / "responses.jsonl", text="edited")
    with pytest.raises(BundleInvalid) as info:
        _import(sqlite_url, changed)
    assert [str(p) for p in info.value.problems] == [
        "cases/c2/case.json: case c2 already exists with different content (title); nmb import "
        "--revise stores it as a new revision",
        "tasks.jsonl:1: task t1 already exists with different content (prompt); nmb import "
        "--revise stores it as a new revision",
        "responses.jsonl:1: response model-a-t1-0 already exists with different content (text)",
    ]
    assert snapshot(sqlite_url) == before


def test_new_response_id_for_an_existing_model_task_sample_is_a_problem(
        sqlite_url: str, tmp_path: Path) -> None:
    _import(sqlite_url, write_bundle(tmp_path / "a"))
    again = write_bundle(tmp_path / "b")
    _edit_first(again / "responses.jsonl", response_id="renamed")
    with pytest.raises(BundleInvalid) as info:
        _import(sqlite_url, again)
    assert str(info.value.problems[0]) == ("responses.jsonl:1: model model-a already has "
                                           "sample 0 for task t1 (response model-a-t1-0)")


def _inject(url: str, when: str, action) -> None:
    """Run `action(conn)` once, right after the first statement starting with `when`."""
    eng = engine_for(url)
    state = {"done": False}

    def after(conn, cursor, statement, params, context, executemany) -> None:
        if not state["done"] and statement.lstrip().upper().startswith(when):
            state["done"] = True
            action(conn)

    event.listen(eng, "after_cursor_execute", after)
    return lambda: event.remove(eng, "after_cursor_execute", after)


def _raise(conn) -> None:
    raise RuntimeError("injected failure between rows")


def _steal_first_response_id(conn) -> None:
    # Another writer's row with the id the bundle is about to insert: a unique violation.
    conn.exec_driver_sql(
        "INSERT INTO response (response_id, task_id, source, model, sample, text, blind_code,"
        " created_at) VALUES ('model-a-t1-0', 't1', 'model', 'x', 9, 'x', 'X-1', '2026-01-01')")


@pytest.mark.parametrize(("when", "action", "error"), [
    ("INSERT INTO TASK", _raise, RuntimeError),
    ("INSERT INTO TASK", _steal_first_response_id, UserError),  # one line, not IntegrityError
])
def test_failure_half_way_leaves_no_rows(database_url: str, tmp_path: Path, when, action,
                                         error) -> None:
    before = snapshot(database_url)
    remove = _inject(database_url, when, action)
    try:
        with pytest.raises(error):
            _import(database_url, write_bundle(tmp_path / "b"))
    finally:
        remove()
    assert snapshot(database_url) == before  # the images it had stored are swept as well
    with engine_for(database_url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM response")).scalar() == 0
    assert _import(database_url, write_bundle(tmp_path / "b")).new_responses == 12


def test_the_documented_example_is_valid(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[3] / "docs" / "bundle-format.md").read_text()
    example = doc.split("## Example", 1)[1].split("## Export", 1)[0]
    files = re.findall(r"^`([\w./]+)`\n```json\n(.*?)```", example, flags=re.S | re.M)
    assert [f for f, _ in files] == ["bundle.json", "cases/c001/case.json", "tasks.jsonl",
                                     "responses.jsonl"]
    for name, body in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    for image in ("t1.nii.gz", "flair.nii.gz"):
        write_image(tmp_path / "cases" / "c001" / image)
    from tests.db.bundle.pictures import noise, save
    save(noise(), tmp_path / "cases" / "c001" / "figure.png", "PNG")
    with validate_bundle(tmp_path) as vb:
        assert (len(vb.cases), len(vb.series), len(vb.tasks), len(vb.responses)) == (1, 3, 3, 2)
        assert [(s.picture, s.plane) for s in vb.series] == [(False, None), (False, None),
                                                             (True, "axial")]
        assert vb.responses[0]["usage"] == {"prompt_tokens": 1830, "completion_tokens": 41,
                                            "images": 2}


def _with_mask(bundle: Path, *, series: str | None = None, seed: int = 0) -> Path:
    """Give case c1 a 0/1 mask on a finer grid (1 mm) than its 2 mm series, and let task t2
    (the lesion task) show it."""
    labels = np.zeros((16, 16, 16), np.float32)  # float 0/1 labels are whole numbers
    labels[4 + seed:9, 4:9, 4:9] = 1.0
    nib.save(nib.Nifti1Image(labels, np.diag([1.0, 1.0, 1.0, 1.0])),
             bundle / "cases" / "c1" / "lesion.nii.gz")
    case = json.loads((bundle / "cases" / "c1" / "case.json").read_text())
    case["masks"] = [{"label": "infarct", "file": "lesion.nii.gz",
                      **({"series": series} if series else {})}]
    (bundle / "cases" / "c1" / "case.json").write_text(json.dumps(case))
    tasks = [json.loads(x) for x in (bundle / "tasks.jsonl").read_text().splitlines()]
    tasks[1]["show_masks"] = True
    (bundle / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return bundle


def test_masks_are_imported_into_the_image_store(database_url: str, tmp_path: Path) -> None:
    summary = _import(database_url, _with_mask(write_bundle(tmp_path / "b"), series="FLAIR"))
    assert (summary.new_masks, summary.images_copied) == (1, 4)
    with Session(engine_for(database_url)) as s:
        [mask] = s.exec(select(Mask)).all()
        shown = {t.task_id: t.show_masks for t in s.exec(select(Task))}
        assert [m.label for m in case_masks(s, case_id="c1")] == ["infarct"]
        assert case_masks(s, case_id="c2") == []
    assert (mask.case_id, mask.position, mask.label, mask.series) == ("c1", 0, "infarct", "FLAIR")
    assert mask.shape == [16, 16, 16] and mask.voxel_sizes == [1.0, 1.0, 1.0]
    stored = nmb_home() / mask.path
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == mask.sha256
    assert shown == {"t1": False, "t2": True, "t3": False}

    before = snapshot(database_url)
    again = _import(database_url, _with_mask(write_bundle(tmp_path / "again"), series="FLAIR"))
    assert (again.new_cases, again.unchanged_cases, again.new_masks) == (0, 2, 0)
    assert snapshot(database_url) == before
    with pytest.raises(BundleInvalid) as err:  # another mask for an existing case: a conflict
        _import(database_url, _with_mask(write_bundle(tmp_path / "other"), seed=1))
    assert [str(p) for p in err.value.problems] == [
        "cases/c1/case.json: case c1 already exists with different content (masks); images are "
        "not revised: retire the case (nmb retire case) and import the corrected one under a "
        "new id"]
    assert snapshot(database_url) == before


def test_the_sweep_keeps_images_that_only_a_mask_references(sqlite_url: str,
                                                             tmp_path: Path) -> None:
    _import(sqlite_url, _with_mask(write_bundle(tmp_path / "b")))
    with Session(engine_for(sqlite_url)) as s:
        [mask] = s.exec(select(Mask)).all()
    dead = nmb_home() / "tmp" / "import-dead"  # a killed import that had stored the same file
    dead.mkdir()
    (dead / "added.txt").write_text(mask.path + "\n")
    assert sweep(engine_for(sqlite_url)) == 1
    assert (nmb_home() / mask.path).is_file()


def test_a_problem_line_caps_and_escapes_what_it_echoes(tmp_path: Path) -> None:
    """An unknown field's name is echoed as every value is (cut at 60 characters, unprintable
    characters escaped): a name of 100,000 characters with a line break stays one short line;
    a score of 1e400 (JSON's way to write infinity) is not a finite number."""
    root = write_bundle(tmp_path / "b")
    case = json.loads((root / "cases/c1/case.json").read_text())
    case["x" * 100_000 + "\n\u202e"] = 1
    case["scores"] = {"nihss": 1}
    (root / "cases/c1/case.json").write_text(json.dumps(case).replace('"nihss": 1', '"nihss": 1e400'))
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(root)
    assert [str(p) for p in info.value.problems] == [
        f'cases/c1/case.json: unknown field "{"x" * 56}...',
        'cases/c1/case.json: scores {"nihss": Infinity} is not an object of finite numbers']


def test_a_file_name_in_a_problem_line_cannot_turn_the_line_around(tmp_path: Path) -> None:
    """A case folder named with U+202E (right-to-left override): the problem's file part
    escapes it as its message does (before: kept raw, the rest of the line shown reversed)."""
    root = write_bundle(tmp_path / "b")
    (root / "cases/c1").rename(root / "cases/c\u202e1")
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(root)
    first = str(info.value.problems[0])
    assert first.startswith("cases/c\\u202e1/case.json: ") and "\u202e" not in first, first


def test_a_value_that_cannot_be_stored_names_its_key_in_a_short_line(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b")
    case = json.loads((root / "cases/c1/case.json").read_text())
    case["ground_truth"]["reasoning"] = {"k" * 100_000 + "\n": "a\u0000b"}
    (root / "cases/c1/case.json").write_text(json.dumps(case))
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(root)
    [problem] = [str(p) for p in info.value.problems]
    assert problem.startswith('cases/c1/case.json: ground_truth.reasoning."kkk')
    assert "contains a NUL character" in problem and len(problem) < 200 and "\n" not in problem


def test_the_summary_counts_agree_in_number(sqlite_url: str, tmp_path: Path) -> None:
    """A count of one names one thing ("1 response", not "1 responses"), in every part of the
    summary: new, unchanged, flagged."""
    rows = responses()
    _import(sqlite_url, write_bundle(tmp_path / "b", with_responses=rows[:1]))
    one_more = [{**rows[1], "text": "As GPT-4o, a model developed by OpenAI, I think so."}]
    summary = _import(sqlite_url, write_bundle(tmp_path / "c", with_responses=rows[:1] + one_more))
    assert str(summary) == (
        "tiny: imported 0 cases, 0 series, 0 tasks, 1 response; unchanged 2 cases, 3 tasks, "
        "1 response; 1 response names a model: redacted and held for review on /admin")


def test_a_blank_image_is_refused_unless_allowed(sqlite_url: str, tmp_path: Path) -> None:
    """An all-zero NIfTI volume and a picture of one colour: each refused on one line naming
    its series and case, nothing written; imported with allow_blank (`--allow-blank`)."""
    from PIL import Image

    bundle = write_bundle(tmp_path / "b")
    nib.save(nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), np.diag([2.0, 2.0, 2.0, 1.0])),
             bundle / "cases" / "c1" / "t1.nii.gz")
    Image.new("RGB", (40, 30), (12, 34, 56)).save(bundle / "cases" / "c2" / "key.png")
    case = json.loads((bundle / "cases" / "c2" / "case.json").read_text())
    case["series"].append({"sequence": "Key image", "file": "key.png", "plane": "axial"})
    (bundle / "cases" / "c2" / "case.json").write_text(json.dumps(case))
    before = snapshot(sqlite_url)
    with pytest.raises(BundleInvalid) as info:
        _import(sqlite_url, bundle)
    assert [str(p) for p in info.value.problems] == [
        'cases/c2/key.png: series "Key image" of case c2 is blank (every pixel has one colour): '
        "--allow-blank imports it anyway",
        'cases/c1/t1.nii.gz: series "T1" of case c1 is blank (every voxel is 0): --allow-blank '
        "imports it anyway"]
    assert snapshot(sqlite_url) == before
    assert _import(sqlite_url, bundle, allow_blank=True).new_series == 4


def test_small_images_are_inspected_in_process_large_ones_in_workers(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """Before issue 47: 12 images or more went to worker processes, however small (6-7 s of
    starting them for 90 tiny images); now the bytes they hold once decoded decide."""
    import nibabel as nib
    import numpy as np

    import db.bundle.images as images
    from tests.db.bundle.test_killed_import import _volume_gz

    small = tmp_path / "small.nii.gz"
    nib.save(nib.Nifti1Image(np.ones((8, 8, 4), np.int16), np.eye(4)), small)
    big = tmp_path / "big.nii.gz"
    big.write_bytes(_volume_gz()(1))  # 256^3 int16: 32 MiB decoded, about 150 KB on disk
    assert (images.decoded_bytes(small), images.decoded_bytes(big)) == (8 * 8 * 4 * 2, 2**25)
    started = []
    monkeypatch.setattr(images, "ProcessPoolExecutor",
                        lambda **kw: started.append(kw) or pytest.fail("workers started"))
    assert images.inspect_all([small] * 40) == [([8, 8, 4], [1.0, 1.0, 1.0], 1.0)] * 40
    monkeypatch.setattr(images.os, "cpu_count", lambda: 2)
    with pytest.raises(pytest.fail.Exception):
        images.inspect_all([big] * 16)  # 512 MiB decoded: worth the workers
    assert started


def _set_task(bundle: Path, line: int, **fields) -> Path:
    tasks = [json.loads(x) for x in (bundle / "tasks.jsonl").read_text().splitlines()]
    tasks[line - 1].update(fields)
    (bundle / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return bundle


def test_practice_is_a_boolean_stored_on_the_task_and_fixed_once_imported(
        sqlite_url: str, tmp_path: Path) -> None:
    """`"practice": true` marks a practice task (db.study.practice); another type is one line
    naming the file, line and field; `--revise` cannot change it (nothing written)."""
    bad = _set_task(write_bundle(tmp_path / "bad"), 2, practice="yes")
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bad)
    assert [str(p) for p in info.value.problems] == [
        'tasks.jsonl:2: practice "yes" is not true or false']
    _import(sqlite_url, _set_task(write_bundle(tmp_path / "b"), 2, practice=True))
    with Session(engine_for(sqlite_url)) as s:
        assert {t.task_id: t.practice for t in s.exec(select(Task))} == {
            "t1": False, "t2": True, "t3": False}
    before = snapshot(sqlite_url)
    with pytest.raises(BundleInvalid) as info:
        _import(sqlite_url, _set_task(write_bundle(tmp_path / "c"), 2, practice=False),
                revise=True)
    assert [p.message for p in info.value.problems] == ["task t2: practice cannot be revised"]
    assert snapshot(sqlite_url) == before
