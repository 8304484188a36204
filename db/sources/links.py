"""Symbolic links in a folder given to an importer (a BIDS dataset, a DICOM study folder)."""

from pathlib import Path


def leaves(root: Path, path: Path) -> bool:
    """Does `path`, found under `root`, resolve outside it? Links within it (DataLad's annex)
    do not; a loop of links, which leads to no file inside, does."""
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a loop (Python < 3.13)
        return True
