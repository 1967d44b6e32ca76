"""Figures, one function per figure target. PNG and PDF are written deterministically.

The tables are ``vlcomp.evaluate.metrics.METRIC_SCHEMA`` metric tables (any benchmark;
extra columns such as ``training_corpus`` of the held-in / held-out tables are allowed):
- ``plot_pair_accuracy``: accuracy per negative type (``family``) per model, one bar per
  split when there are several, bootstrap CIs as error bars, chance as black ticks;
- ``plot_retrieval``: image->text and text->image Recall@K per model and split.
Each title names the benchmark(s), model(s) and split(s) shown, and a note under the figure
what each model's values are computed from (``accounting.score_kinds_text``); panels,
labels and legends follow ``vlcomp.report.plots``' conventions (value and n on every bar,
"no items" apart from zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib.lines import Line2D

from vlcomp.figure_files import SPLIT_COLOURS, plt, save_figure
from vlcomp.report.accounting import score_kinds_text
from vlcomp.report.plots import (
    MAX_COLUMNS,
    MAX_WIDTH_IN,
    bar_legend,
    chance_tick,
    fit_value_labels,
    footnote,
    fraction_axis,
    panel_grid,
    suptitle,
    value_bar,
)
from vlcomp.vocabulary import CHANCE

SPLIT_ORDER = [
    "all", "held_in", "held_out", "SC", "UC", "UA", "seen", "mixed", "unseen",
    "text_score", "image_score", "group_score", "itt_accuracy", "tot_accuracy",
]  # fmt: skip


def _ordered_splits(table: pl.DataFrame) -> list[str]:
    present = set(table["split"].drop_nulls().to_list())
    known = [s for s in SPLIT_ORDER if s in present]
    return known + sorted(present - set(known))


def _panels(table: pl.DataFrame) -> list[tuple[str, str | None, str | None]]:
    """(model, part, training corpus) per panel: one per model, and per part when a table
    stacks several parts."""
    models = table.filter(pl.col("model") != CHANCE)
    keys = ["model"] + [c for c in ("part", "training_corpus") if c in table.columns]
    rows = models.select(keys).unique().sort(keys, nulls_last=False).iter_rows(named=True)
    return [(r["model"], r.get("part"), r.get("training_corpus")) for r in rows]


def _cells(table: pl.DataFrame, who: str, part: str | None, corpus: str | None) -> pl.DataFrame:
    """Rows of ``who`` (a model or chance) for the panel's part and training corpus."""
    cells = table.filter(pl.col("model") == who)
    for column, value in (("part", part), ("training_corpus", corpus)):
        if column in table.columns:
            cells = cells.filter(
                pl.col(column).is_null() if value is None else pl.col(column) == value
            )
    return cells


def _title(table: pl.DataFrame, what: str, splits: Sequence[str]) -> str:
    benchmarks = ", ".join(sorted(set(table["benchmark"].to_list())))
    models = ", ".join(sorted(set(table["model"].to_list()) - {CHANCE}))
    split_text = ("split " if len(splits) == 1 else "splits ") + ", ".join(splits)
    return f"{benchmarks}: {what}\nmodels {models}; {split_text}"


def _panel_title(model: str, part: str | None, corpus: str | None) -> str:
    extra = [text for text in (part, f"trained on {corpus}" if corpus else None) if text]
    return model + (f" ({'; '.join(extra)})" if extra else "")


def _bars(
    ax: plt.Axes,
    table: pl.DataFrame,
    panel: tuple[str, str | None, str | None],
    xs_names: Sequence[str],
    x_column: str,
    splits: Sequence[str],
) -> set[str]:
    """One bar per (x, split) with its CI, value and n, and the chance value as a black
    tick; a (x, split) without a row is drawn as "no items". Returns what was drawn
    (``plots.value_bar``'s kinds)."""
    model, part, corpus = panel
    rows, chance = _cells(table, model, part, corpus), _cells(table, CHANCE, part, corpus)
    width = 0.8 / max(1, len(splits))
    drawn: set[str] = set()
    for s_index, split in enumerate(splits):
        for x_index, name in enumerate(xs_names):
            x = x_index + (s_index - (len(splits) - 1) / 2) * width
            where = (pl.col("split") == split) & (pl.col(x_column) == name)
            cell, base = rows.filter(where), chance.filter(where)
            if cell.height:
                r = cell.row(0, named=True)
                drawn.add(value_bar(ax, x, width, r["value"], r["n"],
                                    SPLIT_COLOURS.get(split, "#999999"), r["ci_low"],
                                    r["ci_high"]))  # fmt: skip
            else:
                drawn.add(value_bar(ax, x, width, None, None, "#999999"))
            if base.height:
                chance_tick(ax, x, width, base["value"][0])
    ax.set_xticks(range(len(xs_names)), xs_names, rotation=25, fontsize=8, ha="right")
    fraction_axis(ax)
    ax.set_title(_panel_title(*panel), fontsize=9)
    return drawn


