"""Evaluate a world benchmark with the ground-truth oracles (``oracles``): every candidate
text read with the world grammar (``grammar``) and scored against its image or crop.

A text the grammar cannot read is counted by reason and scored by no oracle. The oracles'
sets are ranked as the models' are (the same metric table). The false-negative rate of a
negative type is the share of its negatives that hold in the scene (the truth oracle cannot
reject them), with a Wilson interval; the false-negative table gives the rates under both
readings of the spatial words (``oracles.READINGS``), and how many positives the second
reading makes false.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import sqrt
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import text_key
from vlcomp.evaluate.metrics import EvalSettings, add_flag_counts, set_flags
from vlcomp.evaluate.retrieval_sets import (
    SCORES_SCHEMA,
    item_boxes,
    rank_sets,
    set_metric_table,
)
from vlcomp.io import write_parquet
from vlcomp.refine.words import word_prior_accuracy
from vlcomp.vocabulary import negative_type
from vlcomp.world.checks.grammar import Reading, Unreadable, WorldVocab, read_caption
from vlcomp.world.checks.oracles import (
    APART,
    DOMINANT_AXIS,
    ORACLES,
    READINGS,
    SCORERS,
    OracleScene,
    holds,
    scenes_from_table,
    visible,
)
from vlcomp.world.scenes import SceneObject

Log = Callable[[str], None]

ORACLE_PREFIX = "oracle:"  # the oracles are the models "oracle:<name>" of the tables

FALSE_NEGATIVE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,  # e.g. the systematicity corpus; null: none
    "generator": pl.String,
    "family": pl.String,  # negative type (family_target); "all" over every type
    "n_negatives": pl.Int64,  # negatives read and checked
    "n_true": pl.Int64,  # negatives that hold in the scene: false negatives
    "false_negative_rate": pl.Float64,
    "ci_low": pl.Float64,  # Wilson interval
    "ci_high": pl.Float64,
    "n_unreadable": pl.Int64,  # negatives the world grammar could not read (not checked)
    "bag_of_words_accuracy": pl.Float64,  # binding-free solvable share (sets of this type)
    "objects_only_accuracy": pl.Float64,
    "truth_accuracy": pl.Float64,
    "n_sets": pl.Int64,
    "bag_of_words_tie_share": pl.Float64,
    # the changed words' prior without the image (refine.words.word_prior_accuracy, pairs of
    # complete sets, items in two folds by a hash of their id); 0.5: none
    "word_prior_accuracy": pl.Float64,
    # the same negatives under the second reading of the spatial words (READINGS: boxes
    # apart along the relation's axis), and the items' positives that reading makes false
    "n_true_apart": pl.Int64,
    "false_negative_rate_apart": pl.Float64,
    "ci_low_apart": pl.Float64,
    "ci_high_apart": pl.Float64,
    "n_positives": pl.Int64,
    "n_positives_false_apart": pl.Int64,
}

UNREADABLE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,
    "item_id": pl.String,
    "is_positive": pl.Boolean,
    "generator": pl.String,
    "family": pl.String,
    "reason": pl.String,
    "text": pl.String,
}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials (NaN for n = 0)."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)  # exact ends, not rounding noise
    return low, 1.0 if k == n else min(1.0, centre + half)


@dataclass
class ScoredPart:
    """One benchmark part read and scored by every oracle."""

    # SCORES_SCHEMA rows (model "oracle:<name>") with generator, holds and complete
    scores: pl.DataFrame
    unreadable: pl.DataFrame  # UNREADABLE_SCHEMA
    # every read positive the truth oracle rejects (item_id, image, text), sets or not
    rejected: pl.DataFrame


def score_part(
    candidates: pl.DataFrame,
    scenes: Mapping[str, Sequence[SceneObject]],
    vocab: WorldVocab,
    boxes: pl.DataFrame | None = None,
    label: str | None = None,
) -> ScoredPart:
    """Read every candidate text and score it with each oracle against its image or crop.

    An item with an unreadable positive (or no readable negative) is left out; an item
    with an unreadable negative is marked incomplete (``complete``): its readable negatives
    are checked for false negatives, but it forms no set. Every unreadable text is listed
    with its reason."""
    columns = (
        "benchmark",
        "item_id",
        "image",
        "text",
        "is_positive",
        "family",
        "target",
        "generator",
    )
    for column in columns:
        if column not in candidates.columns:
            raise ValueError(f"candidates: missing column {column!r}")
    box_of = item_boxes(boxes)
    readings: dict[str, Reading | Unreadable] = {}
    for text in candidates["text"].unique(maintain_order=True).to_list():
        try:
            readings[text] = read_caption(text, vocab)
        except Unreadable as error:
            readings[text] = error
    rows: list[tuple[Any, ...]] = []
    bad: list[tuple[Any, ...]] = []
    bad_items: set[str] = set()  # an unreadable positive: the item is left out
    partial_items: set[str] = set()  # an unreadable negative: no set, negatives still checked
    scene_cache: dict[tuple[str, Any, str], OracleScene] = {}
    for bench, item, image, text, positive, family, target, generator in candidates.select(
        columns
    ).iter_rows():
        reading = readings[text]
        ntype = family if target is None else f"{family}_{target}"
        if isinstance(reading, Unreadable):
            bad.append((bench, label, item, positive, generator, ntype, reading.reason, text))
            (bad_items if positive else partial_items).add(item)
            continue
        if str(image) not in scenes:
            raise ValueError(f"candidates: item {item!r} names image {image!r}, which no scene has")
        for spatial in READINGS:
            key = (str(image), box_of.get(item), spatial)
            if key not in scene_cache:
                scene_cache[key] = visible(scenes[str(image)], key[1], spatial)
        scene = scene_cache[(str(image), box_of.get(item), DOMINANT_AXIS)]
        scores = [SCORERS[name](reading, scene) for name in ORACLES]
        holds_apart = holds(reading, scene_cache[(str(image), box_of.get(item), APART)])
        rows.append(
            (
                bench,
                item,
                str(image),
                family,
                target,
                positive,
                text,
                generator,
                scores[0] == 1.0,
                holds_apart,
                *scores,
            )
        )
    frame = pl.DataFrame(
        rows,
        schema={
            "benchmark": pl.String,
            "item_id": pl.String,
            "image": pl.String,
            "family": pl.String,
            "target": pl.String,
            "is_positive": pl.Boolean,
            "text": pl.String,
            "generator": pl.String,
            "holds": pl.Boolean,
            "holds_apart": pl.Boolean,
            **{name: pl.Float64 for name in ORACLES},
        },
        orient="row",
    ).filter(~pl.col("item_id").is_in(sorted(bad_items)))
    rejected = frame.filter(pl.col("is_positive") & ~pl.col("holds")).select(
        "item_id", "image", "text"
    )
    # an item whose negatives were all unreadable is no set
    with_negatives = frame.filter(~pl.col("is_positive"))["item_id"].unique()
    frame = frame.filter(pl.col("item_id").is_in(with_negatives.to_list())).with_columns(
        complete=~pl.col("item_id").is_in(sorted(partial_items))
    )
    # complexities pooled: the oracles' rows sit beside the models' pooled rows
    complexity = pl.lit(None, pl.Int64)
    scores = pl.concat(
        [
            frame.select(
                model=pl.lit(ORACLE_PREFIX + name),
                benchmark="benchmark", item_id="item_id", image="image", family="family",
                target="target", is_positive="is_positive", complexity=complexity,
                text_key=pl.col("text").map_elements(text_key, return_dtype=pl.String),
                similarity=pl.col(name), generator="generator", holds="holds",
                holds_apart="holds_apart", complete="complete", text="text",
            )
            for name in ORACLES
        ]
    )  # fmt: skip
    unreadable = pl.DataFrame(bad, schema=UNREADABLE_SCHEMA, orient="row")
    return ScoredPart(scores, unreadable, rejected)


def oracle_tables(
    parts: Sequence[tuple[str | None, ScoredPart]], settings: EvalSettings
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Metric table (``METRIC_SCHEMA`` rows of every oracle and chance, the same ranking and
    tie policy as models get), per-set predictions, and the false-negative table."""
    predictions = []
    fn_rows: list[tuple[Any, ...]] = []
    for label, part in parts:
        scores = part.scores
        if not scores.height:
            continue
        # sets as the models get them: only items whose every candidate was read
        base = scores.filter("complete").select(list(SCORES_SCHEMA))
        # an oracle reads the text itself: texts are told apart when they differ
        flags = set_flags(base, {key: key for key in base["text_key"].unique()})
        ranked = (
            rank_sets(base)
            .join(
                flags,
                on=["model", "benchmark", "item_id", "family"],
                how="left",
                maintain_order="left",
            )
            .with_columns(part=pl.lit(label, pl.String))
        )
        predictions.append(ranked)
        fn_rows += _false_negatives(label, scores, ranked, part.unreadable)
    stacked = pl.concat(predictions) if predictions else pl.DataFrame()
    metrics = (
        add_flag_counts(set_metric_table(stacked, settings), stacked)
        if predictions
        else pl.DataFrame()
    )
    fn = pl.DataFrame(fn_rows, schema=FALSE_NEGATIVE_SCHEMA, orient="row")
    return metrics, stacked, fn


