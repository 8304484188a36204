"""A maintainer's answer key for release files: `{"case_1": {"diagnosis": str, "differential":
[str], "lesion": str, "reasoning": str}}` (`lesion` and `reasoning` optional).

A key names a case by the study's case id (`direct-case_1`) or by its release `case_id`
(`case_1`): the case of that number in the files imported with it, or each of them when it is
in several files as one patient (`Case.patient`: the published files). Answers to placeholder
cases (which are skipped) are ignored and counted, whatever they hold (an empty entry too);
any other key that names no case of the files is a problem (a typo would otherwise drop an
answer silently).
"""

from pathlib import Path
from typing import Any

from db.bundle.errors import Problem
from db.bundle.records import Filled, Record, Strings, check_fields
from db.bundle.validate import read_json
from db.release.format import MAX_ANSWERS_FILE_BYTES


class Answer(Record):
    diagnosis: Filled
    differential: Strings
    lesion: str = None
    reasoning: str = None


def read_answers(path: Path, problems: list[Problem]) -> dict[str, Any]:
    """Key -> answer entry as written (checked by `match_answers`, once it is known whether
    the key names a placeholder); what is wrong with the file goes to `problems`."""
    label = path.name
    try:
        size = path.stat().st_size
    except OSError as e:
        problems.append(Problem(label, None, f"cannot read: {e.strerror or e}"))
        return {}
    if size > MAX_ANSWERS_FILE_BYTES:
        problems.append(Problem(label, None, f"is {size:,} bytes, more than the limit of "
                                             f"{MAX_ANSWERS_FILE_BYTES:,}"))
        return {}
    key = read_json(path, label, problems)
    if key is None:
        return {}
    if not isinstance(key, dict):
        problems.append(Problem(label, None, "is not a JSON object of answers "
                                             '({"case_1": {"diagnosis": ..., ...}})'))
        return {}
    return key


def _ground_truth(answer: Any, where: str, problems: list[Problem]) -> dict[str, Any] | None:
    """The ground truth (`final_diagnosis`, `differential`[, `lesion`, `reasoning`]) of a
    valid answer entry, else None with its problems."""
    msgs = check_fields(answer, Answer)
    problems += [Problem(where, None, m) for m in msgs]
    if msgs:
        return None
    return {"final_diagnosis": answer["diagnosis"], "differential": list(answer["differential"]),
            **{k: answer[k] for k in ("lesion", "reasoning") if k in answer}}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '\\"') + '"'


def match_answers(answers: dict[str, Any], label: str, cases: dict[str, list[str]],
                  placeholders: dict[str, list[str]], patient: dict[str, str | None],
                  problems: list[Problem]) -> tuple[dict[str, dict], int]:
    """(study case id -> ground truth, answers ignored for placeholder cases).

    `cases` / `placeholders`: release case_id or study case id -> the study case ids it may
    name (a study id names itself; a release id every file's case of that id). `patient`:
    study case id -> its patient (None: a case of its own); a release id naming cases of one
    patient gives each of them the answer.
    """
    out: dict[str, dict] = {}
    by: dict[str, str] = {}
    ignored = 0
    for name, entry in answers.items():
        where = f"{label}[{_quoted(name)}]"
        named = cases.get(name, [])
        if len(named) > 1 and (None in (linked := {patient.get(c) for c in named})
                               or len(linked) > 1):
            problems.append(Problem(where, None, f"names cases in {len(named)} files "
                                                 f"({', '.join(named)}) that are not one "
                                                 "patient: use one of these ids"))
        elif named:
            if (gt := _ground_truth(entry, where, problems)) is None:
                continue
            for cid in named:
                if cid in by:
                    problems.append(Problem(where, None, f"names case {cid}, as "
                                                         f"{_quoted(by[cid])} does"))
                by[cid] = name
                out[cid] = gt
        elif name in placeholders:
            ignored += 1
        else:
            problems.append(Problem(where, None, "names no case of the files imported"))
    return out, ignored
