"""Write `examples/sample-bundle/`, the small synthetic bundle for trying an import.

Two invented cases on 4 mm images derived from the MNI152 2009a template bundled with nilearn
(painted as the demo paints them: `demo.images`), three tasks (one with two stages) and the
answers of two fictional models. Nothing here is patient data. The files are committed; this
script rebuilds them exactly (tests/test_examples.py checks that):

    .venv/bin/python examples/make_sample_bundle.py [--out FOLDER]
"""

import argparse
import json
import shutil
from pathlib import Path

from demo.images import render_case, save_series

HERE = Path(__file__).resolve().parent
RESOLUTION_MM = 4
SYNTHETIC = "SYNTHETIC example case, invented for Neural-MedBench Studio; not patient data."

CASES = [
    {"case_id": "example-01", "kind": "ms", "sequences": ["T1", "FLAIR"],
     "title": "34-year-old woman with blurred vision in the left eye (synthetic example)",
     "ehr": f"{SYNTHETIC}\nAge / sex: 34 / F\nPresenting complaint: painful blurred vision in "
            "the left eye for five days.\nHistory: two years ago, numbness of the right leg "
            "that resolved in a month.\nExamination: left relative afferent pupillary defect; "
            "brisk reflexes in the right leg.\nLaboratory: CSF oligoclonal bands pending.",
     "scores": {"EDSS": 2.0},
     "ground_truth": {
         "final_diagnosis": "Relapsing-remitting multiple sclerosis",
         "differential": ["Multiple sclerosis", "Neuromyelitis optica spectrum disorder",
                          "Acute disseminated encephalomyelitis"],
         "lesion": "Periventricular and juxtacortical white-matter lesions, both hemispheres",
         "reasoning": "Two episodes separated in time, lesions separated in space on FLAIR: "
                      "dissemination in time and space."}},
    {"case_id": "example-02", "kind": "stroke", "sequences": ["DWI"],
     "title": "71-year-old man with sudden right weakness and aphasia (synthetic example)",
     "ehr": f"{SYNTHETIC}\nAge / sex: 71 / M\nPresenting complaint: sudden weakness of the "
            "right arm and face and difficulty speaking, 3 hours ago.\nHistory: atrial "
            "fibrillation, not anticoagulated.\nExamination: right hemiparesis, non-fluent "
            "aphasia.\nLaboratory: glucose 6.1 mmol/L.",
     "scores": {"NIHSS": 12},
     "ground_truth": {
         "final_diagnosis": "Acute left middle cerebral artery infarct",
         "differential": ["Acute ischaemic stroke", "Todd's paresis", "Intracerebral haemorrhage"],
         "lesion": "Left insula, frontal operculum and pre/postcentral gyri (diffusion restricted)",
         "reasoning": "Sudden deficit of the left MCA territory with bright DWI in that "
                      "territory, in a patient with atrial fibrillation: cardioembolic infarct."}},
]
TASKS = [
    {"task_id": "example-01-dx", "case_id": "example-01", "family": "differential", "level": 1,
     "prompt": "Give your differential diagnosis, most likely first."},
    {"task_id": "example-01-why", "case_id": "example-01", "family": "rationale", "level": 3,
     "prompt": "What is the most likely diagnosis? Explain your reasoning.",
     "stages": ["The CSF shows oligoclonal bands not present in serum.",
                "Six months later, a new FLAIR lesion appears in the right frontal white matter."]},
    {"task_id": "example-02-where", "case_id": "example-02", "family": "lesion", "level": 2,
     "prompt": "Where is the lesion, and on which sequence do you see it?"},
]
ANSWERS = {  # fictional models; invented answers, one correct and one not
    "example-model-a": {
        "example-01-dx": "1. Multiple sclerosis 2. NMOSD 3. ADEM",
        "example-01-why": ("Likely MS: optic neuritis and an earlier sensory episode.",
                           ["Oligoclonal bands support MS.",
                            "A new lesion shows dissemination in time: relapsing-remitting MS."]),
        "example-02-where": "Left MCA territory (insula, operculum), bright on DWI.",
    },
    "example-model-b": {
        "example-01-dx": "1. Migraine with aura 2. Multiple sclerosis",
        "example-01-why": ("Probably migraine.", ["Still migraine.", "Maybe MS after all."]),
        "example-02-where": "Right frontal lobe on DWI.",
    },
}


def write_sample_bundle(dest: Path) -> Path:
    """Write the sample bundle into `dest`: a new folder, or a bundle folder it replaces."""
    if (dest / "bundle.json").is_file():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)  # refuses a folder that exists and is not a bundle
    (dest / "bundle.json").write_text(json.dumps({
        "format": "nmb-bundle/1", "name": "Neural-MedBench Studio example (synthetic)",
        "description": "SYNTHETIC example bundle: two invented cases on images derived from the "
                       "MNI152 2009a template bundled with nilearn. Not patient data."},
        indent=2) + "\n")
    for i, c in enumerate(CASES):
        folder = dest / "cases" / c["case_id"]
        series, affine = render_case(c["kind"], c["sequences"], resolution_mm=RESOLUTION_MM,
                                     seed=i)
        for seq in c["sequences"]:
            save_series(series[seq], affine, folder / f"{seq.lower()}.nii.gz", sequence=seq)
        case = {k: c[k] for k in ("case_id", "title", "ehr", "scores", "ground_truth")}
        case["series"] = [{"sequence": seq, "file": f"{seq.lower()}.nii.gz"}
                          for seq in c["sequences"]]
        (folder / "case.json").write_text(json.dumps(case, indent=2) + "\n")
    (dest / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    rows = []
    for model, answers in ANSWERS.items():
        for task_id, answer in answers.items():
            text, turns = answer if isinstance(answer, tuple) else (answer, None)
            rows.append({"response_id": f"{task_id}-{model}", "task_id": task_id,
                         "model": model, "sample": 0, "text": text,
                         **({"turns": turns} if turns else {})})
    (dest / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dest


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "sample-bundle")
    print(write_sample_bundle(parser.parse_args().out))
