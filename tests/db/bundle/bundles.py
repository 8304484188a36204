"""A small valid bundle (tiny 8x8x8 images) for the import, export and malformed-bundle tests."""

import json
from pathlib import Path

import nibabel as nib
import numpy as np

CASES = {
    "c1": {"title": "Left MCA stroke", "series": [("T1", "t1.nii.gz"), ("FLAIR", "flair.nii")],
           "scores": {"NIHSS": 7}},
    "c2": {"title": "Demyelination", "series": [("DWI", "dwi.nii.gz")], "scores": {"MoCA": 26.5}},
}
TASKS = [
    {"task_id": "t1", "case_id": "c1", "family": "differential", "level": 1,
     "prompt": "Give your differential diagnosis."},
    {"task_id": "t2", "case_id": "c1", "family": "lesion", "level": 2,
     "prompt": "Where is the lesion?", "stages": []},
    {"task_id": "t3", "case_id": "c2", "family": "rationale", "level": 3,
     "prompt": "What is happening?", "stages": ["The CSF shows oligoclonal bands.",
                                                "A follow-up MRI shows new lesions."]},
]
MODELS = ("model-a", "model-b")


def responses(models=MODELS, samples=(0, 1)) -> list[dict]:
    out = []
    for model in models:
        for t in TASKS:
            for k in samples:
                r = {"response_id": f"{model}-{t['task_id']}-{k}", "task_id": t["task_id"],
                     "model": model, "sample": k, "text": f"answer {k} to {t['task_id']}"}
                if t["level"] == 3:
                    r["turns"] = [f"turn {i}" for i in range(len(t["stages"]))]
                out.append(r)
    return out


def write_image(path: Path, shape=(8, 8, 8), seed: int = 0) -> None:
    data = np.random.default_rng(seed).integers(0, 1000, size=shape).astype(np.int16)
    nib.save(nib.Nifti1Image(data, np.diag([2.0, 2.0, 2.0, 1.0])), path)


def write_jsonl(path: Path, rows: list) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_bundle(dest: Path, *, name: str = "tiny", with_responses: list[dict] | None = None
                 ) -> Path:
    """Write the valid base bundle: 2 cases, 3 series, 3 tasks (levels 1-3), 12 responses."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "bundle.json").write_text(json.dumps(
        {"format": "nmb-bundle/1", "name": name, "description": "test bundle"}))
    seed = 0
    for cid, c in CASES.items():
        folder = dest / "cases" / cid
        folder.mkdir(parents=True, exist_ok=True)
        for seq, file in c["series"]:
            seed += 1
            write_image(folder / file, (8, 8, 8, 2) if seq == "DWI" else (8, 8, 8), seed)
        (folder / "case.json").write_text(json.dumps({
            "case_id": cid, "title": c["title"], "ehr": f"# {c['title']}\n\nA **synthetic** case.",
            "scores": c["scores"],
            "series": [{"sequence": s, "file": f} for s, f in c["series"]],
            "ground_truth": {"final_diagnosis": c["title"], "differential": ["a", "b"],
                             "lesion": "left frontal", "reasoning": "because"},
        }, indent=2))
    write_jsonl(dest / "tasks.jsonl", TASKS)
    write_jsonl(dest / "responses.jsonl",
                responses() if with_responses is None else with_responses)
    return dest


def snapshot(url: str) -> dict[str, list]:
    """Every row of every table, every file under NMB_HOME/images and everything in the temp
    area NMB_HOME/tmp but its lock file: 'unchanged' means equal."""
    from sqlmodel import SQLModel, select

    from db.engine import engine_for, nmb_home

    with engine_for(url).connect() as conn:
        rows = {t.name: sorted(map(repr, conn.execute(select(t)).all()))
                for t in SQLModel.metadata.sorted_tables}
    images = nmb_home() / "images"
    rows["files"] = sorted(str(p.relative_to(images)) for p in images.rglob("*")) \
        if images.exists() else []
    temp = nmb_home() / "tmp"
    rows["temp"] = sorted(str(p.relative_to(temp)) for p in temp.rglob("*")
                          if p.name != ".lock") if temp.exists() else []
    return rows
