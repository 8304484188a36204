"""BERTScore of each response against the reference answer: a secondary similarity, never a
judgment and never part of the gate.

BERTScore (Zhang et al. 2020, "BERTScore: Evaluating Text Generation with BERT", ICLR) matches
each token of a candidate to its most similar token of the reference by the cosine of their
contextual embeddings; F1 combines the precision and recall of that matching. It is computed by
the `bert-score` package (`bert_score.BERTScorer`, the optional extra
`make install-bertscore`) with a model read from a **local** directory (a Hugging Face
`save_pretrained` folder; Hugging Face is set offline, nothing is downloaded). The layer and the
baseline are the library's for a directory named as one of its models (e.g. `roberta-large`:
layer 17, rescaled with the library's English baseline); otherwise the model's last layer, and
rescaling only when the directory holds a `bertscore_baseline.tsv` (the library's format:
LAYER,P,R,F). The folder is untrusted: only safetensors weights are loaded (`model.safetensors`,
or shards listed in `model.safetensors.index.json`); a folder with pickled weights only
(`pytorch_model.bin`, `*.pt`, `*.ckpt`, `*.pkl`: unpickling can run code) is refused before
anything is read, and a model the library cannot load is one line, not a traceback.

Candidate: the response's final answer (its last stage answer on a multi-turn task, else its
text). Reference: the case's reference answer (final diagnosis, differential, lesion,
reasoning: the values of `db.study.cases.reference_fields`, one per line); responses whose case
has none get no score. Scores are cached in NMB_HOME/cache/bertscore.sqlite per (model key,
candidate, reference), the model key being the sha256 of the directory's files and the
layer/baseline used; each row keeps the model's name and key. `computed` counts the pairs the
model scored in this process (0 on a run the cache answers fully; the model is then not even
loaded).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.engine import nmb_home
from db.models import Case, Response, Task
from db.queries import fetch_in
from db.study.cases import reference_fields
from errors import UserError, one_line

EXTRA = "make install-bertscore"
SERVER_MODEL = "NMB_BERTSCORE_MODEL"  # the server's local model folder for /results
BASELINE_FILE = "bertscore_baseline.tsv"
LANG = "en"
MAX_CHARS = 20_000  # of a candidate or reference (the model truncates to its own length anyway)
SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")


@dataclass
class BertScoreInfo:
    """What the BERTScore column was computed with, and how (stored with the results)."""

    model: str  # the directory's name
    model_key: str  # sha256 of the directory's files, the layer and the baseline
    layer: int
    rescaled: bool  # rescaled with a baseline (Zhang et al. 2020, sec. 6)
    scored: int = 0  # responses with a score
    without_reference: int = 0  # responses whose case has no reference answer
    computed: int = 0  # pairs the model scored in this run (0: all from the cache)
    cached: int = 0  # pairs answered by the cache
    label: str = "BERTScore F1 (secondary: a similarity to the reference, not a judgment)"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _dir_hash(model_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(model_dir)).encode() + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


class BertScorer:
    """BERTScore F1 of (candidate, reference) pairs with the model in `model_dir`, cached."""

    def __init__(self, model_dir: str | Path, cache: Path | None = None) -> None:
        self.dir = Path(model_dir).expanduser().resolve()
        if not (self.dir / "config.json").is_file():
            raise UserError(f"--bertscore-model {model_dir}: not a model directory (no "
                            "config.json; give a folder written by save_pretrained)")
        if not any((self.dir / name).is_file() for name in SAFE_WEIGHTS):
            pickled = sorted(p.name for pattern in PICKLED for p in self.dir.glob(pattern))
            found = f" (it holds {', '.join(pickled[:3])}: pickled weights, never loaded)" \
                if pickled else ""
            raise UserError(f"--bertscore-model {model_dir}: no safetensors weights "
                            f"(model.safetensors){found}; save the model with save_pretrained, "
                            "which writes safetensors")
        try:
            import bert_score  # noqa: F401  (the extra is installed)
        except ImportError:
            raise UserError(f"BERTScore needs the optional extra: {EXTRA}") from None
        from bert_score.utils import model2layers

        self.layer = model2layers.get(self.dir.name) or self._last_layer()
        baseline = self.dir / BASELINE_FILE
        library = Path(bert_score.__file__).parent / "rescale_baseline" / LANG / f"{self.dir.name}.tsv"
        self.baseline = baseline if baseline.is_file() else library if (
            self.dir.name in model2layers and library.is_file()) else None
        key = hashlib.sha256(f"{_dir_hash(self.dir)}|layer {self.layer}|".encode())
        if self.baseline is not None:
            key.update(self.baseline.read_bytes())
        self.info = BertScoreInfo(model=self.dir.name, model_key=key.hexdigest(), layer=self.layer,
                                  rescaled=self.baseline is not None)
        self.cache = cache or nmb_home() / "cache" / "bertscore.sqlite"
        self._scorer: Any = None

    def _last_layer(self) -> int:
        import json

        config = json.loads((self.dir / "config.json").read_text(encoding="utf-8"))
        layers = config.get("num_hidden_layers") or config.get("n_layers")
        if not isinstance(layers, int) or layers < 1:
            raise UserError(f"--bertscore-model {self.dir}: config.json names no num_hidden_layers")
        return layers

    def _model(self) -> Any:
        """The library's scorer, loaded once, offline."""
        if self._scorer is None:
            os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from bert_score import BERTScorer as LibraryScorer

            try:
                self._scorer = LibraryScorer(
                    model_type=str(self.dir), num_layers=self.layer, lang=LANG, device="cpu",
                    rescale_with_baseline=self.baseline is not None,
                    baseline_path=str(self.baseline) if self.baseline else None)
            except (OSError, ValueError, RuntimeError, KeyError, TypeError,
                    pickle.UnpicklingError, *_safetensors_errors()) as e:
                raise UserError(f"--bertscore-model {self.dir}: the model cannot be loaded "
                                f"({type(e).__name__}: {one_line(str(e), 200)})") from None
        return self._scorer

    def _connect(self) -> sqlite3.Connection:
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.cache, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS bertscore (model_key TEXT, pair TEXT, model TEXT, "
                   "precision REAL, recall REAL, f1 REAL, PRIMARY KEY (model_key, pair))")
        return db

    def f1(self, pairs: list[tuple[str, str]]) -> list[float]:
        """BERTScore F1 of each (candidate, reference) pair, from the cache where it has them."""
        keys = [hashlib.sha256(f"{c}\0{r}".encode()).hexdigest() for c, r in pairs]
        db = self._connect()
        try:
            with db:
                known = {}
                for i in range(0, len(keys), 500):
                    part = keys[i:i + 500]
                    known.update(db.execute(
                        f"SELECT pair, f1 FROM bertscore WHERE model_key = ? AND pair IN "
                        f"({','.join('?' * len(part))})", [self.info.model_key, *part]).fetchall())
                todo = list({k: p for k, p in zip(keys, pairs, strict=True) if k not in known}.items())
                if todo:
                    cands, refs = zip(*(p for _, p in todo), strict=True)
                    p, r, f = self._model().score(list(cands), list(refs))
                    rows = [(self.info.model_key, k, self.info.model, float(pi), float(ri), float(fi))
                            for (k, _), pi, ri, fi in zip(todo, p.tolist(), r.tolist(), f.tolist(),
                                                          strict=True)]
                    db.executemany("INSERT OR REPLACE INTO bertscore VALUES (?, ?, ?, ?, ?, ?)", rows)
                    known.update({k: fi for _, k, _, _, _, fi in rows})
        finally:
            db.close()
        self.info.computed += len(todo)
        self.info.cached += len(keys) - len(todo)
        return [known[k] for k in keys]

    def response_scores(self, s: Session, response_ids: Iterable[str]) -> dict[str, float]:
        """BERTScore F1 of each response of the study against its case's reference answer."""
        ids = set(response_ids)
        responses = list(fetch_in(s, Response.response_id, ids, Response.response_id,
                                  Response.task_id, Response.text, Response.turns))
        case_of = dict(fetch_in(s, Task.task_id, {r[1] for r in responses}, Task.task_id,
                                Task.case_id))
        reference = {c.case_id: reference_text(c.ground_truth)
                     for c in fetch_in(s, Case.case_id, set(case_of.values()))}
        return self.scores({rid: (final_answer(text, turns), reference.get(case_of[task_id], ""))
                            for rid, task_id, text, turns in responses})

    def scores(self, pairs: dict[str, tuple[str, str]]) -> dict[str, float]:
        """BERTScore F1 per id of (candidate, reference) pairs; pairs without a reference are
        left out and counted in `info.without_reference` (a package's responses come this way)."""
        kept = {k: (c[:MAX_CHARS], r[:MAX_CHARS]) for k, (c, r) in pairs.items() if r.strip()}
        self.info.without_reference += len(pairs) - len(kept)
        self.info.scored += len(kept)
        return dict(zip(kept, self.f1(list(kept.values())), strict=True))


def _safetensors_errors() -> tuple[type[BaseException], ...]:
    """The error safetensors raises for a file that is not safetensors (a renamed pickle)."""
    try:
        from safetensors import SafetensorError
    except ImportError:
        return ()
    return (SafetensorError,)


def reference_text(ground_truth: dict[str, Any] | None) -> str:
    """The reference answer as BERTScore's reference: its fields' values, one per line."""
    return "\n".join(text for _, text in reference_fields(ground_truth) if text)


def final_answer(text: str, turns: list[str] | None) -> str:
    """The answer a response ends with: its last stage answer, else its text."""
    return next((t for t in reversed(turns or []) if t and t.strip()), text)


def server_model() -> str:
    """The model folder the server was started with (`NMB_BERTSCORE_MODEL`; "" when unset):
    /results shows BERTScore only from a folder the operator chose, never from a path typed
    into the page."""
    return os.environ.get(SERVER_MODEL, "").strip()
