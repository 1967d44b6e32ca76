"""One table and one figure over every benchmark: a row (a group of bars) per model, a column
(a panel) per benchmark and headline metric.

A benchmark's headline metrics are read from its metric table (``METRIC_SCHEMA``): the rows
of split "all" and family "all" (complexities pooled), micro averages over items, R@1 only of
the R@K family: ``R@1`` (candidate sets), ``accuracy`` (pairs, image selection),
``i2t_R@1`` / ``t2i_R@1`` (retrieval), ``text_score`` / ``image_score`` / ``group_score``
(two-image sets), ``itt_accuracy`` / ``tot_accuracy`` (SugarCrepe++). Each cell holds the
value with its bootstrap CI and n; the column's header holds the chance level (the table's
chance rows; a range when the cells' parts differ). A benchmark with parts (systematicity:
one per training corpus) shows, per model, the part of the model's own training corpus,
else its first part, and names it. A model without rows in a table gets "—" (markdown) or a
hatched "no items" box (figure): not evaluated, never zero. A systematicity benchmark's
BindSplit table repeats its split "all" numbers and is left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from vlcomp.figure_files import save_figure
from vlcomp.report.attacks import scored_variant
from vlcomp.report.plots import (
    bar_legend,
    chance_tick,
    fit_value_labels,
    fraction_axis,
    panel_grid,
    part_labels,
    say_why,
    suptitle,
    value_bar,
)
from vlcomp.vocabulary import ALL, AS_GENERATED, CHANCE, metric_order

NOT_EVALUATED = "—"
BINDSPLIT_SUFFIX = "_bindsplit"
MODEL_COLOURS = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
]  # fmt: skip

OVERVIEW_SCHEMA: dict[str, pl.DataType] = {
    "column": pl.String,  # "<benchmark> <metric>"
    "benchmark": pl.String,  # the metric table's name (its file's stem)
    "metric": pl.String,  # the headline metric, without "_micro"
    "model": pl.String,
    "part": pl.String,  # the part shown (null: the benchmark has none)
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
    "chance": pl.Float64,  # the chance row of the same part and metric
    "variant": pl.String,  # the benchmark's variant the models were scored on
}


def headline_metric(metric: str) -> bool:
    """Whether a family-"all" metric is one the overview shows (see the module docstring)."""
    if metric.endswith("_macro") or metric.startswith("mean_"):
        return False
    if "R@" in metric:
        return metric.removesuffix("_micro").endswith("R@1")
    return True


def _benchmark_tables(tables: Sequence[str | Path]) -> list[Path]:
    paths = [Path(t) for t in tables]
    stems = {p.stem for p in paths}
    return [
        p
        for p in paths
        if not (
            p.stem.endswith(BINDSPLIT_SUFFIX) and p.stem.removesuffix(BINDSPLIT_SUFFIX) in stems
        )
    ]


def overview_table(
    tables: Sequence[str | Path], model_corpus: Mapping[str, str | None] | None = None
) -> pl.DataFrame:
    """``OVERVIEW_SCHEMA`` rows: per benchmark table, headline metric and model, the cell
    the overview shows (see the module docstring), in the tables' order. ``model_corpus``:
    model -> its training corpus (picks a multi-part benchmark's part)."""
    corpus_of = dict(model_corpus or {})
    rows: list[dict] = []
    for path in _benchmark_tables(tables):
        frame = pl.read_parquet(path)
        if "complexity" in frame.columns:
            frame = frame.filter(pl.col("complexity").is_null())
        if "part" not in frame.columns:
            frame = frame.with_columns(part=pl.lit(None, pl.String))
        if "variant" not in frame.columns:
            frame = frame.with_columns(variant=pl.lit(AS_GENERATED, pl.String))
        frame = frame.filter(
            (pl.col("split") == ALL) & (pl.col("family") == ALL),
            pl.col("metric").map_elements(headline_metric, return_dtype=pl.Boolean),
        )
        metrics = sorted(set(frame["metric"].to_list()), key=metric_order)
        models = sorted(set(frame["model"].to_list()) - {CHANCE})
        for metric in metrics:
            cells = frame.filter(pl.col("metric") == metric)
            chance = {
                r["part"]: r["value"]
                for r in cells.filter(pl.col("model") == CHANCE).iter_rows(named=True)
            }
            name = metric.removesuffix("_micro")
            for model in models:
                own = cells.filter(pl.col("model") == model)
                parts = sorted(set(own["part"].to_list()), key=lambda p: (p is None, p or ""))
                part = corpus_of.get(model) if corpus_of.get(model) in parts else parts[0]
                r = own.filter(pl.col("part").eq_missing(part)).row(0, named=True)
                rows.append(
                    {
                        "column": f"{path.stem} {name}",
                        "benchmark": path.stem,
                        "metric": name,
                        "model": model,
                        "part": part,
                        "value": r["value"],
                        "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"],
                        "n": r["n"],
                        "chance": chance.get(part),
                        "variant": r["variant"],
                    }
                )
    return pl.DataFrame(rows, schema=OVERVIEW_SCHEMA)


