"""The study's tables.

One table per noun of the study (see ARCHITECTURE.md, "Words"). Domain ids from bundles
(`case_id`, `task_id`, `response_id`) are the primary keys of their tables; everything the
tool creates itself has an integer id. JSON columns hold small structured values
(scores, stages, criterion levels) and work the same on SQLite and PostgreSQL.
"""

from datetime import UTC, date, datetime
from typing import Any, Literal, get_args

from sqlalchemy import (
    JSON,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    Text,
    UniqueConstraint,
    false,
)
from sqlmodel import AutoString, Field, SQLModel

Role = Literal["admin", "expert", "physician", "student"]
Family = Literal["differential", "lesion", "rationale"]
ROLES, FAMILIES, LEVELS = get_args(Role), get_args(Family), (1, 2, 3)

# The closed vocabularies of the study's rows: typed here, refused by the database otherwise
# (a check constraint per column, migrations 0013 and 0014).
ResponseSource = Literal["model", "physician", "student"]  # a human's: the taker's role
PicturePlane = Literal["axial", "coronal", "sagittal", "none"]
ScoreStatus = Literal["draft", "submitted"]
RunStatus = Literal["running", "finished", "interrupted"]
GradeItems = Literal["pending", "calibration", "all", "stale"]
# what an assignment design drew from (`nmb assign --items`; "model": `AssignmentDesign.model`)
Selection = Literal["all", "calibration", "unassigned", "model", "human"]
Part = Literal["dev", "heldout"]
ReportPart = Literal["dev", "heldout", "all"]
RetiredKind = Literal["case", "task", "response", "model", "grader-run", "collection-run"]
ModelKind = Literal["base", "general", "medical"]  # a model card's kind (migration 0022)


def one_of(column: str, vocabulary: Any, name: str) -> CheckConstraint:
    """CHECK (column IN the values of the Literal `vocabulary`), named `name`."""
    values = ", ".join(f"'{v}'" for v in get_args(vocabulary))
    return CheckConstraint(f"{column} IN ({values})", name=name)


def _word(length: int, **kw: Any) -> Any:
    """A string column of at most `length` characters that holds one word of a vocabulary."""
    return Field(sa_type=AutoString(length), **kw)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _json(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=Column(JSON(none_as_null=nullable), nullable=nullable))


def _when() -> Any:
    return Field(default_factory=utcnow, sa_type=DateTime(timezone=True))


def _text() -> Any:
    return Field(sa_type=Text)


class Setting(SQLModel, table=True):
    """Study-wide key/value settings (e.g. `demo` = "1" while the demo study is loaded)."""

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(default="")


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, max_length=64)
    role: Role = _word(16)
    password_hash: str = Field(max_length=256)
    email: str | None = Field(default=None, unique=True, max_length=256)
    disabled: bool = False
    demo: bool = False
    # Bumped by logout and disabling: every open session of the user, which keeps the epoch it
    # logged in with, ends at its next page run (ui.auth.current_user).
    session_epoch: int = Field(default=0, sa_column_kwargs={"server_default": false()})
    created_at: datetime = _when()

    __table_args__ = (
        one_of("role", Role, "ck_user_role"),
    )


class LoginToken(SQLModel, table=True):
    """A password login kept across page reloads: the sha256 of the random token in the
    browser's cookie (the token itself is never stored), valid until `expires_at`; deleted at
    logout."""

    token_hash: str = Field(primary_key=True, max_length=64)
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = _when()
    expires_at: datetime = Field(sa_type=DateTime(timezone=True), index=True)


