"""Linguistic priors (Wu et al., 2023): how much of a model's accuracy a blind LM explains.

The blind LM "picks" the candidate it scores highest (lowest perplexity). The *hard* items
are those where it does not strictly prefer the positive: a negative scores above it or
ties with it (a tie counts as the LM getting it wrong, as everywhere in vlcomp). Hard test
accuracy is the model's accuracy on the hard items; the linguistic gap is overall accuracy
minus hard test accuracy.

The heat map bins items by the LM's perplexity of the positive and of its best-scoring
negative. Any monotone map of the score gives the same bins, so bins are taken on the
score with perplexity order (bin 0 = lowest perplexity = highest score). Bin edges are
the deciles of the *pooled* positive and negative scores, so the two axes share one scale
and the diagonal separates "LM prefers the positive" from "LM prefers the negative". Cells
with fewer than ``min_count`` items are masked; when every cell of a model is,
``masked_reasons`` says why (too few items for ``bins`` x ``bins`` cells).

Bins per axis. Ten per axis (100 cells) needs about 1,000 items before a typical cell holds
``min_count = 10``; a set of a hundred items then usually shows nothing. ``bins="auto"``
(``auto_bins``) takes the largest b <= 10 whose average cell reaches ``min_count``
(n / b^2 >= min_count, n the items per model), and at least 2; since the fullest cell holds
at least the average, some cell is then always shown unless even 2 x 2 is too fine
(n < 4 * min_count), which ``masked_reasons`` says. A fixed b is used as given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from vlcomp.refine.candidates import GROUP_COLUMNS, ITEM_KEY

AUTO = "auto"
AUTO_MAX_BINS = 10  # the fixed default before "auto"

PRIOR_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "family": pl.String,
    "target": pl.String,
    "n": pl.Int64,
    "accuracy": pl.Float64,
    "n_hard": pl.Int64,
    "hard_accuracy": pl.Float64,  # null when no item is hard
    "linguistic_gap": pl.Float64,
    "blind_accuracy": pl.Float64,  # the LM's own accuracy, tie counts as wrong
    "blind_ties": pl.Int64,
}


def _joined(model_correct: pl.DataFrame, blind: pl.DataFrame) -> pl.DataFrame:
    """``model_correct`` (model, benchmark, item_id, correct) joined with blind outcomes
    (``blind.ITEM_SCHEMA``, one scorer); error for items the LM did not score."""
    if blind["scorer"].n_unique() != 1:
        raise ValueError("blind outcomes must come from exactly one scorer")
    outcomes = blind.select(
        *ITEM_KEY,
        "family",
        "target",
        "positive_score",
        "best_negative_score",
        blind_correct=(pl.col("negatives_above") == 0) & (pl.col("negatives_tied") == 0),
        blind_tie=(pl.col("negatives_above") == 0) & (pl.col("negatives_tied") > 0),
    )
    joined = model_correct.select("model", *ITEM_KEY, pl.col("correct").cast(pl.Boolean)).join(
        outcomes, on=ITEM_KEY, how="left"
    )
    missing = joined.filter(pl.col("blind_correct").is_null())
    if missing.height:
        raise ValueError(
            f"{missing.height} model item(s) have no blind-LM outcome, e.g. "
            f"{missing['benchmark'][0]}/{missing['item_id'][0]}"
        )
    return joined.with_columns(hard=~pl.col("blind_correct"))


def _summary(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return frame.group_by(keys).agg(
        n=pl.len(),
        accuracy=pl.col("correct").mean(),
        n_hard=pl.col("hard").sum(),
        hard_accuracy=pl.col("correct").filter(pl.col("hard")).mean(),
        blind_accuracy=pl.col("blind_correct").mean(),
        blind_ties=pl.col("blind_tie").sum(),
    )


def linguistic_prior_table(
    model_correct: pl.DataFrame, blind: pl.DataFrame, group_by: Sequence[str] = GROUP_COLUMNS
) -> pl.DataFrame:
    """Per model and group, plus per model and benchmark over all items ("all" rows)."""
    frame = _joined(model_correct, blind)
    parts = [_summary(frame, ["model", *group_by]), _summary(frame, ["model", "benchmark"])]
    table = pl.concat(
        [
            p.with_columns(pl.lit("all").alias(c) for c in GROUP_COLUMNS if c not in p.columns)
            for p in parts
        ],
        how="diagonal_relaxed",
    ).with_columns(linguistic_gap=pl.col("accuracy") - pl.col("hard_accuracy"))
    return (
        table.with_columns(pl.col(c).cast(t) for c, t in PRIOR_SCHEMA.items())
        .select(list(PRIOR_SCHEMA))
        .sort("model", "benchmark", pl.col("family") == "all", "family", "target", nulls_last=True)
    )


def perplexity_bins(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin 0 holds the highest scores (lowest perplexity); ``edges`` ascend in score."""
    inner = edges[1:-1]
    return (inner.size - np.searchsorted(inner, scores, side="right")).astype(np.int64)


