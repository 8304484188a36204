"""The synthetic demo bundle: structure, references, laterality, responses and truth table."""

import hashlib
import json
import socket
from collections import Counter
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from demo.bundle import (
    MARKER,
    MODELS,
    demo_truth,
    write_demo_bundle,
    write_scale_bundle,
)
from errors import UserError
from rubric import DEFAULT_RUBRIC, load_rubric


def _no_network(*args, **kwargs):
    raise AssertionError("the demo bundle must not touch the network")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _no_network)
        mp.setattr(socket, "create_connection", _no_network)
        return write_demo_bundle(tmp_path_factory.mktemp("demo") / "bundle", resolution_mm=2)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _cases(bundle: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((bundle / "cases").glob("*/case.json"))}


@pytest.mark.slow
def test_structure_and_references(bundle: Path) -> None:
    meta = json.loads((bundle / "bundle.json").read_text())
    assert meta["format"] == "nmb-bundle/1" and "SYNTHETIC" in meta["description"]
    cases = _cases(bundle)
    assert len(cases) >= 9
    for folder, case in cases.items():
        assert case["case_id"] == folder
        assert set(case) >= {"case_id", "title", "ehr", "scores", "series", "ground_truth"}
        assert set(case["ground_truth"]) == {"final_diagnosis", "differential", "lesion",
                                             "reasoning"}
        assert case["scores"] and all(isinstance(v, int | float) for v in case["scores"].values())
        sequences = [s["sequence"] for s in case["series"]]
        assert "T1" in sequences and 2 <= len(sequences) <= 4 and len(set(sequences)) == len(
            sequences)
        for s in case["series"]:
            assert (bundle / "cases" / folder / s["file"]).is_file()
    tasks = _jsonl(bundle / "tasks.jsonl")
    responses = _jsonl(bundle / "responses.jsonl")
    assert len({t["task_id"] for t in tasks}) == len(tasks) >= 12
    assert len({r["response_id"] for r in responses}) == len(responses)
    assert {t["case_id"] for t in tasks} <= set(cases)
    assert {r["task_id"] for r in responses} == {t["task_id"] for t in tasks}


def test_tasks_cover_families_levels_and_stages(bundle: Path) -> None:
    tasks = _jsonl(bundle / "tasks.jsonl")
    pairs = {(t["family"], t["level"]) for t in tasks}
    assert pairs >= {(f, lv) for f in ("differential", "lesion", "rationale") for lv in (1, 2, 3)}
    for t in tasks:
        if t["level"] == 3:
            assert 2 <= len(t["stages"]) <= 3 and all(s.strip() for s in t["stages"])
        else:
            assert "stages" not in t


def test_responses_cover_models_and_samples_with_turns(bundle: Path) -> None:
    tasks = {t["task_id"]: t for t in _jsonl(bundle / "tasks.jsonl")}
    responses = _jsonl(bundle / "responses.jsonl")
    assert len(MODELS) >= 4
    by_task: dict[str, set] = {tid: set() for tid in tasks}
    for r in responses:
        by_task[r["task_id"]].add((r["model"], r["sample"]))
        task = tasks[r["task_id"]]
        if task["level"] == 3:
            assert len(r["turns"]) == len(task["stages"])
        else:
            assert "turns" not in r
    expected = {(m, s) for m in MODELS for s in range(5)}
    assert all(pairs == expected for pairs in by_task.values())


def test_everything_says_synthetic_and_texts_hide_model_names(bundle: Path) -> None:
    for case in _cases(bundle).values():
        assert "SYNTHETIC" in case["title"] and "SYNTHETIC" in case["ehr"]
    for r in _jsonl(bundle / "responses.jsonl"):
        for text in [r["text"], *r.get("turns", [])]:
            assert MARKER in text
            assert not any(m.lower() in text.lower() for m in MODELS), r["response_id"]
    texts = {r["text"] for r in _jsonl(bundle / "responses.jsonl")}
    assert len(texts) > 100  # varied, not one template repeated


def _bright_centroid_x(path: Path, threshold: float) -> tuple[float, float]:
    img = nib.load(path)
    ijk = np.argwhere(np.asanyarray(img.dataobj) > threshold)
    xyz = nib.affines.apply_affine(img.affine, ijk)
    return float(xyz[:, 0].mean()), float((xyz[:, 0] < 0).mean())


def test_painted_lesions_have_the_right_side(bundle: Path) -> None:
    # syn-01: LEFT MCA infarct, bright on DWI; x < 0 is left in RAS+ world coordinates.
    x, left_fraction = _bright_centroid_x(bundle / "cases/syn-01/flair.nii.gz", 0)
    assert abs(x) < 5  # FLAIR does not show the acute infarct yet: the brain is centred
    x, left_fraction = _bright_centroid_x(bundle / "cases/syn-01/dwi.nii.gz", 700)
    assert x < -25 and left_fraction > 0.97
    # syn-05: RIGHT frontal glioblastoma, enhancing rim on T1C.
    x, left_fraction = _bright_centroid_x(bundle / "cases/syn-05/t1c.nii.gz", 1250)
    assert x > 15 and left_fraction < 0.03
    # syn-03: RIGHT hippocampal sclerosis, bright on FLAIR.
    x, left_fraction = _bright_centroid_x(bundle / "cases/syn-03/flair.nii.gz", 720)
    assert x > 15 and left_fraction < 0.05


