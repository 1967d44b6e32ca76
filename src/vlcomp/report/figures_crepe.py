"""Figures from retrieval-set metric tables (``retrieval_sets.SET_METRIC_SCHEMA``).

- ``plot_splits_by_type``: CREPE Fig. 4 style, R@1 per negative type with one bar per split
  (SC / UC / UA), one panel per model (rows: benchmarks); bootstrap CIs as error bars and
  chance as black ticks.
- ``plot_complexity``: CREPE Fig. 5 style, R@1 against complexity n, one line per negative
  type with a CI band, chance dashed, one panel per model.
- ``plot_split_accuracy``: BindSplit Fig. 4 style, accuracy per model with one bar per split
  (seen / mixed / unseen), one panel per benchmark.

Items without a split (no binding, no compound, not in the splits table) are counted under
the figure, and so is what each model's values are computed from (its score kind,
``accounting.score_kinds_text``); a panel with no split at all says why on its axes. Grids,
value and n labels, "no items" cells and legends follow ``vlcomp.report.plots``.

Each writes PNG and PDF deterministically (``vlcomp.report.figures.save_figure``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.certificate import best_attack_table
from vlcomp.figure_files import plt, save_figure
from vlcomp.io import write_with
from vlcomp.report.accounting import (
    benchmark_items,
    eval_set_markdown,
    items_markdown,
    legend_markdown,
    provenance_line,
    score_kinds_text,
)
from vlcomp.report.all_benchmarks import overview_markdown, overview_table
from vlcomp.report.attacks import attacks_markdown
from vlcomp.report.plots import (
    NO_ITEMS,
    bar_legend,
    chance_tick,
    fit_value_labels,
    footnote,
    fraction_axis,
    panel_grid,
    say_why,
    suptitle,
    value_bar,
)
from vlcomp.vocabulary import (
    ALL,
    BINDSPLIT_SPLITS,
    CHANCE,
    CREPE_SPLITS,
    DEBIASED,
    NO_BINDING,
    NO_COMPOUND,
    NO_SPLIT,
    NOT_IN_SPLITS,
)

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


def _canonical(table: pl.DataFrame, wanted: Sequence[str] | None, canonical: Sequence[str]) -> list:
    """The splits to draw: ``wanted``, or every canonical split once the table has one of
    them (an absent one is drawn as "no items", not left out), else what is present."""
    present = _present(table, wanted, canonical)
    if wanted is None and set(present) & set(canonical):
        return list(canonical)
    return present


def unsplit_counts(table: pl.DataFrame, benchmark: str | None = None) -> dict[str, int]:
    """Items (the largest ``n`` over models and rows) per split of ``UNSPLIT`` present in a
    metric table, for ``benchmark`` or all. A table without type "all" rows (e.g. R@1 per
    negative type alone) counts the sum over types: every item has one type."""
    rows = table.filter(pl.col("split").is_in(list(UNSPLIT)) & (pl.col("model") != CHANCE))
    if benchmark is not None:
        rows = rows.filter(pl.col("benchmark") == benchmark)
    if "family" in rows.columns:
        if rows["family"].eq(ALL).any():
            rows = rows.filter(pl.col("family") == ALL)
        else:
            rows = rows.group_by("model", "benchmark", "split").agg(pl.col("n").sum())
    sizes = rows.group_by("split").agg(pl.col("n").max()).sort("split")
    return {split: int(n) for split, n in sizes.iter_rows()}


def unsplit_text(counts: dict[str, int]) -> str:
    """'12 items have no attribute-object binding (no_binding); ...' or ""."""
    return "; ".join(f"{n} items {UNSPLIT[split]} ({split})" for split, n in counts.items() if n)


def _footnote(fig: plt.Figure, table: pl.DataFrame, source: str | Path) -> None:
    """Under the figure: the items no bar shows because they have no split, per benchmark
    (or part) when the figure shows several, and the models' score kinds."""
    benchmarks = sorted(set(table["benchmark"].to_list()))
    said = [(b, unsplit_text(unsplit_counts(table, b))) for b in benchmarks]
    said = [(b, text) for b, text in said if text]
    if len(benchmarks) > 1:
        said = [("", f"{b}: {text}") for b, text in said]
    lines = [f"Not shown: {'; '.join(text for _, text in said)}."] if said else []
    lines += [text for text in [score_kinds_text(table, source)] if text]
    if lines:
        footnote(fig, "\n".join(lines))


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


