"""Validate a bundle (`nmb-bundle/1`, see docs/bundle-format.md) before anything is written.

Every rule is checked and every problem is collected, so the user sees them all at once:
JSON/JSONL syntax, values the database can store (64-bit integers, text that encodes as UTF-8
without NUL, bounded nesting), required fields and types (the pydantic models of
`db.bundle.records`, whose errors become problem lines), families and levels, unique ids,
references, case folders, stages, image paths (no escape from the bundle) and the images
themselves (`imaging.inspect_image` opens and reads each one fully), which are hashed (sha256)
as well. Lesion masks pass the same checks plus their own (`imaging.inspect_mask`: one 3-D
volume of whole-number labels >= 0, overlapping its series in world space). A series whose
file's bytes are a PNG, JPEG or WebP picture is a picture (`imaging.picture`): it is capped,
decoded fully and sanitised (oriented, metadata stripped, re-encoded as PNG) into the
workspace, and that sanitised PNG is what is hashed and stored.
"""

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from db.bundle.errors import BundleInvalid, Problem
from db.bundle.images import Facts, hash_all, inspect_all, timed
from db.bundle.key_slices import (
    hanging_protocol_messages,
    key_slice_messages,
    key_slice_range_problems,
)
from db.bundle.records import (
    BundleMeta,
    CaseRecord,
    GroundTruth,
    MaskEntry,
    Record,
    ResponseRecord,
    SeriesEntry,
    TaskRecord,
    check_fields,
    show,
)
from db.bundle.store import Workspace
from db.bundle.zip import MAX_UNZIPPED_BYTES, open_bundle
from db.text_limits import UNSTORABLE
from errors import UserError, counted, not_a_file, read_at_most
from imaging import image_box, inspect_mask, overlaps
from imaging.picture import other_format, sanitise_picture, sniff_file

IMAGE_SUFFIXES = (".nii.gz", ".nii", ".mgz")
#: A JSON or JSONL file larger than this is refused before it is read.
MAX_TEXT_FILE_BYTES = 512 * 2**20
#: Nesting of objects and lists in one JSON value (the format itself needs 3).
MAX_JSON_DEPTH = 16
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# In JSON text from valid UTF-8, NUL and surrogates only come from these `\u` escapes.
_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
Progress = Callable[[float, str], None]
#: Given sha256s, the (shape, voxel sizes) of those the study already holds (checked before).
KnownImages = Callable[[set[str]], dict[str, Facts]]
#: Given task ids, {task_id: {"level", "stages"}} of those the study holds (responses-only).
KnownTasks = Callable[[set[str]], dict[str, dict]]
#: Unknown task ids listed by name in the one problem line of a responses-only bundle.
MAX_NAMED_UNKNOWN = 20


# ---------------------------------------------------------------- parsed content


@dataclass
class SeriesFile:
    """One image of a case: where it is in the bundle, its content hash and header facts."""

    case_id: str
    position: int
    sequence: str
    file: str  # relative to the bundle root, e.g. "cases/c1/t1.nii.gz"
    source: Path
    suffix: str  # ".nii.gz" | ".nii" | ".mgz"; ".png" for a picture (stored sanitised)
    sha256: str = ""
    shape: list[int] = field(default_factory=list)  # a picture: [width, height]
    voxel_sizes: list[float] = field(default_factory=list)  # a picture: []
    picture: bool = False  # a 2-D picture (PNG, JPEG or WebP by its bytes), not a volume
    plane: str | None = None  # pictures only
    caption: str | None = None  # pictures only


@dataclass
class MaskFile:
    """A lesion mask of a case: its label, the series it is drawn on (None: every series) and,
    as for a series, where it is in the bundle, its hash and header facts."""

    case_id: str
    position: int
    label: str
    series: str | None
    file: str
    source: Path
    suffix: str
    sha256: str = ""
    shape: list[int] = field(default_factory=list)
    voxel_sizes: list[float] = field(default_factory=list)


