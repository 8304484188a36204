"""The layering table of ../shared/ARCHITECTURE.md, checked on the import graph: every import
statement of every module (top level or inside a function), read with `ast`."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("app", "pages", "ui", "db", "rubric", "imaging", "calibration", "demo", "cli", "errors",
        "serve")
BELOW_UI = {"db", "rubric", "imaging", "calibration", "errors"}
#: which of our packages each may import (itself always); "streamlit" where it may use it
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "rubric": {"errors"},
    "imaging": {"errors"},
    "db": {"rubric", "imaging", "errors"},
    "calibration": {"rubric", "db", "imaging", "errors"},
    "demo": {"db", "calibration", "imaging", "rubric", "errors"},
    "ui": BELOW_UI | {"streamlit"},
    "pages": BELOW_UI | {"ui", "streamlit"},
    "app": {"ui", "db", "errors", "streamlit"},
    "serve": {"ui", "db", "errors", "streamlit"},
    "cli": {"db", "rubric", "imaging", "calibration", "demo", "errors"},
}


def _room(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def imports(path: Path, source: str) -> set[str]:
    """The top-level names of every module `source` (of `path`) imports (relative imports:
    its own room)."""
    names = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(_room(path) if node.level else (node.module or "").split(".")[0])
    return names


def _modules() -> list[Path]:
    return [p for p in ROOT.rglob("*.py")
            if _room(p) in OURS and "migrations" not in p.parts and ".venv" not in p.parts]


def offences(files: dict[Path, str]) -> list[str]:
    """`path imports name` for each import of {path: source} that the table does not allow."""
    found = []
    for path, source in files.items():
        room = _room(path)
        for name in sorted(imports(path, source) - {room}):
            if (name in OURS or name == "streamlit") and name not in MAY_IMPORT[room]:
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def test_every_import_follows_the_layering_table() -> None:
    assert offences({p: p.read_text() for p in _modules()}) == []


@pytest.mark.parametrize("room, forbidden", [("imaging", "db"), ("db", "calibration"),
                                             ("calibration", "streamlit"), ("db", "demo"),
                                             ("rubric", "db"), ("ui", "pages")])
def test_a_lower_room_importing_a_higher_one_is_caught(room: str, forbidden: str) -> None:
    probe = ROOT / room / "probe.py"
    for source in (f"import {forbidden}.x\n", f"def f():\n    from {forbidden} import x\n"):
        assert offences({probe: source}) == [f"{room}/probe.py imports {forbidden}"]
