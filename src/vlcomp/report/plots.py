"""One figure per metric table, chosen by what the table holds (the benchmark's kind), and
the conventions every report figure follows:

- panels wrap into a grid of at most ``MAX_COLUMNS`` columns and the figure is at most
  ``MAX_WIDTH_PX`` wide at the saved ``DPI`` (``panel_grid``), laid out by matplotlib's
  constrained layout; titles wrap to the figure's width (``suptitle``);
- legends and notes sit outside the axes (``bar_legend``, ``footnote``);
- every bar carries its value and n (``value_bar``); a zero bar is drawn as a line on the
  axis with its "0.00"; a cell without items is a hatched empty box in its colour marked
  "no items", so that missing never reads as zero; ``fit_value_labels`` makes room for the labels;
- a panel with nothing to show says why on it (``say_why``);
- a panel of a benchmark with parts names the part its bars show (``part_labels``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from vlcomp.figure_files import DPI, plt

MAX_WIDTH_PX = 2000
MAX_WIDTH_IN = MAX_WIDTH_PX / DPI
MAX_COLUMNS = 4
LABEL_SIZE = 6.5
VALUE_LABEL = "value-label"  # gid of the value / n text of a bar
EMPTY_PANEL = "empty-panel"  # gid of the text that says why a panel is empty
NO_ITEMS = "no items"
MISSING_HEIGHT = 0.05
LEGEND_WIDTH_IN = 1.6  # a legend right of the panels ("0.00 (line on the axis)")
MISSING_STYLE = {"fill": False, "hatch": "////", "edgecolor": "#888888", "linewidth": 0.6}


# --------------------------------------------------------------------------- conventions


def grid_shape(
    panels: int, panel_width: float, max_columns: int = MAX_COLUMNS, room: float = MAX_WIDTH_IN
) -> tuple[int, int]:
    """(rows, columns): as few rows as ``room`` inches allow, then the columns balanced over
    them (4 panels that fit 3 to a row give 2 x 2, not 3 + 1)."""
    fit = max(1, min(max_columns, int(room // max(panel_width, 1e-9))))
    rows = math.ceil(max(1, panels) / fit)
    return rows, math.ceil(max(1, panels) / rows)


def panel_grid(
    panels: int,
    panel_width: float,
    panel_height: float,
    *,
    sharey: bool = True,
    extra_height: float = 1.0,
    max_columns: int = MAX_COLUMNS,
    legend_width: float = LEGEND_WIDTH_IN,
) -> tuple[plt.Figure, list[plt.Axes]]:
    """A constrained-layout figure with ``panels`` axes in a grid (row-major) and room for a
    legend on the right, at most ``MAX_WIDTH_IN`` inches wide; grid cells past ``panels``
    are hidden."""
    rows, columns = grid_shape(panels, panel_width, max_columns, MAX_WIDTH_IN - legend_width)
    width = min(MAX_WIDTH_IN, columns * panel_width + 0.6 + legend_width)
    fig, axes = plt.subplots(
        rows, columns, squeeze=False, sharey=sharey, layout="constrained",
        figsize=(width, rows * panel_height + extra_height),
    )  # fmt: skip
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.set_visible(False)
    return fig, flat[:panels]


def wrap(text: str, fig: plt.Figure, fontsize: float, margin: float = 0.4) -> str:
    """``text`` wrapped, line by line, to the figure's width less ``margin`` inches."""
    inches = max(2.0, fig.get_figwidth() - margin)
    chars = max(30, int(inches * 72 / (fontsize * 0.58)))
    return "\n".join(textwrap.fill(line, chars) for line in text.splitlines())


