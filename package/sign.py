"""Ed25519 signatures of packages with a study key: who froze a package, checked offline.

`keygen` writes a private key (PEM, PKCS#8, unencrypted, mode 0600) and its public key, one
line `nmb-ed25519 <64 hex digits>`, to publish with the study. `freeze --sign KEY` adds the
member `manifest.sig`: the Ed25519 signature (RFC 8032, `cryptography`) of manifest.json's exact
bytes, which hold every other member's sha256 and the fields sealed in seal.json, so the
signature covers the whole package. `verify --public-key PUB` refuses a package that is not
signed by that key. Only a key the user names counts: a package never names its own signer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from errors import UserError, read_at_most

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

SIGNATURE = "manifest.sig"
PUBLIC_PREFIX = "nmb-ed25519"
MAX_KEY_FILE_BYTES = 64 * 1024
_PUBLIC = re.compile(rf"{PUBLIC_PREFIX} ([0-9a-f]{{64}})")
_SIG = re.compile(r"[0-9a-f]{128}")


def public_line(key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{PUBLIC_PREFIX} {raw.hex()}"


def keygen(out: Path) -> tuple[Path, str]:
    """A new study key: the private key at `out` (mode 0600), the public one beside it with
    the suffix .pub; (public key file, public key line). Neither file may exist."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if out.name in ("", ".", ".."):
        raise UserError(f"{str(out)!r}: give the private key a file name")
    pub = out.with_suffix(".pub")
    if pub == out:
        raise UserError(f"{out}: the private key needs another name than its .pub")
    for path in (out, pub):
        if path.exists():
            raise UserError(f"{path} exists; give a new file name")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    line = public_line(key.public_key())
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        pub.write_text(line + "\n")
    except OSError as e:
        raise UserError(f"cannot write {e.filename}: {e.strerror}") from None
    return pub, line


def _read(path: Path, what: str) -> bytes:
    try:
        if (data := read_at_most(path, MAX_KEY_FILE_BYTES)) is None:
            raise UserError(f"{what} {path}: larger than {MAX_KEY_FILE_BYTES} bytes")
        return data
    except OSError as e:
        raise UserError(f"{what} {path}: cannot read ({e.strerror})") from None


def load_private(path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(_read(path, "--sign"), password=None)
    except (ValueError, TypeError):
        raise UserError(f"--sign {path}: not an unencrypted PEM private key "
                        "(make one with nmb package keygen)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"--sign {path}: not an Ed25519 key (make one with nmb package keygen)")
    return key


def load_public(path: Path) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    text = _read(path, "--public-key").decode("utf-8", errors="replace").strip()
    if not (m := _PUBLIC.fullmatch(text)):
        raise UserError(f"--public-key {path}: expected one line '{PUBLIC_PREFIX} <64 hex "
                        "digits>' (written by nmb package keygen)")
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(m[1]))


def sign(key: Ed25519PrivateKey, manifest: bytes) -> bytes:
    """The content of manifest.sig: the signature of `manifest`, in hex."""
    return key.sign(manifest).hex().encode()


def signed_by(key: Ed25519PublicKey, manifest: bytes, signature: bytes | None) -> str | None:
    """None when `signature` (manifest.sig's content) is `key`'s signature of `manifest`,
    else why not."""
    from cryptography.exceptions import InvalidSignature

    if signature is None:
        return f"is not signed (no {SIGNATURE})"
    text = signature.decode("ascii", errors="replace").strip()
    if not _SIG.fullmatch(text):
        return f"{SIGNATURE} is not an Ed25519 signature"
    try:
        key.verify(bytes.fromhex(text), manifest)
    except InvalidSignature:
        return f"{SIGNATURE} is not a signature of manifest.json by {public_line(key)}"
    return None