def columns_of(table: pl.DataFrame) -> list[str]:
    """The overview's columns in table order."""
    return list(dict.fromkeys(table["column"].to_list()))


def chance_text(values: Sequence[float | None]) -> str:
    """A column's chance level: one value, or the range over its cells' parts."""
    found = [v for v in values if v is not None and not math.isnan(v)]
    if not found:
        return "chance n/a"
    low, high = min(found), max(found)
    return f"chance {low:.3f}" if high - low < 5e-4 else f"chance {low:.3f}–{high:.3f}"


def _cell(row: Mapping | None, with_part: bool) -> str:
    if row is None:
        return NOT_EVALUATED
    ci = ""
    if row["ci_low"] is not None and row["ci_high"] is not None:
        ci = f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    part = f" ({row['part']})" if with_part and row["part"] is not None else ""
    return f"{row['value']:.3f}{ci}{part}"


def blind_cells(table: pl.DataFrame, best_blind: pl.DataFrame | None) -> dict[str, str]:
    """column -> the best blind attack's accuracy over all types on the column's benchmark,
    variant and part (``certificate.best_attack_table`` rows), for the overview's "best
    blind attack" row. Over (positive, negative) pairs: the same measure as a 1+1
    benchmark's accuracy, a lower bound of what the texts give away for R@1 over sets."""
    if best_blind is None or best_blind.is_empty():
        return {}
    found = {
        (r["benchmark"], scored_variant(r["variant"]), r["part"]): r
        for r in best_blind.filter(pl.col("type") == ALL).iter_rows(named=True)
    }
    cells = {}
    for r in table.unique("column", keep="first", maintain_order=True).iter_rows(named=True):
        best = found.get((r["benchmark"], r["variant"], r["part"] or r["benchmark"]))
        if best is None or best["accuracy"] is None:
            continue
        ci = f" [{best['ci_low']:.3f}, {best['ci_high']:.3f}]"
        pairwise = "" if r["metric"] == "accuracy" else ", pairwise"
        cells[r["column"]] = f"{best['accuracy']:.3f}{ci} ({best['attack']}{pairwise})"
    return cells