def _panel_width(xs: int, splits: int) -> float:
    """Room for a vertical value label on every bar (about 0.2 inch each)."""
    return max(3.0, 0.9 + 0.22 * xs * splits + 0.2 * xs)


def _bar_figure(
    table: pl.DataFrame,
    xs_names: Sequence[str],
    x_column: str,
    ylabel: str,
    what: str,
    legend_title: str = "split",
) -> plt.Figure:
    """One panel per model (and part) in a grid, bars per x and split (``_bars``)."""
    splits = _ordered_splits(table)
    panels = _panels(table)
    fig, axes = panel_grid(len(panels), _panel_width(len(xs_names), len(splits)), 3.2)
    drawn: set[str] = set()
    for ax, panel in zip(axes, panels, strict=True):
        drawn |= _bars(ax, table, panel, xs_names, x_column, splits)
    for ax in axes:
        if ax.get_subplotspec().is_first_col():
            fraction_axis(ax, ylabel)
    bar_legend(fig, {s: SPLIT_COLOURS.get(s, "#999999") for s in splits}, legend_title,
               chance=table.filter(pl.col("model") == CHANCE).height > 0,
               missing="missing" in drawn, zero="zero" in drawn)  # fmt: skip
    suptitle(fig, _title(table, what, splits))
    scores = score_kinds_text(table)
    if scores:
        footnote(fig, scores)
    fit_value_labels(fig)
    return fig


def _read(metrics: str | Path, keep: pl.Expr, what: str) -> pl.DataFrame:
    table = pl.read_parquet(metrics)
    if "complexity" in table.columns:
        table = table.filter(pl.col("complexity").is_null())
    table = table.filter(keep)
    if table.filter(pl.col("model") != CHANCE).height == 0:
        raise ValueError(f"{metrics}: no {what} rows")
    return table


def pair_accuracy_figure(
    table: pl.DataFrame, metric: str = "accuracy", legend_title: str = "split"
) -> plt.Figure:
    """The figure of ``plot_pair_accuracy`` from its (filtered) table."""
    families = sorted(set(table["family"].to_list()))
    return _bar_figure(
        table, families, "family", f"{metric} (tie counts as wrong)",
        f"{metric} per negative type (95% bootstrap CI)", legend_title,
    )  # fmt: skip


