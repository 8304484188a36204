"""Every malformed or hostile bundle is refused by `nmb import` (and its dry run) with one line
naming the culprit and exit code 2, and leaves the study, image store and temp area untouched."""

import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

import cli
from db.bundle.importer import BundleInvalid, import_bundle
from db.engine import engine_for, upgrade
from tests.db.bundle.bundles import MODELS, responses, snapshot, write_bundle
from tests.db.bundle.malformed.corpus import CORPUS, build

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


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


def _one_line(name: str, message: str) -> None:
    assert all(x in message for x in CORPUS[name].expect), message
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_hostile_bundle_is_refused_by_the_command(template: tuple[Path, Path], nmb_home: Path,
                                                  tmp_path: Path, name: str, capsys) -> None:
    home, base = template
    shutil.copytree(home, nmb_home)
    url = f"sqlite:///{nmb_home / 'study.db'}"
    assert snapshot(url)["response"]  # the study is not empty
    bad = build(name, tmp_path / "bad", base=base)
    before = snapshot(url)
    for dry_run in ([], ["--dry-run"]):  # the dry run refuses exactly what the import refuses
        assert cli.main(["import", str(bad), *dry_run]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("nmb: ") and err.endswith("\n")
        _one_line(name, err.removeprefix("nmb: ").removesuffix("\n"))
        assert snapshot(url) == before


@pytest.mark.parametrize("name", ["task_unknown_level", "image_truncated_gz",
                                  "response_same_model_task_sample", "response_sample_above_int32",
                                  "response_text_nul", "task_prompt_lone_surrogate",
                                  "zip_file_and_folder_of_one_name", "case_ehr_over_limit",
                                  "task_stage_over_limit", "response_text_over_limit",
                                  "response_model_newline", "response_model_bidi_override",
                                  "image_name_too_long"])
def test_hostile_bundle_is_refused_on_every_backend(database_url: str, tmp_path: Path,
                                                    name: str) -> None:
    """Including what PostgreSQL alone cannot store (32-bit sample, NUL in text)."""
    with Session(engine_for(database_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "first", with_responses=responses(MODELS[:1])))
    before = snapshot(database_url)
    with Session(engine_for(database_url)) as s, pytest.raises(BundleInvalid) as info:
        import_bundle(s, build(name, tmp_path / "bad"))
    assert len(info.value.problems) == 1
    _one_line(name, str(info.value.problems[0]))
    assert snapshot(database_url) == before