class LoginFailure(SQLModel, table=True):
    """A failed password login, kept while it counts towards a lockout (db.users)."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, index=True)
    client: str | None = Field(default=None, max_length=64, index=True)
    at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True), index=True)


class Case(SQLModel, table=True):
    case_id: str = Field(primary_key=True, max_length=128)
    title: str
    ehr: str = _text()
    scores: dict[str, float] = _json()
    # the reference answer, or None (JSON null: the column stays NOT NULL) when the case was
    # imported without one (db.study.reference)
    ground_truth: dict[str, Any] | None = _json()
    bundle: str = Field(max_length=256)
    # [{"series", "plane", "index"}]: the slices a model is shown (imaging.key_slices), or None
    key_slices: list[dict[str, Any]] | None = _json(nullable=True)
    # where the viewer opens the case: {"plane", "mm"? | "slices"?, "layout"?, "source"}, from
    # the bundle's `hanging_protocol` or an admin's "use this view" (db.study.opening_view)
    opening_view: dict[str, Any] | None = _json(nullable=True)
    # an opaque label shared by the cases that describe one patient (a Neural-MedBench case
    # number in several release files), or None: a case of its own. Exams hold a later stage
    # back until the patient's other tasks are answered (db.study.exams); never an identifier
    patient: str | None = Field(default=None, max_length=128, index=True)
    # when the case was first published (a journal's case report, a release), where known:
    # the checklists judge test-data independence from it against each model's training cutoff
    published: date | None = Field(default=None, sa_type=Date)
    created_at: datetime = _when()


class Series(SQLModel, table=True):
    """One MRI sequence of a case, stored in NMB_HOME under its sha256: a volume, or a 2-D
    picture (`picture`: a sanitised PNG, `imaging.picture`; shape [width, height], no voxel
    sizes) with an optional `plane` (axial, coronal, sagittal, none) and `caption`."""

    id: int | None = Field(default=None, primary_key=True)
    case_id: str = Field(foreign_key="case.case_id", index=True, max_length=128)
    position: int
    sequence: str = Field(max_length=32)
    path: str = Field(max_length=512)  # relative to NMB_HOME
    sha256: str = Field(max_length=64, index=True)
    shape: list[int] = _json()
    voxel_sizes: list[float] = _json()
    picture: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    plane: PicturePlane | None = _word(16, default=None)
    caption: str | None = Field(default=None, max_length=500)
    width: int | None = None
    height: int | None = None

    __table_args__ = (UniqueConstraint("case_id", "position"),
                      one_of("plane", PicturePlane, "ck_series_plane"))


class Mask(SQLModel, table=True):
    """A lesion mask of a case: integer labels (0 = background) on a grid in the case's world
    space, overlaid on the series named `series` or, when None, on every series. Stored in
    NMB_HOME under its sha256, like a series."""

    id: int | None = Field(default=None, primary_key=True)
    case_id: str = Field(foreign_key="case.case_id", index=True, max_length=128)
    position: int
    label: str = Field(max_length=32)
    series: str | None = Field(default=None, max_length=32)
    path: str = Field(max_length=512)  # relative to NMB_HOME
    sha256: str = Field(max_length=64, index=True)
    shape: list[int] = _json()
    voxel_sizes: list[float] = _json()

    __table_args__ = (UniqueConstraint("case_id", "position"),)


class Task(SQLModel, table=True):
    task_id: str = Field(primary_key=True, max_length=128)
    case_id: str = Field(foreign_key="case.case_id", index=True, max_length=128)
    family: Family = _word(16)
    level: int
    prompt: str = _text()
    stages: list[str] = _json()
    # multi-turn tasks: per stage, whether it was written to disconfirm a wrong first
    # hypothesis (results: anchoring); NULL: no stage marked
    disconfirming: list[bool] | None = _json(nullable=True)
    # experts see the case's lesion masks on /score for this task (never in an exam)
    show_masks: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    # a practice item (the bundle's `practice`): first in queues and exams, scored and answered
    # as any other, never counted (db.study.practice)
    practice: bool = Field(default=False, sa_column_kwargs={"server_default": false()})

    __table_args__ = (
        one_of("family", Family, "ck_task_family"),
        CheckConstraint("level IN (1, 2, 3)", name="ck_task_level"),
    )


class Response(SQLModel, table=True):
    """An answer to a task, written by a model (`model` set) or a human (`user_id` set).

    `blind_code` is the opaque code raters see; `sample` indexes repeated samples for pass@k.
    """

    response_id: str = Field(primary_key=True, max_length=128)
    task_id: str = Field(foreign_key="task.task_id", index=True, max_length=128)
    source: ResponseSource = _word(16)
    model: str | None = Field(default=None, max_length=128)
    user_id: int | None = Field(default=None, foreign_key="user.id")
    sample: int = 0
    text: str = _text()
    turns: list[str] | None = _json(nullable=True)
    # {"prompt_tokens", "completion_tokens", "images", "cost_usd"} as far as known, or None
    usage: dict[str, Any] | None = _json(nullable=True)
    blind_code: str = Field(unique=True, max_length=32)
    # the condition it was collected under (`nmb collect --condition`), or None: the plain
    # exam; a conditioned response's `model` is MODEL@CONDITION (collection.conditions)
    condition: str | None = Field(default=None, max_length=40)
    created_at: datetime = _when()

    __table_args__ = (
        UniqueConstraint("task_id", "model", "sample"),
        CheckConstraint("sample >= 0", name="ck_response_sample"),
        one_of("source", ResponseSource, "ck_response_source"),
    )


class ResponseFlag(SQLModel, table=True):
    """A response whose text names a model or its maker (db.raters.model_names), held from assignment
    until an admin reviews it. From import on, `Response.text` and `turns` hold the redacted
    text that raters and the grader see; the original stays here, for the audit."""

    response_id: str = Field(foreign_key="response.response_id", primary_key=True,
                             max_length=128)
    names: list[str] = _json()  # the spans found, as written
    original_text: str = _text()
    original_turns: list[str] | None = _json(nullable=True)
    created_at: datetime = _when()
    reviewed_by: str | None = Field(default=None, max_length=64)
    reviewed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


class Rubric(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    rubric_id: str = Field(max_length=64)  # e.g. "neurology-v1"
    version: str = Field(max_length=32)
    content_hash: str = Field(unique=True, max_length=64)
    source_text: str = _text()
    created_at: datetime = _when()


class AssignmentDesign(SQLModel, table=True):
    """One call of `nmb assign`: which items, which raters, what overlap, which seed."""

    id: int | None = Field(default=None, primary_key=True)
    rubric_hash: str = Field(foreign_key="rubric.content_hash", max_length=64)
    selection: Selection = _word(32)
    model: str | None = Field(default=None, max_length=128)  # selection "model": whose responses
    overlap: int
    seed: int
    created_by: str | None = Field(default=None, max_length=64)
    created_at: datetime = _when()

    __table_args__ = (one_of("selection", Selection, "ck_assignmentdesign_selection"),)


class Assignment(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    design_id: int = Field(foreign_key="assignmentdesign.id", index=True)
    rater_id: int = Field(foreign_key="user.id", index=True)
    response_id: str = Field(foreign_key="response.response_id", index=True, max_length=128)
    position: int  # place in the rater's seeded random queue

    __table_args__ = (UniqueConstraint("rater_id", "response_id"),)


class ExpertScore(SQLModel, table=True):
    """One assignment's score: the latest submitted values, plus the rater's unsaved `draft`.

    Drafts are saved on every change; `Submit` validates the draft, copies it into the
    columns, bumps `revision` and keeps a `ScoreRevision`. Only submitted values count.
    """

    id: int | None = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="assignment.id", unique=True)
    rubric_hash: str = Field(foreign_key="rubric.content_hash", max_length=64)
    status: ScoreStatus = _word(16, default="draft")
    draft: dict[str, Any] | None = _json(nullable=True)
    criteria: dict[str, int | None] = _json()
    correct_diagnosis: bool | None = None
    error_tags: list[str] = _json()
    comment: str = Field(default="", sa_type=Text)
    confidence: int | None = None
    # multi-turn items: the judgment of the answer of each stage but the last (True, False or
    # None: not judged), stage 1 first; the last stage is `correct_diagnosis`. NULL: none given.
    stage_correct: list[bool | None] | None = _json(nullable=True)
    overall: float | None = None
    active_seconds: float = 0.0
    revision: int = 0  # number of submitted revisions
    synthetic: bool = False
    # brought in by `nmb import-scores` (a paper form, a spreadsheet, an earlier study), not
    # collected blind through the tool: reports say so; the held-out look counts it only
    # where the protocol says (`calibration.protocol.Gate.count_imported_scores`)
    imported: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    updated_at: datetime = _when()
    submitted_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))

    __table_args__ = (one_of("status", ScoreStatus, "ck_expertscore_status"),)


class ScoreRevision(SQLModel, table=True):
    """Every submitted version of an expert score, kept forever (who, when, what changed)."""

    id: int | None = Field(default=None, primary_key=True)
    score_id: int = Field(foreign_key="expertscore.id", index=True)
    revision: int
    rater_id: int = Field(foreign_key="user.id")
    content: dict[str, Any] = _json()
    changes: dict[str, Any] = _json()
    created_at: datetime = _when()

    __table_args__ = (UniqueConstraint("score_id", "revision"),)


class Exam(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, max_length=128)
    task_ids: list[str] = _json()
    # after finishing, a taker may read their answers beside the reference answers
    review: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    created_at: datetime = _when()
    # closed (`nmb exam close`): no new attempt, no new answer; what was recorded stays
    closed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    closed_by: str | None = Field(default=None, max_length=64)


class ExamAttempt(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    exam_id: int = Field(foreign_key="exam.id", index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    drafts: dict[str, str] | None = _json(nullable=True)  # unrecorded answer text per task
    started_at: datetime = _when()
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    # the cases whose reference answer this attempt's review handed out (db.study.exams)
    reviewed_cases: list[str] | None = _json(nullable=True)

    __table_args__ = (UniqueConstraint("exam_id", "user_id"),)


class StageAnswer(SQLModel, table=True):
    """A human's answer to one stage of a task (stage 0 = the first answer)."""

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="examattempt.id", index=True)
    task_id: str = Field(foreign_key="task.task_id", max_length=128)
    stage: int
    text: str = _text()
    seconds: float = 0.0
    answered_at: datetime = _when()

    __table_args__ = (UniqueConstraint("attempt_id", "task_id", "stage"),)