def _cell(rows: pl.DataFrame) -> tuple[float | None, int | None, float | None, float | None]:
    """(value, n, ci_low, ci_high) of a one-row selection, all None when it has no row."""
    if rows.height == 0:
        return None, None, None, None
    r = rows.row(0, named=True)
    return r["value"], r["n"], r["ci_low"], r["ci_high"]


def _split_bars(
    ax: plt.Axes,
    rows: pl.DataFrame,
    chance: pl.DataFrame,
    xs: Sequence[str],
    x_column: str,
    splits: Sequence[str],
) -> set[str]:
    """A bar per (x, split) of ``rows`` (one model, one benchmark), "no items" where the
    table has no row, and chance ticks; returns the kinds drawn (``plots.value_bar``)."""
    width = 0.8 / max(1, len(splits))
    drawn: set[str] = set()
    for s_index, split in enumerate(splits):
        offset = (s_index - (len(splits) - 1) / 2) * width
        for x_index, name in enumerate(xs):
            where = (pl.col("split") == split) & (pl.col(x_column) == name)
            colour = SPLIT_COLOURS.get(split, "#999999")
            value, n, low, high = _cell(rows.filter(where))
            drawn.add(value_bar(ax, x_index + offset, width, value, n, colour, low, high))
            base = chance.filter(where)
            if base.height:
                chance_tick(ax, x_index + offset, width, base["value"][0])
    return drawn


def _empty_reason(
    table: pl.DataFrame, benchmark: str, splits: Sequence[str], what: str, model: str | None
) -> str:
    """Why a panel of ``benchmark`` (and ``model``) has no bar."""
    scored = table.filter(
        (pl.col("benchmark") == benchmark) & (pl.col("model") != CHANCE)
        & pl.col("split").is_in(list(splits))
    )  # fmt: skip
    if model is not None and scored.height:
        return f"{model} has no row on {benchmark} in the splits shown"
    why = unsplit_text(unsplit_counts(table, benchmark)) or "the table has no split rows"
    return f"no item of {benchmark} has a {what}: {why}"


def plot_splits_by_type(
    metrics: str | Path,
    png: str | Path,
    pdf: str | Path,
    metric: str = "R@1",
    splits: Sequence[str] | None = None,
) -> None:
    """Bars of ``metric`` per negative type (x) and split, one panel per (benchmark, model)
    in a grid; rows with a complexity are left out (every complexity pooled)."""
    table = _read(metrics, metric).filter(
        pl.col("complexity").is_null() & (pl.col("family") != ALL)
    )
    splits = _canonical(table, splits, CREPE_SPLITS)
    models, benchmarks = _models(table), sorted(set(table["benchmark"].to_list()))
    families = sorted(set(table["family"].to_list()))
    panels = [(b, m) for b in benchmarks for m in models]
    fig, axes = panel_grid(
        len(panels), max(3.0, 0.9 + (0.22 * max(1, len(splits)) + 0.2) * len(families)), 3.2
    )
    drawn: set[str] = set()
    for ax, (benchmark, model) in zip(axes, panels, strict=True):
        in_benchmark = table.filter(pl.col("benchmark") == benchmark)
        rows = in_benchmark.filter((pl.col("model") == model) & pl.col("split").is_in(splits))
        if rows.height == 0:
            what = "CREPE split (SC / UC / UA)"
            say_why(ax, _empty_reason(table, benchmark, splits, what, model))
        else:
            chance = in_benchmark.filter(pl.col("model") == CHANCE)
            drawn |= _split_bars(ax, rows, chance, families, "family", splits)
        ax.set_xticks(range(len(families)), families, rotation=30, fontsize=7, ha="right")
        fraction_axis(
            ax, f"{metric} (tie = wrong)" if ax.get_subplotspec().is_first_col() else None
        )
        ax.set_title(model if len(benchmarks) == 1 else f"{model} / {benchmark}", fontsize=9)
    if drawn:
        bar_legend(fig, {s: SPLIT_COLOURS.get(s, "#999999") for s in splits},
                   chance=table.filter(pl.col("model") == CHANCE).height > 0,
                   missing="missing" in drawn, zero="zero" in drawn)  # fmt: skip
        _footnote(fig, table, metrics)
    suptitle(
        fig, f"{', '.join(benchmarks)}: {metric} per negative type and split (95% bootstrap CI)"
    )
    fit_value_labels(fig)
    save_figure(fig, png, pdf)


