"""The agreement comparisons a calibration report is assembled from: one rater against the
others (`versus`), the human ceiling (`ceiling`), everything for one numeric criterion
(`compare_to_experts`) and for binary error tags (`compare_tags`). They combine the statistics
of `stats.correlation`, `stats.icc`, `stats.chance_agreement`, `stats.bland_altman` and
`stats.alt_test` (each with its reference there and in docs/agreement.md) into the typed
results of `calibration.comparison_types`; `calibration.report` and `nmb agreement`
(`calibration.agreement_csv`) read them, and store them by their `to_dict()`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.comparison_types import (
    CEILING_MEASURES,
    Ceiling,
    CeilingRow,
    Comparison,
    ExpertTags,
    Resampling,
    TagClass,
    TagComparison,
    TagIntervals,
    TagMeans,
    TagStats,
    Versus,
)
from stats.agreement_types import Pearson, plain_float
from stats.alt_test import alt_test, alt_test_sensitivity
from stats.bland_altman import absolute_agreement, bland_altman
from stats.chance_agreement import (
    CONTINUOUS,
    _weighted_kappa,
    binary_confusion,
    binary_stats_resampled,
    cohen_kappa,
    gwet_ac1,
    krippendorff_alpha,
)
from stats.correlation import MIN_R_ITEMS, kendall, pearson_many, spearman
from stats.icc import icc, icc_grader_vs_mean
from stats.resample import (
    MIN_CLUSTER_UNITS,
    bootstrap_weights,
    case_units,
    few_cases_warning,
    percentile_ci,
)
from stats.scores import _pair


def _mean_of(experts: np.ndarray) -> np.ndarray:
    """Per-item mean of the present ratings (NaN when none)."""
    cnt = np.isfinite(experts).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.nansum(experts, axis=1) / np.maximum(cnt, 1), np.nan)


def _correlation_reason(x: np.ndarray, y: np.ndarray, minimum: int) -> str:
    """Why a correlation of x and y is None."""
    xs, ys = _pair(x, y)
    if len(xs) < minimum:
        return f"needs {minimum} items scored by both, found {len(xs)}"
    return "0/0: the scores of one side are constant"


def versus(
    target: np.ndarray,
    others: np.ndarray,
    *,
    domain: Sequence[float] | None,
    weights: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    pearson_result: Pearson | None = None,
    ci_method: str = "studentized_z",
    confidence: float = 0.95,
) -> Versus:
    """One rater against the per-item mean of other raters: Pearson (Fisher CI, and bootstrap CI
    when `weights` are given), Spearman, Kendall tau-b, quadratic- and linear-weighted kappa
    against the consensus code (others' mean snapped to the domain), Bland-Altman (target minus
    others' mean), MAE, exact and within-one agreement of codes. `domain` None: continuous
    scores, no kappa, exact or within-one. `reasons` says why each None statistic is None.
    `pearson_result`: already computed Pearson. With `clusters` the Bland-Altman intervals are
    case-clustered too (`stats.bland_altman.bland_altman`)."""
    t = np.asarray(target, dtype=float)
    ref = _mean_of(np.asarray(others, dtype=float).reshape(len(t), -1))
    if pearson_result is None:
        pearson_result = pearson_many([(t, ref)], weights=weights, clusters=clusters,
                                      ci_method=ci_method, confidence=confidence)[0]
    absolute = absolute_agreement(t, ref, domain=domain)
    rho, tau = spearman(t, ref), kendall(t, ref)
    reasons = {}
    kappas = {}
    for key, weighting in (("weighted_kappa", "quadratic"), ("weighted_kappa_linear", "linear")):
        kappas[key], why = _weighted_kappa(t, ref, domain, weighting)
        if why:
            reasons[key] = why
    for key in ("exact", "within_one"):
        if getattr(absolute, key) is None:
            reasons[key] = CONTINUOUS if absolute.n and domain is None else (
                "no item scored by both")
    for key, value, minimum in (("pearson", pearson_result.r, MIN_R_ITEMS),
                                ("spearman", rho.rho, 3), ("kendall", tau.tau_b, 3)):
        if value is None:
            reasons[key] = _correlation_reason(t, ref, minimum)
    return Versus(n_items=absolute.n, pearson=pearson_result, spearman=rho, kendall=tau,
                  bland_altman=bland_altman(t, ref, clusters=clusters, confidence=confidence),
                  mae=absolute.mae, exact=absolute.exact,
                  within_one=absolute.within_one, **kappas, reasons=reasons)


def _mean_summary(rows: list[Versus]) -> dict[str, float | None]:
    """Each measure of `CEILING_MEASURES`, averaged over the rows where it is defined."""
    out = {}
    for key, measure in CEILING_MEASURES.items():
        vals = [v for v in (measure(r) for r in rows) if v is not None]
        out[key] = float(np.mean(vals)) if vals else None
    return out


def ceiling(
    grader: np.ndarray,
    experts: np.ndarray,
    *,
    domain: Sequence[float] | None,
    weights: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    ci_method: str = "studentized_z",
) -> Ceiling:
    """The human ceiling: each expert against the mean of the other experts, side by side with
    the grader against the same other experts (and against all experts), with the statistics of
    `versus`. The grader is as good as an expert when its rows match the experts' rows."""
    g = np.asarray(grader, dtype=float)
    e = np.asarray(experts, dtype=float)
    refs = [_mean_of(np.delete(e, j, axis=1)) for j in range(e.shape[1])]
    pairs = [p for j, ref in enumerate(refs) for p in ((e[:, j], ref), (g, ref))]
    corr = pearson_many(pairs, weights=weights, clusters=clusters, ci_method=ci_method)
    rows = []
    for j in range(e.shape[1]):
        others = np.delete(e, j, axis=1)
        rows.append(CeilingRow(
            expert=j,
            expert_vs_others=versus(e[:, j], others, domain=domain, pearson_result=corr[2 * j]),
            grader_vs_others=versus(g, others, domain=domain, pearson_result=corr[2 * j + 1])))
    return Ceiling(per_expert=rows,
                   experts_mean=_mean_summary([r.expert_vs_others for r in rows]),
                   grader_mean=_mean_summary([r.grader_vs_others for r in rows]),
                   grader_vs_all=_mean_summary([versus(g, e, domain=domain)]))


def compare_to_experts(
    grader: np.ndarray,
    experts: np.ndarray,
    *,
    domain: Sequence[float] | None,
    bootstrap: int = 2000,
    seed: int = 0,
    epsilon: float = 0.2,
    clusters: np.ndarray | None = None,
    min_alt_items: int = 30,
    alt_q: float = 0.05,
    ci_method: str = "studentized_z",
    expert_names: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> Comparison:
    """Everything a calibration report needs for one numeric criterion.

    `grader`: (n_items,) scores (may be means of several samples); `experts`: (n_items,
    n_experts) with NaN for a missing rating; `domain`: the criterion's allowed values, or None
    for continuous scores (then no kappa, exact/within-one or nominal alpha; see `reasons`).
    The grader is compared with the per-item mean of the experts (`versus`, with a bootstrap CI
    for Pearson r by `ci_method` over `bootstrap` item resamples, or case resamples when
    `clusters` gives each item's case); the gate's ICC(2,1), the grader against the experts'
    mean with its case-clustered interval (`icc_grader_vs_mean`); ICC (Shrout & Fleiss) and
    Krippendorff's alpha on grader + experts and on the experts alone (`expert_names` name
    left-out raters); the human ceiling; the alt-test (cluster-robust with `clusters`, its
    winning rate's interval over the same case resamples as r) and its verdict at epsilon 0.1,
    0.15 and 0.2. `confidence`: the level of the grader's r, ICC, Bland-Altman and Alt-Test
    intervals (the "ci95" keys keep their name; a protocol allowing several looks lowers it,
    Bonferroni).
    """
    g = np.asarray(grader, dtype=float)
    e = np.asarray(experts, dtype=float)
    if e.ndim != 2 or g.shape != (e.shape[0],):
        raise ValueError(f"grader {g.shape} and experts {e.shape} do not match (items x experts)")
    names = list(expert_names or (f"expert {j}" for j in range(e.shape[1])))
    weights = bootstrap_weights(len(g), bootstrap, seed, clusters) if bootstrap > 0 else None
    both = np.column_stack([g, e])
    several = e.shape[1] >= 2
    grader_vs = versus(g, e, domain=domain, weights=weights, clusters=clusters,
                       ci_method=ci_method, confidence=confidence)
    epsilons = sorted({0.1, 0.15, 0.2, epsilon})
    return Comparison(
        **vars(grader_vs),
        n_experts=e.shape[1],
        icc_vs_mean=icc_grader_vs_mean(g, e, clusters=clusters, confidence=confidence),
        icc=icc(both, raters=["grader", *names]),
        icc_experts=icc(e, raters=names),
        krippendorff_alpha=krippendorff_alpha(both, domain=domain),
        krippendorff_alpha_experts=krippendorff_alpha(e, domain=domain),
        ceiling=ceiling(g, e, domain=domain, weights=weights, clusters=clusters,
                        ci_method=ci_method) if several else None,
        alt_test=alt_test(g, e, epsilon=epsilon, q=alt_q, min_items=min_alt_items,
                          clusters=clusters, weights=weights, confidence=confidence)
        if several else None,
        bootstrap=Resampling(resamples=bootstrap, seed=seed,
                             unit="item" if clusters is None else "case",
                             interval=ci_method, confidence=confidence),
        alt_test_sensitivity=alt_test_sensitivity(g, e, epsilons=epsilons, q=alt_q,
                                                  min_items=min_alt_items, clusters=clusters)
        if several else None,
    )


def _majority(votes: np.ndarray) -> np.ndarray:
    """Per-item strict majority of present binary votes (axis 1); ties count as absent; NaN when
    no vote is present."""
    cnt = np.isfinite(votes).sum(axis=1)
    share = np.nansum(votes, axis=1) / np.maximum(cnt, 1)
    return np.where(cnt > 0, (share > 0.5).astype(float), np.nan)


def _tag_stats(pred: np.ndarray, truth: np.ndarray,
               ci95: TagIntervals | None = None) -> TagStats:
    return TagStats(cohen_kappa(pred, truth), gwet_ac1(pred, truth),
                    binary_confusion(pred, truth), ci95)


def _nominal_alpha(votes: np.ndarray) -> float | None:
    return krippendorff_alpha(votes, domain=(0, 1), levels=("nominal",)).nominal


def compare_tags(
    grader: np.ndarray, experts: np.ndarray, class_names: Sequence[str], *,
    bootstrap: int = 0, seed: int = 0, clusters: np.ndarray | None = None,
) -> TagComparison:
    """Binary error tags: per class, the grader against the experts' strict majority (Cohen's
    kappa, Gwet's AC1, precision/recall/F1 and the confusion table), and the ceiling: each
    expert against the majority of the other experts with the same statistics. Reliability of
    the class itself: Krippendorff's nominal alpha among the experts (missing ratings allowed)
    and with the grader as one more rater (`krippendorff_alpha`). With `bootstrap` resamples,
    the grader's kappa, AC1 and F1 get 95% percentile intervals over items (or, with
    `clusters`, whole cases: the cluster bootstrap, Davison & Hinkley 1997, sec. 3.8), the
    same resamples for every class; none from fewer than 3 cases, a `warning` below 20, as
    for r.

    `grader`: bool (n_items, n_classes); `experts`: bool (n_items, n_experts, n_classes), or
    float with NaN for a missing expert.
    """
    g = np.asarray(grader, dtype=float)
    e = np.asarray(experts, dtype=float)
    if g.ndim != 2 or e.ndim != 3 or e.shape[0] != g.shape[0] or e.shape[2] != g.shape[1]:
        raise ValueError(f"grader {g.shape} and experts {e.shape} do not match")
    if len(class_names) != g.shape[1]:
        raise ValueError(f"{len(class_names)} class names for {g.shape[1]} classes")
    n_units = case_units(g.shape[0], clusters)[1]
    weights = (bootstrap_weights(g.shape[0], bootstrap, seed, clusters)
               if bootstrap and n_units >= MIN_CLUSTER_UNITS else None)
    warning = few_cases_warning(n_units, clusters is not None, "error-class")
    classes = {}
    for c, name in enumerate(class_names):
        votes = e[:, :, c]
        majority = _majority(votes)
        ci95 = None
        if weights is not None:
            resampled = binary_stats_resampled(g[:, c], majority, weights)
            ci95 = TagIntervals(**{k: percentile_ci(v) for k, v in resampled.items()},
                                units=n_units, warning=warning)
        rows = [ExpertTags(j, _tag_stats(votes[:, j], _majority(np.delete(votes, j, 1))))
                for j in range(e.shape[1])]
        several = e.shape[1] >= 2
        classes[name] = TagClass(
            prevalence=plain_float(np.nanmean(majority)) if np.isfinite(majority).any() else None,
            alpha_experts=_nominal_alpha(votes),
            alpha_with_grader=_nominal_alpha(np.column_stack([votes, g[:, c]])),
            grader=_tag_stats(g[:, c], majority, ci95),
            ceiling=rows if several else [],
            ceiling_mean=TagMeans.of([r.stats for r in rows]) if several else None)
    return TagComparison(n_items=g.shape[0], n_experts=e.shape[1], classes=classes)
