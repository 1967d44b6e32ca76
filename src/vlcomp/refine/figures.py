"""Figures of the refine stage (PNG + PDF, written deterministically)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.colors import LogNorm

from vlcomp.figure_files import save_figure
from vlcomp.refine.candidates import GROUP_COLUMNS
from vlcomp.refine.priors import AUTO, AUTO_MAX_BINS, heatmap_bins, masked_reasons

PAGE_IN = (7.5, 10.0)  # the largest figure that fits an A4 or letter page with margins
GAP_PANEL_MAX_IN = 2.6  # a gap panel's side when the page leaves room for more
GAP_PANEL_MIN_IN = 0.65  # the smallest readable side: 15 groups fill a page
GAP_PANEL_PAD_IN = (0.45, 1.0)  # around a gap panel: ticks and axis labels, 4 title lines
GAP_HEAD_IN = 1.6  # the gap figure's title, colour bar and footnote
GAP_MARGIN_IN = 0.2  # room for the right column's titles, wider than their panels
GAP_FONT = 6.0


def _label(row: dict[str, object], group_by: list[str]) -> str:
    return " / ".join(str(row[c]) for c in group_by if row[c] is not None)


def gap_grid(groups: int) -> tuple[int, int, float]:
    """(rows, groups per row, panel side in inches) of the refinement figure, whose groups
    are each a (before, after) pair of square panels: the layout of 1 to 3 groups per row
    whose panels are the largest that fit ``PAGE_IN`` (at most ``GAP_PANEL_MAX_IN``; of
    equal sides, the wider layout). Up to 15 groups fit; more (a benchmark of more than 15
    family / target types) keep ``GAP_PANEL_MIN_IN`` and make the figure taller than a
    page rather than unreadable."""
    pad_w, pad_h = GAP_PANEL_PAD_IN
    layouts = []
    for per_row in range(1, 4):
        rows = math.ceil(max(1, groups) / per_row)
        side = min(
            GAP_PANEL_MAX_IN,
            (PAGE_IN[0] - GAP_MARGIN_IN) / (2 * per_row) - pad_w,
            (PAGE_IN[1] - GAP_HEAD_IN) / rows - pad_h,
        )
        layouts.append((round(side, 6), per_row, rows, side))  # rounded: equal sides tie
    _, per_row, rows, side = max(layouts)
    return rows, per_row, max(side, GAP_PANEL_MIN_IN)


def count_ticks(top: float) -> list[float]:
    """Ticks of a log colour bar of counts from 1 to ``top``: 1, 2, 5, 10, 20, 50, ... and
    ``top`` itself unless a tick is close below it."""
    ticks = [m * 10**e for e in range(int(math.log10(max(top, 1))) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if t <= top]
    return ticks if top < 1.4 * ticks[-1] else [*ticks, top]


def _group_rows(items: pl.DataFrame, group: dict[str, object], group_by: list[str]) -> pl.DataFrame:
    return items.filter(
        pl.all_horizontal(
            pl.col(c).is_null() if group[c] is None else pl.col(c) == group[c] for c in group_by
        )
    )


def plot_refinement_gaps(
    items: pl.DataFrame,
    png: str | Path,
    pdf: str | Path,
    scorer_names: tuple[str, str] = ("scorer 1", "scorer 2"),
    group_by: list[str] | None = None,
    bins: int = 40,
    counts: pl.DataFrame | None = None,
) -> None:
    """SugarCrepe Fig. 4 style: per group, a 2-D histogram of the two scorers' normalised
    gaps (scorer 1 on x, scorer 2 on y) before and after refinement, side by side, groups in
    a grid that fits a page (``gap_grid``), one log colour scale of pairs per cell for every
    panel with its colour bar. A panel's title names its group, stage and n, and per scorer
    the share of positive gaps among the nonzero ones and the number of zero gaps (ties).
    Group columns with one value in every group (the benchmark) go to the figure's title. A
    group that kept nothing says why on its "after" panel (``counts``' ``note``, from
    ``refine_candidates``)."""
    group_by = list(group_by or GROUP_COLUMNS)
    groups = items.select(group_by).unique().sort(group_by, nulls_last=True).to_dicts()
    shared = [c for c in group_by if items[c].n_unique() == 1 and items[c][0] is not None]
    own = [c for c in group_by if c not in shared]
    rows, per_row, side = gap_grid(len(groups))
    pad_w, pad_h = GAP_PANEL_PAD_IN
    fig, axes = plt.subplots(
        rows, 2 * per_row, squeeze=False, layout="constrained",
        figsize=(
            2 * per_row * (side + pad_w) + GAP_MARGIN_IN, rows * (side + pad_h) + GAP_HEAD_IN
        ),
    )  # fmt: skip
    edges = np.linspace(-1.0, 1.0, bins + 1)
    notes = {}
    if counts is not None and "note" in counts.columns:
        notes = {
            tuple(row[c] for c in group_by): row["note"]
            for row in counts.filter(pl.col("note").is_not_null()).iter_rows(named=True)
        }
    panels = []
    for group in groups:
        rows_of = _group_rows(items, group, group_by)
        for stage, subset in [("before", rows_of), ("after", rows_of.filter("kept"))]:
            x, y = subset["normalised_1"].to_numpy(), subset["normalised_2"].to_numpy()
            panels.append((group, stage, subset, np.histogram2d(x, y, bins=[edges, edges])[0]))
    top = max([1.0, *(float(h.max()) for *_, h in panels if h.size)])
    norm = LogNorm(vmin=1, vmax=max(top, 2.0))
    mesh = None
    s1, s2 = scorer_names
    wrap_at = max(16, int((side + pad_w) * 72 / (GAP_FONT * 0.6)))
    for ax, (group, stage, subset, histogram) in zip(axes.flat, panels, strict=False):
        if histogram.any():
            mesh = ax.pcolormesh(
                edges, edges, np.ma.masked_equal(histogram.T, 0), norm=norm, cmap="viridis"
            )
        ax.axhline(0, color="grey", linewidth=0.5)
        ax.axvline(0, color="grey", linewidth=0.5)
        lines = [textwrap.fill(_label(group, own), wrap_at)] if own else []
        lines.append(f"{stage}, n={subset.height}")
        for k, name in enumerate(scorer_names, start=1):
            gaps = subset[f"gap_{k}"].to_numpy()
            nonzero, ties = int((gaps != 0).sum()), int((gaps == 0).sum())
            share = f"{(gaps > 0).sum() / nonzero:.2f}" if nonzero else "n/a"
            lines.append(f"{name} {share} ({ties} {'tie' if ties == 1 else 'ties'})")
        ax.set_title("\n".join(lines), fontsize=GAP_FONT)
        ax.set_xlim(-1, 1)
        ax.set_ylim(-1, 1)
        ax.set_aspect("equal")
        ax.set_xticks([-1, 0, 1])
        ax.set_yticks([-1, 0, 1])
        ax.tick_params(labelsize=GAP_FONT, length=2, pad=1)
        ax.set_xlabel(f"{s1} gap", fontsize=GAP_FONT, labelpad=1)
        ax.set_ylabel(f"{s2} gap", fontsize=GAP_FONT, labelpad=1)
        note = notes.get(tuple(group[c] for c in group_by))
        if stage == "after" and subset.height == 0:
            inside = max(16, int(side * 72 / (GAP_FONT * 0.6)))
            _say_why(ax, note or "refinement kept no pair of this group", inside)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    if mesh is not None:
        ticks = count_ticks(norm.vmax)
        bar = fig.colorbar(mesh, ax=axes, location="bottom", shrink=0.5, aspect=40,
                           ticks=ticks, format="%g")  # fmt: skip
        bar.minorticks_off()
        bar.set_label("pairs per cell (log scale; white: none)", fontsize=GAP_FONT + 1)
        bar.ax.tick_params(labelsize=GAP_FONT)
    where = " / ".join(str(items[c][0]) for c in shared)
    title = (
        f"Adversarial refinement{' of ' + where if where else ''}: normalised gaps of "
        f"{s1} (x) and {s2} (y), before and after"
    )
    footnote = (
        "gap = score(positive) - score(negative), normalised to [-1, 1] per scorer and "
        "group; right of / above 0: the scorer prefers the positive. Under each title: per "
        "scorer, the share of positive gaps among its nonzero ones, P(gap > 0 | gap != 0) "
        "(0.50 after refinement: a blind scorer is at chance), and its ties (zero gaps). "
        f"{bins} x {bins} histogram bins."
    )
    fig.suptitle(_fill(title, fig, 8), fontsize=8)
    fig.supxlabel(_fill(footnote, fig, GAP_FONT), fontsize=GAP_FONT)
    save_figure(fig, png, pdf)


def _fill(text: str, fig: plt.Figure, fontsize: float) -> str:
    """``text`` wrapped to the figure's width."""
    return textwrap.fill(text, int((fig.get_figwidth() - 0.4) * 72 / (fontsize * 0.6)))


