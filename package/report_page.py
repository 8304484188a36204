"""What a package's `report.html` may hold: the page `calibration.html.render` writes (headings,
paragraphs, tables, preformatted text, PNG figures as data URLs, one style sheet) and nothing
that runs, fetches or links.

A forged package can be rebuilt with every hash and the seal (docs/package.md, "What a package
can and cannot prove"), and its report page is opened in a browser by whoever checks the
evidence. So `verify` reads the page in a strict subset of HTML that every browser parses the
same way: text never holds `<` or `>` (the report escapes both), tags come from an allowlist
with their allowed attributes, an image's source is a PNG data URL, the style sheet neither
imports nor fetches nor escapes, and there are no comments or other declarations than the
doctype. One linear pass of regular expressions, so a page of any size within its cap is read
in time proportional to it.
"""

from __future__ import annotations

import re

ATTRIBUTES = {"html": set(), "head": set(), "meta": {"charset"}, "title": set(), "style": set(),
              "body": set(), "h1": set(), "h2": set(), "h3": set(), "p": {"class"}, "b": set(),
              "table": set(), "tr": set(), "th": set(), "td": set(), "pre": set(),
              "img": {"alt", "src"}}
_TOKEN = re.compile(r"<([^<>]*)>|[^<>]+|[<>]")
_TAG = re.compile(r"(/?)([a-z0-9]+)(\s.*)?", re.IGNORECASE | re.DOTALL)
_ATTRIBUTE = re.compile(r"\s+([a-z-]+)(?:=(\"[^\"]*\"|[^\s\"'=<>`]+))?", re.IGNORECASE)
_PNG_URL = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]*={0,2}")
_FETCHING_STYLE = re.compile(r"url\s*\(|@import|expression|image-set|\\", re.IGNORECASE)


def _tag_problem(inside: str) -> tuple[str | None, str | None]:
    """(what is wrong with the tag `<inside>`, the element it opens)."""
    if inside.lower() == "!doctype html":
        return None, None
    tag = _TAG.fullmatch(inside)
    if tag is None:
        return f"a tag that is not one ({inside[:40]!r})", None
    closing, name, rest = tag.group(1), tag.group(2).lower(), (tag.group(3) or "").rstrip()
    if name not in ATTRIBUTES:
        return f"a <{name}> element", None
    attributes = list(_ATTRIBUTE.finditer(rest))
    if "".join(m.group(0) for m in attributes) != rest or (closing and rest):
        return f"a malformed <{name}> tag", None
    for m in attributes:
        attribute, value = m.group(1).lower(), (m.group(2) or "").strip('"')
        if attribute not in ATTRIBUTES[name]:
            return f"the attribute {attribute} on <{name}>", None
        if attribute == "src" and not _PNG_URL.fullmatch(value):
            return "an image that is not a PNG data URL", None
    return None, None if closing else name


def page_problem(page: str) -> str | None:
    """What in a report page is not the report's own kind of content, or None."""
    opened = None
    for token in _TOKEN.finditer(page):
        if token.group(1) is not None:
            problem, opened = _tag_problem(token.group(1))
            if problem:
                return problem
        elif token.group(0) in "<>":
            return f"a stray {token.group(0)!r} outside a tag"
        elif opened == "style" and _FETCHING_STYLE.search(token.group(0)):
            return "a style that imports, fetches or escapes"
    return None