def _sizes_text(sizes: Sequence[int]) -> str:
    """n of a point: one number when every model saw the same items, else the range."""
    low, high = min(sizes), max(sizes)
    return f"n={low}" if low == high else f"n={low}-{high}"


def plot_complexity(
    metrics: str | Path,
    png: str | Path,
    pdf: str | Path,
    metric: str = "R@1",
    split: str = ALL,
) -> None:
    """``metric`` against complexity n, one panel per negative type (CREPE Fig. 5), a line
    and CI band per model, chance dashed. Each complexity's n is under its tick; a
    complexity without items of the type says "no items" there."""
    table = _read(metrics, metric).filter(
        pl.col("complexity").is_not_null() & (pl.col("family") != ALL) & (pl.col("split") == split)
    )
    if table.filter(pl.col("model") != CHANCE).height == 0:
        raise ValueError(f"{metrics}: no {metric} rows with a complexity on split {split!r}")
    models = _models(table)
    families = sorted(set(table["family"].to_list()))
    levels = sorted(set(table["complexity"].to_list()))
    fig, axes = panel_grid(len(families), max(2.6, 0.9 + 0.37 * len(levels)), 2.9)
    for family, ax in zip(families, axes, strict=True):
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
        sizes = {
            level: rows["n"].to_list()
            for (level,), rows in in_family.filter(pl.col("model") != CHANCE).group_by("complexity")
        }
        ticks = [f"{level}\n{_sizes_text(sizes[level]) if level in sizes else NO_ITEMS}"
                 for level in levels]  # fmt: skip
        ax.set_xticks(levels, ticks, fontsize=7)
        ax.set_xlim(levels[0] - 0.5, levels[-1] + 0.5)
        ax.set_title(family, fontsize=9)
        first = ax.get_subplotspec().is_first_col()
        fraction_axis(ax, f"{metric} (tie = wrong)" if first else None)
        ax.grid(alpha=0.3)
    scores = score_kinds_text(table, metrics)
    footnote(fig, "complexity n (atoms)" + (f"\n{scores}" if scores else ""), fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="outside right center", fontsize=7, title="model",
               title_fontsize=7, frameon=False)  # fmt: skip
    benchmarks = ", ".join(sorted(set(table["benchmark"].to_list())))
    suptitle(
        fig,
        f"{benchmarks}: {metric} against complexity per negative type, split {split} "
        "(95% bootstrap CI; n: items per complexity)",
    )
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
    splits = _canonical(table, splits, BINDSPLIT_SPLITS)
    models, benchmarks = _models(table), sorted(set(table["benchmark"].to_list()))
    fig, axes = panel_grid(
        len(benchmarks), max(3.6, 0.9 + (0.22 * max(1, len(splits)) + 0.2) * len(models)), 3.4
    )
    drawn: set[str] = set()
    for ax, benchmark in zip(axes, benchmarks, strict=True):
        in_benchmark = table.filter(pl.col("benchmark") == benchmark)
        rows = in_benchmark.filter(pl.col("model").is_in(models) & pl.col("split").is_in(splits))
        if rows.height == 0:
            what = "BindSplit split (seen / mixed / unseen)"
            say_why(ax, _empty_reason(table, benchmark, splits, what, None))
        else:
            chance = in_benchmark.filter(pl.col("model") == CHANCE)
            # chance is one value per split, the same for every model
            chance = (
                pl.concat([chance.with_columns(model=pl.lit(m)) for m in models])
                if chance.height
                else chance
            )
            drawn |= _split_bars(ax, rows, chance, models, "model", splits)
        ax.set_xticks(range(len(models)), models, rotation=20, fontsize=8, ha="right")
        fraction_axis(
            ax, f"{metric} (tie = wrong)" if ax.get_subplotspec().is_first_col() else None
        )
        ax.set_title(benchmark, fontsize=9)
    if drawn:
        bar_legend(fig, {s: SPLIT_COLOURS.get(s, "#999999") for s in splits},
                   chance=table.filter(pl.col("model") == CHANCE).height > 0,
                   missing="missing" in drawn, zero="zero" in drawn)  # fmt: skip
        _footnote(fig, table, metrics)
    suptitle(fig, f"{metric} per model and split (95% bootstrap CI)\n{', '.join(benchmarks)}",
             fontsize=9)  # fmt: skip
    fit_value_labels(fig)
    save_figure(fig, png, pdf)


