"""Import a BIDS dataset (`nmb import DIR --from bids --case-info CASES.json`).

A small reader of the BIDS layout (pybids is far heavier than what is read here):
`dataset_description.json` must be there (an object with `Name`); every `sub-<label>` folder,
and within it every `ses-<label>` folder if there are any, is one case (`sub-01`, or
`sub-01_ses-pre`), of those `--participants` names (default: all) and `--exclude` does not;
its series are the NIfTI files in `anat/`, `dwi/` and `perf/`, named by their suffix and
labelled with their other entities (`db.sources.sequences.label_bids`: T1w -> T1, with a `ce-`
entity -> T1C, `acq-mprage_T1w` -> "T1 (acq-mprage)", T2w -> T2, dwi -> DWI, ...). A suffix
the table does not know is imported under its file name's entities and suffix
(`acq-fast_MP2RAGE`) and listed for the admin to confirm; masks, single-band references and
field maps are left out and listed, as are other files. A case without a volume to read
(pybids' 7t_trt `ses-2`: fmap/ and func/ only) is skipped, named with why in the summary; the
dataset is refused, with those reasons, when none is left. JSON sidecars are not read:
nothing of them is stored.

CASES.json is an object keyed by subject label (`"sub-01"`; `"sub-01_ses-pre"` for one
session), each value shaped like the DICOM case info (`db.sources.case_info`) without `case_id`,
which is the case's. A subject entry used for several sessions gets `-ses-<label>` appended
to its task ids. `participants.tsv` columns reach the record through the case info: `{age}`
in a title or ehr is replaced by that subject's `age` column. The volumes are written
text-free (`imaging.text_free`); the bundle built in the workspace is imported by
`db.bundle.importer.import_bundle`.
"""

import csv
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.bundle.importer import FORMAT, BundleInvalid, ImportSummary, Problem, import_bundle
from db.bundle.records import show
from db.bundle.store import Workspace
from db.bundle.validate import leaves, read_json
from db.sources.case_info import CaseInfo, check_info, mapped, write_case
from db.sources.folder import listing, unreadable
from db.sources.sequences import label_bids
from errors import UserError, escape_unprintable, not_a_file
from imaging import inspect_image
from imaging.text_free import save_text_free

SOURCE = "bids"
FOLDERS = ("anat", "dwi", "perf")
MAX_PARTICIPANTS_BYTES = 64 * 2**20
_LINK_OUT = "is a symbolic link to a file outside the dataset"
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
_NIFTI = re.compile(r"^(?P<stem>.+)_(?P<suffix>[A-Za-z0-9]+)\.nii(\.gz)?$")
_CHOICE = re.compile(r"(?:sub-)?(?P<sub>[A-Za-z0-9-]+?)(?:[/_]ses-(?P<ses>[A-Za-z0-9-]+))?")


@dataclass
class BidsSummary:
    """What a BIDS import did: the bundle import's summary plus what was left out."""

    source: str
    imported: ImportSummary
    cases: dict[str, list[str]] = field(default_factory=dict)  # case -> sequences
    left_out: list[str] = field(default_factory=list)
    #: series named by their file (a suffix the table does not know): for the admin to confirm
    unconfirmed: list[str] = field(default_factory=list)  # 'sub-01 "MP2RAGE"'
    #: subjects and sessions without a volume to read, and why
    skipped: list[str] = field(default_factory=list)  # "sub-01/ses-2: no anat/, ..."

    @property
    def changed(self) -> bool:
        return self.imported.changed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        out = str(self.imported) + "; " + "; ".join(
            f"{c}: {', '.join(s)}" for c, s in self.cases.items())
        out += f"; skipped {'; '.join(self.skipped)}" if self.skipped else ""
        out += f"; left out {', '.join(self.left_out)}" if self.left_out else ""
        return out + (f"; named by their file, to confirm: {', '.join(self.unconfirmed)}"
                      if self.unconfirmed else "")