@dataclass
class ValidBundle:
    """A bundle's parsed content; images stay in `root` until imported (`close()` frees a zip
    extracted into its own workspace)."""

    label: str
    root: Path
    name: str
    description: str
    cases: list[dict[str, Any]]
    series: list[SeriesFile]
    masks: list[MaskFile]
    tasks: list[dict[str, Any]]
    responses: list[dict[str, Any]]
    where: dict[tuple[str, str], tuple[str, int | None]]  # (kind, id) -> (file, line)
    timings: dict[str, float]
    images_inspected: int = 0
    _workspace: Workspace | None = None

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()

    def __enter__(self) -> "ValidBundle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- JSON reading


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f'duplicate key "{k}"')
        out[k] = v
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str, parse_int: Callable[[str], int] = int) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
                          parse_int=parse_int)
    except RecursionError:  # the C decoder's own depth guard, far beyond MAX_JSON_DEPTH
        raise ValueError(f"nesting is deeper than {MAX_JSON_DEPTH} levels") from None


def unstorable(value: Any) -> str | None:
    """Why a parsed JSON value cannot be stored as it is, or None.

    Integers must fit in 64 bits (SQLite and PostgreSQL), text must encode as UTF-8 (no lone
    surrogate from a `\\ud800` escape) and hold no NUL (PostgreSQL text), nesting is bounded.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        v, depth, where = stack.pop()
        if isinstance(v, dict | list):
            if depth > MAX_JSON_DEPTH:
                return f"{where or 'value'} is nested deeper than {MAX_JSON_DEPTH} levels"
            pairs = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in pairs:  # a key is named as is when short and printable, else shown
                name = k if isinstance(k, int) or (len(k) <= 40 and k.isprintable()) else show(k, 40)
                inner = f"{where}[{k}]" if isinstance(k, int) else f"{where}.{name}" if where else name
                stack += [(k, depth, f"a key of {where or 'the record'}"), (x, depth + 1, inner)]
        elif isinstance(v, str) and (bad := UNSTORABLE.search(v)):
            what = "a NUL character" if bad.group() == "\x00" else "an unpaired surrogate"
            return (f"{where or 'text'} contains {what} (\\u{ord(bad.group()):04x}) "
                    f"at character {bad.start()}, which cannot be stored")
        elif isinstance(v, int) and not INT64_MIN <= v <= INT64_MAX:
            return f"{where or 'integer'} {show(v)} does not fit in 64 bits"
    return None


def _parse(text: str, escapes: bool = True) -> tuple[Any, str | None]:
    """The JSON value of `text` and why it cannot be stored (None when it can); ValueError on
    bad syntax. The walk of `unstorable` runs only when the text may hold such a value: an
    integer of 19 digits or more, more than MAX_JSON_DEPTH brackets, or (unless `escapes` is
    False: its file has none) a NUL or surrogate escape.
    """
    long_ints = []

    def integer(digits: str) -> int:
        if len(digits) > 18:
            long_ints.append(digits)
        return int(digits)

    value = _loads(text, integer)
    suspect = (long_ints or text.count("[") + text.count("{") > MAX_JSON_DEPTH
               or (escapes and _ESCAPE.search(text)))
    return value, unstorable(value) if suspect else None


def _syntax(e: ValueError) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
    return f"invalid JSON: {e}"


def leaves(root: Path, path: Path) -> bool:
    """Does `path`, found under `root` (a bundle, a dataset), resolve outside it? Links within
    it (DataLad's annex) do not; a loop of links, which leads to no file inside, does."""
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a loop (Python < 3.13)
        return True


def _own_file_problem(root: Path, path: Path) -> str | None:
    """Why the bundle's own file `path` (bundle.json, case.json, a .jsonl) may not be read."""
    if leaves(root, path):
        return "is a symbolic link that leaves the bundle"
    return None if path.is_file() else not_a_file(path, "file is missing")


def _read_text(path: Path, rel: str, problems: list[Problem], root: Path | None = None
               ) -> str | None:
    """The text of `path`, capped; with `root` (a bundle's own file), only a regular file that
    stays inside the bundle is read (not a pipe, which would block, nor another file linked)."""
    if root is not None and (why := _own_file_problem(root, path)):
        problems.append(Problem(rel, None, why))
        return None
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_FILE_BYTES:
            problems.append(Problem(rel, None, f"is {size:,} bytes, more than the limit of "
                                               f"{MAX_TEXT_FILE_BYTES:,}"))
            return None
        if (data := read_at_most(path, MAX_TEXT_FILE_BYTES)) is None:
            problems.append(Problem(rel, None, f"is more than the limit of "
                                               f"{MAX_TEXT_FILE_BYTES:,} bytes"))
            return None
    except OSError as e:
        problems.append(Problem(rel, None, f"cannot read: {e.strerror or e}"))
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        problems.append(Problem(rel, line, f"not UTF-8 text (byte {data[e.start]:#04x})"))
        return None


def read_json(path: Path, rel: str, problems: list[Problem], root: Path | None = None) -> Any:
    """The JSON value of `path` (with `root`: a file of that bundle), or None with problems."""
    if root is None and not path.is_file():
        problems.append(Problem(rel, None, not_a_file(path, "file is missing")))
        return None
    text = _read_text(path, rel, problems, root)
    if text is None:
        return None
    try:
        value, why = _parse(text)
    except ValueError as e:
        problems.append(Problem(rel, None, _syntax(e)))
        return None
    if why:
        problems.append(Problem(rel, None, why))
        return None
    return value


def read_jsonl(path: Path, rel: str, problems: list[Problem], root: Path | None = None
               ) -> list[tuple[int, Any, str | None]]:
    """(line number, parsed value, why it cannot be stored or None) of every non-blank line
    that parses; lines that do not become problems. An unstorable row still names its id, so
    rows that refer to it are not reported as well."""
    text = _read_text(path, rel, problems, root)
    if text is None:
        return []
    rows = []
    escapes = _ESCAPE.search(text) is not None
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, *_parse(line, escapes)))
        except ValueError as e:
            problems.append(Problem(rel, n, _syntax(e).replace(" (line 1, column", " (column")))
    return rows