def _false_negatives(
    label: str | None, scores: pl.DataFrame, ranked: pl.DataFrame, unreadable: pl.DataFrame
) -> list[tuple[Any, ...]]:
    truth = scores.filter(pl.col("model") == ORACLE_PREFIX + "truth").with_columns(
        type=negative_type(pl.col("family"), pl.col("target"))
    )
    negatives = truth.filter(~pl.col("is_positive"))
    # a positive counts under each type of its item's negatives (a set's positive row has
    # no type of its own)
    positives = (
        truth.filter("is_positive")
        .select("item_id", "holds_apart")
        .unique("item_id", keep="first", maintain_order=True)
        .join(
            negatives.select("item_id", "type", generator_negative="generator").unique(
                ["item_id", "type"], maintain_order=True
            ),
            on="item_id",
            how="inner",
        )
    )
    generator_of = negatives.select("item_id", "type", "generator").unique(
        subset=["item_id", "type"]
    )
    sets = ranked.join(
        generator_of.rename({"type": "family"}), on=["item_id", "family"], how="left"
    )
    bad = unreadable.filter(~pl.col("is_positive"))
    prior_pairs = _prior_pairs(scores)
    bench = scores["benchmark"][0]
    out = []
    keys = negatives.select("generator", "type").unique().sort("generator", "type").iter_rows()
    for generator, ntype in [*keys, *((g, "all") for g in sorted(set(negatives["generator"])))]:
        sel = negatives.filter(pl.col("generator") == generator)
        in_sets = sets.filter(pl.col("generator") == generator)
        in_bad = bad.filter(pl.col("generator") == generator)
        if ntype != "all":
            sel = sel.filter(pl.col("type") == ntype)
            in_sets = in_sets.filter(pl.col("family") == ntype)
            in_bad = in_bad.filter(pl.col("family") == ntype)
        n, k, k_apart = sel.height, int(sel["holds"].sum()), int(sel["holds_apart"].sum())
        low, high = wilson(k, n)
        low_apart, high_apart = wilson(k_apart, n)
        own = positives.filter(pl.col("generator_negative") == generator)
        if ntype != "all":
            own = own.filter(pl.col("type") == ntype)
        own = own.unique("item_id")

        acc = {
            name: in_sets.filter(pl.col("model") == ORACLE_PREFIX + name)["correct"].mean()
            for name in ORACLES
        }
        bow = in_sets.filter(pl.col("model") == ORACLE_PREFIX + "bag_of_words")
        pairs = prior_pairs.filter(pl.col("generator") == generator)
        if ntype != "all":
            pairs = pairs.filter(pl.col("type") == ntype)
        prior = word_prior_accuracy(list(pairs.select("positive", "text", "fold").iter_rows()))
        out.append((
            bench, label, generator, ntype, n, k, k / n if n else None, low, high, in_bad.height,
            acc["bag_of_words"], acc["objects_only"], acc["truth"],
            bow.height, bow["tied"].mean(), prior,
            k_apart, k_apart / n if n else None, low_apart, high_apart,
            own.height, int((~own["holds_apart"]).sum()),
        ))  # fmt: skip
    return out


