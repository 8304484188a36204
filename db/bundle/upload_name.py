"""The name an uploaded bundle is stored and reported under: the browser's file name, made safe.

The name comes from the browser, so it is untrusted: only its base name is kept (no folder,
whether written with / or \\), every character but letters, digits, `.`, `-` and `_` becomes
`_`, it is capped in length and always ends in `.zip` (what the uploader accepts; `.json`
for release task files).
"""

import re

MAX_CHARS = 100
FALLBACK = "upload.zip"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_upload_name(name: str, suffix: str = ".zip") -> str:
    """`name`'s base name in safe characters, ending in `suffix` (what the uploader accepts:
    `.zip`, or `.json` for release files); `upload<suffix>` if nothing is left."""
    base = _UNSAFE.sub("_", re.split(r"[/\\]", name)[-1])
    stem = base[:-len(suffix)] if base.lower().endswith(suffix) else base
    stem = stem[:MAX_CHARS - len(suffix)].strip("._")
    return f"{stem}{suffix}" if stem else FALLBACK.replace(".zip", suffix)
