"""Blind (text-only) baselines: does a scorer prefer the positive without seeing the image?

An item is correct when its positive scores strictly above every negative. A tie with the
best negative is handled by an explicit policy, recorded in every table:

- ``tie_counts_as_wrong`` (default, as everywhere in vlcomp): no credit;
- ``tie_counts_as_chance``: credit 1 / (1 + number of negatives tied with the positive), the
  expected accuracy of breaking the tie at random.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from vlcomp.refine.candidates import GROUP_COLUMNS, ITEM_KEY, check_items
from vlcomp.refine.scores import attach_scores, scorer_names

TiePolicy = Literal["tie_counts_as_wrong", "tie_counts_as_chance"]
TIE_POLICIES: tuple[str, ...] = ("tie_counts_as_wrong", "tie_counts_as_chance")

ITEM_SCHEMA: dict[str, pl.DataType] = {
    "scorer": pl.String,
    "benchmark": pl.String,
    "item_id": pl.String,
    "family": pl.String,
    "target": pl.String,
    "positive_score": pl.Float64,
    "best_negative_score": pl.Float64,
    "negatives_above": pl.Int64,  # negatives scored strictly above the positive
    "negatives_tied": pl.Int64,  # negatives scored exactly equal to the positive
}

ACCURACY_SCHEMA: dict[str, pl.DataType] = {
    "scorer": pl.String,
    "benchmark": pl.String,
    "family": pl.String,
    "target": pl.String,
    "average": pl.String,  # "group" for one (benchmark, family, target); "micro" / "macro"
    "n": pl.Int64,
    "ties": pl.Int64,  # items whose positive ties with the best negative (none above it)
    "correct": pl.Float64,  # credit summed over items (fractional under tie_counts_as_chance)
    "accuracy": pl.Float64,
    "tie_policy": pl.String,
}


def _check_policy(tie_policy: str) -> None:
    if tie_policy not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {tie_policy!r}; expected one of {TIE_POLICIES}")


def item_outcomes(candidates: pl.DataFrame, scores: pl.DataFrame, scorer: str) -> pl.DataFrame:
    """Per item, how ``scorer`` ranks the positive against the negatives (``ITEM_SCHEMA``)."""
    check_items(candidates)
    scored = attach_scores(candidates, scores, scorer)
    pos = scored.filter(pl.col("is_positive")).select(
        *ITEM_KEY, "family", "target", pl.col("score").alias("positive_score")
    )
    neg = scored.filter(~pl.col("is_positive")).select(*ITEM_KEY, "score")
    per_item = (
        neg.join(pos.select(*ITEM_KEY, "positive_score"), on=ITEM_KEY)
        .group_by(ITEM_KEY)
        .agg(
            best_negative_score=pl.col("score").max(),
            negatives_above=(pl.col("score") > pl.col("positive_score")).sum().cast(pl.Int64),
            negatives_tied=(pl.col("score") == pl.col("positive_score")).sum().cast(pl.Int64),
        )
    )
    return (
        pos.join(per_item, on=ITEM_KEY)
        .with_columns(scorer=pl.lit(scorer))
        .select(list(ITEM_SCHEMA))
        .sort(ITEM_KEY)
    )


def credit(outcomes: pl.DataFrame, tie_policy: TiePolicy = "tie_counts_as_wrong") -> pl.Expr:
    """Per-item credit expression for ``outcomes`` (``ITEM_SCHEMA``) under ``tie_policy``."""
    _check_policy(tie_policy)
    clean = pl.col("negatives_above") == 0
    if tie_policy == "tie_counts_as_wrong":
        return (clean & (pl.col("negatives_tied") == 0)).cast(pl.Float64)
    return pl.when(clean).then(1.0 / (1 + pl.col("negatives_tied"))).otherwise(0.0)


def accuracy_table(
    outcomes: pl.DataFrame,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    group_by: Sequence[str] = GROUP_COLUMNS,
) -> pl.DataFrame:
    """Accuracy per scorer and group, then micro (over items) and macro (over groups)
    averages per scorer and benchmark, and over all benchmarks when there are several.

    Columns not in ``group_by`` among benchmark/family/target read "all" in every row.
    """
    _check_policy(tie_policy)
    frame = outcomes.with_columns(
        credit=credit(outcomes, tie_policy),
        tie=(pl.col("negatives_above") == 0) & (pl.col("negatives_tied") > 0),
    )
    keys = ["scorer", *group_by]
    groups = (
        frame.group_by(keys)
        .agg(n=pl.len(), ties=pl.col("tie").sum(), correct=pl.col("credit").sum())
        .with_columns(accuracy=pl.col("correct") / pl.col("n"), average=pl.lit("group"))
    )
    summaries = [groups]
    levels = [["scorer", "benchmark"]]
    if outcomes["benchmark"].n_unique() > 1:
        levels.append(["scorer"])
    for level in levels:
        micro = frame.group_by(level).agg(
            n=pl.len(), ties=pl.col("tie").sum(), correct=pl.col("credit").sum()
        )
        micro = micro.with_columns(
            accuracy=pl.col("correct") / pl.col("n"), average=pl.lit("micro")
        )
        # Sorted, order-keeping groups: a float mean must add in the same order every run.
        macro = (
            groups.sort(keys)
            .group_by(level, maintain_order=True)
            .agg(
                n=pl.col("n").sum(),
                ties=pl.col("ties").sum(),
                correct=pl.col("correct").sum(),
                accuracy=pl.col("accuracy").mean(),
            )
        )
        summaries += [micro, macro.with_columns(average=pl.lit("macro"))]
    table = pl.concat(
        [
            s.with_columns(
                [pl.lit("all").alias(c) for c in GROUP_COLUMNS if c not in s.columns]
            ).with_columns(tie_policy=pl.lit(tie_policy))
            for s in summaries
        ],
        how="diagonal_relaxed",
    )
    order = {"group": 0, "micro": 1, "macro": 2}
    return (
        table.with_columns(pl.col(c).cast(t) for c, t in ACCURACY_SCHEMA.items())
        .select(list(ACCURACY_SCHEMA))
        .sort(
            "scorer",
            pl.col("benchmark") == "all",
            "benchmark",
            pl.col("average").replace_strict(order, return_dtype=pl.Int64),
            "family",
            "target",
            nulls_last=True,
        )
    )


def blind_accuracy(
    candidates: pl.DataFrame,
    scores: pl.DataFrame,
    scorers: Sequence[str] | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    group_by: Sequence[str] = GROUP_COLUMNS,
) -> pl.DataFrame:
    """Blind accuracy (``ACCURACY_SCHEMA``) of each scorer in ``scores`` (or ``scorers``)."""
    names = list(scorers) if scorers is not None else scorer_names(scores)
    outcomes = pl.concat([item_outcomes(candidates, scores, name) for name in names])
    return accuracy_table(outcomes, tie_policy, group_by)
