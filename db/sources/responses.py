"""Model responses to tasks the study already holds (`nmb import-responses FILE --from ...`).

A harness file (a bundle's `responses.jsonl`, VLMEvalKit predictions, lm-evaluation-harness
and lmms-eval sample logs; OpenAI Batch output, bare chat.completion lines and Ollama's
`/api/chat` lines through `collection.batch_responses`) is read into `Answer`s, each matched to
a task of the study by a task-key rule (`TaskKey`), and written as a responses-only bundle
(bundle.json + responses.jsonl) in a workspace under NMB_HOME/tmp, which
`db.bundle.importer.import_bundle` imports: the same field checks, size caps, model-name
redaction, hold for review and blind codes as any bundle's responses, in one transaction.
Answers that are failures (a Batch error line) are recorded as collection failures, not
responses. Every problem is reported at once, named by file and row; nothing is written.

Staged tasks: a harness answer is one text, where a level-3 task with stages takes one answer
per stage. Such an answer is refused, or with `final_stage_only` stored as the final stage's
answer alone (an empty first answer and empty earlier stages, `holds_final_stage_only`), which
the results flag.

Samples: the answers of one model to one task are samples 0, 1, ... in file order; a
response's id is derived from (source, model, task, sample), so importing the same file again
changes nothing. Each answer counts once: an lm-evaluation-harness log holds one line per
document per filter, of which one filter's lines are read (`--filter`, default the first the
file names); a file that answers the same key twice for one model (a doc_id, an index, a
custom_id on two lines) is refused, as it would make one answer two samples. The formats and
rules are in docs/bundle-format.md ("Responses from evaluation harnesses").
"""

import csv
import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, delete, select

from db.bundle.importer import FORMAT, BundleInvalid, ImportSummary, Problem, import_bundle
from db.bundle.records import show
from db.bundle.store import Workspace
from db.bundle.validate import (
    read_jsonl,
)
from db.models import CollectionFailure, CollectionRun, Task, utcnow
from db.queries import fetch_in
from db.sources.answers import Answer, Reader, cap, number, read_capped, row_of, shown
from db.sources.task_keys import TaskKey, key_text, lookup, match_tasks
from errors import UserError, counted, escape_unprintable, one_line

SOURCES = ("nmb", "openai-batch", "chat-completions", "ollama", "vlmevalkit", "lm-eval",
           "lmms-eval")
#: An .xlsx is a zip: refused when its parts unpack to more than this, or to more than 100x
#: its size where that is over 64 MiB.
MAX_XLSX_UNZIPPED = 512 * 2**20
#: A prediction file (.xlsx or .tsv) holds at most this many rows below its header, and its
#: header at most MAX_COLUMNS columns; cells right of the header are not read. A spreadsheet
#: row is padded to the sheet's width as it is read (openpyxl): without the header's width as
#: the bound, a cell at column XFD, or a `<dimension ref="A1:XFD1048576">`, made every row
#: 16,384 cells (GBs from a 500 KB file).
MAX_ROWS = 100_000
MAX_COLUMNS = 256
#: A cell of a prediction file holds text or a number; longer ones are refused by the bundle
#: rules (200,000 characters for a response).
_TSV_FIELD_LIMIT = 4 * 2**20






