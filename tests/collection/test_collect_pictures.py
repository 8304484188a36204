"""Pictures sent to a model as themselves (issue 23): `nmb collect` against the local
OpenAI-compatible server; each picture decodes to the source's pixels downscaled to the limit,
captioned from its own fields, with no letters burned in."""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sqlmodel import Session, select

import cli
from db.engine import engine_for, upgrade
from db.models import Case
from llm.key_images import key_images
from tests.db.bundle import pictures
from tests.db.bundle.bundles import write_bundle
from tests.openai_server import OpenAIServer

MODEL = "local-vlm-2026-01-01"


@pytest.fixture
def server():
    with OpenAIServer(retry_after=0.1) as srv:
        yield srv


def _picture_bundle(dest: Path) -> Path:
    """The base bundle; case c1 (T1, FLAIR) gains the wide 3000 x 1000 figure (a PNG labelled
    .jpg, plane and caption) and a sagittal JPEG."""
    root = write_bundle(dest, with_responses=[])
    folder = root / "cases" / "c1"
    pictures.save(pictures.wide_figure(), folder / "figure.jpg", "PNG")
    pictures.save(pictures.noise((300, 400), "L"), folder / "sag.jpeg", "JPEG", quality=95)
    case = json.loads((folder / "case.json").read_text())
    case["series"] += [{"sequence": "FIG", "file": "figure.jpg", "plane": "axial",
                        "caption": "Arrow at the lesion"},
                       {"sequence": "SAG", "file": "sag.jpeg", "plane": "sagittal"}]
    (folder / "case.json").write_text(json.dumps(case))
    return root


def _texts(content: list[dict]) -> list[str]:
    return [p["text"] for p in content if p["type"] == "text"]


@pytest.mark.slow
@pytest.mark.parametrize("limit", [None, 512])
def test_collect_sends_each_picture_itself(nmb_home: Path, server: OpenAIServer, tmp_path: Path,
                                           monkeypatch, limit: int | None, capsys) -> None:
    if limit:
        monkeypatch.setenv("NMB_PICTURE_MAX_SIDE", str(limit))
    side = limit or 2048
    upgrade()
    bundle = _picture_bundle(tmp_path / "b")
    assert cli.main(["import", str(bundle)]) == 0
    assert cli.main(["collect", "--model", MODEL, "--base-url", server.base_url,
                     "--task", "t1"]) == 0, capsys.readouterr().err
    [request] = server.chat_requests()
    content = request.body["messages"][1]["content"]
    texts = _texts(content)
    # 3 slices of each volume, then the two pictures, in series order
    assert texts[1:-1] == [
        "T1, axial, slice 5 of 8:", "T1, coronal, slice 5 of 8:", "T1, sagittal, slice 5 of 8:",
        "FLAIR, axial, slice 5 of 8:", "FLAIR, coronal, slice 5 of 8:",
        "FLAIR, sagittal, slice 5 of 8:",
        "image 7 of 8: FIG, axial; Arrow at the lesion:", "image 8 of 8: SAG, sagittal:"]
    assert "8 images follow. Pictures are provided with the case as they are" in texts[0]
    figure, sag = (Image.open(io.BytesIO(b)) for b in request.images[-2:])
    assert figure.format == sag.format == "PNG" and figure.info == sag.info == {}
    assert figure.size == (side, round(1000 * side / 3000))  # longest side at the limit
    assert sag.size == (300, 400)  # within the limit: as stored
    # The source's pixels, downscaled (an independent resize of the source), no letters burned
    # in: a rendered key slice would carry R/L/A/P in white on the dark grey background.
    want = np.asarray(pictures.wide_figure().resize(figure.size, Image.Resampling.BOX), float)
    got = np.asarray(figure, float)
    assert np.abs(got - want).mean() < 2.0
    assert np.abs(got - want).max() < 130  # only along the marks' edges
    assert np.array_equal(np.asarray(sag), np.asarray(Image.open(bundle / "cases/c1/sag.jpeg")))
    r, g, b = got[..., 0], got[..., 1], got[..., 2]
    assert ((r > 200) & (g < 40) & (b < 40)).mean() > 0.03  # the red block (4 %) stays red
    assert request.images[:6] != request.images[-2:]


def test_a_picture_only_case_names_its_pictures(sqlite_url: str, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", with_responses=[])
    folder = root / "cases" / "c2"
    (folder / "dwi.nii.gz").unlink()
    pictures.save(pictures.wide_figure((600, 200)), folder / "dwi.nii.gz", "WEBP")  # bytes decide
    from db.bundle.importer import import_bundle
    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, root)
        images = key_images(s, s.get(Case, "c2"))
        assert [(i.caption, i.picture) for i in images] == [("image 1 of 1: DWI", True)]
        assert Image.open(io.BytesIO(images[0].png)).size == (600, 200)
        assert s.exec(select(Case)).all()


@pytest.mark.slow
def test_picture_requests_hash_the_same_when_rebuilt(nmb_home: Path, server: OpenAIServer,
                                                     tmp_path: Path, capsys) -> None:
    """The request a picture case makes is rebuilt from the stored picture (its downscaled copy
    removed, the answers forgotten): the same cache key, so the answer comes from the cache and
    the server is not asked again."""
    import shutil

    from db.models import CollectedResponse, ModelCache, Response

    upgrade()
    assert cli.main(["import", str(_picture_bundle(tmp_path / "b"))]) == 0
    args = ["collect", "--model", MODEL, "--base-url", server.base_url, "--task", "t1"]
    assert cli.main(args) == 0, capsys.readouterr().err
    assert len(server.chat_requests()) == 1
    shutil.rmtree(nmb_home / "key-slices")  # the downscaled picture and rendered slices
    url = f"sqlite:///{nmb_home / 'study.db'}"
    with Session(engine_for(url)) as s:
        s.exec(CollectedResponse.__table__.delete())
        s.exec(Response.__table__.delete().where(Response.model == MODEL))
        s.commit()
    capsys.readouterr()
    assert cli.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["from_cache"] == 1
    assert len(server.chat_requests()) == 1
    with Session(engine_for(url)) as s:
        assert len(s.exec(select(ModelCache)).all()) == 1


@pytest.mark.parametrize("side", ["big", "\u00b2", "63", "16385"])
def test_a_picture_side_that_is_not_a_number_of_pixels_is_one_line(monkeypatch, side: str) -> None:
    from errors import UserError
    from llm.key_images import picture_max_side

    monkeypatch.setenv("NMB_PICTURE_MAX_SIDE", side)
    with pytest.raises(UserError) as refused:
        picture_max_side()
    assert str(refused.value) == (f"NMB_PICTURE_MAX_SIDE={side!r} is not a whole number of "
                                  "pixels from 64 to 16384")
