"""Write the offline synthetic demo bundle (`nmb-bundle/1`) and a large bundle for benchmarks.

The demo has ten synthetic cases on the MNI152 template (see `demo.images`; one of them shown as
pictures, key images and a figure: `demo.pictures`), twelve tasks
covering the three families at the three levels, and responses from four fictional models with
five samples each, built from the answer variants in `demo.content` with seeded choices.
`demo_truth()` records which responses were written to be correct and which error classes
each one shows, so demo expert and grader scores can be synthesised. No patient data anywhere.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np

from db.study.cases import DEMO_BUNDLE
from demo.content import (
    CASES,
    DISCONFIRMING,
    ERROR_TAGS,
    MODEL_PROFILES,
    MODEL_STYLES,
    MODEL_USAGE,
    TASKS,
    DemoTask,
)
from demo.images import (
    SYNTHETIC_DESCRIP,
    Canvas,
    coarsen,
    load_template,
    render_case_with_lesions,
    save_series,
)
from demo.pictures import PICTURE_CASE, write_pictures
from errors import UserError

BUNDLE_FORMAT = "nmb-bundle/1"
MARKER = "[Synthetic demo response]"
MODELS: tuple[str, ...] = tuple(MODEL_PROFILES)
SAMPLES_PER_MODEL = 5

_OPENERS = {
    "prose": ("", "On review of the series: ", "Key findings: ", "What the images show: "),
    "structured": ("",),
    "impression": ("",),
    "stepwise": ("", "Working through this step by step.\n"),
}
_SUMMARY_LEADS = ("In summary: ", "Overall: ", "My conclusion: ", "Bottom line: ")
_CLOSERS = ("", "", "Confidence: moderate.", "Confidence: high.",
            "Correlate with the full clinical picture.")
_TURN_LEADS = ("", "Updated assessment: ", "With this result: ", "Revised answer: ")
# Key slices a curator would pick (world mm of the lesion centre; demo.images): the other
# cases show models the default slices through the centre of each series.
KEY_POINTS: dict[str, tuple[tuple[str, str, tuple[float, float, float]], ...]] = {
    "syn-05": (("T1C", "axial", (30, 28, 22)), ("FLAIR", "axial", (30, 28, 22)),
               ("T1C", "coronal", (30, 28, 22)), ("T1C", "sagittal", (30, 28, 22))),
}


@dataclass(frozen=True)
class _Written:
    response: dict[str, object]
    correct: bool
    tags: tuple[str, ...]
    variant: str


def _compose(task: DemoTask, key: str, style: str, rng: random.Random) -> tuple[str, list[str]]:
    """Text (first answer) and stage answers of one response, in one of four writing styles."""
    v = task.variants[key]
    f, r, c = v.findings, v.reasoning, v.conclusion
    if style == "prose":
        body = f"{rng.choice(_OPENERS['prose'])}{f} {r} {rng.choice(_SUMMARY_LEADS)}{c}"
    elif style == "structured":
        body = f"Findings: {f}\nInterpretation: {r}\nConclusion: {c}"
    elif style == "impression":
        body = f"Impression: {c}\n\nRationale: {f} {r}"
    else:
        body = (f"{rng.choice(_OPENERS['stepwise'])}1. Imaging: {f}\n2. Interpretation: {r}\n"
                f"3. Answer: {c}")
    closer = rng.choice(_CLOSERS)
    text = f"{MARKER} {body}" + (f"\n{closer}" if closer else "")
    turns = [f"{MARKER} {rng.choice(_TURN_LEADS)}{t}" for t in v.turns]
    return text, turns


def pick(profile: dict[str, float], rng: random.Random) -> str:
    """A variant key drawn from a profile of answer kinds (correct answers in two phrasings)."""
    kinds, weights = zip(*profile.items(), strict=True)
    kind = rng.choices(kinds, weights=weights)[0]
    if kind == "correct":
        return rng.choice(("correct", "correct_brief"))
    return kind


def compose(task: DemoTask, key: str, styles: tuple[str, ...],
            rng: random.Random) -> tuple[str, list[str]]:
    """The text and stage answers of variant `key` in one of `styles`."""
    return _compose(task, key, rng.choice(styles), rng)


_CASE_RECORDS = {c.case_id: c for c in CASES}


def _usage(task: DemoTask, model: str, text: str, turns: list[str]) -> dict[str, object]:
    """Synthetic usage: one key slice per series shown, every turn resending the context, at
    the fictional model's image tokens and prices (demo.content.MODEL_USAGE)."""
    case, rate = _CASE_RECORDS[task.case_id], MODEL_USAGE[model]
    images = len(case.sequences)
    context = 400 + (len(case.ehr) + len(task.prompt)) // 4 + int(images * rate["image_tokens"])
    prompt = sum(context + sum(len(s) for s in task.stages[:i]) // 4
                 for i in range(1 + len(turns)))
    completion = (len(text) + sum(len(x) for x in turns)) // 4
    cost = (prompt * rate["input"] + completion * rate["output"]) / 1_000_000
    return {"prompt_tokens": prompt, "completion_tokens": completion, "images": images,
            "cost_usd": round(cost, 6)}


