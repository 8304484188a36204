"""The results' figures (matplotlib, Agg backend), as PNG bytes: a family x level heat map of
pass@1 with intervals, the error classes among wrong responses, anchoring on multi-turn tasks,
and the leaderboard's chart. Laid out as `calibration.plots` lays out its own: legends below
the axes, no text under `FONT_MIN` points."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from calibration.plots import FONT_MIN, figure, label, legend_below, png  # noqa: E402
from results.anchoring import LABELS, MEASURES  # noqa: E402
from results.breadth import BreadthAxis  # noqa: E402
from results.results import Results  # noqa: E402
from stats.intervals import MIN_CASES  # noqa: E402


def heat_map(results: Results) -> Figure | None:
    """pass@ks[0] per family (rows) x level (columns), one panel per model and human group,
    each cell with its value and 95% interval."""
    if sorted(results.by) != ["family", "level"] or not results.cells:
        return None
    k = results.ks[0]
    families = sorted({c.keys["family"] for c in results.cells})
    levels = sorted({c.keys["level"] for c in results.cells})
    whos = list(dict.fromkeys(c.who for c in results.overall))
    cols = min(3, len(whos))
    rows = -(-len(whos) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 3.0 * rows), squeeze=False,
                             layout="constrained")
    for ax, who in zip(axes.flat, whos, strict=False):
        grid = np.full((len(families), len(levels)), np.nan)
        for c in results.cells:
            if c.who == who and c.pass_at[k].value is not None:
                i, j = families.index(c.keys["family"]), levels.index(c.keys["level"])
                grid[i, j] = c.pass_at[k].value
                ci = c.pass_at[k].ci
                text = f"{grid[i, j]:.2f}" + (f"\n[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=FONT_MIN,
                        color="white" if grid[i, j] < 0.5 else "black")
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(levels)), [f"L{lv}" for lv in levels])
        ax.set_yticks(range(len(families)), families)
        ax.set_title(who, fontsize=9)
    for ax in list(axes.flat)[len(whos):]:
        ax.axis("off")
    fig.suptitle(f"pass@{k} per family x level (95% interval; none from fewer than "
                 f"{MIN_CASES} cases)", fontsize=10)
    return fig


def error_bars(results: Results) -> Figure | None:
    """Stacked bars: the error classes among each group's wrong responses, as the judge
    tagged them."""
    if not results.errors:
        return None
    classes = [*results.error_classes, "untagged"]
    labels = [f"{e.who} ({e.source}, n={e.wrong})" for e in results.errors]
    fig, ax = figure(7.5, 0.32 * len(labels) + 2.0)
    left = np.zeros(len(labels))
    for i, c in enumerate(classes):
        share = np.array([e.shares[c].value or 0 for e in results.errors])
        ax.barh(labels, share, left=left, label=label(c), color=plt.cm.tab10(i))
        left += share
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of wrong responses",
           title="Error classes among wrong responses")
    legend_below(fig, ncol=3)
    return fig


def anchoring_chart(results: Results) -> Figure | None:
    """The anchoring shares per model and human group, with 95% intervals."""
    rows = [a for a in results.anchoring if a.conversations]
    if not rows:
        return None
    x = np.arange(len(rows))
    width = 0.8 / len(MEASURES)
    fig, ax = figure(max(6.0, 1.3 * len(rows)), 4.2)
    for i, m in enumerate(MEASURES):
        est = [a.shares[m].estimate for a in rows]
        value = np.array([e.value or 0 for e in est])
        low = np.array([value[j] - e.ci[0] if e.ci else 0 for j, e in enumerate(est)])
        high = np.array([e.ci[1] - value[j] if e.ci else 0 for j, e in enumerate(est)])
        ax.bar(x + (i - (len(MEASURES) - 1) / 2) * width, value, width, yerr=[low, high],
               capsize=2, label=LABELS[m])
    ax.set_xticks(x, [a.who for a in rows], rotation=20, ha="right")
    ax.set(ylim=(0, 1.05), ylabel="share of conversations in the condition",
           title=f"Anchoring on multi-turn tasks (judge: {results.judge}; 95% intervals, none "
                 f"from fewer than {MIN_CASES} cases)")
    legend_below(fig, ncol=2)
    return fig


GROUP_COLORS = {"model": "C0", "human": "C1", "person": "C2"}
GROUP_NAMES = {"model": "model", "human": "human group", "person": "person"}


def leaderboard_chart(rows: list[dict], ks: tuple[int, ...]) -> Figure | None:
    """pass@ks[0] (else, when no row has it, the mean rubric score) of each row of
    `results.leaderboard.summarize` as a horizontal bar with its 95% interval, best first
    (within each cell of the rows' family/level keys), models and human groups coloured apart;
    rows without the measure are left out (None when no row has one)."""
    measure = next((m for m in (f"pass@{ks[0]}", "overall_mean")
                    if any(r.get(m) is not None for r in rows)), "overall_mean")
    shown = [r for r in rows if r.get(measure) is not None]
    if not shown:
        return None
    keys = [k for k in ("family", "level") if k in shown[0]]
    shown.sort(key=lambda r: (*(str(r[k]) for k in keys), -r[measure], r["who"]))
    value = np.array([r[measure] for r in shown])
    ci = [r.get(f"{measure} 95% CI") or (v, v) for r, v in zip(shown, value, strict=True)]
    err = np.array([[v - lo for (lo, _), v in zip(ci, value, strict=True)],
                    [hi - v for (_, hi), v in zip(ci, value, strict=True)]])
    names = [" · ".join([r["who"], *(f"{k} {r[k]}" for k in keys)]) for r in shown]
    y = np.arange(len(shown))
    fig, ax = figure(7.0, 0.34 * len(shown) + 1.9)
    ax.barh(y, value, xerr=err, capsize=3, color=[GROUP_COLORS[r["group"]] for r in shown],
            error_kw={"elinewidth": 1})
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel=f"{label(measure)} (bars: 95% interval, cases resampled)",
           title=f"Leaderboard: {label(measure)}")
    groups = [g for g in GROUP_COLORS if any(r["group"] == g for r in shown)]
    legend_below(fig, [Patch(color=GROUP_COLORS[g]) for g in groups],
                 [GROUP_NAMES[g] for g in groups], ncol=len(groups))
    return fig


def _plain(name: str, most: int = 40) -> str:
    """A name as literal figure text: mathtext's $ escaped, cut to `most` characters."""
    name = name if len(name) <= most else name[: most - 1] + "…"
    return name.replace("$", r"\$")


def breadth_scatter(axis: BreadthAxis) -> Figure | None:
    """Depth pass@1 (y) against the breadth score (x) of each model, labelled, with Spearman's
    rho and its interval in the title (results.breadth)."""
    if not axis.rows:
        return None
    fig, ax = figure(6.4, 4.6)
    x = [r.breadth for r in axis.rows]
    y = [r.depth for r in axis.rows]
    ax.scatter(x, y, color="#1f77b4", zorder=3)
    for r in axis.rows:
        ax.annotate(_plain(r.model), (r.breadth, r.depth), textcoords="offset points",
                    xytext=(4, 4), fontsize=FONT_MIN)
    c = axis.pass_at_1
    rho = "–" if c.spearman is None else f"{c.spearman:.2f}"
    ci = f" [{c.spearman_ci[0]:.2f}, {c.spearman_ci[1]:.2f}]" if c.spearman_ci else ""
    p = "" if c.spearman_p is None else f", p = {c.spearman_p:.3g}"
    ax.set(xlabel=f"{_plain(axis.benchmark)} score (breadth)",
           ylabel="pass@1 here (depth)", ylim=(-0.05, 1.05),
           title=f"Breadth against depth: Spearman {rho}{ci}{p}, {axis.models} models")
    ax.grid(alpha=0.3)
    return fig


def figures(results: Results) -> dict[str, Figure]:
    figs = {"heat_map": heat_map(results), "errors": error_bars(results),
            "anchoring": anchoring_chart(results),
            **{f"breadth_{i}": breadth_scatter(a) for i, a in enumerate(results.breadth, 1)}}
    return {name: fig for name, fig in figs.items() if fig is not None}


def all_figures(results: Results) -> dict[str, bytes]:
    return {name: png(fig) for name, fig in figures(results).items()}
