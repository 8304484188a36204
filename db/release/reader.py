"""Import Neural-MedBench release files (`nmb import FILE... --from neural-medbench`).

The files are read and checked (caps before decoding, one problem per line naming the file and
the JSON path, e.g. `direct-diagnosis.json[3].images[0]: not a PNG, JPEG or WebP picture`),
then converted into a regular bundle folder in a workspace under NMB_HOME/tmp (bundle.json,
cases/<id>/case.json with the pictures as files, tasks.jsonl) and imported by
`db.bundle.importer.import_bundle`: every check, the transaction, the idempotent re-import and the
answer updates are the bundle import's. The workspace is removed whatever the outcome.

What a release case becomes (docs/bundle-format.md, "Neural-MedBench release files"):
- the case `<prefix>-<case_id>` (prefix from the file's split, `db.release.format.SPLITS`),
  record = `text`, one series per image ("Image 1", ...), named by its sniffed type;
- levels 1-2: one task per question, `<case>-q<k>` (k counts the case's questions), prompt =
  `question_text` exactly as written; level 3: one task `<case>-dialogue` whose prompt is the
  first round and whose stages are the later rounds (`information`, a blank line, the question);
  a multi-round file is read in the release's shape or as `dialogue: [{round, information,
  question}]` (`db.release.format.DIALOGUE`), any other through a field map (`--map`);
- a case of a published file is linked to its patient (`Case.patient`, `format.PATIENT`): one
  case number in several release files is one patient, and an answer keyed by it is the answer
  of each of its cases;
- a placeholder (empty `text`, no images) is skipped and counted, and so is an answer to one,
  whatever it holds (an empty entry included).
"""

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.bundle.importer import FORMAT, BundleInvalid, ImportSummary, Problem, import_bundle
from db.bundle.store import Workspace
from db.bundle.validate import read_json
from db.models import FAMILIES, LEVELS
from db.release.answers import match_answers, read_answers
from db.release.format import (
    BY_FILE,
    DIALOGUE,
    MAX_CASES,
    MAX_IMAGES_PER_CASE,
    MAX_RELEASE_FILE_BYTES,
    PATIENT,
    RELEASE,
    SEQUENCE,
    Shape,
    Split,
    decode_data_uri,
    picture_type,
    read_field_map,
)
from errors import UserError, counted, escape_unprintable, not_a_file

SOURCE = "neural-medbench"
_RELEASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^a-z0-9]+")
Progress = Callable[[float, str], None]


@dataclass
class ReleaseSummary:
    """What a release import did: the bundle import's summary plus the release's own counts."""

    files: list[str]
    imported: ImportSummary
    placeholders: int = 0  # placeholder cases skipped
    relabelled_images: int = 0  # data URIs whose MIME label is not the picture's type
    ignored_answers: int = 0  # answers to placeholder cases

    @property
    def changed(self) -> bool:
        return self.imported.changed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        out = str(self.imported)
        if self.placeholders:
            out += f"; skipped {counted(self.placeholders, 'placeholder case')}"
        if self.relabelled_images:
            out += (f"; {counted(self.relabelled_images, 'image')} labelled with another type "
                    "than their bytes (stored as what they are)")
        if self.ignored_answers:
            out += f"; ignored {counted(self.ignored_answers, 'answer')} to placeholder cases"
        return out


def split_of(path: Path, family: str | None, level: int | None) -> Split | None:
    """The split of a release file: by its name (`SPLITS`), with `family`/`level` overriding;
    a file of another name needs both (its case ids are prefixed with its name)."""
    known = BY_FILE.get(path.name.lower())
    if known is None:
        if family is None or level is None:
            return None
        prefix = _UNSAFE.sub("-", path.stem.lower()).strip("-")[:24] or "release"
        return Split(path.name, prefix, family, level, published=False)
    return Split(known.file, known.prefix, family or known.family, level or known.level)


def _join(information: str | None, question: str) -> str:
    """A round as the study shows it: what it reveals, a blank line, its question."""
    return f"{information}\n\n{question}" if information else question


@dataclass
class _Converted:
    """The bundle being written, and where each of its files came from in the release."""

    root: Path
    origin: dict[str, str] = field(default_factory=dict)  # bundle file -> release JSON path
    task_origin: list[str] = field(default_factory=list)  # tasks.jsonl line n -> [n - 1]
    tasks: list[dict] = field(default_factory=list)
    cases: dict[str, dict] = field(default_factory=dict)  # study id -> case.json content
    release_ids: dict[str, list[str]] = field(default_factory=dict)  # name -> study ids
    placeholder_ids: dict[str, list[str]] = field(default_factory=dict)
    patient: dict[str, str | None] = field(default_factory=dict)  # study id -> Case.patient
    placeholders: int = 0
    relabelled: int = 0
    ignored_answers: int = 0
    problems: list[Problem] = field(default_factory=list)