@dataclass
class ResponsesSummary:
    """What a responses import did: the bundle import's summary plus the failures recorded."""

    file: str
    source: str
    imported: ImportSummary
    failures: int = 0
    filter: str | None = None  # lm-eval: the filter whose lines were read
    other_filters: list[str] = field(default_factory=list)  # ... and those that were not
    final_stage_only: int = 0  # answers to staged tasks stored as their final stage's only
    repeated_lines: int = 0  # lines without a filter name repeating a document's answers

    @property
    def changed(self) -> bool:
        return self.imported.changed or bool(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        out = str(self.imported)
        if self.failures:
            out += (f"; {counted(self.failures, 'failed answer')} recorded as collection "
                    "failures (not responses)")
        if self.other_filters:
            others = ", ".join(shown(f) for f in self.other_filters)
            out += (f"; filter {shown(self.filter or '')} read, not {others} (the file's lines "
                    "under each filter hold the same answers; --filter NAME to name another)")
        if self.repeated_lines:
            out += (f"; {counted(self.repeated_lines, 'line')} repeating a document's answers "
                    "(one per further filter) read once")
        if self.final_stage_only:
            out += (f"; {counted(self.final_stage_only, 'answer')} to staged tasks stored as "
                    "the final stage's answer only (--final-stage-only: flagged in results)")
        return out




# ---------------------------------------------------------------- task keys
















# ---------------------------------------------------------------- readers






def read_nmb(path: Path, problems: list[Problem]) -> list[Answer]:
    """A bundle's responses.jsonl: copied as it is (see `import_responses`)."""
    return []


def read_lm_eval(path: Path, problems: list[Problem]) -> list[Answer]:
    """lm-evaluation-harness sample logs (`--log_samples`, samples_<task>_<time>.jsonl), and
    lmms-eval's (<time>_samples_<task>.jsonl), which have the same lines: one JSON object per
    document and filter with `doc_id` (the document's row in the task's dataset, from 0),
    `doc`, `filter` (absent before lm-eval 0.4.3, and in lmms-eval) and `resps` (a list per
    request of a list of repeats, the same under every filter); each repeat of the first
    request is one sample, marked with its line's filter (`Answer.variant`; `import_responses`
    keeps one filter's). A line without a filter name that repeats an earlier line's doc_id
    and answers is that document under a further filter (`Answer.repeat`: read once).
    Default key: `doc.task_id`, else `doc_id`."""
    if not cap(path, problems):
        return []
    out = []
    unnamed: dict[str, Any] = {}  # doc_id -> resps of the lines without a filter name
    for n, obj, why in read_jsonl(path, path.name, problems):
        where = f"{path.name}:{n}"
        if why or not isinstance(obj, dict):
            problems.append(Problem(path.name, n, why or "is not a JSON object"))
            continue
        resps = obj.get("resps")
        if ("doc_id" not in obj or not isinstance(resps, list) or not resps
                or not isinstance(resps[0], list)):
            problems.append(Problem(path.name, n, "is not an lm-evaluation-harness sample "
                                    "(needs doc_id and resps, a list of lists of answers)"))
            continue
        texts = resps[0]
        if not texts or not all(isinstance(t, str) for t in texts):
            problems.append(Problem(path.name, n, "resps[0] is not a list of answer texts"))
            continue
        variant = obj.get("filter")
        if variant is not None and not isinstance(variant, str):
            problems.append(Problem(path.name, n, "filter is not a filter's name (a string)"))
            continue
        doc = obj.get("doc") if isinstance(obj.get("doc"), dict) else {}
        keys = {"doc_id": obj["doc_id"], "doc": doc,
                "question": doc.get("question") if isinstance(doc.get("question"), str) else None}
        default = "doc.task_id" if isinstance(doc.get("task_id"), str) else "doc_id"
        repeat = False
        if variant is None and (doc_key := key_text(obj["doc_id"])) is not None:
            repeat = unnamed.get(doc_key) == texts
            unnamed.setdefault(doc_key, texts)
        out += [Answer(where, keys, default, "doc_id", text=t, variant=variant,
                       positional=default == "doc_id", repeat=repeat) for t in texts]
    return out


def _xlsx_rows(path: Path, problems: list[Problem]) -> list[tuple[int, list]] | None:
    """The rows of the first sheet as values, each as wide as the header row (cells right of
    it are not read), empty rows left out; None (a problem said) for a formula, a zip bomb, a
    header wider than MAX_COLUMNS, more than MAX_ROWS rows or a file that is not a workbook.

    Read-only openpyxl pads every row it yields to `max_col`, else to the width the sheet
    declares (`<dimension>`) or to its last cell: bounded here by the header's width, so a
    cell at column XFD or a declared A1:XFD1048576 costs nothing."""
    if (data := read_capped(path, problems)) is None:
        return None
    workbook = io.BytesIO(data)
    try:
        with zipfile.ZipFile(workbook) as zf:
            unzipped = sum(i.file_size for i in zf.infolist())
    except (zipfile.BadZipFile, OSError) as e:
        problems.append(Problem(path.name, None, f"is not an .xlsx workbook: {e}"))
        return None
    if unzipped > MAX_XLSX_UNZIPPED or unzipped > max(100 * len(data), 2**26):
        problems.append(Problem(path.name, None, f"unzips to {unzipped:,} bytes, more than "
                                f"{min(MAX_XLSX_UNZIPPED, max(100 * len(data), 2**26)):,} "
                                "(zip bomb?)"))
        return None
    try:
        import openpyxl  # the [harness] extra
    except ImportError:
        raise UserError("reading .xlsx needs openpyxl: pip install "
                        "'neural-medbench-studio[harness]' (or give a .tsv)") from None

    rows: list[tuple[int, list]] = []

    def values(n: int, cells: tuple) -> list | None:
        out = []
        for c in cells:
            if c.data_type == "f":
                problems.append(Problem(path.name, None, f"row {n}, cell {c.coordinate} "
                                        "holds a formula: prediction files hold values only"))
                return None
            out.append(c.value)
        return out

    try:  # openpyxl raises many types on a damaged workbook, loading it or reading its rows
        book = openpyxl.load_workbook(workbook, read_only=True, data_only=False)
        try:  # (the sheet is parsed while its rows are read)
            sheet = book.worksheets[0]
            header = next(sheet.iter_rows(min_row=1, max_row=1), ())
            width = max((i + 1 for i, c in enumerate(header)
                         if c.value is not None and str(c.value).strip()), default=0)
            if width > MAX_COLUMNS:
                problems.append(Problem(path.name, None, f"has a header of {width:,} columns "
                                        f"(row 1 reaches column {header[width - 1].column_letter}),"
                                        f" more than the limit of {MAX_COLUMNS}"))
                return None
            if width == 0:
                return []
            if (head := values(1, header[:width])) is None:
                return None
            rows.append((1, head))
            for n, cells in enumerate(sheet.iter_rows(min_row=2, max_col=width), start=2):
                if n > MAX_ROWS + 1:
                    problems.append(Problem(path.name, None, f"has more than {MAX_ROWS:,} rows "
                                            "below its header"))
                    return None
                if all(c.value is None for c in cells):
                    continue
                if (row := values(n, cells)) is None:
                    return None
                rows.append((n, row))
        finally:
            book.close()
    except Exception as e:
        problems.append(Problem(path.name, None, f"is not a readable .xlsx workbook: "
                                                 f"{one_line(str(e) or type(e).__name__, 120)}"))
        return None
    return rows


def _tsv_rows(path: Path, problems: list[Problem]) -> list[tuple[int, list]] | None:
    csv.field_size_limit(_TSV_FIELD_LIMIT)
    if (data := read_capped(path, problems)) is None:
        return None
    try:
        with io.StringIO(data.decode("utf-8-sig"), newline="") as f:
            rows = []
            reader = csv.reader(f, delimiter="\t")
            for row in reader:
                if len(rows) > MAX_ROWS:
                    problems.append(Problem(path.name, None, f"has more than {MAX_ROWS:,} rows "
                                            "below its header"))
                    return None
                if not rows and len(row) > MAX_COLUMNS:
                    problems.append(Problem(path.name, None, f"has a header of {len(row):,} "
                                            f"columns, more than the limit of {MAX_COLUMNS}"))
                    return None
                rows.append((reader.line_num, row[:len(rows[0][1])] if rows else row))
            return rows
    except UnicodeDecodeError as e:
        problems.append(Problem(path.name, None, f"not UTF-8 text (byte {e.object[e.start]:#04x})"))
    except csv.Error as e:
        problems.append(Problem(path.name, None, f"is not a readable .tsv file: {e}"))
    return None


VLMEVALKIT_COLUMNS = ("index", "prediction")


def read_vlmevalkit(path: Path, problems: list[Problem]) -> list[Answer]:
    """A VLMEvalKit prediction file (`<model>_<dataset>.xlsx` or `.tsv`): a header row with at
    least `index` and `prediction` (and `question` for `--task-key prompt`); one answer per
    row. Default key: a `task_id` column, else `index`. Cells hold text or numbers only."""
    if not cap(path, problems):
        return []
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".tsv"):
        problems.append(Problem(path.name, None, "a VLMEvalKit prediction file is .xlsx or .tsv"))
        return []
    rows = _xlsx_rows(path, problems) if suffix == ".xlsx" else _tsv_rows(path, problems)
    if not rows:
        if rows is not None:
            problems.append(Problem(path.name, None, "is empty (no header row)"))
        return []
    header = [str(h).strip() if h is not None else "" for h in rows[0][1]]
    if missing := [c for c in VLMEVALKIT_COLUMNS if c not in header]:
        problems.append(Problem(path.name, None, f"has no column {', '.join(missing)} (found: "
                                f"{one_line(', '.join(h for h in header if h), 200) or 'none'})"))
        return []
    if twice := next((h for h in header if h and header.count(h) > 1), None):
        problems.append(Problem(path.name, None, f"has the column {one_line(twice, 60)} twice"))
        return []
    out = []
    default = "task_id" if "task_id" in header else "index"
    for n, values in rows[1:]:
        if all(v in (None, "") for v in values):
            continue
        cells = dict(zip(header, values, strict=False))
        bad = [k for k, v in cells.items() if k and v is not None
               and (isinstance(v, bool) or not isinstance(v, str | int | float))]
        if bad:
            problems.append(Problem(path.name, None, f"row {n}, column {bad[0]}: holds a "
                                    f"{type(cells[bad[0]]).__name__}, not text or a number"))
            continue
        prediction = cells.get("prediction")
        text = "" if prediction is None else key_text(prediction) or str(prediction)
        out.append(Answer(f"{path.name} row {n}", cells, default, "index", text=text,
                          positional=default == "index"))
    return out


