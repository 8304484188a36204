"""docs/guide.md, walked: its sh blocks run in order on a fresh NMB_HOME, each `nmb` command as
`python -m cli` against the local OpenAI-compatible server, and each step's "Check:" paragraph
holds against what the step printed. What people do in the browser (an exam on /exam, scores on
/score) is done through the service functions those pages call, where the guide places it."""

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlmodel import select

from db.engine import database_url, engine_for, session
from db.models import Exam, User
from db.raters.scoring import load_item, queue, submit
from db.rubrics import rubric_by_hash
from db.study.exams import answer_stage, attempt_for, exam_tasks, finish
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide.md"
PASSWORD = "a guide test password"  # what a person types at the prompt of `nmb users add`


@dataclass
class Step:
    heading: str
    commands: list[tuple[str, int]] = field(default_factory=list)  # (line, expected exit code)
    checks: list[str] = field(default_factory=list)  # code spans of its "Check:" paragraph


def guide_steps(text: str) -> list[Step]:
    """The guide's steps (## headings): their sh blocks' commands, with a line ending in
    `# exit N` expecting N, and the code spans of the "Check:" paragraph."""
    steps: list[Step] = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        step = Step(heading.strip())
        for block in re.findall(r"^```sh\n(.*?)^```", body, flags=re.M | re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if line.strip():
                    code = re.search(r"#\s*exit (\d+)", line)
                    step.commands.append((line, int(code.group(1)) if code else 0))
        if check := re.search(r"^\*\*Check:\*\*(.*?)(?:\n\n|\Z)", body, flags=re.M | re.S):
            step.checks = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", check.group(1))]
        steps.append(step)
    return steps


def take_the_exams() -> None:
    """Every physician and student answers every exam's tasks, stage by stage, and finishes
    (what /exam does: pages/exam.py)."""
    with session() as s:
        takers = s.exec(select(User).where(User.role.in_(["physician", "student"]))).all()
        for exam in s.exec(select(Exam)).all():
            for taker in takers:
                attempt = attempt_for(s, exam_id=exam.id, user_id=taker.id)
                for task in exam_tasks(s, attempt=attempt):
                    for stage in range(task.n_stages):
                        answer_stage(s, attempt=attempt, task_id=task.task_id, stage=stage,
                                     text=f"{taker.name}: my answer to stage {stage + 1}.")
                finish(s, attempt=attempt, actor=taker.name)


def score_every_queue() -> None:
    """Every expert submits a score for each item of their queue, as /score does
    (pages/score.py): the rubric's top levels when the response names the case's diagnosis,
    its bottom levels when not (an expert's own judgment; no grade is looked at)."""
    with session() as s:
        for expert in s.exec(select(User).where(User.role == "expert")).all():
            for entry in queue(s, rater_id=expert.id):
                item = load_item(s, rater_id=expert.id, assignment_id=entry.assignment_id)
                rubric = rubric_by_hash(s, item.rubric_hash)
                diagnosis = item.reference["final_diagnosis"].split()[-1].lower()
                right = diagnosis in " ".join([item.text, *item.turns]).lower()
                level = rubric.scale.max if right else rubric.scale.min
                values = {"criteria": {c.key: level for c in rubric.applicable_criteria(item.family)},
                          "correct_diagnosis": right, "error_tags": [], "comment": "",
                          "confidence": 4}
                submit(s, rater_id=expert.id, assignment_id=entry.assignment_id, values=values,
                       actor=expert.name, base_revision=item.revision, shown=item.shown)


#: the guide's browser steps: (heading, before or after its commands, what people do there)
BROWSER = [("4. Open an exam (the human baseline)", "after", take_the_exams),
           ("8. Experts score", "before", score_every_queue)]


def _expand(line: str, env: dict[str, str]) -> str:
    def value(m: re.Match) -> str:
        assert m.group(1) in env, f"the guide uses ${m.group(1)}, which nothing sets: {line}"
        return env[m.group(1)]
    return re.sub(r"\$\{?(\w+)\}?", value, line)


@pytest.mark.slow
def test_the_guide_runs_in_order(tmp_path: Path, nmb_home: Path) -> None:
    steps = guide_steps(GUIDE.read_text(encoding="utf-8"))
    assert all(s.commands and s.checks for s in steps), "a step without a command or a check"
    headings = [s.heading for s in steps]
    assert [h for h, *_ in BROWSER if h in headings] == [h for h, *_ in BROWSER]
    work = tmp_path / "clone"  # outputs (report/, grader.zip, site/) land here, not in the repo
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    with OpenAIServer() as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-guide-test"}
        for name in ("NMB_HOME", "OPENAI_BASE_URL"):  # the guide's exports set them
            env.pop(name, None)
        for step in steps:
            hooks = {when: act for h, when, act in BROWSER if h == step.heading}
            if "before" in hooks:
                hooks["before"]()
            printed = []
            for line, expected in step.commands:
                words = shlex.split(_expand(line, env), comments=True)
                if words[0] == "export":  # the study's home and the server are the test's own
                    name = words[1].partition("=")[0]
                    assert name in ("NMB_HOME", "OPENAI_BASE_URL"), f"{step.heading}: {line}"
                    env[name] = str(nmb_home) if name == "NMB_HOME" else server.base_url
                    continue
                assert words[0] == "nmb", f"{step.heading}: not an nmb command: {line}"
                done = subprocess.run([sys.executable, "-m", "cli", *words[1:]], cwd=work,
                                      env=env, input=PASSWORD + "\n", capture_output=True,
                                      text=True, timeout=300)
                assert done.returncode == expected, (
                    f"{step.heading}: {line}\nexit {done.returncode}\n{done.stdout}{done.stderr}")
                printed.append(done.stdout + done.stderr)
            said = " ".join(" ".join(printed).split())
            missing = [c for c in step.checks if c not in said]
            assert not missing, f"{step.heading}: the output lacks {missing}:\n{said[:3000]}"
            if "after" in hooks:
                hooks["after"]()
    engine_for(database_url()).dispose()