def _prior_pairs(scores: pl.DataFrame) -> pl.DataFrame:
    """(positive, negative text, type, generator, fold) of every negative of a complete set,
    the fold a hash of the item id (the same items fall together in every run)."""
    truth = scores.filter((pl.col("model") == ORACLE_PREFIX + "truth") & pl.col("complete"))
    positives = truth.filter("is_positive").select("item_id", positive="text")
    return (
        truth.filter(~pl.col("is_positive"))
        .join(positives, on="item_id", how="inner", maintain_order="left")
        .select(
            "positive", "text", "generator",
            type=negative_type(pl.col("family"), pl.col("target")),
            fold=pl.col("item_id").map_elements(
                lambda item: zlib.crc32(item.encode()) & 1, return_dtype=pl.Int64
            ),
        )
    )  # fmt: skip


def oracle_job(
    parts: Sequence[Mapping[str, Any]],
    scenes: str,
    world: Mapping[str, Any],
    settings: Mapping[str, Any],
    metrics_out: str,
    false_negatives_out: str,
    unreadable_out: str,
    log: Log = print,
) -> None:
    """Job: evaluate one world benchmark with the oracles.

    ``parts``: {"candidates", "boxes" (or None), "label"} per part (as the models' evaluation
    gets them). Writes the metric table (``METRIC_SCHEMA``, models ``oracle:<name>``), the
    false-negative table per part, generator and negative type (``FALSE_NEGATIVE_SCHEMA``)
    and the unreadable texts (``UNREADABLE_SCHEMA``). Fails when a positive cannot be read
    or the truth oracle rejects one: the self-check that the reading and the scenes
    agree."""
    vocab = WorldVocab.from_config(world)
    scene_objects = scenes_from_table(pl.read_parquet(scenes))
    eval_settings = EvalSettings.from_config(settings)
    scored: list[tuple[str | None, ScoredPart]] = []
    unreadable = []
    for part in parts:
        label = part.get("label")
        candidates = pl.read_parquet(part["candidates"])
        boxes = pl.read_parquet(part["boxes"]) if part.get("boxes") else None
        result = score_part(candidates, scene_objects, vocab, boxes, label)
        unread = result.unreadable.filter("is_positive")
        if unread.height:
            first = unread.row(0, named=True)
            raise ValueError(
                f"{part['candidates']}: {unread.height} positive(s) the world grammar cannot "
                f"read, e.g. item {first['item_id']!r}: {first['reason']} ({first['text']!r})"
            )
        if result.rejected.height:
            item, image, text = result.rejected.row(0)
            raise ValueError(
                f"{part['candidates']}: the truth oracle rejects {result.rejected.height} "
                f"positive(s), e.g. item {item!r} (image {image}: {text!r}); the reading or "
                "the scenes are wrong"
            )
        n_items = candidates["item_id"].n_unique()
        kept = result.scores["item_id"].n_unique()
        log(
            f"{part['candidates']}: {kept}/{n_items} items scored; {result.unreadable.height} "
            f"unreadable text(s); every positive holds"
        )
        for reason, n in result.unreadable.group_by("reason").len().sort("reason").iter_rows():
            log(f"  unreadable ({reason}): {n}")
        if not kept:
            raise ValueError(f"{part['candidates']}: no item could be read with the world grammar")
        scored.append((label, result))
        unreadable.append(result.unreadable)
    metrics, _, fn = oracle_tables(scored, eval_settings)
    meta = {
        **eval_settings.metadata(),
        "oracles": ",".join(ORACLES),
        "spatial_reading": (
            f"{DOMINANT_AXIS}: a pair's relation is the dominant axis of its centres' offset "
            f"(the world's; the oracles score with it); {APART} (the *_apart columns): a "
            "relation holds when the boxes are apart along its axis"
        ),
    }
    write_parquet(metrics, Path(metrics_out), metadata=meta)
    write_parquet(fn, Path(false_negatives_out), metadata=meta)
    write_parquet(
        pl.concat(unreadable).sort("part", "item_id", "text", nulls_last=True),
        Path(unreadable_out),
        metadata=meta,
    )
    for row in fn.filter(pl.col("family") == "all").iter_rows(named=True):
        log(
            f"{row['part'] or row['benchmark']} {row['generator']}: false negatives "
            f"{row['n_true']}/{row['n_negatives']}; bag-of-words accuracy "
            f"{row['bag_of_words_accuracy']} over {row['n_sets']} sets"
        )