READERS: dict[str, Reader] = {"nmb": read_nmb, "vlmevalkit": read_vlmevalkit,
                              "lm-eval": read_lm_eval, "lmms-eval": read_lm_eval}


def holds_final_stage_only(text: str, turns: list[str] | None) -> bool:
    """Whether a staged task's response (`text` the first answer, `turns` one per further
    stage) holds its final stage's answer alone, as `--final-stage-only` stores a harness's
    one text: every earlier answer empty, the last one given."""
    return (bool(turns) and not text.strip() and all(not t.strip() for t in turns[:-1])
            and bool(turns[-1].strip()))


def _staged(s: Session, task_ids: set[str]) -> dict[str, int]:
    """{task id: number of stages} of the level-3 tasks among `task_ids` that have stages."""
    try:
        return {tid: len(stages) for tid, level, stages in fetch_in(
            s, Task.task_id, task_ids, Task.task_id, Task.level, Task.stages)
            if level == 3 and stages}
    finally:
        s.rollback()


# ---------------------------------------------------------------- the import


def response_id(source: str, model: str, task_id: str, sample: int) -> str:
    digest = hashlib.sha256(f"{source}\0{model}\0{task_id}\0{sample}".encode()).hexdigest()
    return f"{source}-{digest[:24]}"


def choose_filter(answers: list[Answer], name: str | None, label: str
                  ) -> tuple[list[Answer], str | None, list[str]]:
    """The answers read under filter `name` (default: the first the file names), that filter,
    and the file's other filters. lm-eval writes each document once per filter with the same
    answers, so reading every line would count each answer once per filter. UserError for a
    `name` the file does not hold (one line listing those it holds)."""
    filters = list(dict.fromkeys(a.variant for a in answers))
    if None in filters and len(filters) > 1:
        first = next(a.where for a in answers if a.variant is None)
        raise UserError(f"{label}: some lines name a filter and some do not (first without: "
                        f"{first}): one lm-eval run per file")
    named = [f for f in filters if f is not None]
    if name is not None and name not in named:
        holds = (f"has the filters {', '.join(shown(f) for f in named)}" if named
                 else "names no filter (its lines have no filter field)")
        raise UserError(f"--filter {shown(name)}: {label} {holds}")
    if not named:
        return answers, None, []
    chosen = name if name is not None else named[0]
    return [a for a in answers if a.variant == chosen], chosen, [f for f in named if f != chosen]


