"""BERTScore (secondary) with a tiny local BERT: the library's own numbers, the cache, and
`nmb results --bertscore-model DIR` end to end."""

import importlib.util
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Case, Response, Task
from errors import UserError
from tests.factories import grade_all, make_study, package_answers
from tests.results.tiny_bert import tiny_bert
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [("acute infarct in the left white matter", "acute stroke, left infarct"),
         ("enhancing mass with edema: glioma", "glioma; differential lymphoma, abscess"),
         ("multiple sclerosis", "multiple sclerosis")]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(importlib.util.find_spec("bert_score") is not None,
            "the bertscore extra is not installed (make install-bertscore)")
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert") / "tiny")


def _library(model_dir: Path, cands: list[str], refs: list[str], **kw) -> list[float]:
    import bert_score

    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    _, _, f = bert_score.score(cands, refs, model_type=str(model_dir), num_layers=2, lang="en",
                               device="cpu", **kw)
    return f.tolist()


@pytest.mark.slow
def test_scores_are_the_librarys_and_a_second_scorer_reads_the_cache(model_dir: Path,
                                                                      tmp_path: Path) -> None:
    from results.bertscore import BertScorer

    cache = tmp_path / "cache.sqlite"
    first = BertScorer(model_dir, cache=cache)
    f1 = first.f1(PAIRS)
    expected = _library(model_dir, [c for c, _ in PAIRS], [r for _, r in PAIRS])
    assert f1 == pytest.approx(expected, abs=1e-6)
    assert f1[2] == pytest.approx(1.0, abs=1e-5)  # identical texts
    assert (first.info.computed, first.info.cached, first.info.layer) == (3, 0, 2)
    assert not first.info.rescaled

    second = BertScorer(model_dir, cache=cache)
    assert second.f1(PAIRS[::-1]) == f1[::-1]
    assert (second.info.computed, second.info.cached) == (0, 3)
    assert second._scorer is None  # the model was never loaded

    other = tiny_bert(tmp_path / "other", seed=1)  # another model: another key, new scores
    third = BertScorer(other, cache=cache)
    assert third.info.model_key != first.info.model_key
    assert third.f1(PAIRS[:1]) != f1[:1] and third.info.computed == 1


def test_a_baseline_in_the_directory_rescales_as_the_library_does(model_dir: Path,
                                                                  tmp_path: Path) -> None:
    import shutil

    from results.bertscore import BASELINE_FILE, BertScorer

    folder = tmp_path / "with-baseline"
    shutil.copytree(model_dir, folder)
    baseline = folder / BASELINE_FILE
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.5,0.5,0.5\n")
    scorer = BertScorer(folder, cache=tmp_path / "cache.sqlite")
    assert scorer.info.rescaled
    expected = _library(folder, [c for c, _ in PAIRS], [r for _, r in PAIRS],
                        rescale_with_baseline=True, baseline_path=str(baseline))
    assert scorer.f1(PAIRS) == pytest.approx(expected, abs=1e-6)
    plain = _library(folder, [c for c, _ in PAIRS], [r for _, r in PAIRS])
    assert expected == pytest.approx([(f - 0.5) / 0.5 for f in plain], abs=1e-6)


