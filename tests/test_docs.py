"""The user documentation names only tests and files that exist: a row of docs/security.md
citing `tests/x.py::test_y` is checked by that test, so the name must be one."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEST_REF = re.compile(r"^(tests/[\w/.-]+?\.py)(?:::(\w+))?$")
FOLLOW_UP = re.compile(r"^::(test_\w+)$")  # `::test_b` after `tests/x.py::test_a`


def test_cited_tests_exist() -> None:
    missing = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            current = None
            for token in re.findall(r"`([^`]+)`", line):
                if m := TEST_REF.match(token):
                    current = ROOT / m.group(1)
                    names = [m.group(2)] if m.group(2) else []
                elif (m := FOLLOW_UP.match(token)) and current is not None:
                    names = [m.group(1)]
                else:
                    continue
                if not current.is_file():
                    missing.append(f"{doc.name}:{number}: {current.relative_to(ROOT)}")
                    current = None
                    continue
                source = current.read_text(encoding="utf-8")
                missing += [f"{doc.name}:{number}: {current.relative_to(ROOT)}::{name}"
                            for name in names if not re.search(rf"def {name}\b", source)]
    assert missing == []


def test_cited_repository_files_exist() -> None:
    tops = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    user_made = {".env", "tls", "backups", "secrets.toml"}  # files a site creates itself
    missing = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for token in re.findall(r"`([\w./-]+)(?:::\w+)?`", line):
                parts = token.rstrip("/").split("/")
                if len(parts) < 2 or parts[0] not in tops or "..." in token:
                    continue
                if parts[-1] not in user_made and not (ROOT / token).exists():
                    missing.append(f"{doc.name}:{number}: {token}")
    assert missing == []
