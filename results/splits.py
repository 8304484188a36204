"""The published leaderboard's splits: Direct Diagnosis, Complex Diseases and Multi-round
Dialogue, mapped from task levels 1, 2 and 3 by default (`--splits` maps them otherwise).

A split's rows are `results.leaderboard.cells` of the judgments of its levels, the same function
and judgments as every other table of `nmb results`; with one level per split, a split's cell is
the per-level cell of `nmb results --by level`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from errors import UserError
from results.judgments import Judgment
from results.leaderboard import Cell, cells

SPLITS: dict[str, tuple[int, ...]] = {"direct": (1,), "complex": (2,), "multi-round": (3,)}
TITLES = {"direct": "Direct Diagnosis", "complex": "Complex Diseases",
          "multi-round": "Multi-round Dialogue"}
LEVELS = (1, 2, 3)


@dataclass
class Split:
    name: str
    title: str
    levels: list[int]
    cells: list[Cell]  # per model and human group, as `cells` orders them


MAX_NAME = 40  # a split's name: a table heading, typed on the command line


def parse_splits(text: str | None) -> dict[str, tuple[int, ...]]:
    """"direct=1,complex=2,multi-round=3" (the default), a split over several levels as
    "name=1+2"; every name once, every level in at most one split."""
    if not text:
        return dict(SPLITS)
    out: dict[str, tuple[int, ...]] = {}
    for part in text.split(","):
        name, eq, levels = part.partition("=")
        name = name.strip()
        try:
            lv = tuple(int(x) for x in levels.split("+"))
        except ValueError:
            lv = ()
        if (not eq or not name or len(name) > MAX_NAME or not name.isprintable() or not lv
                or any(x not in LEVELS for x in lv) or name in out):
            raise UserError(f"--splits {text!r}: give name=level[+level] per split, levels 1-3, "
                            f"names of at most {MAX_NAME} printable characters, "
                            "e.g. direct=1,complex=2,multi-round=3")
        out[name] = lv
    taken = [x for lv in out.values() for x in lv]
    if len(taken) != len(set(taken)):
        raise UserError(f"--splits {text!r}: a level is in two splits")
    return out


def split_cells(judged: Iterable[Judgment], splits: Mapping[str, tuple[int, ...]], *,
                ks: tuple[int, ...], bertscore: Mapping[str, float] | None = None) -> list[Split]:
    """One `Split` per split, its cells computed over the judgments of its levels."""
    judged = list(judged)
    out = []
    for name, levels in splits.items():
        js = [j for j in judged if j.level in levels]
        out.append(Split(name, TITLES.get(name, name), list(levels),
                         cells(js, ks=ks, bertscore=bertscore) if js else []))
    return out