def plot_pair_accuracy(metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """Accuracy per negative type (x) and split (bars), one panel per model (and part).
    A benchmark whose sets are not all pairs has no ``accuracy`` rows: its R@1 (the same
    quantity, one positive ranked first) is shown instead."""
    metric = "accuracy"
    if not pl.read_parquet(metrics, columns=["metric"])["metric"].eq(metric).any():
        metric = "R@1"
    table = _read(metrics, pl.col("metric") == metric, metric)
    save_figure(pair_accuracy_figure(table, metric), png, pdf)


def plot_scores(
    metrics: str | Path, png: str | Path, pdf: str | Path, names: Sequence[str]
) -> None:
    """Several per-item scores side by side per negative type, split "all": Winoground's
    text / image / group scores, or SugarCrepe++'s ITT / TOT accuracies."""
    table = _read(metrics, (pl.col("split") == "all") & pl.col("metric").is_in(names), names[0])
    table = table.with_columns(split=pl.col("metric"))
    fig = pair_accuracy_figure(table, " / ".join(names), legend_title="score")
    save_figure(fig, png, pdf)


def retrieval_figure(table: pl.DataFrame) -> plt.Figure:
    """The figure of ``plot_retrieval`` from its (filtered) table."""
    names = sorted(
        set(table["metric"].to_list()),
        key=lambda m: (m.split("_R@")[0], int(m.split("_R@")[1])),
    )
    return _bar_figure(
        table, names, "metric", "recall (tie counts as wrong)", "image-text retrieval Recall@K"
    )


def plot_retrieval(metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """i2t and t2i Recall@K (x) per split (bars), one panel per model."""
    table = _read(metrics, pl.col("metric").str.contains(r"^(i2t|t2i)_R@\d+$"), "Recall@K")
    save_figure(retrieval_figure(table), png, pdf)


# --------------------------------------------------------------------------- crossover


def crossover_figure(table: pl.DataFrame) -> plt.Figure:
    """One panel per (metric table, corpus): per split, the own model's accuracy minus the
    other model's on identical items (``vlcomp.evaluate.crossover``), with its paired
    bootstrap interval; filled markers are significant after Benjamini-Hochberg."""
    rows = table.filter(pl.col("family") == "all")
    panels = rows.select("table", "corpus").unique().sort("table", "corpus").rows()
    # A row per metric table, a column per corpus (wrapped past MAX_COLUMNS); each legend
    # sits right of its panel, so the panel is wider than its axes.
    n_cols = min(MAX_COLUMNS, len({corpus for _, corpus in panels}) or 1)
    n_rows = max(1, -(-len(panels) // n_cols))
    panel_width = min(6.4, MAX_WIDTH_IN / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(panel_width * n_cols, 2.9 * n_rows + 0.8),
                             squeeze=False, layout="constrained")  # fmt: skip
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (label, corpus) in zip(axes.flat, panels, strict=False):
        cell = rows.filter((pl.col("table") == label) & (pl.col("corpus") == corpus))
        splits = _ordered_splits(cell)
        pairs = cell.select("model_own", "model_other").unique().sort("*").rows()
        width = 0.8 / max(1, len(pairs))
        # Comparisons on identical items share n: name it once, under the split.
        sizes = {s: set(cell.filter(pl.col("split") == s)["n"].to_list()) for s in splits}
        for k, (own, other) in enumerate(pairs):
            mine = cell.filter((pl.col("model_own") == own) & (pl.col("model_other") == other))
            for x, split in enumerate(splits):
                point = mine.filter(pl.col("split") == split)
                if point.height == 0:
                    continue
                r = point.row(0, named=True)
                xpos = x - 0.4 + width * (k + 0.5)
                colour = f"C{k}"
                ax.errorbar(
                    [xpos], [r["delta"]],
                    yerr=[[r["delta"] - r["delta_low"]], [r["delta_high"] - r["delta"]]],
                    fmt="o", color=colour, markerfacecolor=colour if r["significant"] else "white",
                    capsize=3,
                )  # fmt: skip
                if len(sizes[split]) > 1:
                    ax.annotate(
                        f"n={r['n']}", (xpos, r["delta_high"]), textcoords="offset points",
                        xytext=(0, 3), ha="center", fontsize=6,
                    )  # fmt: skip
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.margins(y=0.15)  # room for any per-point n= labels under the title
        ticks = [f"{s}\nn={next(iter(sizes[s]))}" if len(sizes[s]) == 1 else s for s in splits]
        ax.set_xticks(range(len(splits)), ticks)
        ax.set_xlim(-0.6, len(splits) - 0.4)
        ax.set_ylabel("accuracy own − other")
        ax.set_title(f"{label}: splits of {corpus}", fontsize=9)
        # Filled handles whatever the first point's significance: colour names the pair.
        handles = [Line2D([], [], marker="o", ls="none", color=f"C{k}", label=f"{own} − {other}")
                   for k, (own, other) in enumerate(pairs)]  # fmt: skip
        ax.legend(handles=handles, fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5),
                  frameon=False, title="own − other", title_fontsize=6)  # fmt: skip
    suptitle(
        fig,
        "Crossover: the model trained on a corpus vs a model trained on another, on the "
        "corpus's own splits\n(filled: McNemar mid-p significant after BH; bars: paired "
        "bootstrap interval)",
        fontsize=9,
    )
    return fig


def plot_crossover(crossover: str | Path, png: str | Path, pdf: str | Path) -> None:
    table = pl.read_parquet(crossover)
    if table.height == 0:
        raise ValueError(f"{crossover}: no crossover comparison to plot")
    save_figure(crossover_figure(table), png, pdf)