# ---------------------------------------------------------------- images


def image_suffix(name: str) -> str | None:
    low = name.lower()
    return next((s for s in IMAGE_SUFFIXES if low.endswith(s)), None)


def _image_path_problem(root: Path, case_dir: Path, file: str, *, pictures: bool = False
                        ) -> str | None:
    """Why `file` (from case.json) may not be used, or None. Paths stay inside the bundle.

    With `pictures` (series), a file of any name whose bytes are a PNG, JPEG or WebP picture
    is fine too; otherwise a volume's name ends in .nii, .nii.gz or .mgz."""
    pure = PurePosixPath(file)
    if file.startswith(("/", "\\")) or pure.is_absolute() or (len(file) > 1 and file[1] == ":"):
        return "is an absolute path (image paths are relative to the case folder)"
    if ".." in pure.parts or ".." in file.split("\\"):
        return "contains '..' (image paths stay inside the case folder)"
    if image_suffix(file) is None and not pictures:
        return "is not a .nii, .nii.gz or .mgz file"
    path = case_dir / file
    try:
        if not path.exists() and not path.is_symlink():
            return "does not exist"
    except OSError as e:  # a name no file can have (ENAMETOOLONG)
        return f"cannot be opened: {e.strerror}"
    if leaves(root, path):
        return "is a symbolic link that leaves the bundle"
    real = path.resolve()
    if not real.is_file():
        return "is not a regular file"
    if image_suffix(file) is None and sniff_file(real) is None:
        try:
            with open(real, "rb") as f:
                other = other_format(f.read(16))
        except OSError:
            other = None
        if other:
            return f"is a {other} picture (pictures are PNG, JPEG or WebP)"
        return "is not a .nii, .nii.gz or .mgz file, nor a PNG, JPEG or WebP picture"
    return None


# ---------------------------------------------------------------- the bundle


def _image_entries(root: Path, case_dir: Path, obj: dict, name: str, model: type[Record],
                   msgs: list[str]) -> list[tuple[int, dict, str]]:
    """(position, item, file relative to the bundle) of the valid items of case.json's list
    `name` (series or masks); what is wrong with the others goes to `msgs`."""
    out = []
    for i, item in enumerate(obj.get(name) if isinstance(obj.get(name), list) else []):
        item_msgs = check_fields(item, model, f"{name}[{i}].")
        msgs += item_msgs
        if item_msgs:
            continue
        why = _image_path_problem(root, case_dir, item["file"], pictures=name == "series")
        if why:
            msgs.append(f"{name}[{i}].file {show(item['file'])} {why}")
            continue
        out.append((i, item, f"cases/{case_dir.name}/{PurePosixPath(item['file'])}"))
    return out


