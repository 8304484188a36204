"""A folder given to an importer (a BIDS dataset, a DICOM study folder): the parts of it that
cannot be read, each named rather than left out (the links in it that lead outside:
`db.bundle.validate.leaves`)."""

from pathlib import Path

from db.bundle.errors import Problem


def unreadable(root: Path, path: Path, error: OSError) -> Problem:
    """The problem of `path` under `root`, which the import could not read (a folder it may
    not list: a volume in it would otherwise be left out in silence)."""
    inside = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    return Problem(root.name if inside == "." else inside, None,
                   f"cannot read: {error.strerror or error}")


def listing(root: Path, folder: Path, problems: list[Problem]) -> list[Path] | None:
    """The entries of `folder` (under `root`), sorted; None, with a problem naming it, where
    it cannot be listed."""
    try:
        return sorted(folder.iterdir())
    except OSError as e:
        problems.append(unreadable(root, folder, e))
        return None
