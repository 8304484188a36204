"""Rating designs: who scores what, in which order, and which items calibrate the grader.

Pure functions (numpy only); `db.raters.assignments` stores their output.
"""

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import combinations

import numpy as np

from errors import UserError, counted


def balanced_design(
    items: Sequence[Hashable], raters: Sequence[Hashable], overlap: int, seed: int
) -> dict[Hashable, list[Hashable]]:
    """Give every item `overlap` distinct raters, balancing loads and rater pairs.

    Greedy incomplete-block construction: items are visited in a seeded random order and
    each goes to the rater set with the smallest total load and, among those, the fewest
    items already shared by its pairs (ties broken at random). Loads then never differ by
    more than one item, and every pair of raters shares items once there are at least
    C(n, 2) / C(overlap, 2) items. Each rater's queue is shuffled with its own seed.
    Returns {rater: queue of items}.
    """
    n = len(raters)
    if overlap < 1:
        raise UserError(f"overlap must be at least 1, got {overlap}")
    if overlap > n:
        raise UserError(f"overlap {overlap} needs at least {counted(overlap, 'rater')}, got {n}")
    if len(set(raters)) != n:
        raise UserError("a rater is listed twice")
    rng = np.random.default_rng(seed)
    combos = np.array(list(combinations(range(n), overlap)), dtype=np.int64)
    pair_idx = [(a, b) for a, b in combinations(range(overlap), 2)]
    loads = np.zeros(n, dtype=np.int64)
    shared = np.zeros((n, n), dtype=np.int64)
    queues: list[list[Hashable]] = [[] for _ in range(n)]
    for i in rng.permutation(len(items)):
        load_cost = loads[combos].sum(axis=1)
        pair_cost = sum((shared[combos[:, a], combos[:, b]] for a, b in pair_idx), np.zeros(len(combos)))
        cost = load_cost * (len(items) + 1) ** 2 + pair_cost
        best = np.flatnonzero(cost == cost.min())
        chosen = combos[best[rng.integers(len(best))]]
        loads[chosen] += 1
        for a, b in combinations(chosen, 2):
            shared[a, b] += 1
            shared[b, a] += 1
        for r in chosen:
            queues[r].append(items[i])
    out = {}
    for r, rater in enumerate(raters):
        queue = queues[r]
        order = np.random.default_rng([seed, r]).permutation(len(queue))
        out[rater] = [queue[j] for j in order]
    return out


def stratified_sample(
    strata: dict[Hashable, Hashable], n: int, seed: int
) -> list[Hashable]:
    """Draw `n` items, spread over strata in proportion to their size (largest remainder)."""
    if n < 1:
        raise UserError(f"the calibration subset needs at least 1 item, got {n}")
    if n > len(strata):
        raise UserError(f"asked for {n} calibration items but only {len(strata)} exist")
    rng = np.random.default_rng(seed)
    groups: dict[Hashable, list[Hashable]] = {}
    for item in sorted(strata, key=str):
        groups.setdefault(strata[item], []).append(item)
    keys = sorted(groups, key=str)
    exact = np.array([len(groups[k]) * n / len(strata) for k in keys])
    take = np.floor(exact).astype(int)
    for j in np.argsort(-(exact - take), kind="stable")[: n - take.sum()]:
        take[j] += 1
    chosen: list[Hashable] = []
    for k, t in zip(keys, take, strict=True):
        members = groups[k]
        chosen += [members[j] for j in rng.permutation(len(members))[:t]]
    return chosen


def split_dev_heldout(
    strata: dict[Hashable, Hashable], dev_fraction: float, seed: int
) -> dict[Hashable, str]:
    """Seeded, stratified split of the calibration subset into `dev` and `heldout` parts."""
    if not 0 < dev_fraction < 1:
        raise UserError(f"dev fraction must be between 0 and 1, got {dev_fraction}")
    rng = np.random.default_rng(seed)
    out: dict[Hashable, str] = {}
    counts = Counter(strata.values())
    for stratum in sorted(counts, key=str):
        members = sorted((i for i, s in strata.items() if s == stratum), key=str)
        members = [members[j] for j in rng.permutation(len(members))]
        n_dev = int(round(len(members) * dev_fraction))
        for j, item in enumerate(members):
            out[item] = "dev" if j < n_dev else "heldout"
    return out