def answered_twice(answers: list[Answer], models: list[str], label: str) -> Problem | None:
    """One problem naming the keys of the format (doc_id, index, custom_id) that two lines or
    rows of one file answer for the same model (`models[i]` is answer i's), or None. Answers
    read from one line are its repeats (samples 0, 1, ...); the same key on two lines is one
    answer given twice (two filters, two runs in one file), which would count twice."""
    lines: dict[tuple[str, str], dict[str, None]] = {}
    for a, who in zip(answers, models, strict=True):
        key = key_text(lookup(a.keys, a.native_key or a.default_key))
        if key is not None:
            lines.setdefault((who, key), {})[a.where] = None
    twice = {k: list(w) for k, w in lines.items() if len(w) > 1}
    if not twice:
        return None
    name = answers[0].native_key or answers[0].default_key
    word = "row" if " row " in answers[0].where else "line"
    several_models = len({who for who, _ in twice}) > 1

    def named(who: str, key: str, where: list[str]) -> str:
        of = f" of {show(who)}" if several_models else ""
        at = ", ".join(str(number(w)) for w in where[:3]) + (", ..." if len(where) > 3 else "")
        return f"{show(key)}{of} ({word}s {at})"

    shown = "; ".join(named(who, key, where) for (who, key), where in list(twice.items())[:5])
    more = f"; and {len(twice) - 5} more" if len(twice) > 5 else ""
    return Problem(label, None, f"{counted(len(twice), name, {'index': 'indexes'}.get(name))} "
                   f"{'is' if len(twice) == 1 else 'are'}"
                   f" answered on more than one {word} for one model, which would count one "
                   f"answer as two samples: {shown}{more}")