def _response(task: DemoTask, model: str, sample: int, key: str, rng: random.Random,
              response_id: str | None = None) -> _Written:
    text, turns = compose(task, key, MODEL_STYLES[model], rng)
    rec: dict[str, object] = {
        "response_id": response_id or f"{task.task_id}-{model}-s{sample}",
        "task_id": task.task_id, "model": model, "sample": sample, "text": text,
    }
    if task.level == 3:
        rec["turns"] = turns
    rec["usage"] = _usage(task, model, text, turns)
    v = task.variants[key]
    return _Written(rec, v.correct, v.tags, key)


def _demo_written(seed: int) -> list[_Written]:
    """All demo responses: every task x 4 models x 5 samples, every error class present."""
    out: list[_Written] = []
    for task in TASKS:
        for model in MODELS:
            for sample in range(SAMPLES_PER_MODEL):
                rng = random.Random(f"{seed}|{task.task_id}|{model}|{sample}")
                out.append(_response(task, model, sample, pick(MODEL_PROFILES[model], rng), rng))
    # Guarantee coverage whatever the seed: overwrite a fixed slot for any missing class.
    per_task = len(MODELS) * SAMPLES_PER_MODEL
    for k, kind in enumerate(("correct", *ERROR_TAGS)):
        present = any(w.correct and not w.tags for w in out) if kind == "correct" else any(
            kind in w.tags for w in out)
        if not present:
            t = k % len(TASKS)
            slot = t * per_task + per_task - 1 - k // len(TASKS)
            old = out[slot].response
            rng = random.Random(f"{seed}|force|{kind}")
            out[slot] = _response(TASKS[t], str(old["model"]), int(old["sample"]), kind, rng)
    return out


def variant_truth(task: DemoTask, key: str) -> dict[str, object]:
    """What variant `key` of `task` was written to be: correct or not, the error classes it
    shows (the demo rubric's keys; a correct answer may still carry a grounding or
    hallucination tag), and the variant itself."""
    v = task.variants[key]
    return {"correct": v.correct, "error_tags": [RUBRIC_TAGS[t] for t in v.tags],
            "variant": key}


def demo_truth(seed: int = 0) -> dict[str, dict[str, object]]:
    """For each demo response id: `variant_truth` of the variant it was written from."""
    tasks = {t.task_id: t for t in TASKS}
    return {str(w.response["response_id"]): variant_truth(tasks[str(w.response["task_id"])],
                                                          w.variant)
            for w in _demo_written(seed)}


RUBRIC_TAGS = {"perceptual": "perceptual_failure", "reasoning": "reasoning_failure",
               "knowledge": "knowledge_gap", "grounding": "grounding_error",
               "hallucination": "visual_hallucination"}


