"""HTML pages rendered from Jinja2 templates with autoescape: every value a page shows is text
(escaped), and only the page's own constants (its style sheet and script) are marked safe."""

from pathlib import Path

import jinja2


def environment(folder: Path) -> jinja2.Environment:
    """The templates of `folder`: autoescaped, a missing value an error (not an empty string)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)