def overview_markdown(table: pl.DataFrame, best_blind: pl.DataFrame | None = None) -> list[str]:
    """The "All benchmarks" section: one row per model, one column per benchmark and
    headline metric (empty when the overview has fewer than two benchmarks); with
    ``best_blind`` (the blind-attack certificates' best attacks), a last row with the best
    text-only attack on the same variant and part (``blind_cells``)."""
    if table["benchmark"].n_unique() < 2:
        return []
    columns = columns_of(table)
    models = sorted(set(table["model"].to_list()))
    multi_part = {
        c: table.filter(pl.col("column") == c)["part"].drop_nulls().n_unique() > 0 for c in columns
    }
    header = []
    for c in columns:
        cells_of = table.filter(pl.col("column") == c)
        variants = sorted(set(cells_of["variant"].drop_nulls().to_list()) - {AS_GENERATED})
        header.append(f"{c} ({', '.join([*variants, chance_text(cells_of['chance'].to_list())])})")
    lines = [
        "## All benchmarks",
        "",
        "One row per model, one column per benchmark and headline metric: the micro average "
        "over items (split all) with its 95% bootstrap CI; chance in the column's header. "
        f"{NOT_EVALUATED}: the model was not evaluated on that benchmark. A benchmark with "
        "parts shows the part of the model's own training corpus (else its first part), "
        "named in brackets. Per-type values, splits and n are in each benchmark's section "
        "below. Generated benchmarks are scored on the variant in the column's header "
        "(config `evaluate.variant`); *best blind attack*: the best text-only attack on the "
        "same items (over (positive, negative) pairs; for R@1 over sets a lower bound of what "
        "the texts alone give away).",
        "",
        "| model | " + " | ".join(header) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    cells = {(r["model"], r["column"]): r for r in table.iter_rows(named=True)}
    for model in models:
        values = [_cell(cells.get((model, c)), multi_part[c]) for c in columns]
        lines.append(f"| {model} | " + " | ".join(values) + " |")
    blind = blind_cells(table, best_blind)
    if blind:
        values = [blind.get(c, NOT_EVALUATED) for c in columns]
        lines.append("| *best blind attack* | " + " | ".join(values) + " |")
    return [*lines, ""]


def overview_figure(table: pl.DataFrame):
    """One panel per benchmark and headline metric, one bar per model (value, CI, n), the
    chance level as a black tick, "no items" for a model not evaluated there. A benchmark
    with parts names the part shown under its panel: once when every bar shows the same
    part, else under each bar."""
    columns = columns_of(table)
    models = sorted(set(table["model"].to_list()))
    colours = {m: MODEL_COLOURS[k % len(MODEL_COLOURS)] for k, m in enumerate(models)}
    width = 0.8
    fig, axes = panel_grid(len(columns), max(1.6, 0.6 + 0.3 * len(models)), 2.8)
    cells = {(r["model"], r["column"]): r for r in table.iter_rows(named=True)}
    drawn: set[str] = set()
    for ax, column in zip(axes, columns, strict=True):
        for k, model in enumerate(models):
            r = cells.get((model, column))
            if r is None:
                drawn.add(value_bar(ax, k, width, None, None, colours[model]))
                continue
            drawn.add(value_bar(ax, k, width, r["value"], r["n"], colours[model],
                                r["ci_low"], r["ci_high"]))  # fmt: skip
            if r["chance"] is not None:
                chance_tick(ax, k, width, r["chance"])
        ax.set_xticks([])
        part_labels(ax, [cells[(m, column)]["part"] if (m, column) in cells else None
                         for m in models])  # fmt: skip
        fraction_axis(ax)
        ax.set_title(column, fontsize=8)
        if not any((m, column) in cells for m in models):
            say_why(ax, "no model was evaluated on this benchmark")
    for ax in axes:
        if ax.get_subplotspec().is_first_col():
            fraction_axis(ax, "micro average (tie counts as wrong)")
    bar_legend(fig, colours, "model", chance=table["chance"].is_not_null().any(),
               missing="missing" in drawn, zero="zero" in drawn)  # fmt: skip
    suptitle(
        fig,
        f"Every benchmark: headline metric per model, 95% bootstrap CI, split all "
        f"({len(columns)} columns, {len(models)} models)",
    )
    fit_value_labels(fig)
    return fig


def plot_all_benchmarks(
    tables: Sequence[str | Path],
    png: str | Path,
    pdf: str | Path,
    model_corpus: Mapping[str, str | None] | None = None,
) -> None:
    """The overview figure of the metric ``tables``; fails naming them when no model has a
    headline row in any."""
    table = overview_table(tables, model_corpus)
    if table.is_empty():
        raise ValueError(f"no model rows with a headline metric in {[str(t) for t in tables]}")
    save_figure(overview_figure(table), png, pdf)
