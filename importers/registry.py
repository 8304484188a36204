"""The importers by name: what each brings (cases, responses or scores), which options it takes, and
how it runs. Each validates everything before it writes, in one transaction of the session it
is given (docs/bundle-format.md). Adding a format is one entry here, its options in `Options`
and its form on the admin page.
"""

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.bundle.store import Workspace
from errors import UserError


@dataclass(frozen=True)
class Options:
    """What an import is asked; each importer takes `dry_run`, `actor`, `progress` and the
    options its entry names. A set option that the importer does not take is refused."""

    dry_run: bool = False
    actor: str | None = None
    progress: Callable[[float, str], None] | None = None
    workspace: Workspace | None = None  # an upload's scratch area (bundle)
    allow_blank: bool = False
    case_info: Path | None = None
    sequence_map: Path | None = None
    allow_burned_in: bool = False
    answers: Path | None = None
    family: str | None = None
    level: int | None = None
    field_map: Path | None = None  # --map: a release file's field names (neural-medbench)
    model: str | None = None
    task_key: str | None = None
    filter_name: str | None = None
    participants: tuple[str, ...] = ()  # bids: sub-01, sub-01/ses-1
    exclude: tuple[str, ...] = ()
    final_stage_only: bool = False
    with_demo: bool = False  # cases into a study that holds the synthetic demo (db.study.demo)
    revise: bool = False  # a changed case record or task becomes a revision (db.study.revisions)


@dataclass(frozen=True)
class Importer:
    name: str  # the value of --from
    brings: str  # "cases", "responses" or "scores"
    label: str  # as the admin page names it
    takes: frozenset[str]  # the options of `Options` beyond dry_run, actor and progress
    run: Callable[[Session, list[Path], Options], Any]
    many_paths: bool = False


def _bundle(s: Session, paths: list[Path], o: Options) -> Any:
    from db.bundle.importer import import_bundle

    return import_bundle(s, paths[0], dry_run=o.dry_run, actor=o.actor, progress=o.progress,
                         workspace=o.workspace, allow_blank=o.allow_blank, revise=o.revise)


def _release(s: Session, paths: list[Path], o: Options) -> Any:
    from db.release.reader import import_release

    return import_release(s, paths, answers=o.answers, family=o.family, level=o.level,
                          field_map=o.field_map, dry_run=o.dry_run, allow_blank=o.allow_blank,
                          actor=o.actor, progress=o.progress, revise=o.revise)


def _dicom(s: Session, paths: list[Path], o: Options) -> Any:
    from db.sources.dicom import import_dicom

    return import_dicom(s, paths[0], case_info=o.case_info, sequence_map=o.sequence_map,
                        allow_burned_in=o.allow_burned_in, allow_blank=o.allow_blank,
                        dry_run=o.dry_run, actor=o.actor, progress=o.progress, revise=o.revise)


def _bids(s: Session, paths: list[Path], o: Options) -> Any:
    from db.sources.bids import import_bids

    return import_bids(s, paths[0], case_info=o.case_info, allow_blank=o.allow_blank,
                       participants=o.participants, exclude=o.exclude, dry_run=o.dry_run,
                       actor=o.actor, progress=o.progress, revise=o.revise)


def _responses(source: str) -> Callable[[Session, list[Path], Options], Any]:
    def run(s: Session, paths: list[Path], o: Options) -> Any:
        from collection.batch_responses import import_harness_responses

        return import_harness_responses(s, paths[0], source=source, model=o.model,
                                        task_key=o.task_key, filter_name=o.filter_name,
                                        final_stage_only=o.final_stage_only,
                                        dry_run=o.dry_run, actor=o.actor, progress=o.progress)

    return run


def _scores(s: Session, paths: list[Path], o: Options) -> Any:
    from db.sources.scores import import_scores

    return import_scores(s, paths[0], dry_run=o.dry_run, actor=o.actor, progress=o.progress)


def _model_cards(s: Session, paths: list[Path], o: Options) -> Any:
    from db.study.model_cards import import_cards

    return import_cards(s, paths[0], actor=o.actor, dry_run=o.dry_run)


def _breadth(s: Session, paths: list[Path], o: Options) -> Any:
    from db.sources.breadth import import_breadth

    return import_breadth(s, paths[0], actor=o.actor, dry_run=o.dry_run)


