"""`nmb export release --out DIR [--answers FILE]`: the study's cases and tasks in the published
Neural-MedBench shape, so a maintainer can publish an updated release from the tool.

One JSON list per split (`db.release.format.SPLITS`, chosen by the task's level), each case
`{"case_id", "text", "images": [data URI], "questions": [...]}` with the pictures as data URIs of
their true MIME type (sniffed from the stored bytes) and question numbers counting through each
file. Importing the export into an empty study gives the same content (case ids, records, image
sha256s, prompts, stages, answers): `tests/db/release/test_release.py`. What the published shape cannot
hold is not written and is counted: cases with MRI volumes (pictures only), a second dialogue of
one case; families, titles, test scores, masks, key slices and responses are not part of it.
The answers go to a separate file, never inside DIR (they are kept apart from the release).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from db.engine import nmb_home
from db.files import replacing, writable
from db.models import Case, Series, Task
from db.release.format import BY_LEVEL, Split, encode_data_uri, picture_type
from db.study.reference import has_reference
from errors import UserError, counted


@dataclass
class ReleaseExport:
    """What was written: per file its cases and questions, the answers, what was left out."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> cases, questions
    answers: int = 0
    volume_cases: int = 0  # cases with a series that is not a picture: not written
    extra_dialogues: int = 0  # level-3 tasks beyond a case's first: not written
    other_families: int = 0  # tasks not `differential`: a re-import gives the file's family

    def __str__(self) -> str:
        parts = [f"wrote {name} ({counted(cases, 'case')}, {counted(questions, 'question')})"
                 for name, (cases, questions) in self.files.items()] or ["wrote no file"]
        if self.answers:
            parts.append(counted(self.answers, "answer"))
        if self.volume_cases:
            parts.append(f"skipped {counted(self.volume_cases, 'case')} with MRI volumes (the release "
                         "format holds pictures)")
        if self.extra_dialogues:
            parts.append(f"skipped {counted(self.extra_dialogues, 'second dialogue')} of a case")
        if self.other_families:
            parts.append(f"{counted(self.other_families, 'task')} "
                         f"{'is' if self.other_families == 1 else 'are'} not differential: import them "
                         "again with --family")
        return "; ".join(parts)


def natural_key(text: str) -> tuple:
    """Sort key putting "case_2" before "case_10": the decimal digit runs as numbers (not
    `isdigit`, which takes a "²" that `int` refuses)."""
    return tuple(int(p) if p.isdecimal() else p for p in re.split(r"(\d+)", text))


def _rounds(task: Task, first: int) -> list[dict[str, Any]]:
    """A level-3 task as questions: the prompt, then each stage split at its last blank line
    into `information` and `question_text` (the import joins them back with a blank line)."""
    out = [{"question_number": first, "question_text": task.prompt}]
    for k, stage in enumerate(task.stages or [], start=1):
        info, sep, question = stage.rpartition("\n\n")
        q = {"question_number": first + k, "question_text": stage}
        if sep and info.strip() and question.strip():
            q = {"question_number": first + k, "question_text": question, "information": info}
        out.append(q)
    return out


def _pictures(case_series: list[Series]) -> list[str] | None:
    """The case's series as data URIs, or None when one of them is not a picture."""
    uris = []
    for row in case_series:
        data = (nmb_home() / row.path).read_bytes()
        kind = picture_type(data[:16])
        if kind is None:
            return None
        uris.append(encode_data_uri(data, kind[0]))
    return uris


def _write_atomically(path: Path, chunks) -> None:
    with replacing(path) as partial, open(partial, "w", encoding="utf-8") as f:
        for chunk in chunks:
            f.write(chunk)


def _release_id(split: Split, case_id: str, used: set[str]) -> str:
    rid = case_id.removeprefix(f"{split.prefix}-")
    return rid if rid not in used else case_id


def export_release(s: Session, out: Path, *, answers: Path | None = None) -> ReleaseExport:
    """Write the release files into the folder `out` (created if missing; files of the same
    names are replaced) and, with `answers`, the answer key to that file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is not a folder")
    if answers is not None:
        answers = Path(answers)
        if answers.resolve().is_relative_to(out.resolve()):
            raise UserError(f"--answers {answers} is inside --out {out}: the answers are kept "
                            "apart from the published files")
        if answers.is_dir():
            raise UserError(f"--answers {answers} is a folder: name the file to write")
        if not answers.parent.is_dir():
            raise UserError(f"--answers {answers}: there is no folder {answers.parent} "
                            "(create it first)")
        try:  # before anything is written
            writable(answers)
        except OSError as e:
            raise UserError(f"cannot write --answers {answers}: {e.strerror}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot write --out {out}: {e.strerror}") from None
    summary = ReleaseExport()
    cases = {c.case_id: c for c in s.exec(select(Case))}
    series: dict[str, list[Series]] = {}
    for row in s.exec(select(Series).order_by(Series.case_id, Series.position)):
        series.setdefault(row.case_id, []).append(row)
    by_level: dict[int, dict[str, list[Task]]] = {}
    for t in s.exec(select(Task)):
        by_level.setdefault(t.level, {}).setdefault(t.case_id, []).append(t)
    images: dict[str, list[str] | None] = {}
    key: dict[str, dict[str, Any]] = {}

    def entries(split: Split, tasks_of: dict[str, list[Task]]):
        number, used, n_cases = 1, set(), 0
        for cid in sorted(tasks_of, key=natural_key):
            if cid not in images:
                images[cid] = _pictures(series.get(cid, []))
            uris = images[cid]
            if not uris:
                continue
            tasks = sorted(tasks_of[cid], key=lambda t: natural_key(t.task_id))
            summary.other_families += sum(t.family != "differential" for t in tasks)
            if split.level == 3:
                summary.extra_dialogues += len(tasks) - 1
                questions = _rounds(tasks[0], number)
            else:
                questions = [{"question_number": number + j, "question_text": t.prompt}
                             for j, t in enumerate(tasks)]
            number += len(questions)
            rid = _release_id(split, cid, used)
            used.add(rid)
            if has_reference(cases[cid].ground_truth):
                key[f"{split.prefix}-{rid}"] = _answer(cases[cid].ground_truth)
            n_cases += 1
            yield {"case_id": rid, "text": cases[cid].ehr, "images": uris,
                   "questions": questions}, len(questions)
        counts[split.file] = (n_cases, number - 1)

    counts: dict[str, tuple[int, int]] = {}
    for level in sorted(by_level):
        split = BY_LEVEL[level]

        def chunks(split=split, tasks_of=by_level[level]):
            yield "["
            for i, (entry, _) in enumerate(entries(split, tasks_of)):
                yield ("," if i else "") + "\n" + json.dumps(entry, ensure_ascii=False)
            yield "\n]\n"

        _write_atomically(out / split.file, chunks())
    summary.volume_cases = sum(1 for v in images.values() if not v)
    summary.files = counts
    if answers is not None:
        summary.answers = len(key)
        _write_atomically(Path(answers), [json.dumps(key, ensure_ascii=False, indent=1), "\n"])
    return summary


def _answer(gt: dict[str, Any]) -> dict[str, Any]:
    return {"diagnosis": gt["final_diagnosis"], "differential": list(gt.get("differential", [])),
            **{k: gt[k] for k in ("lesion", "reasoning") if k in gt}}