def _parse_case(root: Path, case_dir: Path, problems: list[Problem]
                ) -> tuple[dict | None, list[SeriesFile], list[MaskFile]]:
    rel = f"cases/{case_dir.name}/case.json"
    if not (case_dir / "case.json").exists():
        problems.append(Problem(f"cases/{case_dir.name}", None, "case folder has no case.json"))
        return None, [], []
    obj = read_json(case_dir / "case.json", rel, problems, root)
    if obj is None:
        return None, [], []
    msgs = check_fields(obj, CaseRecord)
    if isinstance(obj, dict):
        if isinstance(obj.get("case_id"), str) and obj["case_id"] != case_dir.name:
            msgs.append(f"case_id {show(obj['case_id'])} does not match its folder name "
                        f"{show(case_dir.name)}")
        if isinstance(obj.get("ground_truth"), dict):
            msgs += check_fields(obj["ground_truth"], GroundTruth, "ground_truth.")
        series = obj.get("series")
        if isinstance(series, list) and not series:
            msgs.append("series is empty (a case has at least one image)")
    files: list[SeriesFile] = []
    masks: list[MaskFile] = []
    if isinstance(obj, dict):
        for i, item, file in _image_entries(root, case_dir, obj, "series", SeriesEntry, msgs):
            picture = sniff_file(case_dir / item["file"]) is not None  # bytes decide
            for key in ("plane", "caption") if not picture else ():
                if key in item:
                    msgs.append(f"series[{i}].{key} is for pictures; {show(item['file'])} is "
                                "a volume")
            files.append(SeriesFile(
                case_id=case_dir.name, position=i, sequence=item["sequence"], file=file,
                source=case_dir / item["file"],
                suffix=".png" if picture else image_suffix(item["file"]) or "",
                picture=picture, plane=item.get("plane"), caption=item.get("caption")))
        sequences = [s.get("sequence") for s in obj["series"]
                     if isinstance(s, dict)] if isinstance(obj.get("series"), list) else None
        pictures = {f.sequence for f in files if f.picture}
        for i, item, file in _image_entries(root, case_dir, obj, "masks", MaskEntry, msgs):
            named = item.get("series")
            if named is not None and sequences is not None and sequences.count(named) != 1:
                what = "names two series" if sequences.count(named) > 1 else "is not a series"
                msgs.append(f"masks[{i}].series {show(named)} {what} of this case")
                continue
            if named in pictures:
                msgs.append(f"masks[{i}].series {show(named)} is a picture (masks are drawn "
                            "on volumes)")
                continue
            masks.append(MaskFile(case_id=case_dir.name, position=i, label=item["label"],
                                  series=named, file=file, source=case_dir / item["file"],
                                  suffix=image_suffix(item["file"]) or ""))
        if sequences is not None:
            msgs += key_slice_messages(obj.get("key_slices", []), sequences)
            msgs += hanging_protocol_messages(
                obj.get("hanging_protocol"),
                [s for s in sequences if s not in pictures])
            for i, ks in enumerate(obj.get("key_slices") or []):
                if isinstance(ks, dict) and ks.get("series") in pictures:
                    msgs.append(f"key_slices[{i}].series {show(ks['series'])} is a picture "
                                "(a picture is always shown whole)")
    problems += [Problem(rel, None, m) for m in msgs]
    if msgs:
        return None, files, masks
    row = {"case_id": obj["case_id"], "title": obj["title"], "ehr": obj["ehr"],
           "scores": obj.get("scores", {}), "ground_truth": obj.get("ground_truth"),
           "key_slices": obj.get("key_slices"), "patient": obj.get("patient")}
    if obj.get("hanging_protocol") is not None:  # stored as the case's opening view
        row["opening_view"] = {**obj["hanging_protocol"], "source": "protocol"}
    return row, files, masks