def _participants(root: Path, problems: list[Problem]) -> dict[str, dict[str, str]]:
    path = root / "participants.tsv"
    if not path.exists():
        return {}
    if not path.is_file():  # a folder, or a pipe that would keep the import waiting
        problems.append(Problem(path.name, None, not_a_file(path)))
        return {}
    if path.stat().st_size > MAX_PARTICIPANTS_BYTES:
        problems.append(Problem(path.name, None, f"is more than {MAX_PARTICIPANTS_BYTES:,} bytes"))
        return {}
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t")
            rows = []
            lines: dict[str, int] = {}  # participant_id -> its line
            for r in reader:
                if None in r.values():  # csv's value for a column the row does not reach
                    problems.append(Problem(path.name, None, f"line {reader.line_num} has "
                                                             "fewer fields than the header"))
                    return {}
                who = r.get("participant_id")
                if who is not None and lines.setdefault(who, reader.line_num) != reader.line_num:
                    problems.append(Problem(path.name, None, f"line {reader.line_num} lists "
                                            f"{escape_unprintable(who)} again (first on line "
                                            f"{lines[who]})"))
                    return {}
                rows.append(r)
    except (UnicodeDecodeError, csv.Error) as e:
        problems.append(Problem(path.name, None, f"is not a readable UTF-8 .tsv: {e}"))
        return {}
    except OSError as e:
        problems.append(unreadable(root, path, e))
        return {}
    if rows and "participant_id" not in rows[0]:
        problems.append(Problem(path.name, None, "has no participant_id column"))
        return {}
    return {r["participant_id"]: {k: v for k, v in r.items() if k} for r in rows}


def _fill(text: Any, row: dict[str, str], where: str, name: str,
          problems: list[Problem]) -> Any:
    """`text` with `{column}` replaced by the subject's participants.tsv value."""
    if not isinstance(text, str):
        return text
    missing = [m for m in _PLACEHOLDER.findall(text) if m not in row]
    if missing:
        problems.append(Problem(where, None, f"{name} names {', '.join('{' + m + '}' for m in missing)}"
                                ", not a participants.tsv column of this subject"))
        return text
    return _PLACEHOLDER.sub(lambda m: row[m.group(1)], text)


def _sessions(subject: Path, root: Path, problems: list[Problem]) -> list[tuple[str, Path]]:
    """(case id, folder) of a subject: its sessions, or the subject itself; none where the
    subject's folder cannot be listed (a problem)."""
    entries = listing(root, subject, problems)
    if entries is None:
        return []
    sessions = [p for p in entries if p.is_dir() and p.name.startswith("ses-")]
    if not sessions:
        return [(subject.name, subject)]
    return [(f"{subject.name}_{s.name}", s) for s in sessions]


def _series(folder: Path, left_out: list[str], root: Path, problems: list[Problem]
            ) -> tuple[list[tuple[str, Path, bool]], str]:
    """(sequence, file, named by the table) of a case folder's volumes, in a stable order, and
    where there is none, why ("no anat/, dwi/ or perf/ folder (it holds fmap/, func/)")."""
    out: list[tuple[str, Path, bool]] = []
    entries = listing(root, folder, problems) or []
    kinds = [p for p in entries if p.name in FOLDERS and p.is_dir()]
    dropped: list[str] = []
    for kind in kinds:
        for f in listing(root, kind, problems) or []:
            if f.name.startswith(".") or ".nii" not in f.name:  # hidden: macOS's ._ files
                continue
            m = _NIFTI.match(f.name)
            naming = label_bids(m.group("stem"), m.group("suffix")) if m else None
            if naming is None or naming.name is None:
                left_out.append(escape_unprintable(f.relative_to(root).as_posix()))
                dropped.append(escape_unprintable(f.name))
                continue
            out.append((naming.name, f, naming.known))
    used: dict[str, int] = {}
    for k, (name, f, known) in enumerate(out):  # the same name twice (a .nii and a .nii.gz)
        used[name] = used.get(name, 0) + 1
        out[k] = (name if used[name] == 1 else f"{name} ({used[name]})", f, known)
    if out:
        return out, ""
    if kinds:
        return out, (f"no volume to read in {', '.join(f'{k.name}/' for k in kinds)}"
                     + (f" (left out: {', '.join(dropped)})" if dropped else ""))
    held = [escape_unprintable(p.name) + "/" for p in entries
            if p.is_dir() and not p.name.startswith(".")]
    return out, ("no anat/, dwi/ or perf/ folder "
                 + (f"(it holds {', '.join(held)})" if held else "(it holds no folder)"))


def _choice(root: Path, subjects: list[Path], flag: str, labels: Sequence[str],
            problems: list[Problem]) -> set[tuple[str, str | None]]:
    """The (subject, session or None) that `--participants` or `--exclude` LABEL... name:
    `sub-01` (or `01`), `sub-01/ses-1` (or `sub-01_ses-1`, as the case is called); a label
    that is neither, or names no subject or session of the dataset, is a problem."""
    chosen: set[tuple[str, str | None]] = set()
    names = {p.name for p in subjects}
    for text in labels:
        m = _CHOICE.fullmatch(text.strip())
        if m is None:
            problems.append(Problem(flag, None, f"{text}: not a subject (sub-01) or a session "
                                                "(sub-01/ses-1)"))
            continue
        sub, ses = f"sub-{m.group('sub')}", m.group("ses") and f"ses-{m.group('ses')}"
        if sub not in names:
            problems.append(Problem(flag, None, f"{text}: no such subject in {root.name}"))
        elif ses and not (root / sub / ses).is_dir():
            problems.append(Problem(flag, None, f"{text}: no such session in {root.name}"))
        else:
            chosen.add((sub, ses or None))
    return chosen


