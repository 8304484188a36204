"""How an answer from a harness finds its task: the format's key, a field, a map, the row order of
the task file, or the prompt (`nmb import-responses --task-key`).
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from db.bundle.importer import Problem
from db.bundle.validate import (
    read_json,
    read_jsonl,
    unknown_tasks_message,
)
from db.models import Task
from db.queries import fetch_in
from db.sources.answers import Answer, cap, read_capped, row_of
from errors import UserError, counted, one_line


@dataclass(frozen=True)
class TaskKey:
    """How an answer finds its task (`--task-key`):

    - `field:NAME`: the value of field (or column) NAME is the task id;
    - `map:FILE.json`: the format's own key (custom_id, index, doc_id, a bare line's
      position), looked up in a JSON object {key: task_id} (the key map);
    - `order:TASKS`: the format's own key is a row number, counted from 0, of the task file the
      harness was given: a `tasks.jsonl` (a bundle's or a package's: one object with task_id
      per line) or a text file of task ids, one per line (blank lines skipped);
    - `prompt`: the answer's question text equals the prompt of exactly one task (surrounding
      blanks ignored);
    - absent: the format's default key is the task id (docs/bundle-format.md).
    """

    kind: str = "default"  # default | field | map | order | prompt
    name: str = ""  # field name, or the map's or task file's path
    mapping: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, rule: str | None) -> "TaskKey":
        if not rule:
            return cls()
        if rule == "prompt":
            return cls("prompt")
        kind, _, name = rule.partition(":")
        if kind == "field" and name:
            return cls("field", name)
        if kind == "map" and name:
            problems: list[Problem] = []
            data = read_json(Path(name), Path(name).name, problems)
            if problems:
                raise UserError(f"--task-key {rule}: {problems[0]}")
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                raise UserError(f"--task-key {rule}: {Path(name).name} is not a JSON object "
                                "of task ids ({\"key\": \"task_id\", ...})")
            return cls("map", name, data)
        if kind == "order" and name:
            return cls("order", name, {str(i): t for i, t in enumerate(task_rows(Path(name),
                                                                                  rule))})
        raise UserError(f"--task-key {rule!r} is not field:NAME, map:FILE.json, order:TASKS "
                        "or prompt")


def task_rows(path: Path, rule: str) -> list[str]:
    """The task ids of a task file, in its row order (`TaskKey` `order:`); UserError naming
    the file and line of the first problem."""
    problems: list[Problem] = []
    if path.suffix.lower() == ".jsonl":
        rows = []
        for n, obj, why in read_jsonl(path, path.name, problems):
            tid = obj.get("task_id") if isinstance(obj, dict) and not why else None
            if not isinstance(tid, str) or not tid.strip():
                raise UserError(f"--task-key {rule}: {path.name}:{n}: has no task_id (a task "
                                "file's lines are tasks, as a bundle's tasks.jsonl)")
            rows.append(tid)
    else:
        data = read_capped(path, problems) if cap(path, problems) else None
        try:
            text = data.decode("utf-8-sig") if data is not None else None
        except UnicodeDecodeError:
            raise UserError(f"--task-key {rule}: {path.name}: not UTF-8 text") from None
        rows = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if problems:
        raise UserError(f"--task-key {rule}: {problems[0]}")
    if not rows:
        raise UserError(f"--task-key {rule}: {path.name} holds no task")
    return rows


def key_text(v: Any) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)  # a spreadsheet's 3.0 is the index 3
    return str(v) if isinstance(v, str | int | float) else None


def lookup(keys: dict[str, Any], name: str) -> Any:
    """`name` in `keys`, or a dotted path into nested objects (`doc.task_id`)."""
    if name in keys:
        return keys[name]
    v: Any = keys
    for part in name.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def match_tasks(s: Session, answers: list[Answer], rule: TaskKey, label: str,
                problems: list[Problem]) -> list[str | None]:
    """The task id of each answer (None where it has none); unknown and ambiguous keys are
    one problem line each, listing them all."""
    prompts: dict[str, list[str]] = {}
    if rule.kind == "prompt":
        for tid, prompt in s.exec(select(Task.task_id, Task.prompt)):
            prompts.setdefault(prompt.strip(), []).append(tid)
    raw: list[str | None] = []
    missing: list[str] = []
    ambiguous: dict[str, list[str]] = {}
    unmapped: dict[str, list[int]] = {}
    for a in answers:
        if rule.kind == "prompt":
            q = a.keys.get("question")
            hits = prompts.get(q.strip(), []) if isinstance(q, str) else []
            if len(hits) > 1:
                ambiguous.setdefault(one_line(q, 60), []).append(a.where)
            elif not hits:
                unmapped.setdefault(one_line(q, 60) if isinstance(q, str) else "(no question)",
                                    []).append(row_of(a))
            raw.append(hits[0] if len(hits) == 1 else None)
            continue
        native = a.native_key or a.default_key
        name = {"field": rule.name, "map": native, "order": native}.get(rule.kind, a.default_key)
        key = key_text(lookup(a.keys, name))
        if key is None:
            missing.append(a.where)
            raw.append(None)
        elif rule.kind in ("map", "order"):
            if key not in rule.mapping:
                unmapped.setdefault(key, []).append(row_of(a))
            raw.append(rule.mapping.get(key))
        else:
            raw.append(key)
    if missing:
        first = answers[0]
        name = {"field": rule.name, "map": first.native_key or first.default_key,
                "order": first.native_key or first.default_key}.get(rule.kind, first.default_key)
        problems.append(Problem(label, None, f"{counted(len(missing), 'answer')} "
                                f"{'has' if len(missing) == 1 else 'have'} no task key {name} "
                                f"(first: {missing[0]}); see --task-key"))
    if ambiguous:
        shown = "; ".join(f"{q!r} ({', '.join(w[:3])})" for q, w in list(ambiguous.items())[:10])
        problems.append(Problem(label, None, f"{counted(len(ambiguous), 'question')} "
                                f"{'is' if len(ambiguous) == 1 else 'are'} the prompt of "
                                f"more than one task, which the prompt cannot tell apart: "
                                f"{shown}; use --task-key order:TASKS (the row order of the "
                                "task file the harness was given), map:FILE.json or field:NAME"))
    if unmapped and rule.kind == "order":
        keys = list(unmapped)
        problems.append(Problem(label, None, f"{counted(len(keys), 'key')} "
                                f"{'is' if len(keys) == 1 else 'are'} not a row of "
                                f"{Path(rule.name).name} (rows 0 to {len(rule.mapping) - 1}): "
                                + ", ".join(f"{k!r}" for k in keys[:20])
                                + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")))
        unmapped = {}
    if unmapped:
        where = "in " + Path(rule.name).name if rule.kind == "map" else "among the task prompts"
        problems.append(Problem(label, None, f"{counted(len(unmapped), 'key')} "
                                f"{'is' if len(unmapped) == 1 else 'are'} not {where}: "
                                + ", ".join(f"{k!r}" for k in list(unmapped)[:20])
                                + (f" and {len(unmapped) - 20} more" if len(unmapped) > 20
                                   else "")))
    known = set(fetch_in(s, Task.task_id, {t for t in raw if t is not None}, Task.task_id))
    unknown: dict[str, list[int]] = {}
    for a, tid in zip(answers, raw, strict=True):
        if tid is not None and tid not in known:
            unknown.setdefault(tid, []).append(row_of(a))
    if unknown:
        hint = ""
        if rule.kind == "default" and all(a.positional for a in answers) and all(
                t.isdigit() for t in unknown):
            hint = (f"; these {answers[0].default_key} values look like row numbers, not "
                    "task ids: --task-key order:TASKS reads them as rows (from 0) of the task "
                    "file the harness was given, map:FILE.json through a key map")
        problems.append(Problem(label, None, unknown_tasks_message(unknown, "row") + hint))
    return [t if t in known else None for t in raw]