class GraderConfig(SQLModel, table=True):
    """An immutable grader configuration; `config_hash` covers every field that shapes a request."""

    id: int | None = Field(default=None, primary_key=True)
    config_hash: str = Field(unique=True, max_length=64)
    name: str = Field(max_length=128)
    model: str = Field(max_length=128)
    base_url: str | None = Field(default=None, max_length=512)
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1200
    prompt_version: str = Field(max_length=32)
    rubric_hash: str = Field(foreign_key="rubric.content_hash", max_length=64)
    vision: bool = False
    validated_report_id: int | None = None
    created_at: datetime = _when()


class GraderRun(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id", index=True)
    items: GradeItems = _word(32)
    batch_id: str | None = Field(default=None, max_length=128)
    status: RunStatus = _word(16, default="running")
    n_items: int = 0
    graded: int = 0
    failed: int = 0
    from_cache: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a request of an unpriced model was sent
    synthetic: bool = False
    started_at: datetime = _when()
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))

    __table_args__ = (one_of("items", GradeItems, "ck_graderrun_items"),
                      one_of("status", RunStatus, "ck_graderrun_status"))


class GraderScore(SQLModel, table=True):
    """A valid grade: at most one per (config, response)."""

    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id", index=True)
    response_id: str = Field(foreign_key="response.response_id", index=True, max_length=128)
    run_id: int = Field(foreign_key="graderrun.id")
    request_hash: str = Field(max_length=64)
    criteria: dict[str, int | None] = _json()
    correct_diagnosis: bool
    error_tags: list[str] = _json()
    justification: str = Field(default="", sa_type=Text)
    overall: float
    # prompt nmb-grader-2 on: the reference diagnosis's rank in a differential task's answer
    # (None: absent), and on multi-turn tasks [{"leading_diagnosis", "correct", "changed"}]
    diagnosis_rank: int | None = None
    stages: list[dict[str, Any]] | None = _json(nullable=True)
    model_returned: str | None = Field(default=None, max_length=128)
    system_fingerprint: str | None = Field(default=None, max_length=128)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    created_at: datetime = _when()

    __table_args__ = (UniqueConstraint("config_id", "response_id"),)


