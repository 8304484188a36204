"""The balanced rating design and the stratified calibration split."""

from collections import Counter
from itertools import combinations

import pytest

from db.raters.design import balanced_design, split_dev_heldout, stratified_sample
from errors import UserError


@pytest.mark.parametrize(("n_raters", "overlap", "n_items"),
                         [(3, 3, 40), (4, 2, 50), (5, 3, 61), (6, 3, 100), (8, 2, 57), (2, 1, 9)])
def test_overlap_balance_and_pairs(n_raters: int, overlap: int, n_items: int) -> None:
    raters = [f"r{i}" for i in range(n_raters)]
    items = list(range(n_items))
    queues = balanced_design(items, raters, overlap, seed=7)
    per_item = Counter(i for q in queues.values() for i in q)
    assert all(per_item[i] == overlap for i in items)
    assert all(len(set(q)) == len(q) for q in queues.values())
    loads = [len(q) for q in queues.values()]
    assert max(loads) - min(loads) <= 1
    if overlap > 1:
        for a, b in combinations(raters, 2):
            assert set(queues[a]) & set(queues[b]), (a, b)
    assert balanced_design(items, raters, overlap, seed=7) == queues
    orders = {tuple(q) for q in queues.values()}
    assert len(orders) == n_raters  # each rater has an own random order


def test_design_refuses_impossible_overlap() -> None:
    with pytest.raises(UserError, match="needs at least 3 raters"):
        balanced_design([1, 2], ["a", "b"], 3, seed=0)


def test_stratified_sample_is_proportional() -> None:
    strata = {i: ("differential" if i < 60 else "lesion") for i in range(100)}
    chosen = stratified_sample(strata, 20, seed=1)
    assert Counter(strata[i] for i in chosen) == {"differential": 12, "lesion": 8}
    assert len(set(chosen)) == 20
    parts = split_dev_heldout({i: strata[i] for i in chosen}, 0.5, seed=1)
    assert Counter((strata[i], p) for i, p in parts.items()) == {
        ("differential", "dev"): 6, ("differential", "heldout"): 6,
        ("lesion", "dev"): 4, ("lesion", "heldout"): 4}