def _case_dates(s: Session, paths: list[Path], o: Options) -> Any:
    from db.study.case_dates import import_case_dates

    return import_case_dates(s, paths[0], actor=o.actor, dry_run=o.dry_run)


_HARNESS = frozenset({"model", "task_key", "final_stage_only"})
_CASES = frozenset({"allow_blank", "with_demo", "revise"})  # every importer of cases
IMPORTERS: dict[str, Importer] = {i.name: i for i in (
    Importer("bundle", "cases", "Bundle", _CASES | {"workspace"}, _bundle),
    Importer("neural-medbench", "cases", "Neural-MedBench release files",
             _CASES | {"answers", "family", "level", "field_map"}, _release, many_paths=True),
    Importer("dicom", "cases", "DICOM study",
             _CASES | {"case_info", "sequence_map", "allow_burned_in"}, _dicom),
    Importer("bids", "cases", "BIDS dataset",
             _CASES | {"case_info", "participants", "exclude"}, _bids),
    Importer("nmb", "responses", "responses.jsonl (bundle format)", frozenset(),
             _responses("nmb")),
    Importer("openai-batch", "responses", "OpenAI Batch output (also vLLM run_batch)",
             _HARNESS, _responses("openai-batch")),
    Importer("chat-completions", "responses",
             "chat.completion lines (vLLM, Ollama /v1, OpenAI-compatible servers)", _HARNESS,
             _responses("chat-completions")),
    Importer("ollama", "responses", "Ollama /api/chat lines", _HARNESS, _responses("ollama")),
    Importer("vlmevalkit", "responses", "VLMEvalKit predictions (.xlsx, .tsv)", _HARNESS,
             _responses("vlmevalkit")),
    Importer("lm-eval", "responses", "lm-evaluation-harness samples (.jsonl)",
             _HARNESS | {"filter_name"}, _responses("lm-eval")),
    Importer("lmms-eval", "responses", "lmms-eval samples (.jsonl)", _HARNESS,
             _responses("lmms-eval")),
    Importer("scores-csv", "scores", "Earlier expert scores (.csv)", frozenset(), _scores),
    Importer("model-cards", "model cards", "Model cards (.csv: name, maker, version, ...)",
             frozenset(), _model_cards),
    Importer("breadth", "breadth scores", "Breadth scores (.csv: model, benchmark, score)",
             frozenset(), _breadth),
    Importer("case-dates", "case dates", "Cases' publication dates (.csv: case_id, published)",
             frozenset(), _case_dates),
)}
_ALWAYS = frozenset({"dry_run", "actor", "progress"})


def names(brings: str) -> list[str]:
    """The importers that bring `brings` ("cases", "responses", "scores", "model cards",
    "breadth scores" or "case dates"), in registry order."""
    return [name for name, i in IMPORTERS.items() if i.brings == brings]


_FLAGS = {"field_map": "--map"}


def _flag(option: str) -> str:
    return _FLAGS.get(option) or "--" + option.removesuffix("_name").replace("_", "-")


def checked(name: str, paths: list[Path], options: Options) -> Importer:
    """The importer `name`, once its `paths` and `options` are ones it takes: a UserError for an
    option set that it does not take (naming the importers that do), or several paths where it
    takes one. Nothing is read yet."""
    importer = IMPORTERS.get(name)
    if importer is None:
        raise UserError(f"--from {name!r} is not one of {', '.join(IMPORTERS)}")
    for f in fields(options):
        if (f.name not in _ALWAYS | importer.takes and f.name != "workspace"
                and getattr(options, f.name) not in (f.default, "")):
            takers = " and ".join(f"--from {i.name}" for i in IMPORTERS.values() if f.name in i.takes)
            raise UserError(f"{_flag(f.name)} is for {takers}")
    if len(paths) != 1 and not importer.many_paths:
        raise UserError(f"--from {name} imports one path (release task files: --from "
                        "neural-medbench)")
    return importer


def run_import(s: Session, name: str, paths: list[Path], options: Options) -> Any:
    """Run the importer `name` on `paths` (`checked` first) in the session `s`; cases into a
    study that holds the demo only `with_demo` (a UserError before anything is read)."""
    from db.study.demo import refuse_beside_demo

    importer = checked(name, paths, options)
    if importer.brings == "cases":
        refuse_beside_demo(s, with_demo=options.with_demo)
    return importer.run(s, [Path(p) for p in paths], options)