class GraderFailure(SQLModel, table=True):
    """The latest failure of a (config, response); removed when the response is graded."""

    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id", index=True)
    response_id: str = Field(foreign_key="response.response_id", max_length=128)
    run_id: int = Field(foreign_key="graderrun.id")
    reason: str = _text()
    attempts: int = 0
    created_at: datetime = _when()

    __table_args__ = (UniqueConstraint("config_id", "response_id"),)


class GraderCache(SQLModel, table=True):
    """Raw answers keyed by the hash of (config, exact request); never sent twice."""

    request_hash: str = Field(primary_key=True, max_length=64)
    raw: str = _text()
    model_returned: str | None = Field(default=None, max_length=128)
    system_fingerprint: str | None = Field(default=None, max_length=128)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = _when()


class CollectionRun(SQLModel, table=True):
    """One call of `nmb collect`: a model's answers to the selected tasks (collection.collect).

    `settings` holds what shaped the requests (samples, images, temperature, max tokens, the
    task selection); `template_version`/`template_hash` name the prompt template sent."""

    id: int | None = Field(default=None, primary_key=True)
    model: str = Field(max_length=128, index=True)
    base_url: str | None = Field(default=None, max_length=512)
    settings: dict[str, Any] = _json()
    template_version: str = Field(max_length=32)
    template_hash: str = Field(max_length=64)
    batch: bool = False
    status: RunStatus = _word(16, default="running")
    n_items: int = 0
    collected: int = 0
    failed: int = 0
    from_cache: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    image_count: int = 0
    cost_usd: float | None = None  # None while no request of a priced model was sent
    started_at: datetime = _when()
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))

    __table_args__ = (one_of("status", RunStatus, "ck_collectionrun_status"),)


