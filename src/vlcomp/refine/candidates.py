"""Shape checks and reshaping of candidate tables (one positive + negatives per item)."""

from __future__ import annotations

from typing import Literal

import polars as pl

ITEM_KEY = ["benchmark", "item_id"]
GROUP_COLUMNS = ("benchmark", "family", "target")


def check_items(candidates: pl.DataFrame) -> None:
    """Every item has exactly one positive, at least one negative, one family/target."""
    stats = candidates.group_by(ITEM_KEY).agg(
        positives=pl.col("is_positive").sum(),
        negatives=(~pl.col("is_positive")).sum(),
        families=pl.col("family").n_unique(),
        targets=pl.col("target").n_unique(),
    )
    for condition, problem in [
        (pl.col("positives") != 1, "not exactly one positive"),
        (pl.col("negatives") < 1, "no negative"),
        ((pl.col("families") != 1) | (pl.col("targets") != 1), "several families or targets"),
    ]:
        bad = stats.filter(condition).sort(ITEM_KEY)
        if bad.height:
            example = f"{bad['benchmark'][0]}/{bad['item_id'][0]}"
            raise ValueError(f"{bad.height} item(s) with {problem}, e.g. {example}")


def as_pairs(candidates: pl.DataFrame, multi: Literal["error", "split"] = "error") -> pl.DataFrame:
    """One row per (positive, negative) pair: benchmark, item_id, image, family, target,
    positive, negative.

    Items with several negatives raise unless ``multi="split"``, which makes one pair per
    negative with item_id ``<item_id>~<j>`` (j counts the item's negatives in text order).
    """
    check_items(candidates)
    pos = candidates.filter(pl.col("is_positive")).select(
        *ITEM_KEY, "image", "family", "target", pl.col("text").alias("positive")
    )
    neg = candidates.filter(~pl.col("is_positive")).select(
        *ITEM_KEY, pl.col("text").alias("negative")
    )
    counts = neg.group_by(ITEM_KEY).len()
    several = counts.filter(pl.col("len") > 1).sort(ITEM_KEY)
    if several.height and multi == "error":
        raise ValueError(
            f"refinement pairs one positive with one negative; {several.height} item(s) have "
            f"more, e.g. {several['item_id'][0]} ({several['len'][0]}); use multi='split'"
        )
    pairs = pos.join(neg, on=ITEM_KEY, how="inner")
    if several.height:
        pairs = pairs.sort(*ITEM_KEY, "negative").with_columns(
            pl.when(pl.len().over(ITEM_KEY) > 1)
            .then(pl.format("{}~{}", "item_id", pl.int_range(pl.len()).over(ITEM_KEY)))
            .otherwise(pl.col("item_id"))
            .alias("item_id")
        )
    return pairs.sort(*ITEM_KEY)
