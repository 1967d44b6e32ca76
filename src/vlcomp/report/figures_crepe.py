"""Figures from retrieval-set metric tables (``retrieval_sets.SET_METRIC_SCHEMA``).

- ``plot_splits_by_type``: CREPE Fig. 4 style, R@1 per negative type with one bar per split
  (SC / UC / UA), one panel per model (rows: benchmarks); bootstrap CIs as error bars and
  chance as black ticks.
- ``plot_complexity``: CREPE Fig. 5 style, R@1 against complexity n, one line per negative
  type with a CI band, chance dashed, one panel per model.
- ``plot_split_accuracy``: BindSplit Fig. 4 style, accuracy per model with one bar per split
  (seen / mixed / unseen), one panel per benchmark.

Items without a split (no binding, no compound, not in the splits table) are counted under
the figure; a panel with no split at all says why on its axes.

Each writes PNG and PDF deterministically (``vlcomp.report.figures.save_figure``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from vlcomp.evaluate.metrics import NO_SPLIT, NOT_IN_SPLITS  # noqa: E402
from vlcomp.io import write_with  # noqa: E402
from vlcomp.report.accounting import (  # noqa: E402
    benchmark_items,
    eval_set_markdown,
    items_markdown,
)
from vlcomp.report.figures import save_figure  # noqa: E402
from vlcomp.splits.assign import NO_BINDING, NO_COMPOUND  # noqa: E402

CHANCE = "chance"
ALL = "all"
CREPE_SPLITS = ("SC", "UC", "UA")
BINDSPLIT_SPLITS = ("seen", "mixed", "unseen")
SPLIT_COLOURS = {
    "SC": "#1b9e77", "UC": "#d95f02", "UA": "#7570b3",
    "seen": "#1b9e77", "mixed": "#e6ab02", "unseen": "#d95f02",
    "held_in": "#1b9e77", "held_out": "#d95f02", "all": "#666666",
}  # fmt: skip
# Splits that name why an item has none: shown as counts, never as bars.
UNSPLIT: dict[str, str] = {
    NO_BINDING: "have no attribute-object binding",
    NO_COMPOUND: "have no compound",
    NO_SPLIT: "have no split in the splits table",
    NOT_IN_SPLITS: "are not in the splits table",
}
FAMILY_CMAP = plt.get_cmap("tab10")


def _models(table: pl.DataFrame) -> list[str]:
    return sorted(set(table["model"].to_list()) - {CHANCE})


def _present(table: pl.DataFrame, wanted: Sequence[str] | None, default: Sequence[str]) -> list:
    present = set(table["split"].to_list())
    if wanted is not None:
        return [s for s in wanted if s in present]
    known = [s for s in default if s in present]
    return known or sorted(present - {ALL, *UNSPLIT})


def unsplit_counts(table: pl.DataFrame, benchmark: str | None = None) -> dict[str, int]:
    """Items (the largest ``n`` over models and rows) per split of ``UNSPLIT`` present in a
    metric table, for ``benchmark`` or all."""
    rows = table.filter(pl.col("split").is_in(list(UNSPLIT)) & (pl.col("model") != CHANCE))
    if benchmark is not None:
        rows = rows.filter(pl.col("benchmark") == benchmark)
    if "family" in rows.columns:
        rows = rows.filter(pl.col("family") == ALL)
    sizes = rows.group_by("split").agg(pl.col("n").max()).sort("split")
    return {split: int(n) for split, n in sizes.iter_rows()}


def unsplit_text(counts: dict[str, int]) -> str:
    """'12 items have no attribute-object binding (no_binding); ...' or ""."""
    return "; ".join(f"{n} items {UNSPLIT[split]} ({split})" for split, n in counts.items() if n)


def _footnote(fig: plt.Figure, table: pl.DataFrame) -> None:
    """Under the figure: the items no bar shows because they have no split."""
    text = unsplit_text(unsplit_counts(table))
    if text:
        fig.text(0.5, 0.005, textwrap.fill(f"Not shown: {text}.", 140), ha="center",
                 va="bottom", fontsize=6)  # fmt: skip


def _say_why(ax: plt.Axes, text: str) -> None:
    """Why a panel shows nothing, written on it."""
    ax.text(0.5, 0.5, textwrap.fill(text, 40), transform=ax.transAxes, ha="center",
            va="center", fontsize=7,
            bbox={"facecolor": "white", "edgecolor": "#999999", "alpha": 0.9})  # fmt: skip


def _errors(cells: pl.DataFrame) -> np.ndarray | None:
    """(2, n) error-bar lengths from ci_low/ci_high; None when the table has no CIs."""
    if cells["ci_low"].null_count() == cells.height:
        return None
    value = cells["value"].to_numpy()
    low = cells["ci_low"].fill_null(cells["value"]).to_numpy()
    high = cells["ci_high"].fill_null(cells["value"]).to_numpy()
    return np.vstack([np.clip(value - low, 0, None), np.clip(high - value, 0, None)])


def _read(metrics: str | Path, metric: str) -> pl.DataFrame:
    """Rows of ``metric``; a table with parts (e.g. the training corpus each CREPE set was
    built against) shows each part as a benchmark of its own, "<benchmark> vs <part>"."""
    table = pl.read_parquet(metrics).filter(pl.col("metric") == metric)
    if "part" in table.columns:
        table = table.with_columns(
            benchmark=pl.when(pl.col("part").is_null())
            .then(pl.col("benchmark"))
            .otherwise(pl.concat_str("benchmark", pl.lit(" vs "), "part"))
        )
    if table.filter(pl.col("model") != CHANCE).height == 0:
        raise ValueError(f"{metrics}: no rows for metric {metric!r}")
    return table


def plot_splits_by_type(
    metrics: str | Path,
    png: str | Path,
    pdf: str | Path,
    metric: str = "R@1",
    splits: Sequence[str] | None = None,
) -> None:
    """Bars of ``metric`` per negative type (x) and split, per model (columns) and benchmark
    (rows); rows with a complexity are left out (every complexity pooled)."""
    table = _read(metrics, metric).filter(
        pl.col("complexity").is_null() & (pl.col("family") != ALL)
    )
    splits = _present(table, splits, CREPE_SPLITS)
    models, benchmarks = _models(table), sorted(set(table["benchmark"].to_list()))
    families = sorted(set(table["family"].to_list()))
    fig, axes = plt.subplots(
        len(benchmarks), len(models), squeeze=False, sharey=True,
        figsize=(1.0 + (0.5 + 0.9 * len(families)) * len(models), 0.6 + 3.0 * len(benchmarks)),
    )  # fmt: skip
    width = 0.8 / max(1, len(splits))
    for r, benchmark in enumerate(benchmarks):
        for c, model in enumerate(models):
            ax = axes[r][c]
            if not splits:
                why = unsplit_text(unsplit_counts(table, benchmark)) or "no split rows"
                _say_why(ax, f"no item of {benchmark} has a CREPE split (SC / UC / UA): {why}")
            for s_index, split in enumerate(splits):
                offset = (s_index - (len(splits) - 1) / 2) * width
                for who in (model, CHANCE):
                    cells = table.filter(
                        (pl.col("benchmark") == benchmark) & (pl.col("model") == who)
                        & (pl.col("split") == split)
                    )  # fmt: skip
                    xs = np.array([families.index(f) for f in cells["family"]]) + offset
                    if who == CHANCE:
                        for x, y in zip(xs, cells["value"], strict=True):
                            ax.plot([x - width / 2, x + width / 2], [y, y], color="black", lw=1.0)
                        continue
                    ax.bar(
                        xs, cells["value"].to_numpy(), width, yerr=_errors(cells), capsize=2,
                        color=SPLIT_COLOURS.get(split, "#999999"), label=split,
                        error_kw={"lw": 0.8},
                    )  # fmt: skip
            ax.set_xticks(range(len(families)), families, rotation=30, fontsize=7, ha="right")
            ax.set_ylim(0, 1.05)
            ax.grid(axis="y", alpha=0.3)
            ax.set_title(model if len(benchmarks) == 1 else f"{model} / {benchmark}", fontsize=9)
        axes[r][0].set_ylabel(f"{metric} (tie = wrong)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    if unique:
        axes[0][-1].legend(
            unique.values(), unique.keys(), fontsize=7, title="split (black: chance)",
            title_fontsize=7, loc="upper right",
        )  # fmt: skip
    fig.suptitle(
        f"{', '.join(benchmarks)}: {metric} per negative type and split (95% bootstrap CI)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    if splits:
        _footnote(fig, table)
    save_figure(fig, png, pdf)


def plot_complexity(
    metrics: str | Path,
    png: str | Path,
    pdf: str | Path,
    metric: str = "R@1",
    split: str = ALL,
) -> None:
    """``metric`` against complexity n, one panel per negative type (CREPE Fig. 5), a line
    and CI band per model, chance dashed."""
    table = _read(metrics, metric).filter(
        pl.col("complexity").is_not_null() & (pl.col("family") != ALL) & (pl.col("split") == split)
    )
    if table.filter(pl.col("model") != CHANCE).height == 0:
        raise ValueError(f"{metrics}: no {metric} rows with a complexity on split {split!r}")
    models = _models(table)
    families = sorted(set(table["family"].to_list()))
    n_cols = min(4, len(families))
    n_rows = -(-len(families) // n_cols)
    fig, axes = plt.subplots(
        n_rows, n_cols, squeeze=False, sharey=True, sharex=True,
        figsize=(0.6 + 2.9 * n_cols, 0.7 + 2.6 * n_rows),
    )  # fmt: skip
    levels = sorted(set(table["complexity"].to_list()))
    for index, family in enumerate(families):
        ax = axes[index // n_cols][index % n_cols]
        in_family = table.filter(pl.col("family") == family).sort("complexity")
        chance = in_family.filter(pl.col("model") == CHANCE)
        if chance.height:
            ax.plot(chance["complexity"].to_numpy(), chance["value"].to_numpy(),
                    color="black", lw=0.9, ls="--", label="chance")  # fmt: skip
        for m_index, model in enumerate(models):
            colour = FAMILY_CMAP(m_index % 10)
            cells = in_family.filter(pl.col("model") == model)
            if cells.height == 0:
                continue
            x, y = cells["complexity"].to_numpy(), cells["value"].to_numpy()
            ax.plot(x, y, color=colour, marker="o", ms=3, lw=1.4, label=model)
            if cells["ci_low"].null_count() < cells.height:
                ax.fill_between(
                    x, cells["ci_low"].fill_null(cells["value"]).to_numpy(),
                    cells["ci_high"].fill_null(cells["value"]).to_numpy(),
                    color=colour, alpha=0.15, lw=0,
                )  # fmt: skip
        ax.set_title(family, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(levels)
        ax.grid(alpha=0.3)
    for index in range(len(families), n_rows * n_cols):
        axes[index // n_cols][index % n_cols].set_visible(False)
    for row in axes:
        row[0].set_ylabel(f"{metric} (tie = wrong)")
    for ax in axes[-1]:
        ax.set_xlabel("complexity n (atoms)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    benchmarks = ", ".join(sorted(set(table["benchmark"].to_list())))
    fig.suptitle(
        f"{benchmarks}: {metric} against complexity per negative type, split {split} "
        "(95% bootstrap CI)",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, png, pdf)


def plot_split_accuracy(
    metrics: str | Path,
    png: str | Path,
    pdf: str | Path,
    metric: str | None = None,
    splits: Sequence[str] | None = None,
) -> None:
    """Accuracy (or ``metric``) per model with one bar per split, one panel per benchmark.

    ``metric`` defaults to the first of accuracy_micro, R@1_micro present in the table."""
    full = pl.read_parquet(metrics)
    if metric is None:
        present = set(full["metric"].to_list())
        metric = next((m for m in ("accuracy_micro", "R@1_micro") if m in present), None)
        if metric is None:
            raise ValueError(f"{metrics}: neither accuracy_micro nor R@1_micro rows")
    table = _read(metrics, metric).filter(
        pl.col("complexity").is_null() & (pl.col("family") == ALL)
    )
    splits = _present(table, splits, BINDSPLIT_SPLITS)
    models, benchmarks = _models(table), sorted(set(table["benchmark"].to_list()))
    fig, axes = plt.subplots(
        1, len(benchmarks), squeeze=False, sharey=True,
        figsize=(max(5.0, 0.8 + (0.6 + 0.8 * len(models)) * len(benchmarks)), 3.4),
    )  # fmt: skip
    width = 0.8 / max(1, len(splits))
    for ax, benchmark in zip(axes[0], benchmarks, strict=True):
        if not splits:
            why = unsplit_text(unsplit_counts(table, benchmark)) or "the table has no split rows"
            _say_why(
                ax, f"no item of {benchmark} has a BindSplit split (seen / mixed / unseen): {why}"
            )
        for s_index, split in enumerate(splits):
            offset = (s_index - (len(splits) - 1) / 2) * width
            in_split = table.filter((pl.col("benchmark") == benchmark) & (pl.col("split") == split))
            cells = in_split.filter(pl.col("model").is_in(models)).sort("model")
            xs = np.array([models.index(m) for m in cells["model"]]) + offset
            ax.bar(
                xs, cells["value"].to_numpy(), width, yerr=_errors(cells), capsize=2,
                color=SPLIT_COLOURS.get(split, "#999999"), label=split, error_kw={"lw": 0.8},
            )  # fmt: skip
            chance = in_split.filter(pl.col("model") == CHANCE)
            if chance.height:
                for x in np.arange(len(models)) + offset:
                    ax.plot([x - width / 2, x + width / 2], [chance["value"][0]] * 2,
                            color="black", lw=1.0)  # fmt: skip
        ax.set_xticks(range(len(models)), models, rotation=20, fontsize=8, ha="right")
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(benchmark, fontsize=9)
    axes[0][0].set_ylabel(f"{metric} (tie = wrong)")
    if splits:
        axes[0][-1].legend(fontsize=7, title="split (black: chance)", title_fontsize=7)
    fig.suptitle(
        f"{metric} per model and split (95% bootstrap CI)\n{', '.join(benchmarks)}", fontsize=9
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    if splits:
        _footnote(fig, table)
    save_figure(fig, png, pdf)


def metrics_markdown(
    tables: Sequence[str | Path],
    out: str | Path,
    metric: str = "R@1",
    crossover: str | Path | None = None,
    benchmarks: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """A Markdown summary, one section per metric table (named after its file, i.e. the
    benchmark's name; its kind below it when the table has a ``kind`` column): ``metric``
    or accuracy (retrieval: i2t/t2i ``metric``) with its 95% CI per model, part, split and
    negative type, complexities pooled, each (split, type) once; micro averages as type
    "all"; chance in its own column. With ``benchmarks`` (see
    ``accounting.benchmark_items``), a first section counts each benchmark's items, those
    excluded for an unusable image and the rejected source records, then what each eval
    set's items hold (``accounting.eval_set_markdown``). With ``crossover``
    (``vlcomp.evaluate.crossover``), a last section compares each corpus's own model with
    the others on its splits."""
    wanted = {
        metric: None, "accuracy": None, f"{metric}_micro": ALL, "accuracy_micro": ALL,
        f"i2t_{metric}": "i2t", f"t2i_{metric}": "t2i",
    }  # fmt: skip
    lines = [f"# Benchmark summary ({metric} or accuracy; a tie counts as wrong)", ""]
    if benchmarks is not None:
        lines += items_markdown(*benchmark_items(benchmarks))
        lines += eval_set_markdown(benchmarks)
    for table in tables:
        frame = pl.read_parquet(table)
        kinds = sorted(set(frame["kind"].drop_nulls().to_list())) if "kind" in frame.columns else []
        if "complexity" in frame.columns:
            frame = frame.filter(pl.col("complexity").is_null())
        frame = frame.filter(pl.col("metric").is_in(list(wanted)))
        if "part" not in frame.columns:
            frame = frame.with_columns(part=pl.lit(None, dtype=pl.String))
        frame = frame.with_columns(
            family=pl.col("metric").replace_strict(wanted, default=None).fill_null(pl.col("family"))
        )
        with_parts = frame["part"].drop_nulls().n_unique() > 0
        title = Path(table).stem
        header = "| model | " + ("part | " if with_parts else "") + "split | type | value "
        lines += [f"## {title}", ""]
        if kinds:
            lines += [f"Kind: {', '.join(kinds)}.", ""]
        if frame.filter(pl.col("model") != CHANCE).is_empty():
            lines += [f"No model row of {' / '.join(wanted)} in {table}.", ""]
            continue
        lines.append(header + "| 95% CI | n | chance |")
        lines.append("|---|" + ("---|" if with_parts else "") + "---|---|---:|---|---:|---:|")
        keys = ("part", "split", "family")
        chance = {
            tuple(r[k] for k in keys): r["value"]
            for r in frame.filter(pl.col("model") == CHANCE).iter_rows(named=True)
        }
        rows = (
            frame.filter(pl.col("model") != CHANCE)
            .with_columns(_all_first=pl.col("split") != ALL)
            .sort("model", "part", "family", "_all_first", "split", nulls_last=True)
        )
        for r in rows.iter_rows(named=True):
            ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r.get("ci_low") is not None else ""
            base = chance.get(tuple(r[k] for k in keys))
            base_text = f"{base:.3f}" if base is not None else ""
            part = f"{r['part'] or ''} | " if with_parts else ""
            lines.append(
                f"| {r['model']} | {part}{r['split']} | {r['family']} | {r['value']:.3f} | {ci} "
                f"| {r['n']} | {base_text} |"
            )
        lines.append("")
    if crossover is not None:
        lines += _crossover_lines(pl.read_parquet(crossover))
    write_with(out, lambda tmp: tmp.write_text("\n".join(lines)))


def _crossover_lines(table: pl.DataFrame) -> list[str]:
    lines = [
        "## crossover: each corpus's splits, its own model vs a model trained elsewhere",
        "",
        "Identical items; delta = own - other with a paired 95% bootstrap CI; McNemar "
        "mid-p (BH-adjusted in p_bh). A more negative delta on unseen than on seen items is "
        "the cost of novelty that item difficulty cannot explain.",
        "",
        "| table | corpus | split | own | other | own acc | other acc | delta | 95% CI "
        "| p | p_bh | n |",
        "|---|---|---|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in table.filter(pl.col("family") == ALL).iter_rows(named=True):
        lines.append(
            f"| {r['table']} | {r['corpus']} | {r['split']} | {r['model_own']} | "
            f"{r['model_other']} | {r['accuracy_own']:.3f} | {r['accuracy_other']:.3f} | "
            f"{r['delta']:+.3f} | [{r['delta_low']:+.3f}, {r['delta_high']:+.3f}] | "
            f"{r['p_value']:.3g} | {r['p_bh']:.3g} | {r['n']} |"
        )
    return [*lines, ""]
