"""Server-side render time of the scoring page (AppTest, demo study, one item).

Baseline in the same run: AppTest rendering a page with one `st.title` (Streamlit's own
floor per rerun). Target (issue 5): median under 300 ms.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.timing import median_seconds

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        os.environ["NMB_HOME"] = home
        os.environ.pop("NMB_DATABASE_URL", None)
        subprocess.run([sys.executable, "-m", "cli", "demo", "--resolution", "1"], cwd=ROOT,
                       check=True, capture_output=True)
        from sqlmodel import select
        from streamlit.testing.v1 import AppTest

        from db.engine import session
        from db.models import User
        from ui.auth import LoggedIn

        with session() as s:
            u = s.exec(select(User).where(User.name == "demo-expert1")).one()
        user = LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)
        at = AppTest.from_file(str(ROOT / "pages/score.py"), default_timeout=60)
        at.session_state["user"] = user
        at.run()  # first render decodes the volumes into the shared cache
        assert not at.exception, at.exception
        floor = AppTest.from_string("import streamlit as st\nst.title('x')")
        page = median_seconds(lambda: at.run(), repeat=21)
        base = median_seconds(lambda: floor.run(), repeat=21)
        print(f"scoring page render (1 mm demo, one item, volumes cached): median "
              f"{page * 1000:.0f} ms")
        print(f"baseline (AppTest, one st.title):                      median "
              f"{base * 1000:.0f} ms")
        print(f"ratio page / baseline: {page / base:.1f}x; target < 300 ms: "
              f"{'met' if page < 0.3 else 'NOT met'}")


if __name__ == "__main__":
    main()
