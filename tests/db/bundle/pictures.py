"""Pictures built with Pillow for the picture tests: a wide figure with marks, hostile files."""

import io
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

#: The wide figure: dark grey, a white block near its top-left corner (asymmetric under any
#: flip or rotation) and a red block on its right half.
WIDE = (3000, 1000)
WHITE_BOX = (100, 100, 500, 300)  # left, top, right, bottom
RED_BOX = (2300, 600, 2700, 900)


def wide_figure(size: tuple[int, int] = WIDE) -> Image.Image:
    w, h = size
    a = np.full((h, w, 3), 40, np.uint8)
    sx, sy = w / WIDE[0], h / WIDE[1]
    for box, colour in ((WHITE_BOX, (255, 255, 255)), (RED_BOX, (230, 0, 0))):
        left, t, r, b = (round(box[0] * sx), round(box[1] * sy), round(box[2] * sx),
                         round(box[3] * sy))
        a[t:b, left:r] = colour
    return Image.fromarray(a, "RGB")


def save(img: Image.Image, path: Path, fmt: str, **kw) -> Path:
    img.save(path, format=fmt, **kw)
    return path


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(path: Path, width: int = 10_000, height: int = 10_000) -> Path:
    """A PNG of a few hundred KB that decodes to width x height grey pixels (all zero)."""
    z = zlib.compressobj(9)
    row = bytes(width + 1)
    body = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                     + _chunk(b"IDAT", body) + _chunk(b"IEND", b""))
    return path


def noise(size: tuple[int, int] = (200, 160), mode: str = "RGB", seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "L": 1}[mode]
    a = rng.integers(0, 256, size=(size[1], size[0], channels), dtype=np.uint8)
    return Image.fromarray(a[..., 0] if channels == 1 else a, mode)


def truncated_jpeg(path: Path) -> Path:
    buf = io.BytesIO()
    noise((400, 300)).save(buf, "JPEG", quality=90)
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    return path


def animated(path: Path, fmt: str) -> Path:
    frames = [noise((64, 48), seed=i) for i in range(3)]
    frames[0].save(path, format=fmt, save_all=True, append_images=frames[1:], duration=100)
    return path


def sixteen_bit(path: Path) -> Path:
    a = (np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 20).astype(np.uint16)
    Image.fromarray(a).save(path, format="PNG")  # mode I;16
    return path