def convert(root: Path, dest: Path, case_info: Path, origin: dict[str, str],
            task_origin: list[str], participants: Sequence[str] = (),
            exclude: Sequence[str] = ()
            ) -> tuple[dict[str, list[str]], list[str], list[str], list[str]]:
    """Write the dataset at `root` as a bundle at `dest`, of the subjects and sessions that
    `participants` (default: all) name and `exclude` does not; (cases and their sequences,
    files left out, series named by their file, cases skipped for want of a volume with why).
    Raises BundleInvalid listing every problem."""
    problems: list[Problem] = []
    label = root.name
    leaving = [Problem(name, None, _LINK_OUT) for name in ("dataset_description.json",
                                                         "participants.tsv")
               if leaves(root, root / name)]
    if leaving:
        raise BundleInvalid(label, leaving)
    if not (root / "dataset_description.json").is_file():
        raise BundleInvalid(label, [Problem(label, None, "has no dataset_description.json: not "
                                                         "a BIDS dataset")])
    description = read_json(root / "dataset_description.json", "dataset_description.json",
                             problems)
    if description is not None and not (isinstance(description, dict)
                                        and isinstance(description.get("Name"), str)):
        problems.append(Problem("dataset_description.json", None, "is not an object with Name"))
    columns = _participants(root, problems)
    info_name = Path(case_info).name
    entries = read_json(Path(case_info), info_name, problems)
    if entries is not None and not isinstance(entries, dict):
        problems.append(Problem(info_name, None, 'is not an object keyed by subject ("sub-01")'))
        entries = None
    found = listing(root, root, problems)
    subjects = [p for p in found or [] if p.is_dir() and p.name.startswith("sub-")]
    if found is not None and not subjects:
        problems.append(Problem(label, None, "has no sub-* folder"))
    only = _choice(root, subjects, "--participants", participants, problems)
    dropped = _choice(root, subjects, "--exclude", exclude, problems)
    if problems:
        raise BundleInvalid(label, problems)

    def wanted(subject: str, session: str | None) -> bool:
        return ((not only or (subject, None) in only or (subject, session) in only)
                and (subject, None) not in dropped and (subject, session) not in dropped)

    cases: list[tuple[CaseInfo, list[tuple[str, Path, bool]]]] = []
    left_out: list[str] = []
    skipped: list[tuple[str, str]] = []  # (case folder, why)
    chosen = 0  # the cases chosen, skipped or not
    used_keys: set[str] = set()
    case_ids: dict[str, str] = {}  # case id -> the entry that gives it
    for subject in subjects:
        if (subject.name, None) in dropped or only and all(u != subject.name for u, _ in only):
            continue  # left out whole: its folder is not read
        before = len(problems)
        sessions = _sessions(subject, root, problems)
        chosen += len(problems) > before  # (unreadable: named, not "nothing chosen")
        without_entry = False
        for cid, folder in sessions:
            if not wanted(subject.name, folder.name if folder != subject else None):
                continue
            chosen += 1
            before = len(problems)
            series, why = _series(folder, left_out, root, problems)
            if len(problems) > before:  # a folder could not be read: named, never skipped
                continue
            if not series:
                skipped.append((folder.relative_to(root).as_posix(), why))
                continue
            problems += [Problem(f.relative_to(root).as_posix(), None, _LINK_OUT)
                         for _, f, _ in series if leaves(root, f)]
            key = cid if cid in entries else subject.name
            if key not in entries:
                if not without_entry:
                    problems.append(Problem(info_name, None, f"has no entry for {subject.name} "
                                            f"(give it one, or --exclude {subject.name})"))
                without_entry = True
                continue
            used_keys.add(key)
            where = f"{info_name} {key}"
            value = entries[key]
            row = columns.get(subject.name, {})
            if isinstance(value, dict):
                value = {**value, **{k: _fill(value.get(k), row, where, k, problems)
                                     for k in ("title", "ehr") if k in value}}
                if key != cid and len(sessions) > 1:  # one entry for several sessions
                    if isinstance(value.get("case_id"), str):
                        value["case_id"] = f"{value['case_id']}-{folder.name}"
                    if isinstance(value.get("tasks"), list):
                        value["tasks"] = [{**t, "task_id": f"{t['task_id']}-{folder.name}"}
                                          if isinstance(t, dict)
                                          and isinstance(t.get("task_id"), str)
                                          else t for t in value["tasks"]]
            info = check_info(value, where, problems, case_id=cid)
            if info is not None and info.case["case_id"] in case_ids:
                problems.append(Problem(where, None, f'case_id "{info.case["case_id"]}" is '
                                        f"{case_ids[info.case['case_id']]}'s as well"))
            elif info is not None:
                case_ids[info.case["case_id"]] = where
                cases.append((info, series))
    problems += [Problem(info_name, None, f"{k}: no such subject in the dataset")
                 for k in entries if k not in used_keys and not any(
                     k == s.name or k.startswith(f"{s.name}_ses-") for s in subjects)]
    if not chosen:  # (a dataset has a subject, so the choice left none)
        flags = [f for f, given in (("--participants", participants), ("--exclude", exclude))
                 if given]
        problems.append(Problem(" and ".join(flags), None, "leave" + "s" * (len(flags) == 1)
                                + " no subject or session to import"))
    elif len(skipped) == chosen:  # every case chosen skipped: none left, and why
        problems[:0] = [Problem(label, None, "no subject or session holds a volume to import"),
                        *(Problem(folder, None, why) for folder, why in skipped)]
    if problems:
        raise BundleInvalid(label, problems)
    dest.mkdir()
    (dest / "tasks.jsonl").touch()
    shown: dict[str, list[str]] = {}
    unconfirmed: list[str] = []
    for info, series in cases:
        cid = info.case["case_id"]
        folder = dest / "cases" / cid
        folder.mkdir(parents=True)
        listed = []
        for k, (sequence, f, known) in enumerate(series, start=1):
            rel = f.relative_to(root).as_posix()
            name = f"series-{k}.nii.gz"
            try:
                inspect_image(f)  # caps memory from the header before any voxel is read
                save_text_free(f, folder / name)
            except UserError as e:
                problems.append(Problem(rel, None, f"is not a usable image: "
                                                   f"{str(e).removeprefix(f.name + ': ')}"))
                continue
            origin[f"cases/{cid}/{name}"] = rel
            listed.append({"sequence": sequence, "file": name})
            if not known:
                unconfirmed.append(f"{cid} {show(sequence)}")
        write_case(dest, info, listed, origin, task_origin)
        shown[cid] = [x["sequence"] for x in listed]
    if problems:
        raise BundleInvalid(label, problems)
    name = description.get("Name") if isinstance(description, dict) else label
    (dest / "bundle.json").write_text(json.dumps(
        {"format": FORMAT, "name": escape_unprintable(f"BIDS: {name}")[:256],
         "description": "converted by nmb import --from bids"}, ensure_ascii=False), encoding="utf-8")
    return shown, left_out, unconfirmed, [f"{escape_unprintable(folder)}: {why}"
                                          for folder, why in skipped]