@pytest.mark.slow
def test_a_folder_without_a_model_is_one_line(tmp_path: Path) -> None:
    from results.bertscore import BertScorer

    with pytest.raises(UserError, match="not a model directory"):
        BertScorer(tmp_path)
    out = subprocess.run([sys.executable, "-m", "cli", "results", "--bertscore-model",
                          str(tmp_path)], cwd=ROOT, env=dict(os.environ), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "not a model directory" in out.stderr


class _Pickled:
    """Unpickled, it would make the folder `ran` (it never is)."""

    def __init__(self, ran: Path) -> None:
        self.ran = ran

    def __reduce__(self):
        return (os.mkdir, (str(self.ran),))


@pytest.mark.slow  # loads the library (seconds)
def test_a_model_folder_with_pickled_weights_is_one_line(model_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    """Only safetensors weights are loaded: a folder with a pickle only, or a pickle under the
    safetensors name, is one line (exit 2 from `nmb`), no traceback, nothing run."""
    import pickle
    import shutil

    import cli
    from results.bertscore import BertScorer

    ran = tmp_path / "pickle-ran"
    evil = pickle.dumps({"encoder.weight": _Pickled(ran)})
    only_bin, renamed = tmp_path / "only-bin", tmp_path / "renamed"
    for folder in (only_bin, renamed):
        shutil.copytree(model_dir, folder)
    (only_bin / "model.safetensors").unlink()
    (only_bin / "pytorch_model.bin").write_bytes(evil)
    (renamed / "model.safetensors").write_bytes(evil)
    assert cli.main(["results", "--bertscore-model", str(only_bin)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no safetensors weights" in err and "pytorch_model.bin" in err
    with pytest.raises(UserError, match=r"the model cannot be loaded \(") as e:
        BertScorer(renamed, cache=tmp_path / "cache.sqlite").f1(PAIRS[:1])
    assert "\n" not in str(e.value)
    assert not ran.exists()


def _graded_study(url: str) -> dict[str, tuple[str, str, str]]:
    """A study with grades; one multi-turn response ends with a stage answer, one case has no
    reference answer. Returns response id -> (model, task, text scored)."""
    with Session(engine_for(url)) as s:
        make_study(s, n_tasks=6, samples=2, experts=0)
        s.get(Case, "case5").ground_truth = None
        s.get(Response, "r2-model-alpha-0").turns = [
            "Revised: multiple sclerosis with enhancing lesions"]
        grade_all(s, lambda r: r.sample == 0)
        s.commit()
        return {r.response_id: (r.model, r.task_id, (r.turns or [r.text])[-1])
                for r in s.exec(select(Response).join(Task).where(Task.case_id != "case5"))}


@pytest.mark.slow
def test_nmb_results_adds_the_librarys_bertscore_and_a_second_run_uses_the_cache(
        model_dir: Path, sqlite_url: str) -> None:
    responses = _graded_study(sqlite_url)

    def run(fmt: str) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, "-m", "cli", "results", "--format", fmt,
                              "--bertscore-model", str(model_dir)], cwd=ROOT,
                             env=dict(os.environ), capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out

    out = run("json")
    first = json.loads(out.stdout)
    assert "20 responses, 20 scored by the model, 0 from the cache" in out.stderr
    assert first["bertscore"]["model"] == "tiny" and len(first["bertscore"]["model_key"]) == 64
    assert (first["bertscore"]["scored"], first["bertscore"]["without_reference"]) == (20, 4)
    assert first["bertscore"]["computed"] == 20 and "secondary" in first["bertscore"]["label"]

    ids = sorted(responses)
    f1 = dict(zip(ids, _library(model_dir, [responses[i][2] for i in ids], ["MS"] * len(ids)),
                  strict=True))
    for cell in first["overall"]:  # a model's: the mean over tasks of each task's mean
        per_task = defaultdict(list)
        for rid in ids:
            if responses[rid][0] == cell["who"]:
                per_task[responses[rid][1]].append(f1[rid])
        expected = np.mean([np.mean(v) for v in per_task.values()])
        assert cell["bertscore"]["value"] == pytest.approx(expected, abs=1e-4)  # 4 decimals
        low, high = cell["bertscore"]["ci"]
        assert low <= cell["bertscore"]["value"] <= high
    assert all(cell["bertscore"]["value"] is not None for cell in first["cells"])

    second = run("md")  # the model is not called again: every pair comes from the cache
    assert "20 responses, 0 scored by the model, 20 from the cache" in second.stderr
    assert "BERTScore (secondary)" in second.stdout and "never part of the gate" in second.stdout
    for cell in first["overall"]:
        assert f"| {cell['who']} | model |" in second.stdout
        assert f"{cell['bertscore']['value']:.3f} \\[" in second.stdout  # Markdown escapes [


@pytest.mark.slow
def test_a_packages_summary_gives_the_studys_bertscore(model_dir: Path, sqlite_url: str,
                                                       tmp_path: Path) -> None:
    """The same responses and reference answers through `nmb package grade`'s summary and
    `nmb results` (judged by the grader): the same BERTScore rows."""
    from package.freeze import freeze
    from package.grade import bertscore_pairs, grade_responses, summary, summary_markdown
    from package.verify import verify
    from results import results
    from results.bertscore import BertScorer
    from tests.factories import validated_config
    from tests.openai_server import OpenAIServer

    with OpenAIServer() as server, Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key="sk-test-bert")
        freeze(s, config_id=cid, out=tmp_path / "g.zip")
        responses = package_answers(s.exec(select(Response).order_by(Response.response_id)))
        study = results.build(s, config_id=cid, judge="grader", by=(), ks=(1,),
                              bertscore=BertScorer(model_dir))
        pkg = verify(tmp_path / "g.zip")
        rows = grade_responses(pkg, responses, base_url=server.base_url, api_key="sk-test-bert")
    scorer = BertScorer(model_dir)
    got = summary(pkg, rows, bertscore=scorer.scores(bertscore_pairs(pkg, responses)))
    assert scorer.info.computed == 0 and scorer.info.scored == len(responses)  # the study's cache
    assert [(r["who"], r["bertscore"], r["bertscore 95% CI"]) for r in got["overall"]] == [
        (c.who, c.bertscore.value, c.bertscore.ci) for c in study.overall]
    md = summary_markdown({**got, "bertscore": scorer.info.to_json()})
    assert "BERTScore F1 (secondary" in md and "| bertscore |" in md
