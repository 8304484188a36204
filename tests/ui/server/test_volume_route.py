"""The volume route authorizes every request: a live login cookie, the ticket of that login,
and the account's right to the image (`db.study.image_access`); errors name no server path."""

import hashlib
import io

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import Session, select
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.testclient import TestClient

from db.engine import engine_for, nmb_home
from db.models import Mask, Series, User
from db.users import LOGIN_COOKIE, disable_user, log_out, open_login
from tests.db.study.test_image_access import _study
from tests.factories import add_series
from ui.server.security_headers import SecurityHeaders
from ui.server.volume_server import publish, routes


@pytest.fixture
def study(sqlite_url: str):
    """Real volumes for case0-2, case0's and case1's series reused as their masks."""
    with Session(engine_for(sqlite_url)) as s:
        users = _study(s)
        for row in s.exec(select(Series)):
            s.delete(row)
        for row in s.exec(select(Mask)):
            s.delete(row)
        s.commit()
        add_series(s, ["case0", "case1", "case2"])
        for n, case_id in enumerate(("case0", "case1")):
            labels = np.zeros((24, 28, 20), np.uint8)
            labels[10:14, 12:16, 8 + n:12] = 1
            data = nib.Nifti1Image(labels, np.diag([2.0, 2.0, 2.0, 1.0])).to_bytes()
            sha = hashlib.sha256(data).hexdigest()
            (nmb_home() / "images" / f"{sha}.nii").write_bytes(data)
            s.add(Mask(case_id=case_id, position=0, label="lesion", path=f"images/{sha}.nii",
                       sha256=sha, shape=list(labels.shape), voxel_sizes=[2.0, 2.0, 2.0]))
        s.commit()
        paths = {(kind, row.case_id): nmb_home() / row.path
                 for kind, table in (("series", Series), ("mask", Mask))
                 for row in s.exec(select(table))}
        tokens = {role: open_login(s, user) for role, user in users.items()}
    client = TestClient(Starlette(routes=routes(), middleware=[Middleware(SecurityHeaders)]))
    return client, tokens, paths, sqlite_url


def _url(study, role: str, image: tuple[str, str]) -> str:
    _, tokens, paths, _ = study
    return publish(paths[image], login_token=tokens[role])


def _get(study, url: str, role: str | None, **headers):
    client, tokens = study[0], study[1]
    client.cookies.clear()
    if role is not None:
        client.cookies.set(LOGIN_COOKIE, tokens[role])
    return client.get(url, headers=headers)


