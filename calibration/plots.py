"""The calibration report's figures (matplotlib, Agg backend), as PNG bytes.

Every figure uses constrained layout with its legend outside the axes, below them
(`legend_below`), so a legend never covers data, and no text is smaller than `FONT_MIN` points
(at `DPI`, 12 px: legible where the page shows the PNG at its own size, two figures side by
side in the app's wide layout).

Every text is drawn as plain text: model names, error classes and other text from outside
would otherwise be read as mathtext between `$` signs (`$\\foo$` ends in a ValueError, deep
braces in a RecursionError, `$\\alpha$` is drawn as a Greek letter) or as TeX. `png`, the one
way out for every figure, turns math parsing and TeX off on each text artist, and draws
under the same settings (tick labels are made while drawing).
"""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from calibration.report import CalibrationData, Report  # noqa: E402

DPI = 110
FONT_MIN = 8  # points
PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}
plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "xtick.labelsize": FONT_MIN,
                     "ytick.labelsize": FONT_MIN, "legend.fontsize": FONT_MIN, **PLAIN_TEXT})


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes, every text in it drawn as plain text (no mathtext, no TeX)."""
    buf = io.BytesIO()
    try:
        with plt.rc_context(PLAIN_TEXT):
            for text in fig.findobj(Text):
                text.set_parse_math(False)
                text.set_usetex(False)
            fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buf.getvalue()


def figure(width: float, height: float) -> tuple[Figure, plt.Axes]:
    """A figure of one axes, in inches, laid out so that an outside legend gets its room."""
    return plt.subplots(figsize=(width, height), layout="constrained")


def legend_below(fig: Figure, handles=None, labels=None, ncol: int = 2) -> None:
    """The figure's legend centred under its axes, outside them (never over the data)."""
    if handles is None:
        handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)


def label(name: str) -> str:
    """An error class or measure as a label: "visual_hallucination" → "visual hallucination"."""
    return name.replace("_", " ")


def _expert_mean(e: np.ndarray) -> np.ndarray:
    return np.nanmean(np.where(np.isfinite(e), e, np.nan), axis=1)


def scatter(data: CalibrationData) -> Figure:
    """Grader against the expert mean, with the identity line."""
    g, e = data.overall
    m = _expert_mean(e)
    lo, hi = data.domain[0], data.domain[-1]
    fig, ax = figure(4.4, 4.6)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="identity")
    ax.scatter(m, g, s=14, alpha=0.6, label="item")
    ax.set(xlim=(lo - 0.2, hi + 0.2), ylim=(lo - 0.2, hi + 0.2), xlabel="expert mean (points)",
           ylabel="grader (points)", title="Overall score")
    legend_below(fig)
    return fig


def bland_altman(data: CalibrationData, report: Report) -> Figure:
    """Difference (grader - expert mean) against the mean of the two, bias and limits."""
    g, e = data.overall
    m = _expert_mean(e)
    ba = report.overall["bland_altman"]
    fig, ax = figure(5.4, 4.0)
    ax.scatter((g + m) / 2, g - m, s=14, alpha=0.6, label="item")
    ax.axhline(ba["bias"], color="C1", label=f"bias {ba['bias']:.2f}")
    for i, limit in enumerate(ba["loa"]):
        ax.axhline(limit, color="C1", ls="--",
                   label="95% limits of agreement" if i == 0 else None)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="mean of grader and experts (points)", ylabel="grader - experts (points)",
           title="Bland-Altman")
    for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        # only the ticks in view: one laid out beyond the axes' corner would meet the other's
        axis.set_ticks([v for v in axis.get_ticklocs() if limits[0] <= v <= limits[1]])
    legend_below(fig, ncol=3)
    return fig


def tag_agreement(report: Report) -> Figure:
    """Per error class: Gwet's AC1 of the grader and of the experts (ceiling), one row each."""
    classes = report.error_tags["classes"]
    names = list(classes)
    grader = [classes[c]["grader"]["ac1"] or 0 for c in names]
    ceiling = [((classes[c]["ceiling_mean"] or {}).get("ac1")) or 0 for c in names]
    y = np.arange(len(names))
    fig, ax = figure(6.0, 0.45 * len(names) + 1.7)
    ax.barh(y - 0.2, grader, 0.4, label="grader vs expert majority")
    ax.barh(y + 0.2, ceiling, 0.4, label="expert vs other experts")
    ax.set_yticks(y, [label(n) for n in names])
    ax.invert_yaxis()
    ax.set(xlim=(min(0, *grader, *ceiling) - 0.05, 1), xlabel="Gwet's AC1",
           title="Error-class agreement")
    legend_below(fig)
    return fig


def ceiling(report: Report) -> Figure:
    """Each expert and the grader against the other experts: Pearson r."""
    rows = report.overall["ceiling"]["per_expert"]
    labels = [f"expert {r['expert'] + 1}" for r in rows]
    expert_r = [r["expert_vs_others"]["pearson"]["r"] or 0 for r in rows]
    grader_r = [r["grader_vs_others"]["pearson"]["r"] or 0 for r in rows]
    x = np.arange(len(rows))
    fig, ax = figure(5.4, 3.8)
    ax.bar(x - 0.2, expert_r, 0.4, label="left-out expert vs others")
    ax.bar(x + 0.2, grader_r, 0.4, label="grader vs the same others")
    ax.set_xticks(x, labels)
    ax.set(ylim=(0, 1), ylabel="Pearson r", title="Human ceiling")
    legend_below(fig)
    return fig


def figures(data: CalibrationData, report: Report) -> dict[str, Figure]:
    figs = {"scatter": scatter(data), "bland_altman": bland_altman(data, report),
            "error_tags": tag_agreement(report)}
    if report.overall.get("ceiling"):
        figs["ceiling"] = ceiling(report)
    return figs


def all_figures(data: CalibrationData, report: Report) -> dict[str, bytes]:
    return {name: png(fig) for name, fig in figures(data, report).items()}
