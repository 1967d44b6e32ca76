"""Adversarial refinement of a candidate table with two text-only scorers (see adversarial)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from vlcomp.refine.adversarial import (
    AUTO,
    STRATA,
    group_seed,
    normalise_gaps,
    refine_mask,
    resolve_grid,
    resolve_normalisation,
)
from vlcomp.refine.blind import ACCURACY_SCHEMA, TiePolicy, accuracy_table
from vlcomp.refine.candidates import GROUP_COLUMNS, ITEM_KEY, as_pairs
from vlcomp.refine.scores import scorer_names, with_text_keys

REFINED_ITEMS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "item_id": pl.String,
    "family": pl.String,
    "target": pl.String,
    "gap_1": pl.Float64,  # score(positive) - score(negative), scorer 1
    "gap_2": pl.Float64,
    "normalised_1": pl.Float64,  # in [-1, 1]
    "normalised_2": pl.Float64,
    "cell_1": pl.Int64,  # axis cell; -1 for a zero gap
    "cell_2": pl.Int64,
    "stratum": pl.String,  # grid, zero_gap_1, zero_gap_2, zero_both
    "kept": pl.Boolean,
}


@dataclass(frozen=True)
class RefinementResult:
    """``items``: every pair with its gaps, cells and whether it is kept
    (``REFINED_ITEMS_SCHEMA``); ``counts``: per group, before/kept counts, the grid K used,
    the resolved normalisations, each scorer's wins / losses / ties after refinement and a
    ``note`` saying why a group kept nothing (null otherwise);
    ``accuracy``: blind accuracy per scorer before and after (``stage`` + ``ACCURACY_SCHEMA``);
    ``params``: the settings, for output metadata."""

    items: pl.DataFrame
    counts: pl.DataFrame
    accuracy: pl.DataFrame
    params: dict[str, str] = field(default_factory=dict)

    def kept(self) -> pl.DataFrame:
        return self.items.filter(pl.col("kept")).select(*ITEM_KEY, "family", "target")

    def notes(self) -> list[str]:
        """One line per group that kept nothing, and one for the whole refinement when it
        kept nothing."""
        group_by = json.loads(self.params.get("group_by", json.dumps(list(GROUP_COLUMNS))))
        lines = [
            f"{' / '.join(str(row[c]) for c in group_by if row[c] is not None)}: {row['note']}"
            for row in self.counts.filter(pl.col("note").is_not_null()).iter_rows(named=True)
        ]
        n, kept = self.items.height, int(self.items["kept"].sum())
        if n and not kept:
            lines.append(f"refinement kept 0 of {n} pairs: every group kept nothing (above)")
        return lines


def pair_gaps(pairs: pl.DataFrame, scores: pl.DataFrame, scorer: str) -> pl.DataFrame:
    """``pairs`` with positive/negative scores of ``scorer``; error on any missing score."""
    table = scores.filter(pl.col("scorer") == scorer).select("text_key", "score")
    if table.height == 0:
        raise ValueError(f"no scores for scorer {scorer!r} (have {scorer_names(scores)})")
    keyed = with_text_keys(with_text_keys(pairs, "positive", "pos_key"), "negative", "neg_key")
    out = keyed.join(
        table.rename({"text_key": "pos_key", "score": "positive_score"}), on="pos_key", how="left"
    ).join(
        table.rename({"text_key": "neg_key", "score": "negative_score"}), on="neg_key", how="left"
    )
    missing = out.filter(pl.col("positive_score").is_null() | pl.col("negative_score").is_null())
    if missing.height:
        raise ValueError(
            f"scorer {scorer!r} lacks scores for {missing.height} pair(s), e.g. item "
            f"{missing['item_id'][0]}"
        )
    return out.drop("pos_key", "neg_key").sort(ITEM_KEY)


def _group_label(values: Sequence[object]) -> str:
    return json.dumps(list(values))


def _outcomes(frame: pl.DataFrame, scorer: str, gap: str) -> pl.DataFrame:
    # A pair's gap as blind-baseline outcomes: negative above when gap < 0, tied when 0.
    return frame.select(
        scorer=pl.lit(scorer),
        benchmark="benchmark",
        item_id="item_id",
        family="family",
        target="target",
        positive_score=pl.col(gap),
        best_negative_score=pl.lit(0.0),
        negatives_above=(pl.col(gap) < 0).cast(pl.Int64),
        negatives_tied=(pl.col(gap) == 0).cast(pl.Int64),
    )


def empty_reason(
    gap_1: np.ndarray,
    gap_2: np.ndarray,
    normalised_1: np.ndarray,
    normalised_2: np.ndarray,
    grid: int,
) -> str:
    """Why refinement with a ``grid`` x ``grid`` grid keeps none of a group's pairs: the
    grid is too fine (a 2 x 2 grid keeps some), or no grid keeps any (the pairs' gaps never
    mirror each other)."""
    n = gap_1.size
    coarse = int(
        refine_mask(gap_1, gap_2, normalised_1, normalised_2, np.random.default_rng(0), 2)[0].sum()
    )
    if coarse:
        return (
            f"refinement kept 0 of {n}: a {grid}x{grid} grid has {n / grid**2:.2g} pairs per "
            f"cell and no cell whose mirror cell holds a pair; a 2x2 grid would keep {coarse}: "
            "set refine.grid lower, or to auto"
        )
    sides = "; ".join(
        f"scorer {k}: {(g > 0).sum()} gaps > 0, {(g < 0).sum()} < 0, {(g == 0).sum()} = 0"
        for k, g in ((1, gap_1), (2, gap_2))
    )
    return (
        f"refinement kept 0 of {n}: no pair has one on the mirror side at any grid ({sides}), "
        "so the blind scorers' choice cannot be balanced in this group"
    )


def refine_candidates(
    candidates: pl.DataFrame,
    scores: pl.DataFrame,
    scorers: tuple[str, str],
    *,
    grid: int | str = AUTO,
    seed: int = 0,
    normalisation: tuple[str, str] = ("auto", "auto"),
    zero_axis_grid: int | None = None,
    group_by: Sequence[str] = GROUP_COLUMNS,
    multi: Literal["error", "split"] = "error",
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> RefinementResult:
    """Refine each group (default: benchmark, family, target) of paired items separately,
    each with a ``grid`` x ``grid`` grid; ``grid="auto"``: K scales with the group's size
    (``adversarial.auto_grid``)."""
    if len(scorers) != 2 or scorers[0] == scorers[1]:
        raise ValueError(f"refinement needs two different scorers, got {scorers}")
    resolve_grid(grid, 0)
    pairs = as_pairs(candidates, multi)
    if pairs.height == 0:
        raise ValueError("refinement: the candidates hold no item (no pair to refine)")
    first = pair_gaps(pairs, scores, scorers[0])
    second = pair_gaps(pairs, scores, scorers[1]).select(
        *ITEM_KEY,
        pl.col("positive_score").alias("positive_score_2"),
        pl.col("negative_score").alias("negative_score_2"),
    )
    frame = first.join(second, on=ITEM_KEY).sort(*group_by, "item_id", nulls_last=True)
    frame = frame.with_columns(
        gap_1=pl.col("positive_score") - pl.col("negative_score"),
        gap_2=pl.col("positive_score_2") - pl.col("negative_score_2"),
    )
    items, counts = [], []
    for key, group in frame.group_by(list(group_by), maintain_order=True):
        methods = [
            resolve_normalisation(
                normalisation[k],
                group[f"positive_score{suffix}"].to_numpy(),
                group[f"negative_score{suffix}"].to_numpy(),
            )
            for k, suffix in enumerate(["", "_2"])
        ]
        gap_1, gap_2 = group["gap_1"].to_numpy(), group["gap_2"].to_numpy()
        norm_1, norm_2 = normalise_gaps(gap_1, methods[0]), normalise_gaps(gap_2, methods[1])
        rng = group_seed(seed, _group_label(key))
        k_grid = resolve_grid(grid, group.height)
        keep, stratum, cell_1, cell_2 = refine_mask(
            gap_1, gap_2, norm_1, norm_2, rng, k_grid, zero_axis_grid
        )
        part = group.select(*ITEM_KEY, "family", "target", "gap_1", "gap_2").with_columns(
            normalised_1=pl.Series(norm_1),
            normalised_2=pl.Series(norm_2),
            cell_1=pl.Series(cell_1, dtype=pl.Int64),
            cell_2=pl.Series(cell_2, dtype=pl.Int64),
            stratum=pl.Series([STRATA[int(s)] for s in stratum], dtype=pl.String),
            kept=pl.Series(keep),
        )
        items.append(part)
        kept = part.filter(pl.col("kept"))
        row: dict[str, object] = dict(zip(group_by, key, strict=True))
        row |= {"n_before": part.height, "n_kept": kept.height, "grid": k_grid}
        for name in STRATA.values():
            row[f"kept_{name}"] = int((kept["stratum"] == name).sum())
        for k in (1, 2):
            g = kept[f"gap_{k}"].to_numpy()
            row |= {
                f"normalisation_{k}": methods[k - 1],
                f"wins_{k}": int((g > 0).sum()),
                f"losses_{k}": int((g < 0).sum()),
                f"ties_{k}": int((g == 0).sum()),
            }
        row["note"] = None if kept.height else empty_reason(gap_1, gap_2, norm_1, norm_2, k_grid)
        counts.append(row)
    items_frame = (
        pl.concat(items)
        .with_columns(pl.col(c).cast(t) for c, t in REFINED_ITEMS_SCHEMA.items())
        .select(list(REFINED_ITEMS_SCHEMA))
    )
    accuracy = []
    for stage, subset in [("before", items_frame), ("after", items_frame.filter("kept"))]:
        outcomes = pl.concat([_outcomes(subset, scorers[k], f"gap_{k + 1}") for k in (0, 1)])
        accuracy.append(
            accuracy_table(outcomes, tie_policy, group_by).with_columns(stage=pl.lit(stage))
        )
    params = {
        "scorer_1": scorers[0],
        "scorer_2": scorers[1],
        "grid": str(grid),
        "zero_axis_grid": "grid" if zero_axis_grid is None else str(zero_axis_grid),
        "seed": str(seed),
        "normalisation": json.dumps(list(normalisation)),
        "group_by": json.dumps(list(group_by)),
        "tie_policy": tie_policy,
    }
    return RefinementResult(
        items=items_frame,
        counts=pl.DataFrame(counts, schema_overrides={"note": pl.String}),
        accuracy=pl.concat(accuracy).select("stage", *ACCURACY_SCHEMA),
        params=params,
    )


def refined_candidates(candidates: pl.DataFrame, result: RefinementResult) -> pl.DataFrame:
    """The rows of ``candidates`` whose items refinement kept (for ``multi="error"``)."""
    return candidates.join(result.kept().select(ITEM_KEY), on=ITEM_KEY, how="semi")
