"""A case's `key_slices` in a bundle: validated with the rest, stored, and what a model is shown."""

import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import Session, select

from collection.collect import collect
from db.bundle.importer import BundleInvalid, import_bundle, validate_bundle
from db.engine import engine_for, nmb_home
from db.models import Case, Series
from imaging.key_slices import ras_shape, render_key_slice
from llm.model_request import CollectSettings
from tests.db.bundle.bundles import write_bundle
from tests.openai_server import OpenAIServer

KEY_SLICES = [{"series": "FLAIR", "plane": "axial", "index": 3},
              {"series": "T1", "plane": "sagittal"}]


def _edit_case(bundle: Path, case_id: str, **fields) -> None:
    path = bundle / "cases" / case_id / "case.json"
    case = json.loads(path.read_text())
    path.write_text(json.dumps({**case, **fields}))


@pytest.mark.slow
def test_key_slices_are_stored_and_shown_to_the_model(sqlite_url: str, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", key_slices=KEY_SLICES)
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        assert import_bundle(s, bundle).new_cases == 2
        assert s.get(Case, "c1").key_slices == KEY_SLICES and s.get(Case, "c2").key_slices is None
        assert not import_bundle(s, bundle).changed  # the same bundle again: nothing new
        paths = {r.sequence: nmb_home() / r.path
                 for r in s.exec(select(Series).where(Series.case_id == "c1"))}
        with OpenAIServer() as srv:
            collect(s, CollectSettings(model="m", base_url=srv.base_url))
            shown = {r.body["messages"][1]["content"][-1]["text"].split("\n\n")[1]: r.images
                     for r in srv.chat_requests()}
    assert shown["Give your differential diagnosis."] == [
        render_key_slice(paths["FLAIR"], "axial", 3).png,
        render_key_slice(paths["T1"], "sagittal").png]
    assert len(shown["What is happening?"]) == 3  # c2: one series, the three default planes
    _edit_case(bundle, "c1", key_slices=KEY_SLICES[:1])
    with Session(engine_for(sqlite_url)) as s, pytest.raises(BundleInvalid) as info:
        import_bundle(s, bundle)
    assert "case c1 already exists with different content (key_slices)" in str(info.value.report())


def test_every_key_slice_problem_is_reported_at_once(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", key_slices=[
        {"series": "T2", "plane": "axial"},
        {"series": "T1", "plane": "oblique", "index": 1},
        {"series": "T1", "plane": "axial", "index": -1},
        {"series": "T1", "plane": "axial", "index": "3"},
        {"series": "T1", "plane": "axial", "index": 99},
        {"series": "T1", "plane": "axial", "zoom": 2},
        {"series": "T1"},
        {"series": "FLAIR", "plane": "coronal", "index": 2},
        {"series": "FLAIR", "plane": "coronal", "index": 2},
        "T1 axial",
    ])
    _edit_case(bundle, "c2", key_slices={"series": "DWI"})
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    got = [p.message for p in info.value.problems]
    assert got == [
        'key_slices[0].series "T2" is not a series of this case',
        'key_slices[1].plane "oblique" is not axial, coronal or sagittal',
        "key_slices[2].index -1 is negative",
        'key_slices[3].index "3" is not an integer',
        'unknown field "key_slices[5].zoom"',
        'missing required field "key_slices[6].plane"',
        "key_slices[8] repeats an earlier key slice",
        'key_slices[9] must be a JSON object, got "T1 axial"',
        'key_slices {"series": "DWI"} is not a list',
    ]
    # the range is checked once the case is otherwise valid, on the image's RAS+ grid
    _edit_case(bundle, "c1", key_slices=[{"series": "T1", "plane": "axial", "index": 99}])
    _edit_case(bundle, "c2", key_slices=[])
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    assert [str(p) for p in info.value.problems] == [
        "cases/c1/case.json: key_slices[0].index 99 is beyond the 8 axial slices of "
        "cases/c1/t1.nii.gz (0..7)"]


def test_two_series_of_one_name_cannot_be_told_apart(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c2", series=[{"sequence": "DWI", "file": "dwi.nii.gz"}] * 2,
               key_slices=[{"series": "DWI", "plane": "axial"}])
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    assert [p.message for p in info.value.problems] == [
        'key_slices[0].series "DWI" names two series of this case']


def test_indices_count_on_the_ras_grid(tmp_path: Path) -> None:
    """An image stored with its axes permuted (voxel axis 0 runs superior): its axial slices
    are the 4 along that axis, not the 16 of the third array axis."""
    path = tmp_path / "b" / "cases" / "c1" / "t1.nii.gz"
    bundle = write_bundle(tmp_path / "b")
    affine = np.array([[0, 0, 1.0, 0], [0, 1.0, 0, 0], [1.0, 0, 0, 0], [0, 0, 0, 1]])
    nib.save(nib.Nifti1Image(np.arange(4 * 8 * 16, dtype=np.int16).reshape(4, 8, 16), affine),
             path)
    assert ras_shape(path) == (16, 8, 4)
    _edit_case(bundle, "c1", key_slices=[{"series": "T1", "plane": "sagittal", "index": 15},
                                         {"series": "T1", "plane": "axial", "index": 4}])
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    assert [p.message for p in info.value.problems] == [
        "key_slices[1].index 4 is beyond the 4 axial slices of cases/c1/t1.nii.gz (0..3)"]
