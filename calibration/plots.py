"""The calibration report's figures (matplotlib, Agg backend), as PNG bytes."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from calibration.report import CalibrationData, Report  # noqa: E402


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _expert_mean(e: np.ndarray) -> np.ndarray:
    return np.nanmean(np.where(np.isfinite(e), e, np.nan), axis=1)


def scatter(data: CalibrationData) -> bytes:
    """Grader against the expert mean, with the identity line."""
    g, e = data.overall
    m = _expert_mean(e)
    lo, hi = data.domain[0], data.domain[-1]
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="identity")
    ax.scatter(m, g, s=14, alpha=0.6)
    ax.set(xlim=(lo - 0.2, hi + 0.2), ylim=(lo - 0.2, hi + 0.2), xlabel="expert mean (points)",
           ylabel="grader (points)", title="Overall score")
    ax.legend(loc="upper left", frameon=False)
    return png(fig)


def bland_altman(data: CalibrationData, report: Report) -> bytes:
    """Difference (grader - expert mean) against the mean of the two, bias and limits."""
    g, e = data.overall
    m = _expert_mean(e)
    ba = report.overall["bland_altman"]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.scatter((g + m) / 2, g - m, s=14, alpha=0.6)
    ax.axhline(ba["bias"], color="C1", label=f"bias {ba['bias']:.2f}")
    for limit in ba["loa"]:
        ax.axhline(limit, color="C1", ls="--")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="mean of grader and experts (points)", ylabel="grader - experts (points)",
           title="Bland-Altman")
    ax.legend(frameon=False)
    return png(fig)


def tag_agreement(report: Report) -> bytes:
    """Per error class: Gwet's AC1 of the grader and of the experts (ceiling)."""
    classes = report.error_tags["classes"]
    names = list(classes)
    grader = [classes[c]["grader"]["ac1"] or 0 for c in names]
    ceiling = [((classes[c]["ceiling_mean"] or {}).get("ac1")) or 0 for c in names]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.bar(x - 0.2, grader, 0.4, label="grader vs expert majority")
    ax.bar(x + 0.2, ceiling, 0.4, label="expert vs other experts")
    ax.set_xticks(x, names, rotation=20)
    ax.set(ylim=(min(0, *grader, *ceiling) - 0.05, 1), ylabel="Gwet's AC1",
           title="Error-class agreement")
    ax.legend(frameon=False, fontsize=8)
    return png(fig)


def ceiling(report: Report) -> bytes:
    """Each expert and the grader against the other experts: Pearson r and MAE."""
    rows = report.overall["ceiling"]["per_expert"]
    labels = [f"expert {r['expert'] + 1}" for r in rows]
    expert_r = [r["expert_vs_others"]["pearson"]["r"] or 0 for r in rows]
    grader_r = [r["grader_vs_others"]["pearson"]["r"] or 0 for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(5, 3.4))
    ax.bar(x - 0.2, expert_r, 0.4, label="left-out expert vs others")
    ax.bar(x + 0.2, grader_r, 0.4, label="grader vs the same others")
    ax.set_xticks(x, labels)
    ax.set(ylim=(0, 1), ylabel="Pearson r", title="Human ceiling")
    ax.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    return png(fig)


def all_figures(data: CalibrationData, report: Report) -> dict[str, bytes]:
    figs = {"scatter": scatter(data), "bland_altman": bland_altman(data, report),
            "error_tags": tag_agreement(report)}
    if report.overall.get("ceiling"):
        figs["ceiling"] = ceiling(report)
    return figs