class _File:
    """Reads one release file into the bundle being written."""

    def __init__(self, path: Path, split: Split, out: _Converted, shape: Shape | None) -> None:
        self.path, self.split, self.out = path, split, out
        self.label = path.name
        self.numbers: dict[int, str] = {}  # question_number -> where it was first seen
        self.rounds = split.level == 3
        self.mapped = shape is not None
        self.shape = shape or RELEASE

    def problem(self, where: str, message: str) -> None:
        self.out.problems.append(Problem(f"{self.label}{where}", None, message))

    def read(self) -> None:
        try:
            size = self.path.stat().st_size
        except OSError as e:
            return self.problem("", f"cannot read: {e.strerror or e}")
        if size > MAX_RELEASE_FILE_BYTES:
            return self.problem("", f"is {size:,} bytes, more than the limit of "
                                    f"{MAX_RELEASE_FILE_BYTES:,}")
        before = len(self.out.problems)
        data = read_json(self.path, self.label, self.out.problems)
        if len(self.out.problems) > before:
            return None
        if not isinstance(data, list):
            kind = "an object" if isinstance(data, dict) else json.dumps(data)[:40]
            return self.problem("", f"is not a JSON list of cases (found {kind})")
        if len(data) > MAX_CASES:
            return self.problem("", f"holds {len(data):,} cases, more than the limit of "
                                    f"{MAX_CASES:,}")
        if not self.mapped and self.rounds and _has(data, DIALOGUE.questions) and not _has(
                data, RELEASE.questions):
            self.shape = DIALOGUE
        if self._shape_problem(data):
            return None
        for i, case in enumerate(data):
            self._case(i, case)
        return None

    def _shape_problem(self, data: list) -> bool:
        """One line for a file whose cases are not in the shape this tool reads (the field
        map's, else the release's or, for a multi-round file, the dialogue's), naming the
        fields found."""
        shape = self.shape
        required_q, allowed_q = shape.question_fields(self.rounds)
        case_fields: set[str] = set()
        question_fields: set[str] = set()
        odd = False
        for case in data:
            if not isinstance(case, dict):
                continue
            case_fields |= set(case)
            odd |= set(case) != set(shape.case_fields)
            questions = case.get(shape.questions)
            for q in questions if isinstance(questions, list) else []:
                if isinstance(q, dict):
                    question_fields |= set(q)
                    odd |= not set(required_q) <= set(q) <= set(allowed_q)
        if not odd:
            return False
        found = f"cases have {_names(case_fields)}"
        if question_fields:
            found += f", {shape.questions} have {_names(question_fields)}"
        if self.mapped:
            what, expected = "the shape --map names", shape.describe(self.rounds)
        elif self.rounds:
            what = "a multi-round shape this tool reads"
            expected = f"{RELEASE.describe(True)}; or {DIALOGUE.describe(True)}"
        else:
            what, expected = "the release shape this tool reads", RELEASE.describe(False)
        more = "" if self.mapped else "; give --map FILE.json for other field names"
        self.problem("", f"is not in {what}: {found} (expected {expected}{more}; see "
                         "docs/bundle-format.md)")
        return True

    def _case(self, i: int, case: Any) -> None:
        at = f"[{i}]"
        if not isinstance(case, dict):
            return self.problem(at, f"is not an object (found {json.dumps(case)[:40]})")
        sh = self.shape
        rid, text, images, questions = (case[k] for k in sh.case_fields)
        ok = True
        if isinstance(rid, int) and not isinstance(rid, bool) and rid >= 0:
            rid = str(rid)  # a case number (a mapped file's)
        if not isinstance(rid, str) or not _RELEASE_ID.fullmatch(rid):
            self.problem(f"{at}.{sh.case_id}", f"{json.dumps(rid)[:60]} is not usable as a case "
                                               "id (1-100 letters, digits, '.', '-' or '_', "
                                               "starting with a letter or digit)")
            ok = False
        if not isinstance(text, str):
            self.problem(f"{at}.{sh.text}", "is not a string")
            ok = False
        if not isinstance(images, list):
            self.problem(f"{at}.{sh.images}", "is not a list of data URIs")
            ok = False
        elif len(images) > MAX_IMAGES_PER_CASE:
            self.problem(f"{at}.{sh.images}", f"holds {len(images)} images, more than the limit "
                                              f"of {MAX_IMAGES_PER_CASE}")
            ok = False
        ok &= self._questions(at, questions)
        if not ok:
            return None
        cid = f"{self.split.prefix}-{rid}"
        if not text.strip() and not images:  # a placeholder: skipped, counted
            self.out.placeholders += 1
            for name in (rid, cid):
                self.out.placeholder_ids.setdefault(name, []).append(cid)
            return None
        if not images:
            return self.problem(f"{at}.{sh.images}", "is empty: a case needs at least one image "
                                                     "(a placeholder has neither text nor images)")
        if not questions:
            return self.problem(f"{at}.{sh.questions}", "is empty: a case needs at least one "
                                                        "question")
        if self.rounds and len(questions) < 2:
            return self.problem(f"{at}.{sh.questions}", f"holds {len(questions)} round: a "
                                                        "multi-round case needs at least two")
        if cid in self.out.cases:
            return self.problem(f"{at}.{sh.case_id}", f"{rid} gives case id {cid}, which "
                                                 f"{self.out.origin[f'cases/{cid}/case.json']} "
                                                 "gives as well")
        self._write(at, cid, rid, text, images, questions)
        return None

    def _questions(self, at: str, questions: Any) -> bool:
        sh = self.shape
        if not isinstance(questions, list):
            self.problem(f"{at}.{sh.questions}", "is not a list")
            return False
        ok = True
        last: int | None = None  # the case's previous round number (numbered per case)
        for j, q in enumerate(questions):
            where = f"{at}.{sh.questions}[{j}]"
            if not isinstance(q, dict):
                self.problem(where, "is not an object")
                ok = False
                continue
            text = q[sh.question]
            info = q.get(sh.information) if sh.information else None
            if sh.number is not None:
                ok &= self._number(where, q[sh.number], last)
                last = q[sh.number] if isinstance(q[sh.number], int) else last
            if not isinstance(text, str) or not text.strip():
                self.problem(f"{where}.{sh.question}", "is not a string" if not
                             isinstance(text, str) else "is empty")
                ok = False
            if info is not None and not isinstance(info, str):
                self.problem(f"{where}.{sh.information}", "is not a string")
                ok = False
        return ok

    def _number(self, question: str, n: Any, last: int | None) -> bool:
        """The number of the question at `question`: unique in the file (the release: they
        count through it), or, numbered per case (rounds), larger than the case's previous
        one (listed in order)."""
        where = f"{question}.{self.shape.number}"
        least = 1 if self.shape.numbered_per_file else 0
        if not isinstance(n, int) or isinstance(n, bool) or n < least:
            self.problem(where, f"{json.dumps(n)[:40]} is not an integer >= {least}")
        elif not self.shape.numbered_per_file:
            if last is None or n > last:
                return True
            self.problem(where, f"{n} does not follow {last}: the rounds are listed in order, "
                                "each numbered above the one before")
        elif n in self.numbers:
            self.problem(where, f"{n} is used twice in the file (first at {self.numbers[n]}); "
                                "it counts through the whole file")
        else:
            self.numbers[n] = f"{self.label}{question}"
            return True
        return False

    def _write(self, at: str, cid: str, rid: str, text: str, images: list,
               questions: list[dict]) -> None:
        folder = self.out.root / "cases" / cid
        folder.mkdir(parents=True)
        series = []
        for k, uri in enumerate(images, start=1):
            where = f"{at}.images[{k - 1}]"
            if not isinstance(uri, str):
                self.problem(where, "is not a data URI string")
                continue
            try:
                label, data = decode_data_uri(uri)
            except ValueError as e:
                self.problem(where, str(e))
                continue
            kind = picture_type(data[:16])
            if kind is None:
                self.problem(where, "not a PNG, JPEG or WebP picture")
                continue
            mime, suffix = kind
            self.out.relabelled += label != mime
            name = f"image-{k}{suffix}"
            (folder / name).write_bytes(data)
            self.out.origin[f"cases/{cid}/{name}"] = f"{self.label}{where}"
            series.append({"sequence": SEQUENCE.format(n=k), "file": name})
        self.out.origin[f"cases/{cid}/case.json"] = f"{self.label}{at}"
        patient = PATIENT.format(case_id=rid) if self.split.published else None
        self.out.cases[cid] = {"case_id": cid, "title": f"{self.split.stem} {rid}",
                               "ehr": text, "series": series,
                               **({"patient": patient} if patient else {})}
        self.out.patient[cid] = patient
        for name in (rid, cid):
            self.out.release_ids.setdefault(name, []).append(cid)
        sp, sh = self.split, self.shape
        base = {"case_id": cid, "family": sp.family, "level": sp.level}
        if self.rounds:
            rounds = [_join(q.get(sh.information) if sh.information else None, q[sh.question])
                      for q in questions]
            self._task(f"{at}.{sh.questions}", {"task_id": f"{cid}-dialogue", **base,
                                                "prompt": rounds[0], "stages": rounds[1:]})
        else:
            for j, q in enumerate(questions):
                self._task(f"{at}.{sh.questions}[{j}]", {"task_id": f"{cid}-q{j + 1}", **base,
                                                         "prompt": q[sh.question]})

    def _task(self, where: str, task: dict) -> None:
        self.out.tasks.append(task)
        self.out.task_origin.append(f"{self.label}{where}")