def test_nifti_headers(bundle: Path) -> None:
    img = nib.load(bundle / "cases/syn-01/adc.nii.gz")  # stored at twice the voxel size
    hdr = img.header
    assert hdr.get_data_dtype() == np.int16
    assert int(hdr["qform_code"]) > 0 and int(hdr["sform_code"]) > 0
    assert np.allclose(img.affine, np.diag([4, 4, 4, 1]) + np.array(
        [[0, 0, 0, -98], [0, 0, 0, -134], [0, 0, 0, -72], [0, 0, 0, 0]]))
    assert b"SYNTHETIC" in hdr["descrip"].tobytes()
    assert nib.aff2axcodes(img.affine) == ("R", "A", "S")
    adc = np.asanyarray(img.dataobj)
    assert 2500 < np.percentile(adc[adc > 0], 99.9) < 3600  # CSF ADC ~3.0e-3 mm2/s


def test_stroke_case_has_series_on_two_grids(bundle: Path) -> None:
    """syn-01's DWI and ADC have twice the T1's voxel size, over the same anatomy."""
    t1, dwi = (nib.load(bundle / f"cases/syn-01/{s}.nii.gz") for s in ("t1", "dwi"))
    assert np.allclose(nib.affines.voxel_sizes(t1.affine), 2)
    assert np.allclose(nib.affines.voxel_sizes(dwi.affine), 4)
    assert np.allclose(dwi.affine[:3, 3], t1.affine[:3, 3])  # voxel 0 at the same point
    assert [(n + 1) // 2 for n in t1.shape] == list(dwi.shape)
    x, left_fraction = _bright_centroid_x(bundle / "cases/syn-01/dwi.nii.gz", 700)
    assert x < -25 and left_fraction > 0.97  # the lesion survives the coarser grid


def test_demo_truth_matches_responses_and_covers_every_error_class(bundle: Path) -> None:
    truth = demo_truth()
    ids = {r["response_id"] for r in _jsonl(bundle / "responses.jsonl")}
    assert set(truth) == ids
    tags = Counter(t for v in truth.values() for t in v["error_tags"])
    assert set(tags) == set(load_rubric(DEFAULT_RUBRIC).error_class_keys)  # the demo's
    correct = [v["correct"] for v in truth.values()]
    assert any(correct) and not all(correct)
    assert truth == demo_truth()  # deterministic
    assert demo_truth(seed=1) != truth


def test_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    with pytest.raises(UserError, match="not an empty folder"):
        write_demo_bundle(tmp_path)


@pytest.mark.slow
def test_scale_bundle_files_differ_and_load(tmp_path: Path) -> None:
    dest = write_scale_bundle(tmp_path / "scale", n_cases=3, n_sequences=2, n_responses=50,
                              resolution_mm=4)
    files = sorted((dest / "cases").glob("*/*.nii.gz"))
    assert len(files) == 6
    assert len({hashlib.sha256(f.read_bytes()).hexdigest() for f in files}) == 6
    a, b = (np.asanyarray(nib.load(f).dataobj) for f in files[:3:2])  # T1 of cases 1 and 2
    assert a.shape == b.shape and a.dtype == np.int16
    assert np.array_equal(a[..., :-1], b[..., :-1]) and not np.array_equal(a, b)
    responses = _jsonl(dest / "responses.jsonl")
    tasks = {t["task_id"] for t in _jsonl(dest / "tasks.jsonl")}
    assert len(responses) == 50 and len({r["response_id"] for r in responses}) == 50
    assert {r["task_id"] for r in responses} <= tasks


@pytest.mark.slow
def test_one_case_is_shown_as_pictures(bundle: Path) -> None:
    """Issue 23: the NPH case's images are pictures (a wide figure with a red arrow, two key
    images), each saying SYNTHETIC; they import as pictures."""
    from PIL import Image

    from demo.pictures import PICTURE_CASE
    from imaging.picture import sanitise_picture

    case = _cases(bundle)[PICTURE_CASE]
    assert [(s["sequence"], s.get("plane")) for s in case["series"]] == [
        ("T1", "none"), ("FLAIR", "axial"), ("T2", "coronal")]
    folder = bundle / "cases" / PICTURE_CASE
    figure = Image.open(folder / case["series"][0]["file"])
    assert figure.width > 2048 and figure.width > 2.5 * figure.height
    a = np.asarray(figure.convert("RGB")).astype(int)
    assert ((a[..., 0] > 200) & (a[..., 1] < 60) & (a[..., 2] < 60)).sum() > 1000  # the arrow
    for s in case["series"]:
        assert sanitise_picture(folder / s["file"]).width > 500
    others = [c for cid, c in _cases(bundle).items() if cid != PICTURE_CASE]
    assert all(s["file"].endswith(".nii.gz") for c in others for s in c["series"])