def test_an_allowed_request_gets_the_volume_with_private_revalidated_caching(study) -> None:
    url = _url(study, "expert", ("series", "case0"))
    answer = _get(study, url, "expert")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "private, no-cache"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["content-encoding"] == "gzip"  # (httpx has decoded it)
    image = nib.Nifti1Image.from_bytes(answer.content)
    source = nib.load(study[2][("series", "case0")])
    assert np.array_equal(np.asarray(image.dataobj), np.asarray(source.dataobj))
    again = _get(study, url, "expert", **{"If-None-Match": answer.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def _refused(answer) -> None:
    """403 whose body is the one line of refusal: no byte of any image, nothing cached."""
    assert answer.status_code == 403
    assert answer.content == b"not allowed: log in with an account that may see this image"
    assert "content-encoding" not in answer.headers and "etag" not in answer.headers
    assert answer.headers["cache-control"] == "no-store"


@pytest.mark.slow
@pytest.mark.parametrize("role, image, cookie", [
    ("expert", ("series", "case0"), None),                # no cookie
    ("expert", ("series", "case0"), "student"),           # another login's cookie
    ("student", ("mask", "case1"), "student"),            # a student asking for a mask
    ("student", ("series", "case0"), "student"),          # ... or a case not in their exam
    ("physician", ("mask", "case0"), "physician"),
    ("expert", ("mask", "case1"), "expert"),              # a mask of a task without show_masks
    ("expert", ("series", "case2"), "expert"),            # a case not assigned to them
    ("other_expert", ("series", "case0"), "other_expert"),
])
def test_refused_requests_get_no_bytes(study, role: str, image, cookie: str | None) -> None:
    _refused(_get(study, _url(study, role, image), cookie))
    # ... nor a revalidation: an ETag of the image opens nothing either
    sha = _url(study, role, image).rsplit("/", 1)[1].removesuffix(".nii")
    _refused(_get(study, _url(study, role, image), cookie, **{"If-None-Match": f'"{sha}-v1"'}))


def test_the_content_hash_alone_or_a_forged_ticket_opens_nothing(study) -> None:
    sha = _url(study, "admin", ("series", "case0")).rsplit("/", 1)[1].removesuffix(".nii")
    assert _get(study, f"/nmb/volumes/{sha}.nii", "admin").status_code == 404
    assert _get(study, f"/nmb/volumes/{'0' * 32}/{sha}.nii", "admin").status_code == 403


def test_logout_and_disabling_end_access_at_once(study) -> None:
    url = _url(study, "expert", ("series", "case0"))
    assert _get(study, url, "expert").status_code == 200
    with Session(engine_for(study[3])) as s:
        log_out(s, user_id=s.exec(select(User).where(User.name == "expert1")).one().id)
    _refused(_get(study, url, "expert"))  # the logged-out cookie
    url = _url(study, "physician", ("series", "case2"))
    assert _get(study, url, "physician").status_code == 200
    with Session(engine_for(study[3])) as s:
        disable_user(s, name="doc")
        s.commit()
    _refused(_get(study, url, "physician"))


def test_an_unreadable_image_is_refused_without_naming_a_path(study) -> None:
    path = study[2][("series", "case2")]
    url = _url(study, "admin", ("series", "case2"))
    path.write_bytes(b"not an image any more")
    (nmb_home() / "viewer").mkdir(exist_ok=True)
    for copy in (nmb_home() / "viewer").glob("*"):
        copy.unlink()
    answer = _get(study, url, "admin")
    assert answer.status_code == 422
    assert str(nmb_home()) not in answer.text and "/" not in answer.text


def test_pictures_are_authorized_like_volumes(study) -> None:
    """A picture series' display copy: PNG to an account that may see its case, 403 to one
    that may not, and a volume's sha asked for as a picture is refused without a path."""
    from PIL import Image

    from db.engine import session
    from imaging.picture import sanitise_picture
    from tests.db.bundle import pictures
    from ui.server.volume_server import publish_picture

    source = pictures.save(pictures.wide_figure(), nmb_home() / "fig-source.png", "PNG")
    png = sanitise_picture(source).png
    sha = hashlib.sha256(png).hexdigest()
    stored = nmb_home() / "images" / f"{sha}.png"
    stored.write_bytes(png)
    with session() as s:
        s.add(Series(case_id="case0", position=1, sequence="FIG", path=f"images/{sha}.png",
                     sha256=sha, shape=[], voxel_sizes=[], picture=True))
        s.commit()
    tokens = study[1]
    url = publish_picture(stored, login_token=tokens["expert"])
    answer = _get(study, url, "expert")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(answer.content)).size == (2048, 683)
    assert answer.headers["cache-control"] == "private, no-cache"
    student_url = publish_picture(stored, login_token=tokens["student"])
    assert _get(study, student_url, "student").status_code == 403  # not in the student's exam
    as_volume = url.removesuffix(".png") + ".nii"
    refused = _get(study, as_volume, "expert")
    assert refused.status_code == 422 and "/" not in refused.text


def test_the_viewer_serves_a_case_by_its_stored_sha256_without_hashing_again(
        study, monkeypatch) -> None:
    """case_series and case_masks keep the sha256 stored at import; publishing them names the
    image by it and reads no file to hash (a hash here would fail the test), and the URL opens
    the image."""
    import ui.server.volume_server as volume_server
    from db.study.cases import case_series
    from db.study.masks import case_masks
    from ui.volume_viewer import viewer_args

    with Session(engine_for(study[3])) as s:
        series = case_series(s, "case0")
        masks = case_masks(s, case_id="case0")
        stored = {row.sha256 for table in (Series, Mask)
                  for row in s.exec(select(table).where(table.case_id == "case0"))}
    assert {x.sha256 for x in [*series, *masks]} == stored and None not in stored

    def no_second_hash(path):
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(volume_server, "sha256_file", no_second_hash)
    args, failures = viewer_args(series, masks, login_token=study[1]["expert"])
    assert failures == {}
    urls = [x["url"] for x in [*args["series"], *args["masks"]]]
    assert {u.rsplit("/", 1)[1].removesuffix(".nii") for u in urls} == stored
    assert all(_get(study, url, "expert").status_code == 200 for url in urls)