def import_bids(s: Session, path: Path, *, case_info: Path | None, dry_run: bool = False,
                allow_blank: bool = False, participants: Sequence[str] = (),
                exclude: Sequence[str] = (), actor: str | None = None,
                progress: Callable[[float, str], None] | None = None,
                revise: bool = False) -> BidsSummary:
    """Convert the BIDS dataset at `path` (the subjects and sessions `participants` names, all
    by default, but those `exclude` names) and import it in one transaction of `s`; raises
    BundleInvalid listing every problem (a blank volume among them unless `allow_blank`), the
    study unchanged."""
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"{path.name}: a BIDS dataset is a folder")
    if case_info is None:
        raise UserError("--from bids needs --case-info CASES.json (docs/bundle-format.md)")
    origin: dict[str, str] = {}
    task_origin: list[str] = []
    with Workspace(SOURCE, engine=s.get_bind()) as ws:
        try:
            root = ws.path / SOURCE
            shown, left_out, unconfirmed, skipped = convert(
                path, root, Path(case_info), origin, task_origin, participants, exclude)
        except BaseException:
            s.rollback()
            raise
        try:
            summary = import_bundle(s, root, dry_run=dry_run, actor=actor, progress=progress,
                                    workspace=ws, allow_blank=allow_blank, revise=revise)
        except BundleInvalid as e:
            raise BundleInvalid(path.name, mapped(e.problems, origin, task_origin)) from None
    return BidsSummary(source=SOURCE, imported=summary, cases=shown, left_out=left_out,
                       unconfirmed=unconfirmed, skipped=skipped)