def _record_failures(failures: list[tuple[str, str, int, str]], file: str, source: str
                     ) -> Callable[[Session], None]:
    """Writes the failed answers as the latest collection failures of (model, task, sample),
    under one finished collection run that names the file."""
    def write(s: Session) -> None:
        by_model: dict[str, list] = {}
        for f in failures:
            by_model.setdefault(f[0], []).append(f)
        for model, rows in by_model.items():
            run = CollectionRun(model=model, settings={"imported": file, "source": source},
                                template_version="import", template_hash="", batch=True,
                                status="finished", n_items=len(rows), failed=len(rows),
                                finished_at=utcnow())
            s.add(run)
            s.flush()
            for _, task_id, sample, reason in rows:
                s.exec(delete(CollectionFailure).where(
                    CollectionFailure.model == model, CollectionFailure.task_id == task_id,
                    CollectionFailure.sample == sample))
                s.add(CollectionFailure(run_id=run.id, model=model, task_id=task_id,
                                        sample=sample, reason=reason, attempts=1))
    return write


def _not_yet_recorded(s: Session, failures: list[tuple[str, str, int, str]]
                      ) -> list[tuple[str, str, int, str]]:
    """The failures (model, task, sample, reason) that are not already the latest recorded
    ones, so importing a file again records no second run of the same failures."""
    if not failures:
        return failures
    try:
        known = set(s.exec(select(CollectionFailure.model, CollectionFailure.task_id,
                                  CollectionFailure.sample, CollectionFailure.reason).where(
            CollectionFailure.model.in_({f[0] for f in failures}))))
    finally:
        s.rollback()
    return [f for f in failures if f not in known]