def _parse_tasks(root: Path, case_ids: set[str], all_case_dirs: set[str],
                 problems: list[Problem], where: dict) -> tuple[list[dict], bool]:
    """The valid tasks, and whether every line could be read (so every task id is known)."""
    rel = "tasks.jsonl"
    if not (root / rel).is_file():
        problems.append(Problem(rel, None, "file is missing"))
        return [], False
    tasks = []
    before = len(problems)
    rows = read_jsonl(root / rel, rel, problems, root)
    complete = len(problems) == before
    for n, obj, why in rows:
        msgs = [why] if why else check_fields(obj, TaskRecord)
        if isinstance(obj, dict) and not why:
            tid, level, stages = obj.get("task_id"), obj.get("level"), obj.get("stages")
            if isinstance(tid, str) and ("task", tid) in where:
                first = where["task", tid][1]
                msgs.append(f"task_id {show(tid)} is used twice (first on line {first})")
            cid = obj.get("case_id")
            if isinstance(cid, str) and cid not in all_case_dirs:
                msgs.append(f"case_id {show(cid)} is not a case of this bundle")
            if level == 3 and "stages" in obj and stages == []:
                msgs.append("a level-3 task needs at least one stage (stages is empty)")
            elif level == 3 and "stages" not in obj:
                msgs.append("a level-3 task needs stages (at least one)")
            elif level in (1, 2) and stages:
                msgs.append(f"a level-{level} task has no stages, got {show(stages)}")
            marks, n_stages = obj.get("disconfirming"), len(stages or []) if (
                stages is None or isinstance(stages, list)) else None
            if isinstance(marks, list) and n_stages is not None and len(marks) != n_stages:
                msgs.append(f"disconfirming has {counted(len(marks), 'mark')} for "
                            f"{counted(n_stages, 'stage')} "
                            "(one true or false per stage)")
        problems += [Problem(rel, n, m) for m in msgs]
        if isinstance(obj, dict) and isinstance(obj.get("task_id"), str):
            where.setdefault(("task", obj["task_id"]), (rel, n))
        if msgs:
            continue
        if obj["case_id"] not in case_ids:
            continue  # the case has problems of its own; already reported
        tasks.append({"task_id": obj["task_id"], "case_id": obj["case_id"],
                      "family": obj["family"], "level": obj["level"], "prompt": obj["prompt"],
                      "stages": list(obj.get("stages") or []),
                      "show_masks": obj.get("show_masks", False),
                      "practice": obj.get("practice", False),
                      "disconfirming": (list(obj["disconfirming"])
                                        if any(obj.get("disconfirming") or ()) else None)})
    return tasks, complete


def _parse_responses(root: Path, tasks: dict[str, dict], problems: list[Problem],
                     where: dict, all_task_ids_known: bool,
                     study_tasks: KnownTasks | None = None) -> list[dict]:
    """The valid responses. With `study_tasks` (a responses-only bundle), their tasks are the
    study's: the task ids it does not hold are listed in one problem line."""
    rel = "responses.jsonl"
    if not (root / rel).exists():
        return []
    out, keys = [], {}
    rows = read_jsonl(root / rel, rel, problems, root)
    unknown: dict[str, list[int]] = {}
    if study_tasks is not None:
        ids = {obj["task_id"] for _, obj, why in rows if not why and isinstance(obj, dict)
               and isinstance(obj.get("task_id"), str)}
        tasks = study_tasks(ids) if ids else {}
        all_task_ids_known = False  # unknown ids: the one line below
    for n, obj, why in rows:
        if (study_tasks is not None and not why and isinstance(obj, dict)
                and isinstance(obj.get("task_id"), str) and obj["task_id"] not in tasks):
            unknown.setdefault(obj["task_id"], []).append(n)
        msgs = [why] if why else check_fields(obj, ResponseRecord)
        if isinstance(obj, dict) and not why:
            rid, tid = obj.get("response_id"), obj.get("task_id")
            twice = isinstance(rid, str) and ("response", rid) in where
            if twice:
                first = where["response", rid][1]
                msgs.append(f"response_id {show(rid)} is used twice (first on line {first})")
            if (all_task_ids_known and isinstance(tid, str) and tid not in tasks
                    and ("task", tid) not in where):
                msgs.append(f"task_id {show(tid)} is not a task of this bundle")
            key = (tid, obj.get("model"), obj.get("sample"))
            if all(isinstance(k, str | int) for k in key) and not isinstance(key[2], bool):
                if key in keys and not twice:  # a repeated line: said once above
                    msgs.append(f"model {show(key[1])} has two responses with sample {key[2]} "
                                f"for task {show(tid)} (first on line {keys[key]})")
                keys.setdefault(key, n)
            task, turns = tasks.get(tid) if isinstance(tid, str) else None, obj.get("turns")
            if task is not None and isinstance(turns, list):
                if task["level"] != 3:
                    msgs.append(f"turns are for level-3 tasks; task {show(tid)} is "
                                f"level {task['level']}")
                elif len(turns) != len(task["stages"]):
                    msgs.append(f"turns has {counted(len(turns), 'answer')} but task {show(tid)} has "
                                f"{counted(len(task['stages']), 'stage')} (one answer per stage)")
        problems += [Problem(rel, n, m) for m in msgs]
        if isinstance(obj, dict) and isinstance(obj.get("response_id"), str):
            where.setdefault(("response", obj["response_id"]), (rel, n))
        if msgs or obj["task_id"] not in tasks:
            continue
        out.append({"response_id": obj["response_id"], "task_id": obj["task_id"],
                    "model": obj["model"], "sample": obj["sample"], "text": obj["text"],
                    "turns": obj.get("turns"), "usage": obj.get("usage")})
    if unknown:
        problems.append(Problem(rel, None, unknown_tasks_message(unknown)))
    return out


