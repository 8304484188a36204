"""The case info a DICOM or BIDS import cannot read from the images (`--case-info`).

One JSON object with the fields of case.json other than `series` and `masks` (`case_id`,
`title`, `ehr`, `scores`, `ground_truth`, `key_slices`) plus `tasks`: a list of task objects as
in tasks.jsonl, whose `case_id` defaults to the case's. The converters write it as case.json
and tasks.jsonl of the bundle they build, so every rule of the bundle format applies, and its
problems are named back as `CASE.json` and `CASE.json tasks[2]`.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from db.bundle.errors import Problem
from db.bundle.validate import read_json

CASE_FIELDS = ("case_id", "title", "ehr", "scores", "ground_truth", "key_slices")
FIELDS = (*CASE_FIELDS, "tasks")


@dataclass
class CaseInfo:
    """One case's info and where it came from (for problem messages)."""

    where: str  # "CASE.json" or "CASES.json sub-01"
    case: dict[str, Any]
    tasks: list[Any] = field(default_factory=list)


def check_info(obj: Any, where: str, problems: list[Problem], *, case_id: str | None = None
               ) -> CaseInfo | None:
    """`obj` as a CaseInfo (with `case_id` as the default id), or None with its problems."""
    if not isinstance(obj, dict):
        problems.append(Problem(where, None, "is not a JSON object"))
        return None
    ok = True
    for key in obj:
        if key in ("series", "masks"):
            problems.append(Problem(where, None, f"{key} comes from the images: leave it out"))
            ok = False
        elif key not in FIELDS:
            problems.append(Problem(where, None, f'unknown field "{key}" (known: '
                                                 f'{", ".join(FIELDS)})'))
            ok = False
    tasks = obj.get("tasks", [])
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        problems.append(Problem(where, None, "tasks is not a list of task objects"))
        ok = False
    if not ok:
        return None
    case = {k: obj[k] for k in CASE_FIELDS if k in obj}
    if case_id is not None:
        case.setdefault("case_id", case_id)
    if "case_id" not in case:
        problems.append(Problem(where, None, 'missing required field "case_id"'))
        return None
    cid = case["case_id"]
    if (not isinstance(cid, str) or not cid or cid != cid.strip() or len(cid) > 128
            or not cid.isprintable() or "/" in cid or "\\" in cid or cid.startswith(".")):
        problems.append(Problem(where, None, f"case_id {json.dumps(cid)[:60]} is not a valid "
                                "id (1-128 printable characters, no / or \\, not starting "
                                "with '.')"))
        return None
    return CaseInfo(where, case, [{"case_id": case["case_id"], **t} for t in tasks])


def read_case_info(path: Path, problems: list[Problem]) -> CaseInfo | None:
    """A CASE.json file (DICOM: one case)."""
    before = len(problems)
    obj = read_json(Path(path), Path(path).name, problems)
    return None if len(problems) > before else check_info(obj, Path(path).name, problems)


def write_case(root: Path, info: CaseInfo, series: list[dict], origin: dict[str, str],
               task_origin: list[str]) -> Path:
    """Write the case folder's case.json (with `series`) and append its tasks; returns the
    case folder (already holding the images)."""
    cid = str(info.case["case_id"])
    folder = root / "cases" / cid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps({**info.case, "series": series},
                                                 ensure_ascii=False), encoding="utf-8")
    origin[f"cases/{cid}/case.json"] = info.where
    with open(root / "tasks.jsonl", "a", encoding="utf-8") as f:
        for k, t in enumerate(info.tasks):
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
            task_origin.append(f"{info.where} tasks[{k}]")
    return folder


def mapped(problems: list[Problem], origin: dict[str, str], task_origin: list[str]
           ) -> list[Problem]:
    """The bundle import's problems, named by where they come from (case info, series)."""
    out = []
    for p in problems:
        if p.file == "tasks.jsonl" and p.line is not None and p.line <= len(task_origin):
            out.append(Problem(task_origin[p.line - 1], None, p.message))
        else:
            out.append(Problem(origin.get(p.file, p.file), p.line, p.message))
    return out