def _write_jsonl(path: Path, rows: Iterable[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _task_row(task: DemoTask, *, task_id: str | None = None, case_id: str | None = None) -> dict:
    row: dict[str, object] = {"task_id": task_id or task.task_id, "case_id": case_id or task.case_id,
                              "family": task.family, "level": task.level, "prompt": task.prompt}
    if task.level == 3:
        row["stages"] = list(task.stages)
        if task.task_id in DISCONFIRMING:
            row["disconfirming"] = list(DISCONFIRMING[task.task_id])
    return row


def _key_slices(folder: Path, points: Iterable[tuple[str, str, tuple[float, float, float]]]
                ) -> list[dict[str, object]]:
    """`key_slices` through world points, on each written series' own RAS+ grid."""
    from imaging.slicing import slice_index
    from imaging.volume import decode_volume

    return [{"series": seq, "plane": plane,
             "index": slice_index(decode_volume(folder / f"{seq.lower()}.nii.gz"), plane,
                                  np.asarray(point, dtype=float))}
            for seq, plane, point in points]


#: Hanging protocols (docs/bundle-format.md): where the viewer opens a case. Mesial temporal
#: sclerosis is read on coronal slices through the hippocampi (demo.images: centres at y -22).
HANGING_PROTOCOLS: dict[str, tuple[str, str | None, tuple[float, float, float]]] = {
    "syn-03": ("coronal", None, (29, -22, -13)),
}


def _hanging_protocol(folder: Path, series: Iterable[str], plane: str, layout: str | None,
                      point: tuple[float, float, float]) -> dict[str, object]:
    """A `hanging_protocol` through a world point: the plane, the layout and each volume
    series' slice through the point on its own RAS+ grid."""
    slices = [{"series": k["series"], "index": k["index"]}
              for k in _key_slices(folder, [(seq, plane, point) for seq in series])]
    return {"plane": plane, **({"layout": layout} if layout else {}), "slices": slices}


#: Cases whose painted lesions are written as a mask, and the lesion-identification tasks
#: whose experts see it on /score (docs/viewer.md, "Masks").
MASKED_CASES = ("syn-01",)
MASK_TASKS = ("syn-t01",)


def _prepare(dest: Path) -> Path:
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UserError(f"bundle destination {dest} exists and is not an empty folder")
    (dest / "cases").mkdir(parents=True, exist_ok=True)
    return dest


def write_demo_bundle(dest: Path, *, resolution_mm: int = 2, seed: int = 0) -> Path:
    """Write the synthetic demo bundle into `dest` (new or empty folder) and return it.

    `resolution_mm` 2 writes in a few seconds; 1 is the full-quality version. `seed` drives the
    image noise and the choice of response variants; the same seed gives the same bundle.
    """
    if resolution_mm < 1:
        raise UserError(f"resolution_mm must be a positive integer, got {resolution_mm}")
    dest = _prepare(dest)
    (dest / "bundle.json").write_text(json.dumps({
        "format": BUNDLE_FORMAT,
        "name": DEMO_BUNDLE,
        "description": "SYNTHETIC demo bundle: invented records and fictional model responses on "
                       "images derived from the MNI152 2009a template bundled with nilearn. "
                       "Not patient data.",
    }, indent=2), encoding="utf-8")
    for i, case in enumerate(CASES):
        folder = dest / "cases" / case.case_id
        series, affine, lesion = render_case_with_lesions(
            case.kind, list(case.sequences), resolution_mm=resolution_mm, seed=seed * 1000 + i)
        entries = write_pictures(series, affine, folder) if case.case_id == PICTURE_CASE else []
        for seq in case.sequences if case.case_id != PICTURE_CASE else ():
            name = f"{seq.lower()}.nii.gz"
            data, grid = coarsen(series[seq], affine) if seq in case.coarse else (series[seq], affine)
            save_series(data, grid, folder / name, sequence=seq)
            entries.append({"sequence": seq, "file": name})
        extra: dict[str, object] = {"key_slices": _key_slices(folder, KEY_POINTS[case.case_id])
                                    } if case.case_id in KEY_POINTS else {}
        if case.case_id in HANGING_PROTOCOLS and case.case_id != PICTURE_CASE:
            extra["hanging_protocol"] = _hanging_protocol(
                folder, case.sequences, *HANGING_PROTOCOLS[case.case_id])
        if case.case_id in MASKED_CASES:  # on the T1 grid, drawn over every series (world space)
            save_series(lesion, affine, folder / "lesion.nii.gz", sequence="lesion mask",
                        dtype=np.uint8)
            extra["masks"] = [{"label": "infarct", "file": "lesion.nii.gz"}]
        (folder / "case.json").write_text(json.dumps({
            "case_id": case.case_id, "title": case.title, "ehr": case.ehr,
            "scores": case.scores, "series": entries, "ground_truth": case.ground_truth, **extra,
        }, indent=2, ensure_ascii=False), encoding="utf-8")
    _write_jsonl(dest / "tasks.jsonl", ({**_task_row(t), "show_masks": True}
                                        if t.task_id in MASK_TASKS else _task_row(t)
                                        for t in TASKS))
    _write_jsonl(dest / "responses.jsonl", (w.response for w in _demo_written(seed)))
    return dest


# ----- scale bundle for the import benchmark ---------------------------------------------
_SCALE_SEQUENCES = ("T1", "T2", "FLAIR", "DWI", "ADC", "SWI")


def _nifti_parts(data: np.ndarray, affine: np.ndarray, sequence: str) -> tuple[bytes, bytes, bytes]:
    """Uncompressed header, body (all but the last slice) and last slice of an int16 NIfTI."""
    img = nib.Nifti1Image(np.rint(data).astype(np.int16), affine)
    img.header.set_qform(affine, code="mni")
    img.header.set_sform(affine, code="mni")
    img.header.set_xyzt_units("mm")
    img.header["descrip"] = f"{SYNTHETIC_DESCRIP} {sequence}"[:79].encode()
    raw = img.to_bytes()
    offset = int(img.header.get_data_offset()) or 352
    slice_bytes = data.shape[0] * data.shape[1] * 2
    return raw[:offset], raw[offset:-slice_bytes], raw[-slice_bytes:]


def _with_descrip(header: bytes, descrip: str) -> bytes:
    """The header with a new 80-byte descrip field (bytes 148-227 of a NIfTI-1 header)."""
    field = descrip.encode()[:79].ljust(80, b"\0")
    return header[:148] + field + header[228:]


def write_scale_bundle(dest: Path, *, n_cases: int = 120, n_sequences: int = 3,
                       n_responses: int = 16000, resolution_mm: int = 1, seed: int = 0) -> Path:
    """A large synthetic bundle for the import benchmark; every file has its own sha256.

    Volumes are unpainted copies of the template-derived series; each copy gets its own
    header description and a seeded noise pattern in the top slice (outside the brain). Files
    are written as multi-member gzip (RFC 1952 allows concatenated members; nibabel, Python's
    gzip and indexed_gzip read them): the shared body is compressed once. Tasks and responses
    reuse the demo texts, cycling over the demo tasks.
    """
    if not 1 <= n_sequences <= len(_SCALE_SEQUENCES):
        raise UserError(f"n_sequences must be 1-{len(_SCALE_SEQUENCES)}, got {n_sequences}")
    if n_cases < 1 or n_responses < 0 or resolution_mm < 1:
        raise UserError("n_cases and resolution_mm must be >= 1 and n_responses >= 0")
    dest = _prepare(dest)
    sequences = list(_SCALE_SEQUENCES[:n_sequences])
    tpl = load_template(resolution_mm)
    series = Canvas(tpl, sequences, np.random.default_rng(seed)).render(noise=0.0)
    parts = {}
    for seq in sequences:
        header, body, last = _nifti_parts(series[seq], tpl.affine, seq)
        parts[seq] = (header, gzip.compress(body, compresslevel=1), len(last))
    (dest / "bundle.json").write_text(json.dumps({
        "format": BUNDLE_FORMAT, "name": "Neural-MedBench synthetic scale bundle",
        "description": f"SYNTHETIC benchmark bundle: {n_cases} cases x {n_sequences} series, "
                       f"{n_responses} fictional responses. Not patient data.",
    }), encoding="utf-8")
    rng = np.random.default_rng(seed)
    case_by_id = {c.case_id: c for c in CASES}
    tasks = []
    for i in range(n_cases):
        case_id = f"scale-{i + 1:04d}"
        demo_task = TASKS[i % len(TASKS)]
        base = case_by_id[demo_task.case_id]
        folder = dest / "cases" / case_id
        folder.mkdir(parents=True)
        entries = []
        for seq in sequences:
            header, body_gz, n_last = parts[seq]
            head = _with_descrip(header, f"SYNTHETIC scale {case_id} {seq}")
            tail = rng.integers(0, 4, n_last // 2, dtype=np.int16).tobytes()
            name = f"{seq.lower()}.nii.gz"
            (folder / name).write_bytes(gzip.compress(head, compresslevel=1) + body_gz
                                        + gzip.compress(tail, compresslevel=1))
            entries.append({"sequence": seq, "file": name})
        (folder / "case.json").write_text(json.dumps({
            "case_id": case_id, "title": f"{base.title} (scale copy {i + 1})", "ehr": base.ehr,
            "scores": base.scores, "series": entries, "ground_truth": base.ground_truth,
        }, ensure_ascii=False), encoding="utf-8")
        tasks.append((f"scale-t{i + 1:04d}", case_id, demo_task))
    _write_jsonl(dest / "tasks.jsonl", (_task_row(t, task_id=tid, case_id=cid)
                                        for tid, cid, t in tasks))

    def responses() -> Iterable[dict[str, object]]:
        for r in range(n_responses):
            task_id, _, task = tasks[r % len(tasks)]
            model = MODELS[(r // len(tasks)) % len(MODELS)]
            sample = r // (len(tasks) * len(MODELS))
            prng = random.Random(f"{seed}|scale|{r}")
            written = _response(task, model, sample, pick(MODEL_PROFILES[model], prng), prng,
                                response_id=f"{task_id}-{model}-s{sample}")
            yield {**written.response, "task_id": task_id}

    _write_jsonl(dest / "responses.jsonl", responses())
    return dest
