"""Job-level functions of the negatives stage: files in, files out (one per workflow rule).

They work on any evaluation set: the vocabulary comes from the set itself and the generic
lexicon (``negatives.lexicon``), never from a fixed configuration vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.io import write_parquet

from .context import make_check
from .pairs import GENERATOR, pair_boxes, template_pairs
from .productivity import productivity_benchmark, read_scene_graphs
from .productivity_negatives import GraphVocabulary, lexicon_attribute_kinds, lexicon_foils

Log = Callable[[str], None]


def pairs_job(
    eval_items: str,
    seed: int,
    benchmark: str,
    candidates_out: str,
    boxes_out: str,
    failures_out: str,
    log: Log = print,
    context_length: int | None = None,
) -> None:
    """The pair benchmark (one positive, one negative per item) of an evaluation set's
    items: candidates, the items' boxes and failure counts by reason. ``context_length``:
    the text encoders' context (``negatives.context``); None: no context check."""
    items = pl.read_parquet(eval_items)
    candidates, failures = template_pairs(items, seed, benchmark, make_check(context_length))
    boxes = pair_boxes(candidates, items)
    metadata = {"seed": str(seed), "benchmark": benchmark, "generator": GENERATOR}
    if context_length is not None:
        metadata["context_length"] = str(context_length)
    write_parquet(candidates, candidates_out, metadata=metadata)
    write_parquet(boxes, boxes_out, metadata=metadata)
    write_parquet(failures, failures_out, metadata=metadata)
    counts = candidates.filter(~pl.col("is_positive")).group_by("family", "target").len()
    log(f"{items.height} eval items -> {boxes.height} pair items ({benchmark})")
    for family, target, n in counts.sort("family", "target").iter_rows():
        log(f"  {family}/{target}: {n}")
    for reason, count in failures.iter_rows():
        log(f"  no edit: {reason}: {count}")


def productivity_job(
    vg_dir: str,
    settings: Mapping[str, Any],
    seed: int,
    benchmark: str,
    candidates_out: str,
    items_out: str,
    failures_out: str,
    summary_out: str,
    log: Log = print,
    context_length: int | None = None,
) -> None:
    """CREPE productivity on a Visual Genome folder; HN-ATOM foils and attribute kinds from
    the folder's own scene graphs and the generic lexicon (``attribute_kinds`` in
    ``settings`` overrides the lexicon's kinds). ``context_length``: the text encoders'
    context (``negatives.context``); None: no context check."""
    vocabulary = GraphVocabulary.from_graphs(read_scene_graphs(Path(vg_dir)))
    kinds = lexicon_attribute_kinds(vocabulary.attributes)
    log(
        f"vocabulary of {vg_dir}: {len(vocabulary.objects)} objects, "
        f"{len(vocabulary.attributes)} attributes ({sum(map(len, kinds.values()))} of a "
        f"known kind), {len(vocabulary.predicates)} predicates"
    )
    summary = productivity_benchmark(
        Path(vg_dir),
        Path(candidates_out),
        Path(items_out),
        Path(failures_out),
        {"attribute_kinds": kinds, **settings},
        seed,
        lexicon_foils(vocabulary),
        out_summary=Path(summary_out),
        benchmark=benchmark,
        context=make_check(context_length),
    )
    for row in summary.iter_rows(named=True):
        log(str(row))


TRAINING_NEGATIVES_SCHEMA: dict[str, pl.DataType] = {
    "caption_id": pl.String,
    "family": pl.String,
    "target": pl.String,
    "negative": pl.String,
}


def training_negatives(
    captions: pl.DataFrame, graphs: pl.DataFrame, seed: int, corpus: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One-change hard negatives of training captions (NegCLIP-style training), by the same
    template generator as the pair benchmarks (``template_pairs``): each caption with its
    parsed graph is an item, and what an image contains is the union of its captions'
    graphs. Returns (caption_id, family, target, negative) rows in caption order and failure
    counts by reason. Captions whose parse failed get no negative."""
    parsed = graphs.filter(pl.col("ok").fill_null(False)).select(
        "caption_id", "objects", "attributes", "relations"
    )
    items = (
        captions.select("caption_id", "image_id", "text")
        .join(parsed, on="caption_id", how="inner", maintain_order="left")
        .with_columns(
            item_id=pl.col("caption_id"),
            source=pl.lit(corpus),
            image_id=pl.col("image_id").cast(pl.String),
            region_id=pl.lit(None, pl.String),
            **{c: pl.lit(None, pl.Int64) for c in ("x", "y", "width", "height")},
        )
    )
    candidates, failures = template_pairs(items, seed, benchmark=f"training:{corpus}")
    negatives = candidates.filter(~pl.col("is_positive")).select(
        caption_id=pl.col("item_id").str.replace(r"/[^/]*$", ""),
        family="family",
        target="target",
        negative="text",
    )
    order = captions.select("caption_id").with_row_index("row")
    negatives = (
        negatives.join(order, on="caption_id", how="left")
        .sort("row", "family", "target", maintain_order=True)
        .drop("row")
    )
    columns = [pl.col(c).cast(t) for c, t in TRAINING_NEGATIVES_SCHEMA.items()]
    return negatives.select(columns), failures


def training_negatives_job(
    caption_shards: list[str],
    graph_shards: list[str],
    seed: int,
    corpus: str,
    out: str,
    log: Log = print,
) -> None:
    """Hard negatives of a corpus's training captions (``training_negatives``)."""
    captions = pl.concat([pl.read_parquet(s) for s in caption_shards], how="diagonal_relaxed")
    graphs = pl.concat([pl.read_parquet(s) for s in graph_shards], how="diagonal_relaxed")
    negatives, failures = training_negatives(captions, graphs, seed, corpus)
    write_parquet(
        negatives, out, metadata={"seed": str(seed), "corpus": corpus, "generator": GENERATOR}
    )
    covered = negatives["caption_id"].n_unique()
    log(f"{corpus}: {negatives.height} hard negatives for {covered} of {captions.height} captions")
    for (family, target), n in sorted(
        negatives.group_by("family", "target").len().rows_by_key(["family", "target"]).items()
    ):
        log(f"  {family}/{target}: {n[0][0]}")
    for reason, count in failures.iter_rows():
        log(f"  no edit: {reason}: {count}")