def metrics_markdown(
    tables: Sequence[str | Path],
    out: str | Path,
    metric: str = "R@1",
    crossover: str | Path | None = None,
    benchmarks: Mapping[str, Mapping[str, Any]] | None = None,
    oracles: Mapping[str, Mapping[str, str | Path]] | None = None,
    attacks: Sequence[str | Path] = (),
    predictions: Sequence[str | Path] = (),
    decisions: Sequence[str | Path] = (),
    attack_resamples: int = 1000,
    attack_seed: int = 0,
) -> None:
    """A Markdown summary, one section per metric table (named after its file, i.e. the
    benchmark's name; its kind below it when the table has a ``kind`` column): ``metric``
    or accuracy (retrieval: i2t/t2i ``metric``) with its 95% CI per model, part, split and
    negative type, complexities pooled, each (split, type) once; micro averages as type
    "all"; chance in its own column; under the provenance line, what each model's values are
    computed from (``accounting.score_kinds_text``). With two benchmarks or more, a first
    section puts every benchmark's headline metric side by side, one row per model
    (``all_benchmarks.overview_markdown``). With ``benchmarks`` (see
    ``accounting.benchmark_items``), a first section counts each benchmark's items, those
    excluded for an unusable image and the rejected source records, then what each eval
    set's items hold (``accounting.eval_set_markdown``). With ``crossover``
    (``vlcomp.evaluate.crossover``), a last section compares each corpus's own model with
    the others on its splits. With ``oracles`` (benchmark -> {"metrics", "false_negatives"}
    paths: ground-truth scorers that a data preset knowing its scenes provides), a
    benchmark's section lists the oracles' rows among the models' and its false-negative
    rates per generator and negative type below them. With ``attacks`` (the benchmarks'
    blind-attack certificates), a section gives the best text-only attack per negative type
    beside the models, on the same pairs where ``predictions`` (the models' per-set
    predictions) and ``decisions`` (the certificates' per-pair decisions) are given, with
    the certificate's bootstrap settings (``attack_resamples``, ``attack_seed``;
    ``report.attacks``)."""
    wanted = {
        metric: None, "accuracy": None, f"{metric}_micro": ALL, "accuracy_micro": ALL,
        f"i2t_{metric}": "i2t", f"t2i_{metric}": "t2i",
    }  # fmt: skip
    lines = [f"# Benchmark summary ({metric} or accuracy; a tie counts as wrong)", ""]
    lines += legend_markdown()
    model_corpus = next((b.get("models") for b in (benchmarks or {}).values()), None)
    best_blind = best_attack_table(attacks) if attacks else None
    lines += overview_markdown(overview_table(tables, model_corpus), best_blind)
    if benchmarks is not None:
        lines += items_markdown(*benchmark_items(benchmarks))
        lines += eval_set_markdown(benchmarks)
    lines += attacks_markdown(
        attacks, tables, predictions, decisions, attack_resamples, attack_seed
    )
    for table in tables:
        frame = pl.read_parquet(table)
        oracle = (oracles or {}).get(Path(table).stem)
        if oracle:
            scorers = pl.read_parquet(oracle["metrics"]).filter(pl.col("model") != CHANCE)
            frame = pl.concat([frame, scorers], how="diagonal_relaxed")
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
        entry, view = _benchmark_entry(title, benchmarks or {})
        header = "| model | " + ("part | " if with_parts else "") + "split | type | value "
        lines += [f"## {title}", ""]
        variants = (
            sorted(set(frame["variant"].drop_nulls().to_list()))
            if "variant" in frame.columns
            else []
        )
        if kinds or DEBIASED in variants:
            said = [f"Kind: {', '.join(kinds)}."] if kinds else []
            if DEBIASED in variants:
                said.append(
                    f"Scored on the {DEBIASED} variant (`evaluate.variant`; the items no blind "
                    "attack solves, see Blind attacks)."
                )
            lines += [" ".join(said), ""]
        lines += [provenance_line(table, frame, entry, view), ""]
        scores = score_kinds_text(frame, table)
        if scores:
            lines += [scores, ""]
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
        if oracle:
            lines += false_negative_markdown(pl.read_parquet(oracle["false_negatives"]))
    if crossover is not None:
        lines += _crossover_lines(pl.read_parquet(crossover))
    write_with(out, lambda tmp: tmp.write_text("\n".join(lines)))


