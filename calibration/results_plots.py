"""The results' figures (matplotlib, Agg backend), as PNG bytes: a family x level heat map of
pass@1 with intervals, the error classes among wrong responses, and revision on multi-turn
tasks."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from calibration.plots import png  # noqa: E402
from calibration.results import Results  # noqa: E402
from calibration.revision import MEASURES  # noqa: E402


def heat_map(results: Results) -> bytes | None:
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
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False,
                             layout="constrained")
    for ax, who in zip(axes.flat, whos, strict=False):
        grid = np.full((len(families), len(levels)), np.nan)
        for c in results.cells:
            if c.who == who and c.pass_at[k].value is not None:
                i, j = families.index(c.keys["family"]), levels.index(c.keys["level"])
                grid[i, j] = c.pass_at[k].value
                ci = c.pass_at[k].ci
                label = f"{grid[i, j]:.2f}" + (f"\n[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                ax.text(j, i, label, ha="center", va="center", fontsize=7,
                        color="white" if grid[i, j] < 0.5 else "black")
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(levels)), [f"L{lv}" for lv in levels])
        ax.set_yticks(range(len(families)), families, fontsize=8)
        ax.set_title(who, fontsize=9)
    for ax in list(axes.flat)[len(whos):]:
        ax.axis("off")
    fig.suptitle(f"pass@{k} per family x level (95% interval)", fontsize=10)
    return png(fig)


def error_bars(results: Results) -> bytes | None:
    """Stacked bars: the error classes among each group's wrong responses, expert tags and
    grader tags side by side."""
    if not results.errors:
        return None
    classes = [*results.error_classes, "untagged"]
    labels = [f"{e.who} ({e.source}, n={e.wrong})" for e in results.errors]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(labels) + 1.4))
    left = np.zeros(len(labels))
    for i, c in enumerate(classes):
        share = np.array([e.shares[c].value or 0 for e in results.errors])
        ax.barh(labels, share, left=left, label=c.replace("_", " "), color=plt.cm.tab10(i))
        left += share
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of wrong responses",
           title="Error classes among wrong responses")
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
    return png(fig)


def revision_chart(results: Results) -> bytes | None:
    """The four revision measures per model and human group, with 95% intervals."""
    rows = [v for v in results.revision if v.conversations]
    if not rows:
        return None
    x = np.arange(len(rows))
    width = 0.8 / len(MEASURES)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows)), 3.6))
    for i, m in enumerate(MEASURES):
        est = [v.measures[m] for v in rows]
        value = np.array([e.value or 0 for e in est])
        low = np.array([value[j] - e.ci[0] if e.ci else 0 for j, e in enumerate(est)])
        high = np.array([e.ci[1] - value[j] if e.ci else 0 for j, e in enumerate(est)])
        ax.bar(x + (i - 1.5) * width, value, width, yerr=[low, high], capsize=2,
               label=m.replace("_", " "))
    ax.set_xticks(x, [v.who for v in rows], rotation=20, fontsize=8)
    ax.set(ylim=(0, 1.05), ylabel="share of conversations",
           title="Revision on multi-turn tasks (grader's stage judgments)")
    ax.legend(frameon=False, fontsize=7, ncol=4, loc="upper center",
              bbox_to_anchor=(0.5, -0.22))
    return png(fig)


def all_figures(results: Results) -> dict[str, bytes]:
    figs = {"heat_map": heat_map(results), "errors": error_bars(results),
            "revision": revision_chart(results)}
    return {name: data for name, data in figs.items() if data is not None}
