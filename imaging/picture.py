"""2-D pictures (key images, multi-panel figures): sniff, check, sanitise, downscale.

A picture is a PNG, JPEG or WebP file, recognised by its first bytes (never its name or a MIME
label). `sanitise_picture` is the one door a picture passes before it is stored or served:

- caps before decoding: the file's bytes (`MAX_PICTURE_BYTES`), then, from the header alone,
  each side (`MAX_SIDE`), the pixel count (`MAX_PIXELS`) and the aspect ratio (`MAX_ASPECT`);
  Pillow's own decompression-bomb guard is an error too;
- refused: animations (more than one frame), 16-bit and floating-point samples (what 8 bits
  to show is a windowing decision the author must make), truncated or corrupt data (the whole
  picture is decoded);
- normalised: EXIF orientation applied; an embedded ICC profile converted to sRGB; palette,
  1-bit, CMYK and YCbCr to RGB or grey; transparency composited on white; greyscale stays
  greyscale (`L`), colour stays colour (`RGB`);
- re-encoded as PNG with no metadata at all (no EXIF, XMP, ICC, text chunks or comments).

The result is deterministic: sanitising a sanitised picture gives the same bytes, so its
sha256 names its content. `downscaled_png` makes the copy a model or a browser is sent.
No database or Streamlit import here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageCms, ImageFile, ImageOps

from errors import UserError, one_line, read_at_most

#: A picture file larger than this is refused before it is read.
MAX_PICTURE_BYTES = 32 * 2**20
#: Each side at most, in pixels.
MAX_SIDE = 16384
#: Width x height at most.
MAX_PIXELS = 40_000_000
#: Longer side / shorter side at most.
MAX_ASPECT = 20
#: The longest side of the copy a model, grader or browser is sent (configurable by callers).
DEFAULT_SEND_SIDE = 2048
FORMATS = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP"}
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
)
_OTHER = ((b"GIF87a", "GIF"), (b"GIF89a", "GIF"), (b"BM", "BMP"), (b"II*\x00", "TIFF"),
          (b"MM\x00*", "TIFF"), (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"))
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")


def sniff(head: bytes) -> str | None:
    """"PNG", "JPEG" or "WEBP" when `head` (the file's first 16 bytes) starts such a file."""
    for magic, fmt in _MAGIC:
        if head.startswith(magic):
            return fmt
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def other_format(head: bytes) -> str | None:
    """The name of a picture format we do not take (GIF, BMP, TIFF, JPEG 2000), or None."""
    return next((name for magic, name in _OTHER if head.startswith(magic)), None)


def sniff_file(path: Path) -> str | None:
    """`sniff` of the file's first bytes (None if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return sniff(f.read(16))
    except OSError:
        return None


@dataclass(frozen=True)
class Picture:
    """A sanitised picture: PNG bytes without metadata, its size and mode ("L" or "RGB")."""

    png: bytes
    width: int
    height: int
    mode: str
    blank: bool = False  # every pixel has one colour


def check_size(name: str, width: int, height: int) -> None:
    """Refuse, from the header's size alone, a picture too large or too thin to show."""
    if width < 1 or height < 1:
        raise UserError(f"{name}: picture has no pixels ({width} x {height})")
    if max(width, height) > MAX_SIDE:
        raise UserError(f"{name}: picture is {width:,} x {height:,} pixels; each side may be at "
                        f"most {MAX_SIDE:,}")
    if width * height > MAX_PIXELS:
        raise UserError(f"{name}: picture is {width:,} x {height:,} = {width * height:,} pixels, "
                        f"more than the limit of {MAX_PIXELS:,}")
    if max(width, height) > MAX_ASPECT * min(width, height):
        raise UserError(f"{name}: picture is {width:,} x {height:,} pixels, an aspect ratio "
                        f"beyond {MAX_ASPECT}:1")


def _to_srgb(img: Image.Image) -> Image.Image:
    """The picture in sRGB if it carries an ICC profile that converts; else unchanged."""
    icc = img.info.get("icc_profile")
    if not icc or img.mode not in ("RGB", "L", "CMYK"):
        return img
    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        out = "L" if img.mode == "L" else "RGB"
        target = ImageCms.createProfile("sRGB")
        return ImageCms.profileToProfile(img, source, target, outputMode=out) or img
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        return img  # a broken profile: the pixels as they are


def _normalised(img: Image.Image, name: str) -> Image.Image:
    """Grey as "L", everything else as "RGB"; alpha composited on white."""
    mode = img.mode
    if mode in _SIXTEEN_BIT:
        raise UserError(f"{name}: {mode} pictures (16-bit or floating-point samples) are not "
                        "taken; save the picture with 8 bits per channel")
    if mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif mode == "1":
        img = img.convert("L")
    elif mode == "PA":
        img = img.convert("RGBA")
    img = _to_srgb(img)
    if img.mode in ("LA", "La"):
        white = Image.new("L", img.size, 255)
        white.paste(img.convert("L"), mask=img.getchannel("A"))
        return white
    if img.mode in ("RGBA", "RGBa"):
        white = Image.new("RGB", img.size, (255, 255, 255))
        white.paste(img.convert("RGB"), mask=img.getchannel("A"))
        return white
    if img.mode in ("L", "RGB"):
        return img
    return img.convert("RGB")  # CMYK, YCbCr, LAB, HSV, RGBX


def _png(img: Image.Image) -> bytes:
    """PNG without any metadata chunk (Pillow writes none unless asked)."""
    out = io.BytesIO()
    clean = Image.frombytes(img.mode, img.size, img.tobytes())  # pixels only, `info` empty
    clean.save(out, format="PNG", compress_level=6)
    return out.getvalue()


def _opened(data: bytes, fmt: str) -> ImageFile.ImageFile:
    """`data` opened by the plugin of `fmt` (the header read, no pixel decoded).

    Not `Image.open`: it warns (DecompressionBombWarning) beyond Pillow's 89 M pixels, which
    only a process-wide warnings filter could silence, and that is not thread-safe (Streamlit
    serves sessions on threads). Our caps (`check_size`, right after) are tighter anyway."""
    Image.init()  # registers the plugins once
    factory, _accept = Image.OPEN[fmt]
    return factory(io.BytesIO(data))


def decode(data: bytes, name: str) -> Image.Image:
    """The picture in `data`, fully decoded, oriented and normalised ("L" or "RGB").

    UserError (one line naming `name`) for anything the module docstring refuses."""
    if len(data) > MAX_PICTURE_BYTES:
        raise UserError(f"{name}: picture is {len(data):,} bytes, more than the limit of "
                        f"{MAX_PICTURE_BYTES:,}")
    fmt = sniff(data[:16])
    if fmt is None:
        other = other_format(data[:16])
        raise UserError(f"{name}: " + (f"{other} pictures are not taken (PNG, JPEG or WebP)"
                                       if other else "not a PNG, JPEG or WebP picture"))
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        img = _opened(data, fmt)
        check_size(name, *img.size)
        if getattr(img, "n_frames", 1) > 1:
            raise UserError(f"{name}: an animated picture ({img.n_frames} frames) is not "
                            "taken; save one frame")
        if img.mode in _SIXTEEN_BIT:
            _normalised(img, name)  # the refusal, before decoding
        img.load()
        img = ImageOps.exif_transpose(img) or img
        check_size(name, *img.size)
        return _normalised(img, name)
    except UserError:
        raise
    except Image.DecompressionBombError as exc:
        raise UserError(f"{name}: picture is a decompression bomb ({one_line(str(exc), 120)})"
                        ) from None
    except MemoryError:
        raise UserError(f"{name}: picture is too large to decode into memory") from None
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... on bad bytes
        detail = one_line(str(exc), 120)
        raise UserError(f"{name}: {FORMATS[fmt]} data is truncated or corrupt "
                        f"({type(exc).__name__}: {detail})") from None


def sanitise_picture(path: Path, name: str | None = None) -> Picture:
    """Read, check, decode and re-encode the picture at `path` (see the module docstring)."""
    path = Path(path)
    name = name or path.name
    try:
        size = path.stat().st_size
        if size > MAX_PICTURE_BYTES:
            raise UserError(f"{name}: picture is {size:,} bytes, more than the limit of "
                            f"{MAX_PICTURE_BYTES:,}")
        if (data := read_at_most(path, MAX_PICTURE_BYTES)) is None:
            raise UserError(f"{name}: picture is more than the limit of {MAX_PICTURE_BYTES:,} bytes")
    except OSError as e:
        raise UserError(f"{name}: cannot read: {e.strerror or e}") from None
    img = decode(data, name)
    extrema = img.getextrema()  # (low, high), or one pair per band
    bands = extrema if isinstance(extrema[0], tuple) else (extrema,)
    return Picture(_png(img), img.width, img.height, img.mode,
                   blank=all(low == high for low, high in bands))


def downscaled_png(path: Path, max_side: int = DEFAULT_SEND_SIDE) -> bytes:
    """The stored (sanitised) picture at `path`, its longest side at most `max_side` pixels
    (Lanczos), as PNG without metadata; the stored bytes themselves when already small enough."""
    data = Path(path).read_bytes()
    with Image.open(io.BytesIO(data), formats=["PNG"]) as header:
        if max(header.size) <= max_side and not header.info:
            return data
    img = decode(data, Path(path).name)
    if max(img.size) <= max_side:
        return _png(img)
    scale = max_side / max(img.size)
    size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
    return _png(img.resize(size, Image.Resampling.LANCZOS))
