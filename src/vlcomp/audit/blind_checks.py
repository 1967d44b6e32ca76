"""Text-only checks: blind accuracy of the text scorers per type, and the ceiling of any
order-blind model (pairs whose two texts are the same multiset of words); see ``checks``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from vlcomp.refine.blind import TiePolicy, blind_accuracy
from vlcomp.refine.candidates import ITEM_KEY
from vlcomp.refine.scores import scorer_names, with_text_keys
from vlcomp.refine.words import words
from vlcomp.vocabulary import ALL, MACRO

from .variants import sort_types, type_expr, variant_sorted

BLIND_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "scorer": pl.String,
    "type": pl.String,  # family_target, "all" (micro) or "macro" (mean over types)
    "n": pl.Int64,
    "ties": pl.Int64,
    "correct": pl.Float64,  # credit summed over items (wins, plus tie credit under chance)
    "accuracy": pl.Float64,
    "tie_policy": pl.String,
}
ORDER_BLIND_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "n_items": pl.Int64,
    "n_pairs": pl.Int64,  # (positive, negative) pairs: one per negative
    "same_words": pl.Int64,  # pairs whose two texts are the same multiset of words
    "identical": pl.Int64,  # of those, pairs whose two texts are equal
    "share": pl.Float64,  # same_words / n_pairs
    "items_same_words": pl.Int64,  # items with at least one same-words negative
    "ceiling_ties_wrong": pl.Float64,  # 1 - items_same_words / n_items
    "ceiling_ties_chance": pl.Float64,  # mean over items of 1 / (1 + k same-words negatives)
}


# --------------------------------------------------------------------------- blind


def blind_table(
    variants: Mapping[str, pl.DataFrame],
    scores: pl.DataFrame,
    scorers: Sequence[str] | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> tuple[pl.DataFrame, list[str]]:
    """(``BLIND_SCHEMA`` table, notes). A scorer without a score for some text of a variant
    is left out of that variant, with a note saying how many texts it lacks."""
    names = list(scorers) if scorers is not None else scorer_names(scores)
    parts, notes = [], []
    for variant, candidates in variants.items():
        keyed = with_text_keys(candidates.select("text").unique())
        usable = []
        for name in names:
            have = scores.filter(pl.col("scorer") == name).select("text_key")
            lacking = keyed.join(have, on="text_key", how="anti").height
            if lacking:
                notes.append(
                    f"scorer {name!r} has no score for {lacking} of the {keyed.height} texts of "
                    f"variant {variant!r}: left out of that variant"
                )
            else:
                usable.append(name)
        if not usable:
            continue
        table = blind_accuracy(_one_benchmark(candidates), scores, usable, tie_policy)
        parts.append(
            table.with_columns(
                pl.when(pl.col("average") == "group")
                .then(type_expr())
                .when(pl.col("average") == "micro")
                .then(pl.lit(ALL))
                .otherwise(pl.lit(MACRO))
                .alias("type"),
                variant=pl.lit(variant),
            ).select(list(BLIND_SCHEMA))
        )
    if not parts:
        return pl.DataFrame(schema=BLIND_SCHEMA), notes
    table = pl.concat(parts).select([pl.col(c).cast(t) for c, t in BLIND_SCHEMA.items()])
    order = {v: i for i, v in enumerate(variants)}
    return sort_types(
        table.with_columns(_v=pl.col("variant").replace_strict(order, return_dtype=pl.Int64)),
        "_v",
        "scorer",
    ).drop("_v"), notes


def _one_benchmark(candidates: pl.DataFrame) -> pl.DataFrame:
    """One benchmark name per variant (items of several benchmarks get ``<benchmark>/<id>``
    ids) so that averages are over the variant's items."""
    if candidates["benchmark"].n_unique() <= 1:
        return candidates
    return candidates.with_columns(
        item_id=pl.concat_str("benchmark", "item_id", separator="/"),
        benchmark=pl.lit("+".join(sorted(candidates["benchmark"].unique().to_list()))),
    )


# ---------------------------------------------------------------------- order-blind


def _pairs(candidates: pl.DataFrame) -> pl.DataFrame:
    pos = candidates.filter(pl.col("is_positive")).select(
        *ITEM_KEY, type_expr(), pl.col("text").alias("positive")
    )
    neg = candidates.filter(~pl.col("is_positive")).select(
        *ITEM_KEY, pl.col("text").alias("negative")
    )
    return pos.join(neg, on=ITEM_KEY, how="inner")


def order_blind_table(variants: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """``ORDER_BLIND_SCHEMA``: same-words pairs and the order-blind ceiling per type."""
    parts = []
    for variant, candidates in variants.items():
        pairs = _pairs(candidates)
        bags = {t: words(t) for t in {*pairs["positive"], *pairs["negative"]}}
        same = [
            bags[p] == bags[n] for p, n in zip(pairs["positive"], pairs["negative"], strict=True)
        ]
        pairs = pairs.with_columns(
            same=pl.Series(same, dtype=pl.Boolean),
            identical=pl.col("positive") == pl.col("negative"),
        )
        items = pairs.group_by(*ITEM_KEY, "type").agg(
            k=pl.col("same").sum().cast(pl.Int64), n_neg=pl.len()
        )
        for p, i in ((pairs, items), (pairs.with_columns(type=pl.lit(ALL)),
                                       items.with_columns(type=pl.lit(ALL)))):  # fmt: skip
            by_pair = p.group_by("type").agg(
                n_pairs=pl.len().cast(pl.Int64),
                same_words=pl.col("same").sum().cast(pl.Int64),
                identical=(pl.col("same") & pl.col("identical")).sum().cast(pl.Int64),
            )
            by_item = i.group_by("type").agg(
                n_items=pl.len().cast(pl.Int64),
                items_same_words=(pl.col("k") > 0).sum().cast(pl.Int64),
                # exact, order-free: sum over k of (items with k) / (1 + k), divided once
                _per_k=pl.col("k").value_counts(sort=True),
            )
            by_item = by_item.with_columns(
                ceiling_ties_chance=pl.Series(
                    [
                        math.fsum(e["count"] / (1 + e["k"]) for e in counts) / n
                        for counts, n in zip(by_item["_per_k"], by_item["n_items"], strict=True)
                    ],
                    dtype=pl.Float64,
                )
            ).drop("_per_k")
            parts.append(
                by_pair.join(by_item, on="type").with_columns(
                    variant=pl.lit(variant),
                    share=pl.col("same_words") / pl.col("n_pairs"),
                    ceiling_ties_wrong=1.0 - pl.col("items_same_words") / pl.col("n_items"),
                )
            )
    if not parts:
        return pl.DataFrame(schema=ORDER_BLIND_SCHEMA)
    table = pl.concat([p.select(list(ORDER_BLIND_SCHEMA)) for p in parts]).select(
        [pl.col(c).cast(t) for c, t in ORDER_BLIND_SCHEMA.items()]
    )
    return variant_sorted(table, variants)
