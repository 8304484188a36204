"""Every malformed bundle is refused, naming the culprit, and leaves the study untouched."""

import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

from db.bundle import BundleInvalid, import_bundle
from db.engine import engine_for, upgrade
from tests.db.bundles import MODELS, responses, snapshot, write_bundle
from tests.db.malformed.corpus import CORPUS, build


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Made once: a study holding the base bundle with model-a's responses (as NMB_HOME), and
    the base bundle with model-a's and model-b's responses, so each malformed bundle would
    add rows if it were accepted. Tests copy both (migrating and writing images is the slow
    part)."""
    root = tmp_path_factory.mktemp("template")
    home = root / "home"
    url = f"sqlite:///{home / 'study.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NMB_HOME", str(home))
        home.mkdir()
        upgrade(url)
        with Session(engine_for(url)) as s:
            import_bundle(s, write_bundle(root / "first", with_responses=responses(MODELS[:1])))
    engine_for(url).dispose()  # closes connections, so the WAL is checkpointed into the file
    return home, write_bundle(root / "base", with_responses=responses())


def _refused(url: str, bad: Path, name: str) -> None:
    before = snapshot(url)
    with Session(engine_for(url)) as s, pytest.raises(BundleInvalid) as info:
        import_bundle(s, bad)
    lines = [str(p) for p in info.value.problems]
    assert any(all(x in line for x in CORPUS[name].expect) for line in lines), lines
    assert str(info.value).startswith(f"bundle bad has {len(lines)} problem")
    assert snapshot(url) == before


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 15


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_malformed_bundle_is_refused(template: tuple[Path, Path], nmb_home: Path,
                                     tmp_path: Path, name: str) -> None:
    home, base = template
    shutil.copytree(home, nmb_home)
    url = f"sqlite:///{nmb_home / 'study.db'}"
    assert snapshot(url)["response"]  # the study is not empty
    _refused(url, build(name, tmp_path / "bad", base=base), name)


@pytest.mark.parametrize("name", ["task_unknown_level", "image_truncated_gz",
                                  "response_same_model_task_sample"])
def test_malformed_bundle_is_refused_on_every_backend(database_url: str, tmp_path: Path,
                                                      name: str) -> None:
    with Session(engine_for(database_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "first", with_responses=responses(MODELS[:1])))
    _refused(database_url, build(name, tmp_path / "bad"), name)