def auto_bins(n_items: int, min_count: int, max_bins: int = AUTO_MAX_BINS) -> int:
    """b of ``bins="auto"`` for ``n_items`` per model: the largest b <= ``max_bins`` with
    n_items / b^2 >= ``min_count``, and at least 2."""
    if max_bins < 2 or min_count < 1:
        raise ValueError(
            f"auto_bins needs max_bins >= 2 and min_count >= 1, got {max_bins}, {min_count}"
        )
    return max(2, min(max_bins, math.isqrt(max(n_items, 0) // min_count)))


def resolve_bins(bins: int | str, n_items: int, min_count: int) -> int:
    """The b a heat map of ``n_items`` per model is binned with: ``auto_bins`` for "auto",
    else ``bins`` (an integer >= 2)."""
    if bins == AUTO:
        return auto_bins(n_items, min_count)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise ValueError(f"priors.bins must be 'auto' or an integer >= 2, got {bins!r}")
    return bins


def heatmap_bins(heatmap: pl.DataFrame) -> int:
    """The b of a ``prior_heatmap_table`` (b x b cells per model); 0 when it has no model."""
    return math.isqrt(heatmap.height // max(1, heatmap["model"].n_unique()))


def prior_heatmap_table(
    model_correct: pl.DataFrame,
    blind: pl.DataFrame,
    bins: int | str = AUTO,
    min_count: int = 10,
) -> pl.DataFrame:
    """Per model and (positive bin, negative bin): n and accuracy (null when n < min_count).
    ``bins="auto"``: b scales with the fewest items any model has (``auto_bins``)."""
    frame = _joined(model_correct, blind)
    per_model = frame.group_by("model").len()["len"]
    bins = resolve_bins(bins, int(per_model.min()) if per_model.len() else 0, min_count)
    pooled = np.concatenate(
        [blind["positive_score"].to_numpy(), blind["best_negative_score"].to_numpy()]
    )
    edges = np.quantile(pooled, np.linspace(0.0, 1.0, bins + 1))
    frame = frame.with_columns(
        positive_bin=pl.Series(perplexity_bins(frame["positive_score"].to_numpy(), edges)),
        negative_bin=pl.Series(perplexity_bins(frame["best_negative_score"].to_numpy(), edges)),
    )
    grid = pl.DataFrame(
        {
            "positive_bin": np.repeat(np.arange(bins), bins),
            "negative_bin": np.tile(np.arange(bins), bins),
        }
    )
    models = frame.select("model").unique().sort("model")
    cells = frame.group_by("model", "positive_bin", "negative_bin").agg(
        n=pl.len(), accuracy=pl.col("correct").mean()
    )
    return (
        models.join(grid, how="cross")
        .join(cells, on=["model", "positive_bin", "negative_bin"], how="left")
        .with_columns(
            n=pl.col("n").fill_null(0).cast(pl.Int64),
            accuracy=pl.when(pl.col("n") >= min_count).then(pl.col("accuracy")),
            min_count=pl.lit(min_count, dtype=pl.Int64),
        )
        .sort("model", "positive_bin", "negative_bin")
    )


def masked_reasons(heatmap: pl.DataFrame) -> dict[str, str]:
    """Model -> why every cell of its heat map (``prior_heatmap_table``) is masked; models
    with a cell shown are left out."""
    reasons = {}
    for (model,), rows in sorted(heatmap.group_by(["model"]), key=lambda g: str(g[0][0])):
        if rows["accuracy"].null_count() < rows.height:
            continue
        bins, min_count = math.isqrt(rows.height), int(rows["min_count"][0])
        n, fullest = int(rows["n"].sum()), int(rows["n"].max())
        fix = (
            "set priors.min_count or priors.bins lower"
            if bins > 2
            else f"2x2 is the coarsest map: a priors.min_count of at most {fullest} shows a cell"
        )
        reasons[str(model)] = (
            f"every cell has fewer than min_count={min_count} items: {n} items over "
            f"{bins}x{bins} cells, the fullest holds {fullest}; {fix}"
        )
    return reasons
