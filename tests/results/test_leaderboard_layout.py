"""`nmb results --layout leaderboard`: one table per split, the same numbers as the per-level
cells of `nmb results --by level`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from errors import UserError
from results.splits import SPLITS, parse_splits

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[2]
SAME = ("who", "group", "tasks", "people", "min_samples", "score", "pass_at", "top", "sources")


def _nmb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "results", *args], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=300)


def test_the_demo_splits_are_its_per_level_cells(demo_study: Path) -> None:
    by_level = json.loads(_nmb("--by", "level", "--format", "json").stdout)
    layout = _nmb("--layout", "leaderboard", "--format", "json")
    assert layout.returncode == 0, layout.stderr
    splits = json.loads(layout.stdout)["splits"]
    assert [(s["name"], s["levels"]) for s in splits] == [
        ("direct", [1]), ("complex", [2]), ("multi-round", [3])]
    for split in splits:
        level = split["levels"][0]
        expected = [c for c in by_level["cells"] if c["keys"]["level"] == level]
        assert len(split["cells"]) == 6  # 4 models, physicians, students
        assert ([{k: c[k] for k in SAME} for c in split["cells"]]
                == [{k: c[k] for k in SAME} for c in expected])
        assert all(c["bertscore"] is None for c in split["cells"])  # not asked for

    md = _nmb("--layout", "leaderboard").stdout
    assert [line for line in md.splitlines() if line.startswith("### ")] == [
        "### Direct Diagnosis (level 1)", "### Complex Diseases (level 2)",
        "### Multi-round Dialogue (level 3)"]
    header = "| who | group | tasks | people | pass@1 | pass@5 | BERTScore (secondary) | rubric score |"
    assert md.count(header) == 3 and "not computed (give --bertscore-model DIR)" in md
    first = splits[0]["cells"][0]  # the Markdown shows the JSON's numbers
    row = next(line for line in md.splitlines() if line.startswith(f"| {first['who']} |"))
    assert f"{first['pass_at']['1']['value']:.3f} \\[{first['pass_at']['1']['ci'][0]:.3f}" in row

    csv = _nmb("--layout", "leaderboard", "--format", "csv", "--splits",
               "early=1+2,multi-round=3").stdout.splitlines()
    assert csv[0].startswith("split,who,group,tasks,people,pass@1,pass@1 low,pass@1 high")
    early = [line for line in csv[1:] if line.startswith("early,")]
    assert len(early) == 6 and all(line.split(",")[3] == "9" for line in early)  # 5 + 4 tasks


def test_splits_are_parsed_or_refused_in_one_line() -> None:
    assert parse_splits(None) == SPLITS
    assert parse_splits("a=1+2, b=3") == {"a": (1, 2), "b": (3,)}
    for bad in ("direct", "a=4", "a=1,a=2", "a=1,b=1", "=1", "a=x", "a\u202eb=1", "a\nb=1",
                f"{'x' * 41}=1"):
        with pytest.raises(UserError, match="--splits"):
            parse_splits(bad)
    out = _nmb("--layout", "leaderboard", "--splits", "a=1,b=1")
    assert out.returncode == 2 and out.stderr.strip() == (
        "nmb: --splits 'a=1,b=1': a level is in two splits")