def _say_why(ax: plt.Axes, text: str, width: int = 38) -> None:
    """Why a panel is empty, written on it (lines of at most ``width`` characters)."""
    ax.text(0.5, 0.5, textwrap.fill(text, width), transform=ax.transAxes, ha="center",
            va="center", fontsize=6, wrap=True,
            bbox={"facecolor": "white", "edgecolor": "#999999", "alpha": 0.9})  # fmt: skip


def plot_prior_heatmap(
    table: pl.DataFrame,
    png: str | Path,
    pdf: str | Path,
    lm_name: str = "blind LM",
    bins_setting: int | str | None = None,
) -> None:
    """Accuracy per (positive, negative) perplexity bin, one panel per model; cells with
    fewer than ``min_count`` items are masked (grey). Titles give the b x b bins used; with
    ``bins_setting="auto"`` a caption says how b was chosen. A panel whose every cell is
    masked says why (``priors.masked_reasons``)."""
    models = table["model"].unique().sort().to_list()
    reasons = masked_reasons(table)
    bins = heatmap_bins(table)
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.6), squeeze=False)
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#dddddd")
    image = None
    for ax, model in zip(axes[0], models, strict=True):
        rows = table.filter(pl.col("model") == model).sort("positive_bin", "negative_bin")
        values = rows["accuracy"].fill_null(np.nan).to_numpy().reshape(bins, bins)
        image = ax.imshow(np.ma.masked_invalid(values), origin="lower", cmap=cmap, vmin=0, vmax=1)
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=4.5)
        auto = ", auto" if bins_setting == AUTO else ""
        ax.set_title(
            f"{model}: {bins}x{bins} bins{auto} (masked: n < {int(rows['min_count'][0])})",
            fontsize=8,
        )
        ax.set_xlabel(f"negative perplexity bin ({lm_name}, low to high)", fontsize=7)
        ax.set_ylabel("positive perplexity bin (low to high)", fontsize=7)
        ax.set_xticks(range(bins))
        ax.set_yticks(range(bins))
        ax.tick_params(labelsize=6)
        if model in reasons:
            _say_why(ax, reasons[model])
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="accuracy")
    if bins_setting == AUTO and models:
        n = int(table.group_by("model").agg(pl.col("n").sum())["n"].min())
        fewest = ", the fewest of any model" if len(models) > 1 else ""
        caption = (
            f"priors.bins auto: b = {bins}, the largest b <= {AUTO_MAX_BINS} with "
            f"n / b\u00b2 >= min_count = {int(table['min_count'][0])} (n = {n} items{fewest}), "
            "at least 2"
        )
        fig.text(0.01, 0.01, textwrap.fill(caption, 70 * len(models)), fontsize=6, va="bottom")
    save_figure(fig, png, pdf)
