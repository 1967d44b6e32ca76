"""Retrieval-set evaluation: one image (or crop) against its positive and hard negatives.

A *retrieval set* is one item's positive caption(s) together with its negatives of one
negative type (``family_target``, e.g. ``atom_obj``; CREPE's HN-ATOM sets are 1 + 4, HN-COMP
1 + 6, a SugarCrepe or ARO pair is 1 + 1: pairs are retrieval sets of two and go through the
same ranking and metric table). Candidates come in the ``CANDIDATES_SCHEMA`` contract; when
an item's negatives are of several types, each type is its own set, and every set holds all
of the item's positive rows (deduplicated by text).

Scoring (tie counts as wrong, ``vlcomp.evaluate.metrics.pessimistic_rank``): the rank of a
set's best positive is the number of negatives whose similarity is >= its own, so a set is
``correct`` (R@1 hit) only when the positive beats every negative strictly.

Metrics (``vlcomp.evaluate.metrics.METRIC_SCHEMA``), per model, benchmark and part, for
every split (and "all"), negative type (and "all": ``<metric>_micro`` over items,
``<metric>_macro`` = mean over negative types) and complexity (and null = every complexity):
``R@K`` for each K and ``mean_R@K`` (mean over the Ks) for sets of more than two candidates;
``accuracy`` (= R@1; ``accuracy_micro`` / ``accuracy_macro`` over types) for benchmarks
whose sets are all pairs. Chance rows (model "chance") hold the expectation under a random
ranking, averaged over the items: min(K, m) / m for m candidates with one positive (in
general 1 - C(m - p, K) / C(m, K) for p positives; 0.5 for a pair). Every value carries a
percentile bootstrap confidence interval over items (stratified by negative type for macro
averages); see ``vlcomp.evaluate.metrics``.

The model's scores (``SCORES_SCHEMA``) come from ``vlcomp.evaluate.scoring.score_candidates``;
this module ranks them and builds the metric tables, without a model or torch. Images are
looked up by image_id in a mapping built from the eval set's image index
(``vlcomp.evaluate.images.lookup_images``), never guessed from names. Images may be crops: a
boxes table (item_id, x, y, width, height; the eval-items contract qualifies) gives a region
per item (``item_boxes``, ``vlcomp.evaluate.images.ImageRef``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import polars as pl

from vlcomp.evaluate.images import Box
from vlcomp.evaluate.metrics import (
    METRIC_SCHEMA,
    EvalSettings,
    bootstrap_means,
    cell_rng,
    chance_recall,
    metric_frame,
    metric_rows,
    percentile_interval,
    pessimistic_rank,
    split_order,
)
from vlcomp.vocabulary import (
    ALL,
    CHANCE,
    NO_BINDING,
    NO_COMPOUND,
    NO_SPLIT,
    NOT_IN_SPLITS,
    RULES,
    TIE_POLICY,
    negative_type,
)

Log = Callable[[str], None]

__all__ = [
    "ALL", "CHANCE", "NOT_IN_SPLITS", "NO_SPLIT", "SCORES_SCHEMA", "SET_METRIC_SCHEMA",
    "SET_PREDICTIONS_SCHEMA", "TIE_POLICY", "UNSPLIT", "SetEvalSettings", "attach_splits",
    "bootstrap_means", "cell_rng", "item_boxes", "negative_type", "percentile_interval",
    "rank_sets", "set_metric_table", "split_keys",
]  # fmt: skip

# What a null split means, for the columns of the split assignments (splits.assign).
UNSPLIT: dict[str, str] = {
    "crepe_split": NO_COMPOUND,
    **{f"{side}split_{rule}": NO_BINDING for side in ("", "pos_", "neg_") for rule in RULES},
}

SET_METRIC_SCHEMA = METRIC_SCHEMA
SetEvalSettings = EvalSettings
DEFAULT_SETTINGS = EvalSettings()

SET_PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "part": pl.String,  # the benchmark part (e.g. a training corpus); null: none
    "item_id": pl.String,
    "image": pl.String,  # the eval set's image_id (null when the scores had none)
    "family": pl.String,  # negative type: family_target, e.g. "swap_att"
    "split": pl.String,  # null: no splits table; see attach_splits for items without one
    "complexity": pl.Int64,
    "n_candidates": pl.Int64,
    "n_positives": pl.Int64,
    "rank": pl.Int64,  # 0 = best; ties count against the positive
    "correct": pl.Boolean,  # rank == 0
    "pos_score": pl.Float64,  # best positive
    "neg_score": pl.Float64,  # best negative
    "pos_text_key": pl.String,
    "neg_text_key": pl.String,
}

SCORES_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "item_id": pl.String,
    "image": pl.String,
    "family": pl.String,
    "target": pl.String,
    "is_positive": pl.Boolean,
    "complexity": pl.Int64,
    "text_key": pl.String,
    "similarity": pl.Float64,
}
OPTIONAL_SCORE_COLUMNS = ("complexity", "image")


# --------------------------------------------------------------------------- boxes


def item_boxes(boxes: pl.DataFrame | None) -> dict[str, Box | None]:
    """item_id -> box from a table with item_id, x, y, width, height (null box: whole image)."""
    if boxes is None:
        return {}
    missing = [c for c in ("item_id", "x", "y", "width", "height") if c not in boxes.columns]
    if missing:
        raise ValueError(f"boxes: missing column(s) {missing}")
    if boxes["item_id"].is_duplicated().any():
        raise ValueError("boxes: duplicate item_id")
    out: dict[str, Box | None] = {}
    for item_id, x, y, w, h in boxes.select("item_id", "x", "y", "width", "height").iter_rows():
        values = (x, y, w, h)
        if all(v is None for v in values):
            out[str(item_id)] = None
        elif any(v is None for v in values):
            raise ValueError(f"boxes: item {item_id!r} has a partial box {values}")
        else:
            out[str(item_id)] = (int(x), int(y), int(w), int(h))
    return out


# --------------------------------------------------------------------------- ranking


def rank_sets(scores: pl.DataFrame) -> pl.DataFrame:
    """Per retrieval set: rank of the best positive among its candidates (tie = wrong).

    ``scores``: model, benchmark, item_id, family, target, is_positive, text_key, similarity
    and optionally complexity, image and part (``SCORES_SCHEMA``; the parts of a stacked
    table are ranked apart). Returns ``SET_PREDICTIONS_SCHEMA`` rows with ``split`` null
    (see ``attach_splits``).
    """
    if "part" in scores.columns and scores["part"].n_unique() > 1:
        ranked = [rank_sets(p) for p in scores.partition_by("part", maintain_order=True)]
        return pl.concat(ranked).sort("model", "benchmark", "part", "item_id", "family")
    part = scores["part"][0] if "part" in scores.columns and scores.height else None
    missing = [
        c for c in SCORES_SCHEMA if c not in scores.columns and c not in OPTIONAL_SCORE_COLUMNS
    ]
    if missing:
        raise ValueError(f"scores: missing column(s) {missing}")
    if not np.isfinite(scores["similarity"].to_numpy()).all():
        raise ValueError("scores: non-finite similarity")
    frame = scores.with_columns(
        complexity=(pl.col("complexity") if "complexity" in scores.columns else pl.lit(None)).cast(
            pl.Int64
        ),
        family=negative_type(pl.col("family"), pl.col("target")),
    )
    item = ["model", "benchmark", "item_id"]
    positives = (
        frame.filter(pl.col("is_positive"))
        .select(*item, "text_key", "similarity", pos_complexity=pl.col("complexity"))
        .unique(subset=[*item, "text_key"], keep="first", maintain_order=True)
    )
    negatives = frame.filter(~pl.col("is_positive")).unique(
        subset=[*item, "family", "text_key"], keep="first", maintain_order=True
    )
    sets = negatives.select(*item, "family").unique()
    _require_both(positives.select(item).unique(), sets.select(item).unique())
    members = pl.concat(
        [
            negatives.select(*item, "family", "text_key", "similarity", "complexity",
                             is_positive=pl.lit(False)),
            sets.join(positives, on=item, how="inner").select(
                *item, "family", "text_key", "similarity",
                complexity=pl.col("pos_complexity"), is_positive=pl.lit(True)
            ),
        ]
    ).sort([*item, "family", "is_positive", "similarity", "text_key"],
           descending=[False, False, False, False, True, True, False])  # fmt: skip
    members = members.with_columns(
        set_index=pl.struct(*item, "family").rle_id().cast(pl.Int64),
    ).with_columns(slot=pl.int_range(pl.len()).over("set_index"))
    n_sets = int(members["set_index"].max()) + 1 if members.height else 0
    width = int(members["slot"].max()) + 1 if members.height else 0
    scores_matrix = np.full((n_sets, width), -np.inf)
    positive_mask = np.zeros((n_sets, width), dtype=bool)
    set_idx, slot = members["set_index"].to_numpy(), members["slot"].to_numpy()
    scores_matrix[set_idx, slot] = members["similarity"].to_numpy()
    positive_mask[set_idx, slot] = members["is_positive"].to_numpy()
    ranks = pessimistic_rank(scores_matrix, positive_mask) if n_sets else np.zeros(0, np.int64)
    summary = (
        members.group_by("set_index")
        .agg(
            *[pl.col(c).first() for c in (*item, "family")],
            complexity=pl.col("complexity").drop_nulls().max(),
            n_candidates=pl.len(),
            n_positives=pl.col("is_positive").sum(),
            pos_score=pl.col("similarity").filter(pl.col("is_positive")).first(),
            pos_text_key=pl.col("text_key").filter(pl.col("is_positive")).first(),
            neg_score=pl.col("similarity").filter(~pl.col("is_positive")).first(),
            neg_text_key=pl.col("text_key").filter(~pl.col("is_positive")).first(),
        )
        .sort("set_index")
        .with_columns(
            rank=pl.Series(ranks.astype(np.int64)),
            split=pl.lit(None, pl.String),
            part=pl.lit(part, pl.String),
        )
        .with_columns(correct=pl.col("rank") == 0)
    )
    if "image" in scores.columns:
        image_of = frame.select(*item, pl.col("image").cast(pl.String)).unique(subset=item)
        summary = summary.join(image_of, on=item, how="left")
    else:
        summary = summary.with_columns(image=pl.lit(None, pl.String))
    return summary.select([pl.col(c).cast(t) for c, t in SET_PREDICTIONS_SCHEMA.items()]).sort(
        "model", "benchmark", "item_id", "family"
    )


def _require_both(with_positive: pl.DataFrame, with_negative: pl.DataFrame) -> None:
    keys = with_positive.columns
    lonely = with_negative.join(with_positive, on=keys, how="anti")
    if lonely.height:
        raise ValueError(
            f"{lonely.height} item(s) have negatives but no positive, e.g. {lonely.row(0)}"
        )
    bare = with_positive.join(with_negative, on=keys, how="anti")
    if bare.height:
        raise ValueError(
            f"{bare.height} item(s) have a positive but no negative, e.g. {bare.row(0)}"
        )


def split_keys(boxes: pl.DataFrame | None) -> dict[str, str]:
    """Candidate item_id -> eval item_id from a regions table with ``eval_item_id`` (the
    systematicity generator's), so that splits keyed by eval item apply; else empty."""
    if boxes is None or "eval_item_id" not in boxes.columns:
        return {}
    return dict(boxes.select(pl.col("item_id", "eval_item_id").cast(pl.String)).iter_rows())


def attach_splits(
    predictions: pl.DataFrame,
    splits: pl.DataFrame | None,
    column: str = "split",
    key_of: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Set ``split`` from a table item_id -> ``column``. Items the table lacks get
    "not_in_splits"; a null split gets the name of what it means for an assignments column
    (``UNSPLIT``: "no_compound" for crepe_split, "no_binding" for BindSplit's), else
    "no_split". Without a table the split stays null (only "all" is reported). ``key_of``
    maps a candidate item_id to the splits table's item_id (default: the same)."""
    if splits is None:
        return predictions.with_columns(split=pl.lit(None, pl.String))
    missing = [c for c in ("item_id", column) if c not in splits.columns]
    if missing:
        raise ValueError(f"splits: missing column(s) {missing}")
    table = splits.select(pl.col("item_id").cast(pl.String), split=pl.col(column).cast(pl.String))
    if table["item_id"].is_duplicated().any():
        raise ValueError("splits: duplicate item_id (filter the table to one corpus and rule)")
    keyed = predictions.drop("split").with_columns(
        _split_key=pl.col("item_id").replace(dict(key_of)) if key_of else pl.col("item_id")
    )
    return (
        keyed.join(
            table.with_columns(_listed=pl.lit(True)).rename({"item_id": "_split_key"}),
            on="_split_key",
            how="left",
        )
        .with_columns(
            split=pl.when(pl.col("_listed").is_null())
            .then(pl.lit(NOT_IN_SPLITS))
            .otherwise(pl.col("split").fill_null(UNSPLIT.get(column, NO_SPLIT)))
        )
        .select(list(predictions.columns))
    )


# --------------------------------------------------------------------------- metrics


def _item_values(
    frame: pl.DataFrame, ks: tuple[int, ...], pairs: bool
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Metric names and per-item values (model, chance), each (items, metrics)."""
    ranks = frame["rank"].to_numpy()
    m, p = frame["n_candidates"].to_numpy(), frame["n_positives"].to_numpy()
    if pairs:
        return (
            ["accuracy"],
            (ranks == 0)[:, None].astype(np.float64),
            chance_recall(m, p, 1)[:, None],
        )
    hits = np.stack([(ranks < k).astype(np.float64) for k in ks], axis=1)
    chance = np.stack([chance_recall(m, p, k) for k in ks], axis=1)
    names = [f"R@{k}" for k in ks]
    if len(ks) > 1:
        names.append("mean_R@K")
        hits = np.column_stack([hits, hits.mean(axis=1)])
        chance = np.column_stack([chance, chance.mean(axis=1)])
    return names, hits, chance


def set_metric_table(
    predictions: pl.DataFrame, settings: EvalSettings = DEFAULT_SETTINGS
) -> pl.DataFrame:
    """``METRIC_SCHEMA`` rows for every model, benchmark and part in ``predictions`` plus
    chance rows. A (model, benchmark, part) whose sets are all pairs reports ``accuracy``;
    otherwise ``R@K`` and ``mean_R@K``."""
    if "part" not in predictions.columns:
        predictions = predictions.with_columns(part=pl.lit(None, pl.String))
    rows: list[tuple] = []
    groups = predictions.group_by(["model", "benchmark", "part"])
    for (model, benchmark, part), frame in sorted(
        groups, key=lambda g: (g[0][0], g[0][1], g[0][2] is not None, g[0][2] or "")
    ):
        frame = frame.sort("item_id", "family")
        pairs = bool((frame["n_candidates"] == 2).all())
        names, values, chance = _item_values(frame, settings.ks, pairs)
        split = frame["split"].to_numpy()
        family = frame["family"].to_numpy()
        complexity = frame["complexity"].to_numpy()
        has_complexity = frame["complexity"].null_count() < frame.height
        families = sorted(set(family.tolist()))
        levels: list[int | None] = [None]
        if has_complexity:
            levels += sorted(int(c) for c in frame["complexity"].drop_nulls().unique())
        for s in split_order(frame["split"].to_list()):
            in_split = np.ones(frame.height, bool) if s == ALL else split == s
            for level in levels:
                cell = in_split if level is None else in_split & (complexity == level)
                if not cell.any():
                    continue
                per_family = []
                for f in families:
                    sel = cell & (family == f)
                    if sel.any():
                        per_family.append(sel)
                        rows += metric_rows(model, benchmark, part, s, f, level, names, values,
                                            chance, [sel], settings)  # fmt: skip
                rows += metric_rows(model, benchmark, part, s, ALL, level, names, values, chance,
                                    [cell], settings, "_micro")  # fmt: skip
                rows += metric_rows(model, benchmark, part, s, ALL, level, names, values, chance,
                                    per_family, settings, "_macro")  # fmt: skip
    return metric_frame(rows)


def log_summary(metrics: pl.DataFrame, log: Log) -> None:
    """One line per model, benchmark, part and split: the headline micro average."""
    headline = metrics.filter(
        pl.col("complexity").is_null()
        & (pl.col("family") == ALL)
        & pl.col("metric").is_in(["R@1_micro", "accuracy_micro", "i2t_R@1", "t2i_R@1"])
    )
    for row in headline.iter_rows(named=True):
        part = f" [{row['part']}]" if row.get("part") is not None else ""
        low, high = row["ci_low"], row["ci_high"]
        ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        log(
            f"{row['model']} {row['benchmark']}{part} {row['split']} {row['metric']}: "
            f"{row['value']:.3f}{ci} (n={row['n']})"
        )