def import_responses(s: Session, path: Path, *, source: str, model: str | None = None,
                     task_key: str | None = None, filter_name: str | None = None,
                     final_stage_only: bool = False, dry_run: bool = False,
                     actor: str | None = None, progress: Any = None,
                     readers: dict[str, Reader] | None = None) -> ResponsesSummary:
    """Read `path` (a file in the `source` format, or for `nmb` a responses.jsonl or a
    responses-only bundle), match its answers to the study's tasks and import them in one
    transaction of `s`; raises BundleInvalid listing every problem, the study unchanged.
    `filter_name`: the lm-eval filter whose lines are read (`choose_filter`). An answer to a
    staged task is refused unless `final_stage_only`, which stores it as the final stage's
    answer alone (`holds_final_stage_only`)."""
    readers = {**READERS, **(readers or {})}
    if source not in readers:
        raise UserError(f"--from {source!r} is not one of {', '.join(readers)}")
    if filter_name is not None and source != "lm-eval":
        raise UserError("--filter is for --from lm-eval (the filter of a sample log's lines)")
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path.name}: no such file")
    if source == "nmb":
        if task_key or model or final_stage_only:
            raise UserError("--model, --task-key and --final-stage-only are for harness files: "
                            "a responses.jsonl names its tasks and models, and gives staged "
                            "tasks their turns")
        return _import_nmb(s, path, dry_run=dry_run, actor=actor, progress=progress)
    if path.is_dir():
        raise UserError(f"{path.name}: is a folder, not a {source} file")
    rule = TaskKey.parse(task_key)
    problems: list[Problem] = []
    try:
        answers = readers[source](path, problems)
        repeated = len({a.where for a in answers if a.repeat})
        answers = [a for a in answers if not a.repeat]
        answers, chosen, others = choose_filter(answers, filter_name, path.name)
        if not answers and not problems:
            problems.append(Problem(path.name, None, "holds no answer"))
        tasks = match_tasks(s, answers, rule, path.name, problems) if answers else []
    finally:
        s.rollback()
    stages = _staged(s, {t for t in tasks if t is not None})
    one_text = {}  # staged task -> rows that answer it with one text
    for a, tid in zip(answers, tasks, strict=True):
        if tid in stages and a.failure is None:
            one_text.setdefault(tid, []).append(row_of(a))
    if one_text and not final_stage_only:
        n = sum(map(len, one_text.values()))
        shown = ", ".join(f"{show(t)} ({_at(w)})" for t, w in list(one_text.items())[:5])
        more = f" and {len(one_text) - 5} more" if len(one_text) > 5 else ""
        problems.append(Problem(path.name, None, f"{counted(n, 'answer')} {'is' if n == 1 else 'are'}"
                                f" one text for a staged task, which takes one answer per stage:"
                                f" {shown}{more}; a harness file holds no per-stage answers: "
                                "--final-stage-only stores the text as the final stage's answer "
                                "(flagged in results), or leave these tasks out"))
    lines, origin, failures = [], [], []
    samples: dict[tuple[str, str], int] = {}
    named = {a.model for a in answers if a.model}
    if model is None and len(named) == 1:  # e.g. a Batch error line of a one-model file
        model = named.pop()
    nameless = [a.where for a in answers if not (model or a.model)]
    if nameless:
        problems.append(Problem(path.name, None, f"{counted(len(nameless), 'answer')} "
                                f"{'names' if len(nameless) == 1 else 'name'} no model "
                                f"(first: {nameless[0]}): give --model NAME"))
    elif twice := answered_twice(answers, [model or a.model or "" for a in answers], path.name):
        problems.append(twice)
    if problems:
        raise BundleInvalid(path.name, problems)
    for a, tid in zip(answers, tasks, strict=True):
        who = model or a.model or ""
        k = samples.get((who, tid), 0)
        samples[who, tid] = k + 1
        if a.failure is not None:
            failures.append((who, tid, k, a.failure))
            continue
        row = {"response_id": response_id(source, who, tid, k), "task_id": tid, "model": who,
               "sample": k, "text": a.text or ""}
        if tid in stages:  # final_stage_only: no first answer, none to a stage but the last
            row["text"], row["turns"] = "", [""] * (stages[tid] - 1) + [a.text or ""]
        if a.usage:
            row["usage"] = a.usage
        lines.append(row)
        origin.append(a.where)
    failures = _not_yet_recorded(s, failures)
    with Workspace("responses", engine=s.get_bind()) as ws:
        root = ws.path / "responses"
        root.mkdir()
        (root / "bundle.json").write_text(json.dumps(
            {"format": FORMAT, "name": escape_unprintable(
                f"{source} responses: {path.name}"
                + (f" (filter {chosen})" if chosen is not None else ""))[:256],
             "description": f"converted by nmb import-responses --from {source}"}))
        (root / "responses.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")
        also = _record_failures(failures, path.name, source) if failures else None
        try:
            summary = import_bundle(s, root, dry_run=dry_run, actor=actor, progress=progress,
                                    workspace=ws, also=also)
        except BundleInvalid as e:
            raise BundleInvalid(path.name, [
                Problem(origin[p.line - 1] if p.file == "responses.jsonl" and p.line
                        and p.line <= len(origin) else path.name, None, p.message)
                for p in e.problems]) from None
    return ResponsesSummary(file=path.name, source=source, imported=summary,
                            failures=len(failures), filter=chosen, other_filters=others,
                            final_stage_only=sum(map(len, one_text.values())),
                            repeated_lines=repeated)


