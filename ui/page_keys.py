"""A skip link and accessible names for a page's icon buttons (docs/scoring.md, "Keyboard").

`skip_link` puts a link first in the page's tab order ("Skip to Submit"): Tab, then Enter,
and the focus is on the page's main control, two keys from the page's first focus instead of
some forty. Hidden until focused (the usual skip link). `icon_names` gives buttons that show
only a Material icon an accessible name: Streamlit announced them by the icon's name
("chevron_left icon chevron_left Alt + P"). Both are one small script in the page (no
component frame), kept up by a MutationObserver as Streamlit redraws; they receive only
element keys chosen by the page and fixed labels, nothing from a bundle or a user.
"""

from __future__ import annotations

import json

import streamlit as st

_SCRIPT = """<script>(() => {
  const cfg = %(cfg)s, doc = document;
  window.nmbPageKeys = cfg;
  const apply = () => {
    const c = window.nmbPageKeys;
    let link = doc.getElementById("nmb-skip");
    if (!link) {
      link = doc.createElement("a");
      link.id = "nmb-skip";
      link.href = "#";
      link.className = "nmb-skip";
      link.addEventListener("click", (e) => {
        e.preventDefault();
        const k = window.nmbPageKeys;
        const target = doc.querySelector(k.target);
        if (!target) return;
        target.focus();  // (which scrolls it into view)
      });
      doc.body.prepend(link);
    }
    if (link.textContent !== c.label) link.textContent = c.label;
    for (const [key, name] of Object.entries(c.names)) {
      for (const b of doc.querySelectorAll(`.st-key-${key} button`)) {
        if (b.getAttribute("aria-label") !== name) b.setAttribute("aria-label", name);
      }
    }
  };
  apply();
  if (!window.nmbPageKeysObserver) {
    let queued = false;
    window.nmbPageKeysObserver = new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; apply(); });
    });
    window.nmbPageKeysObserver.observe(doc.body, { childList: true, subtree: true });
  }
})();</script>"""

CSS = """<style>
.nmb-skip { position: fixed; left: 8px; top: -60px; z-index: 1000100; padding: 6px 12px;
  background: #fff; color: #31333f; border: 2px solid #ff4b4b; border-radius: 6px;
  font: 600 15px "Source Sans Pro", sans-serif; text-decoration: none; }
.nmb-skip:focus { top: 8px; }
/* every control shows where the focus is (Streamlit's own ring is faint on some) */
[data-testid="stMain"] button:focus-visible, [data-testid="stMain"] iframe:focus-visible,
[data-testid="stMain"] [role="radio"]:focus-visible, [data-testid="stMain"] input:focus-visible {
  outline: 3px solid #ffbd45 !important; outline-offset: 2px; }
</style>"""


def skip_link(*, label: str, target: str, names: dict[str, str] | None = None) -> None:
    """A "skip to" link first in the tab order, moving the focus to the element of CSS
    selector `target`; `names`: {button key: accessible name} for icon-only buttons."""
    cfg = {"label": label, "target": target, "names": names or {}}
    st.html(CSS + _SCRIPT % {"cfg": json.dumps(cfg)}, unsafe_allow_javascript=True)