class CollectedResponse(SQLModel, table=True):
    """How a collected response was obtained: its run, the template and every request sent."""

    response_id: str = Field(foreign_key="response.response_id", primary_key=True,
                             max_length=128)
    run_id: int = Field(foreign_key="collectionrun.id", index=True)
    template_version: str = Field(max_length=32)
    template_hash: str = Field(max_length=64)
    request_hashes: list[str] = _json()  # one per turn
    image_sha256: list[str] = _json()  # the PNGs shown, in order
    model_returned: str | None = Field(default=None, max_length=128)
    system_fingerprint: str | None = Field(default=None, max_length=128)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    # self-consistency: per turn, the final answer of each of the k samples (the majority's
    # text is the response's); None for one sample per turn
    votes: list[list[str]] | None = _json(nullable=True)
    created_at: datetime = _when()

    def usage(self) -> dict[str, Any]:
        """Tokens, images shown and cost, as a bundle's `usage` gives them."""
        usage = {"prompt_tokens": self.prompt_tokens,
                 "completion_tokens": self.completion_tokens,
                 "images": len(self.image_sha256 or [])}
        return usage if self.cost_usd is None else {**usage, "cost_usd": self.cost_usd}


class CollectionFailure(SQLModel, table=True):
    """The latest failure to collect a (model, task, sample); removed once it is collected."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="collectionrun.id")
    model: str = Field(max_length=128)
    task_id: str = Field(foreign_key="task.task_id", max_length=128)
    sample: int
    reason: str = _text()
    attempts: int = 0
    created_at: datetime = _when()

    __table_args__ = (UniqueConstraint("model", "task_id", "sample"),)


class ModelCache(SQLModel, table=True):
    """Answers of models under test, keyed by the hash of (endpoint, sample, exact request);
    an identical request is never sent twice."""

    request_hash: str = Field(primary_key=True, max_length=64)
    text: str = _text()
    model_returned: str | None = Field(default=None, max_length=128)
    system_fingerprint: str | None = Field(default=None, max_length=128)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = _when()


class CalibrationItem(SQLModel, table=True):
    """Membership of the calibration subset and its seeded split into `dev` and `heldout`."""

    response_id: str = Field(foreign_key="response.response_id", primary_key=True, max_length=128)
    part: Part = _word(8)
    seed: int

    __table_args__ = (one_of("part", Part, "ck_calibrationitem_part"),)


class CalibrationProtocol(SQLModel, table=True):
    """The pre-registered gate: thresholds, statistics settings and the calibration subset,
    content-hashed. The newest row is the protocol in force; none is added once a held-out
    report exists (`calibration.protocol`)."""

    id: int | None = Field(default=None, primary_key=True)
    content_hash: str = Field(unique=True, max_length=64)
    content: dict[str, Any] = _json()
    created_by: str | None = Field(default=None, max_length=64)
    created_at: datetime = _when()


class CalibrationReport(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id", index=True)
    run_id: int | None = Field(default=None, foreign_key="graderrun.id")
    part: ReportPart = _word(8)
    protocol_id: int | None = Field(default=None, foreign_key="calibrationprotocol.id")
    data_hash: str = Field(default="", max_length=64)  # of the scores the report was computed on
    thresholds: dict[str, Any] = _json()
    results: dict[str, Any] = _json()
    html: str | None = Field(default=None, sa_type=Text)  # as shown when it was computed
    passed: bool = False
    created_at: datetime = _when()

    __table_args__ = (one_of("part", ReportPart, "ck_calibrationreport_part"),)


class HeldoutLook(SQLModel, table=True):
    """A held-out look of a config: its report decides, for good, unless the data behind it
    change (`suspended_at`: a revised or added expert score on a held-out item, or a changed
    held-out response; the config then needs a new look). `number` counts the looks under the
    protocol (1, 2, ...; unique, so two sessions cannot both take the last one). An admin may
    revoke a validation (audited, with a reason); it is never restored."""

    __table_args__ = (UniqueConstraint("protocol_id", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id", index=True)
    report_id: int = Field(foreign_key="calibrationreport.id", unique=True)
    protocol_id: int = Field(foreign_key="calibrationprotocol.id")
    number: int = 1
    passed: bool
    created_at: datetime = _when()
    revoked_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    revoked_by: str | None = Field(default=None, max_length=64)
    revoke_reason: str | None = Field(default=None, sa_type=Text)
    suspended_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    suspend_reason: str | None = Field(default=None, sa_type=Text)


class FrozenPackage(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="graderconfig.id")
    report_id: int = Field(foreign_key="calibrationreport.id")
    sha256: str = Field(max_length=64)
    path: str = Field(max_length=512)
    canary: dict[str, Any] = _json()
    created_at: datetime = _when()


class AuditLog(SQLModel, table=True):
    """Append-only record of logins, failed logins and every write (triggers forbid change)."""

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _when()
    actor: str | None = Field(default=None, max_length=64)
    action: str = Field(max_length=64, index=True)
    detail: dict[str, Any] = _json()


class Retirement(SQLModel, table=True):
    """An item taken out of the study's future (db.study.retire): new exams, rater queues,
    grading, collection and the results' tables leave it out; nothing recorded on it is
    deleted. `item_id` is the case, task or response id, the model name, or the run's id as
    text. Restoring sets `undone_at` (the row stays, as the audit log does); at most one row
    per (kind, item) is in force."""

    id: int | None = Field(default=None, primary_key=True)
    kind: RetiredKind = _word(16)
    item_id: str = Field(max_length=128, index=True)
    reason: str = _text()
    actor: str | None = Field(default=None, max_length=64)
    at: datetime = _when()
    undone_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    undone_by: str | None = Field(default=None, max_length=64)
    undo_reason: str | None = Field(default=None, sa_type=Text)

    __table_args__ = (one_of("kind", RetiredKind, "ck_retirement_kind"),)


RevisedKind = Literal["case", "task"]


class Revision(SQLModel, table=True):
    """A changed case record or task, imported with `--revise` (db.study.revisions): the row
    of `Case` or `Task` holds the newest content, this row the values it replaced (`old`) and
    its new ones. Responses made before a revision that changed what they were shown
    (`shown`), and scores and grades made before any revision, are stale: counted apart."""

    id: int | None = Field(default=None, primary_key=True)
    kind: RevisedKind = _word(8)
    item_id: str = Field(max_length=128, index=True)
    number: int  # 2 for the first revision (the import is revision 1)
    fields: list[str] = _json()
    old: dict[str, Any] = _json()
    new: dict[str, Any] = _json()
    shown: bool  # a field models and exam takers see changed (db.study.revisions.SHOWN)
    bundle: str = Field(max_length=256)
    actor: str | None = Field(default=None, max_length=64)
    at: datetime = _when()

    __table_args__ = (UniqueConstraint("kind", "item_id", "number"),
                      one_of("kind", RevisedKind, "ck_revision_kind"))


class BenchmarkVersion(SQLModel, table=True):
    """A named version of the benchmark (`nmb version tag`): the tasks active when it was
    tagged; each at the revision in force at `at` (db.study.versions)."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, max_length=64)
    note: str = Field(default="", sa_type=Text)
    task_ids: list[str] = _json()
    actor: str | None = Field(default=None, max_length=64)
    at: datetime = _when()