def _at(where: list[int]) -> str:
    """"row 3", "rows 2, 5, 9, ..." """
    return (f"row{'s' if len(where) > 1 else ''} " + ", ".join(map(str, where[:3]))
            + (", ..." if len(where) > 3 else ""))


def _import_nmb(s: Session, path: Path, *, dry_run: bool, actor: str | None,
                progress: Any) -> ResponsesSummary:
    """A responses-only bundle folder (or .zip), or a bare responses.jsonl."""
    if path.is_dir() or path.suffix.lower() == ".zip":
        summary = import_bundle(s, path, dry_run=dry_run, actor=actor, progress=progress)
        return ResponsesSummary(file=path.name, source="nmb", imported=summary)
    with Workspace("responses", engine=s.get_bind()) as ws:
        root = ws.path / "responses"
        root.mkdir()
        problems: list[Problem] = []
        if not cap(path, problems) or (data := read_capped(path, problems)) is None:
            raise BundleInvalid(path.name, problems)
        if not data.strip():  # as the harness formats: an empty file is no import of nothing
            raise BundleInvalid(path.name, [Problem(path.name, None, "holds no answer")])
        (root / "responses.jsonl").write_bytes(data)
        (root / "bundle.json").write_text(json.dumps(
            {"format": FORMAT, "name": escape_unprintable(f"responses: {path.name}")[:256]}))
        try:
            summary = import_bundle(s, root, dry_run=dry_run, actor=actor, progress=progress,
                                    workspace=ws)
        except BundleInvalid as e:
            raise BundleInvalid(path.name, [
                Problem(path.name if p.file == "responses.jsonl" else p.file, p.line, p.message)
                for p in e.problems]) from None
    return ResponsesSummary(file=path.name, source="nmb", imported=summary)
