"""Every chart of the calibration report, the results and the leaderboard, drawn from the demo
study and measured on the rendered figure: no legend over the axes or their bars, no two labels
on top of each other, no text under `FONT_MIN` points nor, at the width the page shows the PNG,
under 10 px."""

import struct
from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from calibration import plots
from calibration.protocol import Gate, Statistics
from calibration.report import build, collect
from db.engine import session
from results import results
from results.leaderboard import leaderboard
from results.publish import plots as results_plots

MIN_PX = 10  # smallest text height, in screen pixels, as the page shows the figure
# How wide the page shows each figure at 1600 px wide: report figures two to a row, the others
# the full width of the main column.
REPORT_PX, FULL_PX = 560, 1100


@pytest.fixture(scope="module")
def demo(demo_template: Path) -> dict:
    """What the charts are drawn from, computed once from the demo study (config 1)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("NMB_HOME", str(demo_template))
    mp.delenv("NMB_DATABASE_URL", raising=False)
    try:
        with session() as s:
            data = collect(s, config_id=1, part="dev")
            return {"data": data,
                    "report": build(data, config_id=1, part="dev", gate=Gate(),
                                    statistics=Statistics(bootstrap=200)),
                    "results": results.build(s, config_id=1),
                    "board": leaderboard(s, config_id=1, ks=(1, 5)),
                    "by_family": leaderboard(s, config_id=1, ks=(1,), by="family")}
    finally:
        mp.undo()


def charts(demo: dict) -> dict[str, tuple[Figure, int]]:
    """{name: (a new figure, its width on the page in px)} for every chart."""
    figs = {name: (fig, REPORT_PX)
            for name, fig in plots.figures(demo["data"], demo["report"]).items()}
    figs |= {name: (fig, FULL_PX) for name, fig in results_plots.figures(demo["results"]).items()}
    figs["leaderboard"] = results_plots.leaderboard_chart(demo["board"], (1, 5)), FULL_PX
    figs["leaderboard by family"] = (results_plots.leaderboard_chart(demo["by_family"], (1,)),
                                     FULL_PX)
    return figs


def _texts(fig: Figure) -> list:
    """Every visible, non-empty text of the figure: titles, axis and tick labels, annotations,
    legend entries."""
    found = fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize"))
    return [t for t in found if t.get_visible() and t.get_text().strip() and t.figure is fig]


def _legends(fig: Figure) -> list:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]


def layout_problems(fig: Figure, page_px: int) -> list[str]:
    """What makes the drawn figure hard to read, one line each."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    for legend in _legends(fig):
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if box.overlaps(ax.get_window_extent(renderer)):
                problems.append(f"legend over the axes {ax.get_title()!r}")
            bars = [p for p in ax.patches if p.get_width() and p.get_height()]
            if any(box.overlaps(p.get_window_extent(renderer)) for p in bars):
                problems.append(f"legend over the bars of {ax.get_title()!r}")
    texts = _texts(fig)
    width_px = fig.get_size_inches()[0] * plots.DPI
    scale = min(1.0, page_px / width_px)
    for t in texts:
        if t.get_fontsize() < plots.FONT_MIN:
            problems.append(f"{t.get_text()!r} at {t.get_fontsize()} pt")
        if t.get_fontsize() * plots.DPI / 72 * scale < MIN_PX:
            problems.append(f"{t.get_text()!r} under {MIN_PX} px on the page")
    boxes = [(t.get_text(), t.get_window_extent(renderer).shrunk(0.98, 0.9)) for t in texts]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if box_a.overlaps(box_b):
                problems.append(f"{a!r} overlaps {b!r}")
    return problems


def test_every_chart_is_laid_out_legibly(demo: dict) -> None:
    figs = charts(demo)
    assert set(figs) >= {"scatter", "bland_altman", "error_tags", "ceiling", "heat_map",
                           "errors", "anchoring", "leaderboard", "leaderboard by family"}
    problems = {name: layout_problems(fig, px) for name, (fig, px) in figs.items()}
    assert problems == dict.fromkeys(figs, []), problems


def test_the_old_error_class_legend_is_caught(demo: dict) -> None:
    """The check fails on the old layout: the legend inside the axes, over the bars."""
    fig, px = plots.tag_agreement(demo["report"]), REPORT_PX
    for legend in fig.legends:
        legend.remove()
    fig.axes[0].legend(loc="upper right", frameon=False)
    assert any("over the bars" in p for p in layout_problems(fig, px))


def test_leaderboard_chart_sorts_best_first_with_intervals(demo: dict) -> None:
    fig = results_plots.leaderboard_chart(demo["board"], (1, 5))
    ax = fig.axes[0]
    bars = sorted(ax.patches, key=lambda p: p.get_y())  # top to bottom (y axis inverted)
    widths = [p.get_width() for p in bars]
    assert len(widths) == 6 and widths == sorted(widths, reverse=True)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["model", "human group"]
    errorbars = next(c for c in ax.containers if isinstance(c, ErrorbarContainer))
    segments = errorbars.lines[2][0].get_segments()  # one horizontal line per bar
    best = max(demo["board"], key=lambda r: r["pass@1"])
    top = min(segments, key=lambda seg: seg[0][1])
    assert len(segments) == 6 and list(top[:, 0]) == pytest.approx(best["pass@1 95% CI"])


def test_charts_render_to_png(demo: dict) -> None:
    for name, (fig, _) in charts(demo).items():
        data = plots.png(fig)
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), name
        width = struct.unpack(">I", data[16:20])[0]
        assert 300 < width <= 1200, (name, width)


@pytest.mark.filterwarnings("ignore:constrained_layout not applied")  # a 100-character name
def test_names_are_drawn_as_plain_text_never_as_mathtext() -> None:
    """Model names come from outside: `$\\foo$` (ValueError), braces nested 50 deep
    (RecursionError) and `$\\alpha$` (drawn as a Greek letter) are drawn as written, even
    where another module turned mathtext back on."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    names = [r"$\foo$", "$" + "{" * 50 + "x" + "}" * 50 + "$", r"$\alpha$", "a" * 8]
    rows = [{"who": n, "group": "model", "pass@1": 0.5, "pass@1 95% CI": (0.4, 0.6)}
            for n in names]
    with plt.rc_context({"text.parse_math": True}):
        fig = results_plots.leaderboard_chart(rows, (1,))
        assert plots.png(fig).startswith(b"\x89PNG")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # (png closed the figure's own)
    labels = {t.get_text(): t for t in fig.findobj(Text) if t.get_text() in names}
    width = {n: labels[n].get_window_extent(renderer).width
             for n in (r"$\alpha$", "a" * 8)}
    assert width[r"$\alpha$"] > 0.6 * width["a" * 8]  # eight characters, not one letter
