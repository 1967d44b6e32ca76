"""Figures, one function per figure target. PNG and PDF are written deterministically.

The tables are ``vlcomp.evaluate.metrics.METRIC_SCHEMA`` metric tables (any benchmark;
extra columns such as ``training_corpus`` of the held-in / held-out tables are allowed):
- ``plot_pair_accuracy``: accuracy per negative type (``family``) per model, one bar per
  split when there are several, bootstrap CIs as error bars, chance as black ticks;
- ``plot_retrieval``: image->text and text->image Recall@K per model and split.
Each title names the benchmark(s), model(s) and split(s) shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from vlcomp.io import write_with  # noqa: E402

CHANCE = "chance"
SPLIT_ORDER = ["all", "held_in", "held_out", "SC", "UC", "UA", "seen", "mixed", "unseen"]
SPLIT_COLOURS = {
    "all": "#7570b3", "held_in": "#1b9e77", "held_out": "#d95f02",
    "SC": "#1b9e77", "UC": "#d95f02", "UA": "#e7298a",
    "seen": "#1b9e77", "mixed": "#e6ab02", "unseen": "#d95f02", "no_binding": "#bbbbbb",
    "no_compound": "#bbbbbb", "no_split": "#bbbbbb", "not_in_splits": "#888888",
    "text_score": "#1b9e77", "image_score": "#d95f02", "group_score": "#7570b3",
    "itt_accuracy": "#1b9e77", "tot_accuracy": "#d95f02",
}  # fmt: skip


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    # Fixed metadata so that the same table gives the same bytes.
    write_with(
        png, lambda tmp: fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    )
    write_with(
        pdf,
        lambda tmp: fig.savefig(
            tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None}
        ),
    )
    plt.close(fig)


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
) -> None:
    """One bar per (x, split) with its CI and the chance value as a black tick."""
    model, part, corpus = panel
    rows, chance = _cells(table, model, part, corpus), _cells(table, CHANCE, part, corpus)
    width = 0.8 / max(1, len(splits))
    labelled: set[str] = set()
    for s_index, split in enumerate(splits):
        for x_index, name in enumerate(xs_names):
            x = x_index + (s_index - (len(splits) - 1) / 2) * width
            where = (pl.col("split") == split) & (pl.col(x_column) == name)
            cell, base = rows.filter(where), chance.filter(where)
            if cell.height:
                value = cell["value"][0]
                low, high = cell["ci_low"][0], cell["ci_high"][0]
                error = None
                if low is not None and high is not None:
                    error = np.array([[max(0.0, value - low)], [max(0.0, high - value)]])
                ax.bar(x, value, width, yerr=error, capsize=2, ecolor="#333333",
                       color=SPLIT_COLOURS.get(split, "#999999"),
                       label=None if split in labelled else split)  # fmt: skip
                labelled.add(split)
                ax.text(x, (high if high is not None else value) + 0.01,
                        f"{value:.2f}\nn={cell['n'][0]}", ha="center", va="bottom",
                        fontsize=5)  # fmt: skip
            if base.height:
                ax.plot([x - width / 2, x + width / 2], [base["value"][0]] * 2,
                        color="black", linewidth=1.2)  # fmt: skip
    ax.set_xticks(range(len(xs_names)), xs_names, rotation=25, fontsize=8)
    ax.set_ylim(0, 1.2)
    ax.set_title(_panel_title(*panel), fontsize=9)
    ax.grid(axis="y", alpha=0.3)


def _size(panels: int, xs: int, splits: int) -> tuple[float, float]:
    return 0.8 + panels * max(2.6, 0.6 + 0.28 * xs * splits + 0.3 * xs), 4.0


def _read(metrics: str | Path, keep: pl.Expr, what: str) -> pl.DataFrame:
    table = pl.read_parquet(metrics)
    if "complexity" in table.columns:
        table = table.filter(pl.col("complexity").is_null())
    table = table.filter(keep)
    if table.filter(pl.col("model") != CHANCE).height == 0:
        raise ValueError(f"{metrics}: no {what} rows")
    return table


def pair_accuracy_figure(table: pl.DataFrame, metric: str = "accuracy") -> plt.Figure:
    """The figure of ``plot_pair_accuracy`` from its (filtered) table."""
    families = sorted(set(table["family"].to_list()))
    splits = _ordered_splits(table)
    panels = _panels(table)
    fig, axes = plt.subplots(
        1, len(panels), figsize=_size(len(panels), len(families), len(splits)), squeeze=False,
        sharey=True,
    )  # fmt: skip
    for ax, panel in zip(axes[0], panels, strict=True):
        _bars(ax, table, panel, families, "family", splits)
    axes[0][0].set_ylabel(f"{metric} (tie counts as wrong)")
    axes[0][-1].legend(fontsize=7, title="split (black: chance)", title_fontsize=7,
                       loc="upper right", ncols=len(splits))  # fmt: skip
    fig.suptitle(
        _title(table, f"{metric} per negative type (95% bootstrap CI)", splits), fontsize=10
    )
    fig.tight_layout()
    return fig


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
    fig = pair_accuracy_figure(table, " / ".join(names))
    save_figure(fig, png, pdf)


def retrieval_figure(table: pl.DataFrame) -> plt.Figure:
    """The figure of ``plot_retrieval`` from its (filtered) table."""
    names = sorted(
        set(table["metric"].to_list()),
        key=lambda m: (m.split("_R@")[0], int(m.split("_R@")[1])),
    )
    splits = _ordered_splits(table)
    panels = _panels(table)
    fig, axes = plt.subplots(
        1, len(panels), figsize=_size(len(panels), len(names), len(splits)), squeeze=False,
        sharey=True,
    )  # fmt: skip
    for ax, panel in zip(axes[0], panels, strict=True):
        _bars(ax, table, panel, names, "metric", splits)
    axes[0][0].set_ylabel("recall (tie counts as wrong)")
    axes[0][-1].legend(fontsize=7, title="split (black: chance)", title_fontsize=7,
                       loc="upper left", ncols=len(splits))  # fmt: skip
    fig.suptitle(_title(table, "image-text retrieval Recall@K", splits), fontsize=10)
    fig.tight_layout()
    return fig


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
    n_cols = len({corpus for _, corpus in panels}) or 1
    n_rows = max(1, -(-len(panels) // n_cols))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.6 * n_cols, 2.9 * n_rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
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
                    capsize=3, label=f"{own} − {other}" if x == 0 else None,
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
        ax.legend(fontsize=6, loc="lower left")
    fig.suptitle(
        "Crossover: the model trained on a corpus vs a model trained on another, on the "
        "corpus's own splits\n(filled: McNemar mid-p significant after BH; bars: paired "
        "bootstrap interval)",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def plot_crossover(crossover: str | Path, png: str | Path, pdf: str | Path) -> None:
    table = pl.read_parquet(crossover)
    if table.height == 0:
        raise ValueError(f"{crossover}: no crossover comparison to plot")
    save_figure(crossover_figure(table), png, pdf)
