"""Opaque element keys for the study's objects on the pages of raters and exam takers.

Every widget and container key reaches the browser (in an element's id or its `st-key-...`
class), so a key must not carry an id the bundle wrote: a case or task id may name the
diagnosis (`gbm-07`). `opaque_key` is a keyed hash of the id under a secret of this server
process: the same object gets the same key on every rerun and in every session of the
process (widget state and the viewer's place survive), and nothing of the id can be read or
guessed back from it."""

import hashlib
import hmac
import secrets

_SECRET = secrets.token_bytes(32)  # this process's: a restart gives new keys, as it ends sessions


def opaque_key(kind: str, object_id: str) -> str:
    """`kind-<16 hex digits>`: the key of the object `object_id` of `kind` ("case", "task")."""
    digest = hmac.new(_SECRET, f"{kind}\n{object_id}".encode(), hashlib.sha256).hexdigest()
    return f"{kind}-{digest[:16]}"