def unknown_tasks_message(unknown: dict[str, list[int]], what: str = "line") -> str:
    """One line naming the task ids (and where they are) that the study does not hold."""
    named = [f"{show(tid)} ({what}{'s' if len(at) > 1 else ''} "
             f"{', '.join(map(str, at[:3]))}{', ...' if len(at) > 3 else ''})"
             for tid, at in list(unknown.items())[:MAX_NAMED_UNKNOWN]]
    more = len(unknown) - len(named)
    n = len(unknown)
    return (f"{n} task_id{'s are' if n > 1 else ' is'} not {'tasks' if n > 1 else 'a task'} "
            f"of this study: {', '.join(named)}" + (f" and {more} more" if more else ""))


def blank_message(sf: SeriesFile, what: str) -> str:
    """The refusal of a blank series: it names the series and its case."""
    return (f"series {show(sf.sequence)} of case {sf.case_id} is blank ({what}): "
            "--allow-blank imports it anyway")


def _check_pictures(files: list[SeriesFile], problems: list[Problem], scratch: Path,
                    allow_blank: bool = False) -> None:
    """Sanitise every picture (`imaging.picture`) into `scratch`: from then on its source is
    the sanitised PNG, its sha256 that PNG's, its shape [width, height]. A picture of one
    colour is a problem unless `allow_blank`."""
    scratch.mkdir(parents=True, exist_ok=True)
    for n, sf in enumerate(files):
        try:
            pic = sanitise_picture(sf.source, sf.file)
        except UserError as e:
            why = str(e).removeprefix(f"{sf.file}: ")
            problems.append(Problem(sf.file, None, f"is not a usable picture: {why}"))
            continue
        if pic.blank and not allow_blank:
            problems.append(Problem(sf.file, None, blank_message(sf, "every pixel has one "
                                                                     "colour")))
            continue
        sha = hashlib.sha256(pic.png).hexdigest()
        clean = scratch / f"{n}-{sha}.png"
        clean.write_bytes(pic.png)
        sf.source, sf.sha256, sf.shape, sf.voxel_sizes = clean, sha, [pic.width, pic.height], []