def _names(fields: set[str]) -> str:
    return ", ".join(sorted(fields)) if fields else "no fields"


def _has(data: list, name: str) -> bool:
    """Whether a case of `data` has the field `name`."""
    return any(isinstance(case, dict) and name in case for case in data)


def convert(files: list[Path], root: Path, *, answers: Path | None = None,
            family: str | None = None, level: int | None = None,
            field_map: Path | None = None) -> _Converted:
    """Read the release files (and answer key) and write them as a bundle folder at `root`;
    `field_map`: the field names of every file (`format.read_field_map`). Raises
    BundleInvalid listing every problem."""
    if family is not None and family not in FAMILIES:
        raise UserError(f"--family {family!r} is not one of {', '.join(FAMILIES)}")
    if level is not None and level not in LEVELS:
        raise UserError(f"--level {level!r} is not 1, 2 or 3")
    shape = read_field_map(Path(field_map)) if field_map is not None else None
    root.mkdir()
    out = _Converted(root)
    seen: dict[Path, str] = {}
    for path in files:
        path = Path(path)
        if not path.is_file():
            out.problems.append(Problem(path.name, None, not_a_file(path)))
            continue
        if path.resolve() in seen:
            out.problems.append(Problem(path.name, None, "is given twice"))
            continue
        seen[path.resolve()] = path.name
        split = split_of(path, family, level)
        if split is None:
            out.problems.append(Problem(path.name, None, "is not a release task file name ("
                                        + ", ".join(BY_FILE) + "): give --family and --level"))
            continue
        _File(path, split, out, shape).read()
    gts: dict[str, dict] = {}
    if answers is not None:
        files_ok = not out.problems  # else the cases the key names may be unknown: not matched
        key = read_answers(Path(answers), out.problems)
        if files_ok:
            gts, out.ignored_answers = match_answers(key, Path(answers).name,
                                                     out.release_ids, out.placeholder_ids,
                                                     out.patient, out.problems)
    if out.problems:
        raise BundleInvalid(_label(files), out.problems)
    names = ", ".join(Path(f).name for f in files)
    (root / "bundle.json").write_text(json.dumps(
        {"format": FORMAT, "name": escape_unprintable(f"Neural-MedBench release: {names}")[:256],
         "description": "converted by nmb import --from neural-medbench"}), encoding="utf-8")
    for cid, case in out.cases.items():
        if cid in gts:
            case = {**case, "ground_truth": gts[cid]}
        (root / "cases" / cid / "case.json").write_text(json.dumps(case, ensure_ascii=False),
                                                        encoding="utf-8")
    (root / "tasks.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n"
                                              for t in out.tasks), encoding="utf-8")
    return out


