"""/score's keyboard and compact layout: the shortcuts, their list, and the page's CSS.

Next, previous, next unscored and Submit are Streamlit's own button shortcuts (they work in
text fields too, having a modifier). The rubric's levels are a small component
(`ui/score/score_keys_frontend/index.html`, plain JavaScript, no build step) that listens to keydown
in the page and clicks the rubric's own radio options: a key does what a click does. It
receives the item's blind code and the rubric container's key, nothing else.
"""

from __future__ import annotations

from pathlib import Path

import streamlit.components.v1 as components

FRONTEND = Path(__file__).parent / "score_keys_frontend"
_component = components.declare_component("nmb_score_keys", path=str(FRONTEND))

RUBRIC_KEY = "nmb-rubric"
SHORTCUTS = {"previous": "Alt+P", "next": "Alt+N", "unscored": "Alt+U", "submit": "Ctrl+Enter"}
SHORTCUT_HELP = """**Keyboard** (not while typing in a text box, nor with the focus in the viewer:
click beside the images first)

| key | does |
|---|---|
| `0`–`4` | level of the marked criterion, then the next unanswered one is marked |
| `N` | N/A (a criterion), No (a stage or the diagnosis) |
| `Y` | Yes (a stage or the diagnosis) |
| `1`–`5` | confidence, when it is marked |
| `J` / `K` | mark the next / previous question |
| `Tab`, then `Space` or `Enter` | toggle the error class in focus (one class at a time) |
| `Ctrl+Enter` | Submit (also in the comment box) |
| `Alt+N` / `Alt+P` | next / previous item |
| `Alt+U` | next unscored item |
"""

# The page at 1280 x 800: the first line just below the app's top bar (3.75rem; slimmer on a
# short window: ui.page_header); the marked rubric question; a criterion with short anchors on
# one row, each level's anchor wrapped under it in small type.
_LEVELS = f'.st-key-{RUBRIC_KEY} [data-testid="stRadioGroup"]:has([data-testid="stRadioCaption"])'
COMPACT_CSS = f"""<style>
[data-testid="stMainBlockContainer"] {{ padding-top: 3.75rem; padding-bottom: 2rem;
  padding-left: 1.5rem; padding-right: 1.5rem; }}
.st-key-{RUBRIC_KEY} [data-testid="stRadio"][data-nmb-current="true"] {{
  outline: 2px solid #ff4b4b; outline-offset: 4px; border-radius: 4px; }}
{_LEVELS} {{ flex-wrap: nowrap; align-items: flex-start; column-gap: 0.5rem; }}
{_LEVELS} > div {{ flex: 1 1 0; min-width: 0; margin-right: 0; }}
{_LEVELS} [data-testid="stRadioCaption"] {{ padding-left: 0; margin-left: 0; }}
{_LEVELS} [data-testid="stRadioCaption"] p {{ font-size: 0.75rem; line-height: 1.2;
  overflow-wrap: normal; word-break: normal; }}
</style>"""


def item_key(blind_code: str) -> str:
    """The prefix of an item's widget keys, which the browser receives: the item's blind code,
    never its assignment number (numbered in the order items were assigned, it would tell a
    batch assigned later, e.g. the human answers, from the rest)."""
    return f"item-{blind_code}"


def score_keys(*, item: str) -> None:
    """The rubric's keys for the item of blind code `item` (a new item starts at its first
    unanswered question)."""
    _component(item=item, container=RUBRIC_KEY, key="score-keys", default=None)