def _check_images(files: list[SeriesFile], problems: list[Problem], progress: Progress | None,
                  timings: dict[str, float], known: KnownImages | None,
                  scratch: Path | None = None, allow_blank: bool = False) -> int:
    """Hash every volume, then inspect those whose content the study does not hold yet;
    sanitise every picture (into `scratch`). A blank image (every voxel or pixel of one
    value) is a problem unless `allow_blank`; one the study holds was checked when imported.

    Returns the number of images inspected (opened and read fully).
    """
    pictures = [f for f in files if f.picture]
    if pictures:
        stop = timed(timings, "pictures")
        if scratch is None:
            raise ValueError("pictures need a scratch folder")
        _check_pictures(pictures, problems, scratch, allow_blank)
        stop()
    files = [f for f in files if not f.picture]
    stop = timed(timings, "image_hash")
    for sf, h in zip(files, hash_all([f.source for f in files]), strict=True):
        if isinstance(h, OSError):
            problems.append(Problem(sf.file, None, f"cannot read: {h.strerror or h}"))
        else:
            sf.sha256 = h
    stop()
    hashed = [f for f in files if f.sha256]
    stored = known({f.sha256 for f in hashed}) if known and hashed else {}
    todo: dict[tuple[str, str], list[SeriesFile]] = {}  # same content twice: inspect once
    for sf in hashed:
        if sf.sha256 in stored:
            sf.shape, sf.voxel_sizes = stored[sf.sha256]
        else:
            todo.setdefault((sf.sha256, sf.suffix), []).append(sf)
    stop = timed(timings, "image_inspect")
    groups = list(todo.values())
    results = inspect_all([g[0].source for g in groups], progress, 0.0, 0.7)
    for group, result in zip(groups, results, strict=True):
        for sf in group:
            if isinstance(result, str):
                problems.append(Problem(sf.file, None, f"is not a usable image: {result}"))
            elif result[2] is not None and not allow_blank:
                problems.append(Problem(sf.file, None, blank_message(
                    sf, f"every voxel is {result[2]:g}")))
            else:
                sf.shape, sf.voxel_sizes = result[:2]
    stop()
    return len(groups) + len(pictures)


def _check_masks(masks: list[MaskFile], files: list[SeriesFile], problems: list[Problem]) -> None:
    """Hash and inspect every mask (masks are small and always read: a stored series of the
    same content was never checked as labels), and check that each overlaps its series."""
    series_of: dict[str, list[SeriesFile]] = {}
    for sf in files:
        if sf.shape and not sf.picture:  # a usable volume
            series_of.setdefault(sf.case_id, []).append(sf)
    for mf, h in zip(masks, hash_all([m.source for m in masks]), strict=True):
        field_ = f"masks[{mf.position}].file {show(mf.file.removeprefix(f'cases/{mf.case_id}/'))}"
        where = f"cases/{mf.case_id}/case.json"
        if isinstance(h, OSError):
            problems.append(Problem(where, None, f"{field_} cannot be read: {h.strerror or h}"))
            continue
        try:
            info, box = inspect_mask(mf.source)
            targets = [sf for sf in series_of.get(mf.case_id, [])
                       if mf.series in (None, sf.sequence)]
            if targets and not any(overlaps(box, image_box(sf.source)) for sf in targets):
                what = f"series {mf.series}" if mf.series else "any series of the case"
                raise UserError(f"{mf.source.name}: lies outside {what} in world (scanner mm) "
                                "space")
        except UserError as e:
            why = str(e).removeprefix(f"{mf.source.name}: ")
            problems.append(Problem(where, None, f"{field_} is not a usable mask: {why}"))
            continue
        mf.sha256, mf.shape, mf.voxel_sizes = h, list(info.shape), list(info.voxel_sizes)


def responses_only(root: Path) -> bool:
    """A bundle of responses to tasks the study holds: no cases folder, no tasks.jsonl."""
    return (not (root / "cases").exists() and not (root / "tasks.jsonl").exists()
            and (root / "responses.jsonl").is_file())


