"""A path on the server that the app's account may not read, typed on the admin page's import
tab: one error line, no exception box with a traceback, nothing imported. The page runs in
AppTest in a process without the capabilities that let root read anything (setpriv), as the
server's account would (tests/db/sources/test_unreadable.py does the same for `nmb`)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.db.sources.test_unreadable import AS_AN_ACCOUNT
from ui.plain_text import escape_markdown

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[3]
_PAGE = """
import json, sys
from db.bundle.store import prepare_study
from tests.apptest import make_user, page
prepare_study()
at = page("pages/admin.py", make_user("root", "admin")).run()
at.text_input[0].set_value(sys.argv[1]).run()
next(b for b in at.button if b.label == "Import").click().run()
print(json.dumps({"errors": [e.value for e in at.error], "exceptions": len(at.exception),
                  "success": [m.value for m in at.success]}))
"""


def test_an_unreadable_server_path_is_one_error_line(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "examples" / "sample-bundle", bundle)
    bundle.chmod(0)
    env = {k: v for k, v in os.environ.items() if k != "NMB_DATABASE_URL"}
    try:
        out = subprocess.run([*AS_AN_ACCOUNT, sys.executable, "-c", _PAGE, str(bundle)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**env, "NMB_HOME": str(tmp_path / "home")})
    finally:
        bundle.chmod(0o755)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown == {"errors": [escape_markdown(f"{bundle / 'bundle.json'}: Permission denied")],
                     "exceptions": 0, "success": []}, shown
