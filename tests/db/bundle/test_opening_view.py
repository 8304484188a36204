"""Where a case opens: a bundle's `hanging_protocol` (validated, stored, replaced by the
bundle's changed protocol on a later import, never over an admin's view), an admin's view
(audited, refused when it is none), and the order of `imaging.opening_view` (protocol, key
slices, lesion mask, the family's plane)."""

import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid, import_bundle, validate_bundle
from db.engine import engine_for, nmb_home
from db.models import AuditLog, Case, Series
from db.study.opening_view import cases_without_view, set_opening_view
from errors import UserError
from imaging.key_slices import key_slice_world
from imaging.opening_view import opening_view
from tests.db.bundle.bundles import write_bundle

PROTOCOL = {"plane": "coronal", "layout": "1x2", "slices": [{"series": "FLAIR", "index": 5}]}


def _edit_case(bundle: Path, case_id: str, **fields) -> None:
    path = bundle / "cases" / case_id / "case.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def test_a_hanging_protocol_is_stored_and_an_admins_view_replaces_it(sqlite_url: str,
                                                                      tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", hanging_protocol=PROTOCOL)
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        import_bundle(s, bundle)
        stored = s.get(Case, "c1").opening_view
        assert stored == {**PROTOCOL, "source": "protocol"}
        assert cases_without_view(s) == ["c2"]
        paths = {r.sequence: nmb_home() / r.path
                 for r in s.exec(select(Series).where(Series.case_id == "c1"))}
        view = opening_view(stored=stored, series=paths, family="lesion")
        assert (view.plane, view.layout, view.source) == ("coronal", "1x2", "protocol")
        assert view.mm == pytest.approx(key_slice_world(paths["FLAIR"], "coronal", 5))
        with pytest.raises(UserError, match="plane 'oblique'"):
            set_opening_view(s, case_id="c1", plane="oblique", mm=[0, 0, 0], actor="admin")
        with pytest.raises(UserError, match="not three finite numbers"):
            set_opening_view(s, case_id="c1", plane="axial", mm=[0, float("nan"), 0],
                             actor="admin")
        assert s.get(Case, "c1").opening_view == stored  # nothing changed
        # the bundle's protocol changed: it replaces the bundle's earlier one, audited
        _edit_case(bundle, "c1", hanging_protocol={**PROTOCOL, "plane": "axial"})
        summary = import_bundle(s, bundle, actor="maintainer")
        assert "1 opening view from the changed hanging protocol" in str(summary)
        assert s.get(Case, "c1").opening_view == {**PROTOCOL, "plane": "axial", "source": "protocol"}
        audit = s.exec(select(AuditLog).where(AuditLog.action == "case.opening_view")).one()
        assert (audit.actor, audit.detail["before"]) == ("maintainer", stored)
        set_opening_view(s, case_id="c1", plane="sagittal", mm=[1, 2, 3], actor="admin")
        s.commit()
        _edit_case(bundle, "c1", hanging_protocol=PROTOCOL)
        assert not import_bundle(s, bundle).changed  # the bundle again: the admin's view stays
        view = opening_view(stored=s.get(Case, "c1").opening_view, series=paths)
        assert (view.plane, view.mm, view.source) == ("sagittal", (1, 2, 3), "admin")


def test_every_hanging_protocol_problem_is_reported(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", hanging_protocol={
        "plane": "coronal", "layout": "3x3",
        "slices": [{"series": "T2"}, {"series": "FLAIR", "index": 99}]})
    _edit_case(bundle, "c2", hanging_protocol={"layout": "1x1", "zoom": 2})
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    got = [p.message for p in info.value.problems]
    assert 'hanging_protocol.layout "3x3" is not 1x1, 1x2 or 2x2' in got
    assert 'missing required field "hanging_protocol.plane"' in got
    assert 'unknown field "hanging_protocol.zoom"' in got
    bundle = write_bundle(tmp_path / "b2")  # the form right: the series and the index
    _edit_case(bundle, "c1", hanging_protocol={
        "plane": "coronal", "slices": [{"series": "T2"}, {"series": "FLAIR", "index": 99}]})
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    got = [p.message for p in info.value.problems]
    assert got == ['hanging_protocol.slices[0].series "T2" is not a volume series of this case']
    _edit_case(bundle, "c1", hanging_protocol={
        "plane": "coronal", "slices": [{"series": "FLAIR", "index": 99}]})
    with pytest.raises(BundleInvalid) as info:
        validate_bundle(bundle)
    assert [p.message for p in info.value.problems] == [
        "hanging_protocol.slices[0].index 99 is beyond the 8 coronal slices of cases/c1/flair.nii "
        "(0..7)"]


def test_without_a_view_of_its_own_a_case_opens_on_its_mask_else_the_brain(
        tmp_path: Path) -> None:
    """The mask's centre of mass (world mm, through the mask's own affine), else the middle
    of the head's extent, in the family's plane; key slices come before both."""
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    affine[:3, 3] = [-20, -30, -10]
    head = np.zeros((20, 24, 16), np.float32)
    head[4:14, 6:20, 2:12] = 100  # the head: voxels 4..13, 6..19, 2..11
    nib.save(nib.Nifti1Image(head, affine), tmp_path / "t1.nii.gz")
    mask = np.zeros((20, 24, 16), np.uint8)
    mask[10, 8, 4] = mask[12, 8, 4] = 1  # centre of mass: voxel (11, 8, 4)
    nib.save(nib.Nifti1Image(mask, affine), tmp_path / "mask.nii.gz")
    series = {"T1": tmp_path / "t1.nii.gz"}
    view = opening_view(stored=None, series=series, masks=[tmp_path / "mask.nii.gz"],
                        family="lesion")
    assert (view.plane, view.source) == ("axial", "lesion mask")
    assert view.mm == pytest.approx((-20 + 22, -30 + 16, -10 + 8))
    view = opening_view(stored=None, series=series, family="differential")
    assert view.source == "family"
    assert view.mm == pytest.approx((-20 + 17, -30 + 25, -10 + 13))  # the head's middle
    keyed = opening_view(stored=None, series=series, masks=[tmp_path / "mask.nii.gz"],
                         key_start={"plane": "sagittal", "mm": [1, 2, 3]})
    assert (keyed.plane, keyed.mm, keyed.source) == ("sagittal", (1, 2, 3), "key slices")


def test_what_the_browser_sends_as_a_view_is_checked() -> None:
    """"Use this view" comes from the browser: only a plane, three finite numbers and a known
    layout pass (`ui.volume_viewer.chosen_view`)."""
    from ui.volume_viewer import chosen_view

    good = {"view": {"plane": "coronal", "mm": [1, 2.5, -3], "layout": "1x2"}, "n": 2}
    assert chosen_view(good) == (2, {"plane": "coronal", "mm": [1.0, 2.5, -3.0],
                                     "layout": "1x2"})
    assert chosen_view({**good, "view": {**good["view"], "layout": "<b>"}})[1]["layout"] is None
    for bad in ({"failed": ["T1"]}, {"view": good["view"]}, {**good, "n": "2"},
                {**good, "view": {**good["view"], "plane": "oblique"}},
                {**good, "view": {**good["view"], "mm": [1, 2]}},
                {**good, "view": {**good["view"], "mm": [1, 2, float("inf")]}},
                {**good, "view": {**good["view"], "mm": [1, 2, "3"]}}, None, "view"):
        assert chosen_view(bad) is None, bad
