"""The static leaderboard site of `nmb results --site DIR`, opened from disk in Chromium with the
network blocked: three split tables with ranks, model cards and percentages, sorting by a click,
search, per-split CSV and JSON downloads, no request outside the folder, and a hostile model
name shown as text."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Response
from tests.factories import grade_all, make_study

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<img src=x onerror=alert(1)>"


def _study(url: str) -> None:
    """model-alpha: right on the first of 5 samples of every task (pass@1 0.2, pass@5 1.0); the
    hostile model: right on every sample of half the tasks (pass@1 0.5, pass@5 0.5)."""
    with Session(engine_for(url)) as s:
        make_study(s, n_tasks=6, samples=5, experts=0)
        for r in s.exec(select(Response).where(Response.model == "model-beta")).all():
            r.model = HOSTILE
        grade_all(s, lambda r: (int(r.task_id.removeprefix("task")) < 3 if r.model == HOSTILE
                                else r.sample == 0), overall=lambda correct: 0.8 if correct else 0.2)
        s.commit()
    from datetime import date

    from db.study.model_cards import set_card
    with Session(engine_for(url)) as s:
        set_card(s, name="model-alpha", change={"maker": "Alpha Lab", "params": "7B",
                                                "released": date.today().isoformat()},
                 actor="test")


def _column(page, table: str, header: str) -> list[str]:
    return page.evaluate(
        """([table, header]) => {
             const t = document.querySelector('#' + table + ' table');
             const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.trim() === header);
             return [...t.tBodies[0].rows].map(r => r.cells[i].textContent);
           }""", [table, header])


def test_the_site_reads_from_its_folder_sorts_and_shows_names_as_text(
        browser, sqlite_url: str, tmp_path: Path) -> None:
    _study(sqlite_url)
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "cli", "results", "--site", str(site)],
                         cwd=ROOT, env=dict(os.environ), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert {p.name for p in site.iterdir()} == {"index.html", "leaderboard.json", "figures",
                                                "downloads"}
    data = json.loads((site / "leaderboard.json").read_text())
    assert [s["name"] for s in data["splits"]] == ["direct", "complex", "multi-round"]

    folder = site.as_uri() + "/"
    requested, blocked, dialogs = [], [], []
    context = browser.new_context()
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(folder)
                  else (blocked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.on("request", lambda r: requested.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(folder + "index.html")
    page.wait_for_load_state("load")

    tables = page.locator("section table")
    assert tables.count() == 3
    assert page.locator("section h2").all_inner_texts() == [
        "Direct Diagnosis (level 1)", "Complex Diseases (level 2)", "Multi-round Dialogue (level 3)"]
    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    assert page.locator("img").count() == 3  # the three charts; the name made none
    assert "Intervals: 95%, from resamples of cases (with their tasks; for human groups, " \
        "people and cases), none from fewer than 5 cases." in page.locator(
            "p.meta").all_inner_texts()[1]  # before: "95% bootstrap", which they are not alone

    # a hostile name stays text: the cell reads it, no element was made of it, nothing ran
    assert _column(page, "split-direct", "who") == [HOSTILE, "model-alpha"]  # by pass@1
    assert page.locator("img[src=x]").count() == 0 and dialogs == []

    page.locator("#split-direct th button", has_text="pass@5").click()
    assert page.locator("#split-direct th[aria-sort=descending]").inner_text().startswith("pass@5")
    assert _column(page, "split-direct", "who") == ["model-alpha", HOSTILE]
    assert [v.split()[0] for v in _column(page, "split-direct", "pass@5 %")] == ["100.0%",
                                                                                   "50.0%"]
    page.locator("#split-direct th button", has_text="pass@5").click()  # again: ascending
    assert _column(page, "split-direct", "who") == [HOSTILE, "model-alpha"]
    assert _column(page, "split-complex", "who") == [HOSTILE, "model-alpha"]  # others unsorted

    # ranks by pass@1 and the model card's columns; "new": released today
    page.locator("#split-direct th button", has_text="rank").click()
    assert _column(page, "split-direct", "rank") == ["2", "1"]  # descending
    assert _column(page, "split-direct", "maker") == ["Alpha Lab", "–"]
    assert _column(page, "split-direct", "released")[0].endswith("new")

    # search: rows of every split that hold the text, the others hidden; cleared: all again
    page.fill("#search", "alpha lab")
    visible = page.evaluate("[...document.querySelectorAll('tbody tr')].filter(r => !r.hidden)"
                            ".map(r => r.cells[1].textContent)")
    assert visible == ["model-alpha"] * 3
    page.fill("#search", "")
    assert page.evaluate("[...document.querySelectorAll('tbody tr')].every(r => !r.hidden)")

    # per-split downloads from the folder itself
    got = {}
    for kind in ("CSV", "JSON"):
        with page.expect_download() as info:
            page.locator("#split-direct .downloads a", has_text=kind).click()
        got[kind] = Path(info.value.path()).read_text()
    assert got["CSV"].splitlines()[0].startswith("rank,who,group,maker,size,released,kind")
    rows = json.loads(got["JSON"])["rows"]
    assert [r["who"] for r in rows] == [HOSTILE, "model-alpha"]
    assert rows[1]["pass@1"]["value"] == 0.2 and rows[1]["maker"] == "Alpha Lab"

    assert requested and all(url.startswith(folder) for url in requested), requested
    assert blocked == []
    context.close()
