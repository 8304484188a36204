"""Problems found in a bundle, and the one error that carries all of them."""

from dataclasses import dataclass

from errors import UserError, escape_unprintable


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bundle: the file (relative to the bundle), the JSONL line, what."""

    file: str
    line: int | None
    message: str

    def __post_init__(self) -> None:  # a file name may hold bytes that are not UTF-8, or
        for name in ("file", "message"):  # a line break
            text = getattr(self, name).encode("utf-8", "backslashreplace").decode("utf-8")
            object.__setattr__(self, name, escape_unprintable(text))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


class BundleInvalid(UserError):
    """A bundle was refused; `.problems` lists every problem found (the CLI prints them all)."""

    def __init__(self, bundle: str, problems: list[Problem]) -> None:
        self.bundle = bundle
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"bundle {bundle} has {n} problem{'s' if n != 1 else ''}")

    def report(self) -> str:
        """The first line followed by every problem, one per line."""
        return "\n".join([str(self), *(f"  {p}" for p in self.problems)])