def _validate_open(root: Path, label: str, progress: Progress | None,
                   known: KnownImages | None, scratch: Path,
                   known_tasks: KnownTasks | None = None,
                   allow_blank: bool = False) -> tuple[ValidBundle, list]:
    problems: list[Problem] = []
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    meta = read_json(root / "bundle.json", "bundle.json", problems, root)
    if meta is not None:
        problems += [Problem("bundle.json", None, m) for m in check_fields(meta, BundleMeta)]
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else label
    if responses_only(root):
        if known_tasks is None:
            problems.append(Problem("responses.jsonl", None, "a bundle of responses only is "
                                    "checked against the study's tasks: import it (nmb import "
                                    "--dry-run)"))
            known_tasks = lambda ids: {}  # noqa: E731 (every id unknown: one line, nothing else)
        where: dict[tuple[str, str], tuple[str, int | None]] = {}
        responses = _parse_responses(root, {}, problems, where, False, known_tasks)
        timings["parse"] = time.perf_counter() - t0
        description = meta.get("description", "")
        return ValidBundle(label=label, root=root, name=name,
                           description=description if isinstance(description, str) else "",
                           cases=[], series=[], masks=[], tasks=[], responses=responses,
                           where=where, timings=timings), problems
    cases_dir = root / "cases"
    case_dirs, linked_out = [], []  # linked_out: case folders refused (their tasks are not)
    if not cases_dir.is_dir():
        problems.append(Problem("cases", None, "folder is missing"))
    elif leaves(root, cases_dir):
        problems.append(Problem("cases", None, "is a symbolic link that leaves the bundle"))
    else:
        for p in sorted(cases_dir.iterdir()):
            if p.name.startswith("."):
                continue
            if p.is_dir() and leaves(root, p):
                problems.append(Problem(f"cases/{p.name}", None,
                                        "is a symbolic link that leaves the bundle"))
                linked_out.append(p.name)
            elif p.is_dir():
                case_dirs.append(p)
            else:
                problems.append(Problem(f"cases/{p.name}", None, "is not a case folder"))
    cases, files, masks = [], [], []
    for d in case_dirs:
        row, fs, ms = _parse_case(root, d, problems)
        files += fs
        masks += ms
        if row is not None:
            cases.append(row)
    where: dict[tuple[str, str], tuple[str, int | None]] = {
        ("case", c["case_id"]): (f"cases/{c['case_id']}/case.json", None) for c in cases}
    tasks, complete = _parse_tasks(root, {c["case_id"] for c in cases},
                                   {d.name for d in case_dirs} | set(linked_out), problems,
                                   where)
    responses = _parse_responses(root, {t["task_id"]: t for t in tasks}, problems, where,
                                 complete)
    timings["parse"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    inspected = _check_images(files, problems, progress, timings, known, scratch, allow_blank)
    stop = timed(timings, "masks")
    _check_masks(masks, files, problems)
    stop()
    problems += key_slice_range_problems(
        cases, {(f.case_id, f.sequence): (f.file, f.source) for f in files
                if f.shape and not f.picture})
    timings["images"] = time.perf_counter() - t1
    description = meta.get("description", "")
    vb = ValidBundle(label=label, root=root, name=name,
                     description=description if isinstance(description, str) else "",
                     cases=cases, series=files, masks=masks, tasks=tasks, responses=responses, where=where,
                     timings=timings, images_inspected=inspected)
    return vb, problems


def open_and_validate(path: Path, *, workspace: Workspace | None = None,
                      progress: Progress | None = None,
                      max_unzipped_bytes: int = MAX_UNZIPPED_BYTES,
                      known_images: KnownImages | None = None,
                      known_tasks: KnownTasks | None = None, allow_blank: bool = False
                      ) -> tuple[ValidBundle, list[Problem]]:
    """Parse and check everything; return the bundle and its problems (empty when valid);
    a blank image is a problem unless `allow_blank`.

    A zip is extracted into `workspace` (or a workspace of its own, which the returned bundle
    owns: close it when done). `known_images` lets the importer skip re-reading images the
    study already holds.
    """
    path = Path(path)
    ws = workspace or Workspace("validate")
    try:
        t0 = time.perf_counter()
        root = open_bundle(path, ws.path / "bundle", max_unzipped_bytes=max_unzipped_bytes)
        unzip = time.perf_counter() - t0
        vb, problems = _validate_open(root, path.name, progress, known_images,
                                      ws.path / "pictures", known_tasks, allow_blank)
    except BaseException:
        if workspace is None:
            ws.close()
        raise
    if workspace is None:
        vb._workspace = ws
    if unzip > 0.001:
        vb.timings["unzip"] = unzip
    return vb, problems
def validate_bundle(path: Path, *, progress: Progress | None = None,
                    max_unzipped_bytes: int = MAX_UNZIPPED_BYTES,
                    allow_blank: bool = False) -> ValidBundle:
    """The parsed, checked bundle at `path` (folder or .zip); raises BundleInvalid with all problems.

    Use as a context manager (`with validate_bundle(p) as vb:`) to free an extracted zip.
    """
    vb, problems = open_and_validate(path, progress=progress, max_unzipped_bytes=max_unzipped_bytes,
                                     allow_blank=allow_blank)
    if problems:
        vb.close()
        raise BundleInvalid(vb.label, problems)
    return vb
