"""The layering table of ../shared/ARCHITECTURE.md, checked on the import graph: every import
statement of every module (top level or inside a function), read with `ast`."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The packages from the bottom up: each may import only those before it (docs/layout.md).
STACK = ("errors", "rubric", "imaging", "stats", "db", "llm", "collection", "importers", "grading",
         "calibration", "results", "package", "demo")
#: The rooms on top: what each may import of ours ("streamlit" where it may use it).
TOP: dict[str, set[str]] = {
    "ui": set(STACK[:-1]) | {"streamlit"},
    "pages": set(STACK[:-1]) | {"ui", "streamlit"},
    "app": {"ui", "db", "errors", "streamlit"},
    "serve": {"ui", "db", "errors", "streamlit"},
    "cli": set(STACK),
}
MAY_IMPORT: dict[str, set[str]] = {**{room: set(STACK[:i]) for i, room in enumerate(STACK)}, **TOP}
OURS = (*MAY_IMPORT, "streamlit")


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
            if _room(p) in MAY_IMPORT and "migrations" not in p.parts and ".venv" not in p.parts]


def offences(files: dict[Path, str]) -> list[str]:
    """`path imports name` for each import of {path: source} that the table does not allow."""
    found = []
    for path, source in files.items():
        room = _room(path)
        for name in sorted(imports(path, source) - {room}):
            if name in OURS and name not in MAY_IMPORT[room]:
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


@pytest.mark.slow
def test_every_import_follows_the_layering_table() -> None:
    assert offences({p: p.read_text() for p in _modules()}) == []


@pytest.mark.parametrize("room, forbidden", [("imaging", "db"), ("db", "llm"), ("llm", "grading"),
                                             ("collection", "grading"), ("grading", "results"),
                                             ("calibration", "streamlit"), ("stats", "db"),
                                             ("results", "demo"), ("rubric", "db"),
                                             ("ui", "pages"), ("package", "ui")])
def test_a_lower_room_importing_a_higher_one_is_caught(room: str, forbidden: str) -> None:
    probe = ROOT / room / "probe.py"
    for source in (f"import {forbidden}.x\n", f"def f():\n    from {forbidden} import x\n"):
        assert offences({probe: source}) == [f"{room}/probe.py imports {forbidden}"]


def module_graph(files: dict[Path, str]) -> dict[str, set[str]]:
    """{module: the modules of ours it imports}, for dotted module names of `files`."""
    names = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found = set()
        for node in ast.walk(ast.parse(files[path], str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            found |= {t for t in targets if t in names and t != name}
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph` (each as a path that returns to its start)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


@pytest.mark.slow
def test_no_import_cycle() -> None:
    files = {p: p.read_text() for p in _modules() if p.name != "__init__.py"}
    assert cycles(module_graph(files)) == []


def test_a_cycle_is_caught() -> None:
    a, b = ROOT / "db" / "a.py", ROOT / "db" / "b.py"
    assert cycles(module_graph({a: "from db.b import x\n", b: "def f():\n    import db.a\n"}))


def test_no_page_is_named_like_a_room() -> None:
    """A page runs with pages/ first on sys.path (AppTest): pages/results.py would be imported
    as the package `results` by any page that imports it."""
    assert {p.stem for p in (ROOT / "pages").glob("*.py")} & set(MAY_IMPORT) == set()


def test_every_package_room_is_installed() -> None:
    """`pip install` ships every room that is a package: an editable install maps only the
    packages pyproject.toml lists, so a room left out works from the checkout (`python -m
    cli`) and fails from the installed `nmb`."""
    import tomllib

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    listed = {name.removesuffix("*") for name in find["find"]["include"]}
    rooms = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks"}
    assert rooms - listed == set()