def _label(files: list[Path]) -> str:
    return "release " + ", ".join(Path(f).name for f in files)


def _mapped(problems: list[Problem], out: _Converted) -> list[Problem]:
    """The bundle import's problems, named by where they come from in the release files."""
    mapped = []
    for p in problems:
        if p.file == "tasks.jsonl" and p.line is not None and p.line <= len(out.task_origin):
            where = out.task_origin[p.line - 1]
        else:
            where = out.origin.get(p.file, p.file)
        mapped.append(Problem(where, None, p.message))
    return mapped


def import_release(s: Session, files: list[Path], *, answers: Path | None = None,
                   family: str | None = None, level: int | None = None,
                   field_map: Path | None = None, dry_run: bool = False,
                   allow_blank: bool = False, actor: str | None = None,
                   progress: Progress | None = None, revise: bool = False) -> ReleaseSummary:
    """Read, convert and import release `files` (with the answer key `answers`, the field
    names of `field_map`) in one transaction of `s`; raises BundleInvalid listing every
    problem (a picture of one colour among them unless `allow_blank`), the study unchanged."""
    if not files:
        raise UserError("no release file given")
    with Workspace("release", engine=s.get_bind()) as ws:
        try:
            out = convert(list(files), ws.path / "release", answers=answers, family=family,
                          level=level, field_map=field_map)
        except BaseException:
            s.rollback()
            raise
        try:
            summary = import_bundle(s, out.root, dry_run=dry_run, actor=actor,
                                    progress=progress, workspace=ws, allow_blank=allow_blank,
                                    revise=revise)
        except BundleInvalid as e:
            raise BundleInvalid(_label(files), _mapped(e.problems, out)) from None
    return ReleaseSummary(files=[Path(f).name for f in files], imported=summary,
                          placeholders=out.placeholders, relabelled_images=out.relabelled,
                          ignored_answers=out.ignored_answers)
