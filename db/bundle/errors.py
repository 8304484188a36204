"""Problems found in a bundle, and the one error that carries all of them."""

from dataclasses import dataclass

from errors import UserError

#: Line breaks and other control characters, as the escapes Python writes for them.
_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}


def printable(text: str) -> str:
    """`text` with control characters escaped (`\\n`, `\\x01`): a name from outside (a
    file name, a JSON key) cannot start a line of its own where one line is printed."""
    return text.translate(_CONTROLS)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bundle: the file (relative to the bundle), the JSONL line, what."""

    file: str
    line: int | None
    message: str

    def __post_init__(self) -> None:  # a file name may hold bytes that are not UTF-8, or
        for name in ("file", "message"):  # a line break
            text = getattr(self, name).encode("utf-8", "backslashreplace").decode("utf-8")
            object.__setattr__(self, name, printable(text))

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