def suptitle(fig: plt.Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width (legends sit right of the axes, level with
    their middle, not with the title)."""
    fig.suptitle(wrap(text, fig, fontsize), fontsize=fontsize)


def footnote(fig: plt.Figure, text: str, fontsize: float = 7) -> None:
    """A note under every panel (constrained layout makes room for it)."""
    fig.supxlabel(wrap(text, fig, fontsize), fontsize=fontsize)


def say_why(ax: plt.Axes, text: str) -> None:
    """Why a panel shows nothing (or less than its neighbours), written on it."""
    ax.text(0.5, 0.5, textwrap.fill(text, 40), transform=ax.transAxes, ha="center",
            va="center", fontsize=7, gid=EMPTY_PANEL,
            bbox={"facecolor": "white", "edgecolor": "#999999", "alpha": 0.9})  # fmt: skip


def _is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def value_bar(
    ax: plt.Axes,
    x: float,
    width: float,
    value: float | None,
    n: int | None,
    colour: str,
    low: float | None = None,
    high: float | None = None,
) -> str:
    """One bar with its value and n written above it; "missing" (a hatched empty box marked
    "no items", or "n/a" with the n of a cell whose value is undefined), "zero" (a line on
    the axis and "0.00") or "bar". Call ``fit_value_labels`` once every bar is drawn."""
    if _is_missing(value):
        ax.bar(x, MISSING_HEIGHT, width, **{**MISSING_STYLE, "edgecolor": colour})  # whose
        _label(ax, x, MISSING_HEIGHT, NO_ITEMS if not n else f"n/a n={n}")
        return "missing"
    error = None
    if low is not None and high is not None:
        error = [[max(0.0, value - low)], [max(0.0, high - value)]]
    ax.bar(x, value, width, yerr=error, capsize=2, color=colour, ecolor="#333333",
           error_kw={"lw": 0.8})  # fmt: skip
    if value == 0:
        ax.plot([x - width / 2, x + width / 2], [0, 0], color=colour, lw=3,
                solid_capstyle="butt", clip_on=False)  # fmt: skip
    top = max(value, high) if high is not None else value
    _label(ax, x, top, f"{value:.2f} n={n}")
    return "zero" if value == 0 else "bar"


def _label(ax: plt.Axes, x: float, y: float, text: str) -> None:
    ax.annotate(text, (x, y), xytext=(0, 2), textcoords="offset points", rotation=90,
                ha="center", va="bottom", fontsize=LABEL_SIZE, gid=VALUE_LABEL,
                annotation_clip=False)  # fmt: skip


def part_labels(ax: plt.Axes, parts: Sequence[str | None]) -> None:
    """Under a panel of bars at x = 0, 1, ..., the benchmark part each bar shows (``None``:
    none, or no bar): once as the axis label when every bar shows the same part, else under
    each bar; nothing when no bar shows a part."""
    shown = sorted({p for p in parts if p is not None})
    if len(shown) == 1:
        ax.set_xlabel(f"part: {shown[0]}", fontsize=LABEL_SIZE + 0.5)
    elif shown:
        ax.set_xticks(range(len(parts)), [p or "" for p in parts], rotation=90,
                      fontsize=LABEL_SIZE)  # fmt: skip
        ax.tick_params(axis="x", length=0)
        ax.set_xlabel("part shown", fontsize=LABEL_SIZE + 0.5)


def chance_tick(ax: plt.Axes, x: float, width: float, value: float) -> None:
    ax.plot([x - width / 2, x + width / 2], [value, value], color="black", lw=1.1)


def fraction_axis(ax: plt.Axes, label: str | None = None) -> None:
    """A 0..1 y axis (ticks stop at 1; ``fit_value_labels`` may raise the top for labels);
    a long label wraps rather than run past the axes."""
    ax.set_ylim(0, 1.05)
    ax.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.grid(axis="y", alpha=0.3)
    if label:
        ax.set_ylabel(textwrap.fill(label, 34))


def value_labels(fig: plt.Figure) -> list[str]:
    """The value / n labels of every bar of ``fig``."""
    return [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == VALUE_LABEL]


def fit_value_labels(fig: plt.Figure, margin: float = 0.02) -> None:
    """Raise each y axis's top until every value label fits inside its axes (labels are in
    points, so their height in data units depends on the axes' size: measured, not
    guessed). Axes that share y get the largest top of their group."""
    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    tops: dict[plt.Axes, float] = {}
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_gid() == VALUE_LABEL]
        if not labels or not ax.get_visible():
            continue
        low, top = ax.get_ylim()
        height = ax.get_window_extent(renderer).height
        for text in labels:
            anchor = text.xy[1]
            above = text.get_window_extent(renderer).y1 - ax.transData.transform((0, anchor))[1]
            room = max(0.2, 1 - margin - above / height)
            top = max(top, low + (anchor - low) / room)
        tops[ax] = top
    for ax in tops:
        shared = [a for a in ax.get_shared_y_axes().get_siblings(ax) if a in tops] or [ax]
        ax.set_ylim(ax.get_ylim()[0], max(tops[a] for a in shared))


def bar_legend(
    fig: plt.Figure,
    colours: Mapping[str, str],
    title: str = "split",
    chance: bool = True,
    missing: bool = False,
    zero: bool = False,
) -> None:
    """One legend for the figure, outside the axes on the right: a patch per coloured
    label, then the chance tick, the "no items" box and the zero line when drawn."""
    handles: list = [Patch(color=colour, label=name) for name, colour in colours.items()]
    if chance:
        handles.append(Line2D([], [], color="black", lw=1.1, label="chance"))
    if missing:
        handles.append(Patch(**MISSING_STYLE, label=f"{NO_ITEMS} (hatched, split colour)"))
    if zero:
        handles.append(Line2D([], [], color="#555555", lw=3, label="0.00 (line on the axis)"))
    fig.legend(handles=handles, loc="outside right center", fontsize=7, title=title,
               title_fontsize=7, frameon=False)  # fmt: skip