class ModelCard(SQLModel, table=True):
    """What is known of a model under test (`nmb models set`, /models): its maker, version,
    release date, training cutoff, web access, size and kind. `name` is the model's name as
    its responses carry it (without a @CONDITION). Results, the site and the checklists read
    it; a card is never required."""

    name: str = Field(primary_key=True, max_length=128)
    maker: str | None = Field(default=None, max_length=128)
    version: str | None = Field(default=None, max_length=128)
    released: date | None = Field(default=None, sa_type=Date)
    training_cutoff: date | None = Field(default=None, sa_type=Date)
    web_access: bool | None = None
    params: str | None = Field(default=None, max_length=64)  # as stated: "7B", "unknown"
    kind: ModelKind | None = _word(16, default=None)
    updated_by: str | None = Field(default=None, max_length=64)
    updated_at: datetime = _when()

    __table_args__ = (one_of("kind", ModelKind, "ck_modelcard_kind"),)


class BreadthScore(SQLModel, table=True):
    """A model's score on a broad benchmark (MMLU-Pro, DrVD-Bench, ...), as published
    (`nmb breadth import`): results set it beside the model's depth here (results.breadth).
    One row per (model, benchmark); a later import replaces it."""

    id: int | None = Field(default=None, primary_key=True)
    model: str = Field(max_length=128, index=True)
    benchmark: str = Field(max_length=128)
    score: float
    n: int | None = None  # items the score stands on, where stated
    source: str | None = Field(default=None, max_length=1000)  # a citation or address
    imported_by: str | None = Field(default=None, max_length=64)
    imported_at: datetime = _when()

    __table_args__ = (UniqueConstraint("model", "benchmark"),)