def false_negative_markdown(table: pl.DataFrame) -> list[str]:
    """Negatives true of their image (which a perfect binder cannot reject) per generator and
    negative type, and the binding-free solvable shares (bag-of-words and objects-only
    oracle accuracy), from an oracle false-negative table."""
    lines = [
        "False negatives (negatives true of the image, Wilson 95% CI) and binding-free "
        "solvable shares (accuracy of oracles that ignore binding; ties count as wrong), and "
        "the word prior: how often the words a negative changes alone tell which text is the "
        "positive (cross-fitted over two halves of the items; 0.5: no prior). The spatial "
        "words read as the world writes them (a pair's relation is the dominant axis of its "
        "centres' offset); *apart*: read as a relation that holds when the boxes are apart "
        "along its axis, with the positives that reading makes false:",
        "",
        "| part | generator | type | false negatives | rate | 95% CI | apart: false negatives "
        "| apart: positives false | unreadable | bag-of-words acc. | objects-only acc. "
        "| word-prior acc. | sets |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def share(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    for r in table.iter_rows(named=True):
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        apart = positives = ""
        if r.get("n_true_apart") is not None:
            apart = f"{r['n_true_apart']}/{r['n_negatives']}"
            positives = f"{r['n_positives_false_apart']}/{r['n_positives']}"
        lines.append(
            f"| {r['part'] or ''} | {r['generator']} | {r['family']} "
            f"| {r['n_true']}/{r['n_negatives']} | {share(r['false_negative_rate'])} | {ci} "
            f"| {apart} | {positives} "
            f"| {r['n_unreadable']} | {share(r['bag_of_words_accuracy'])} "
            f"| {share(r['objects_only_accuracy'])} "
            f"| {share(r.get('word_prior_accuracy'))} | {r['n_sets']} |"
        )
    return [*lines, ""]


def _benchmark_entry(
    title: str, benchmarks: Mapping[str, Mapping[str, Any]]
) -> tuple[Mapping[str, Any] | None, str]:
    """The ``benchmarks`` entry a metric table (by its file's stem) reports on, and the view:
    "bindsplit" for a systematicity benchmark's BindSplit table, else ""."""
    if title in benchmarks:
        return benchmarks[title], ""
    base = title.removesuffix("_bindsplit")
    if base != title and base in benchmarks:
        return benchmarks[base], "bindsplit"
    return None, ""


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
