"""The name an uploaded bundle is stored and reported under: the browser's file name, made safe.

The name comes from the browser, so it is untrusted: only its base name is kept (no folder,
whether written with / or \\), every character but letters, digits, `.`, `-` and `_` becomes
`_`, it is capped in length and always ends in `.zip` (what the uploader accepts).
"""

import re

MAX_CHARS = 100
FALLBACK = "upload.zip"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_upload_name(name: str) -> str:
    """`name`'s base name in safe characters, ending in `.zip`; `upload.zip` if nothing is left."""
    base = _UNSAFE.sub("_", re.split(r"[/\\]", name)[-1])
    stem = base[:-4] if base.lower().endswith(".zip") else base
    stem = stem[:MAX_CHARS - 4].strip("._")
    return f"{stem}.zip" if stem else FALLBACK
