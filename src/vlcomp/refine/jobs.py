"""Job-level entry points: each connects files to one library call (for Snakemake rules)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from vlcomp.contracts import NOTE_KEY
from vlcomp.io import write_parquet
from vlcomp.refine.blind import TiePolicy, blind_accuracy, item_outcomes
from vlcomp.refine.figures import plot_prior_heatmap, plot_refinement_gaps
from vlcomp.refine.priors import (
    heatmap_bins,
    linguistic_prior_table,
    masked_reasons,
    prior_heatmap_table,
)
from vlcomp.refine.refinement import refine_candidates, refined_candidates

Log = Callable[[str], None]


def blind_stage(
    candidates: str | Path,
    scores: str | Path,
    table_out: str | Path,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> None:
    table = blind_accuracy(pl.read_parquet(candidates), pl.read_parquet(scores), None, tie_policy)
    write_parquet(table, table_out, {"tie_policy": tie_policy})


def refine_stage(
    candidates: str | Path,
    scores: str | Path,
    scorers: tuple[str, str],
    *,
    items_out: str | Path,
    refined_out: str | Path,
    counts_out: str | Path,
    accuracy_out: str | Path,
    figure_png: str | Path,
    figure_pdf: str | Path,
    grid: int | str = "auto",
    seed: int = 0,
    normalisation: tuple[str, str] = ("auto", "auto"),
    zero_axis_grid: int | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    log: Log = print,
) -> None:
    """Adversarial refinement; ``refined_out`` is the kept candidates (candidates contract).
    Groups that keep nothing say why in the log, the counts' ``note`` and the figure; when
    nothing at all is kept the refined candidates' metadata (``NOTE_KEY``) says why too."""
    table = pl.read_parquet(candidates)
    result = refine_candidates(
        table,
        pl.read_parquet(scores),
        scorers,
        grid=grid,
        seed=seed,
        normalisation=normalisation,
        zero_axis_grid=zero_axis_grid,
        tie_policy=tie_policy,
    )
    meta = result.params
    notes = result.notes()
    refined = refined_candidates(table, result)
    log(
        f"refinement kept {refined['item_id'].n_unique()} of {result.items.height} pairs "
        f"(grid {grid}: K per group {sorted(set(result.counts['grid'].to_list()))})"
    )
    for note in notes:
        log(note)
    write_parquet(result.items, items_out, meta)
    write_parquet(
        refined, refined_out, {**meta, NOTE_KEY: "\n".join(notes)} if refined.is_empty() else meta
    )
    write_parquet(result.counts, counts_out, meta)
    write_parquet(result.accuracy, accuracy_out, meta)
    plot_refinement_gaps(result.items, figure_png, figure_pdf, scorers, counts=result.counts)


def prior_stage(
    candidates: str | Path,
    scores: str | Path,
    lm_scorer: str,
    model_correct: str | Path,
    *,
    table_out: str | Path,
    heatmap_out: str | Path,
    figure_png: str | Path,
    figure_pdf: str | Path,
    bins: int | str = "auto",
    min_count: int = 10,
    log: Log = print,
) -> None:
    """Hard test accuracy, linguistic gap and the perplexity heat map.

    ``model_correct``: Parquet with model, benchmark, item_id, correct (bool) per item. The
    bins per axis used (``bins="auto"``: scaled to the items, ``priors.auto_bins``) are
    logged, written to both tables' metadata (``bins``; the setting as ``bins_setting``) and
    shown on the figure. A model whose heat-map cells are all masked is named, with why, in
    the log, the heat-map table's metadata (``NOTE_KEY``) and on its figure panel.
    """
    blind = item_outcomes(pl.read_parquet(candidates), pl.read_parquet(scores), lm_scorer)
    correct = pl.read_parquet(model_correct)
    heatmap = prior_heatmap_table(correct, blind, bins, min_count)
    used = heatmap_bins(heatmap)
    log(
        f"heat map: {used}x{used} bins (priors.bins: {bins}) over {correct.height} model item(s), "
        f"cells with fewer than {min_count} masked"
    )
    meta = {
        "lm_scorer": lm_scorer,
        "bins": str(used),
        "bins_setting": str(bins),
        "min_count": str(min_count),
    }
    write_parquet(linguistic_prior_table(correct, blind), table_out, meta)
    notes = [f"{model}: {reason}" for model, reason in masked_reasons(heatmap).items()]
    for note in notes:
        log(f"heat map all masked: {note}")
    write_parquet(heatmap, heatmap_out, {**meta, NOTE_KEY: "\n".join(notes)} if notes else meta)
    plot_prior_heatmap(heatmap, figure_png, figure_pdf, lm_scorer, bins_setting=bins)
