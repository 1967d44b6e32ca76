"""The Parquet data contracts between stages (DESIGN §2), as polars schemas.

Every stage that writes one of these tables builds it with the schema here, so that a
stage's output can be read by the next without guessing column names or types.
"""

from __future__ import annotations

import hashlib

import polars as pl

# Parquet metadata: why a stage's output holds nothing (or a panel of its figure is empty).
NOTE_KEY = "vlcomp.note"
# Parquet metadata of an evaluation's excluded table: the items the job was given.
ITEMS_KEY = "vlcomp.items"

OBJECTS_DTYPE = pl.List(pl.Struct({"idx": pl.Int64, "name": pl.String, "lemma": pl.String}))
ATTRIBUTES_DTYPE = pl.List(pl.Struct({"obj": pl.Int64, "value": pl.String}))
RELATIONS_DTYPE = pl.List(pl.Struct({"subj": pl.Int64, "pred": pl.String, "obj": pl.Int64}))

# ingest: one row per caption, sharded.
CAPTIONS_SCHEMA: dict[str, pl.DataType] = {
    "caption_id": pl.String,
    "corpus": pl.String,
    "image_id": pl.String,  # nullable: text-only corpora have no image
    "text": pl.String,
}

# ingest: rows a loader could not use, never silently dropped.
REJECTED_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String,  # file
    "location": pl.String,  # line number, row index or byte offset in that file
    "reason": pl.String,
    "raw": pl.String,  # the offending content, truncated
}

# parse: one scene graph per caption (the world's ground truth uses the same columns).
GRAPH_SCHEMA: dict[str, pl.DataType] = {
    "objects": OBJECTS_DTYPE,
    "attributes": ATTRIBUTES_DTYPE,
    "relations": RELATIONS_DTYPE,
}
GRAPHS_SCHEMA: dict[str, pl.DataType] = {
    "caption_id": pl.String,
    **GRAPH_SCHEMA,
    "parser": pl.String,  # backend + model + version, e.g. "vlcomp-spacy/en_core_web_sm-3.8.0"
    "ok": pl.Boolean,
}

# splits: evaluation items (e.g. Visual Genome regions with CREPE's filters), with the
# item's scene graph (from the dataset's annotation when it has one, else parsed).
EVAL_ITEMS_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "source": pl.String,  # e.g. "vg_regions", "coco"
    "image_id": pl.String,
    "region_id": pl.String,  # nullable
    "text": pl.String,
    "x": pl.Int64,  # region box in pixels (nullable for whole-image items)
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    **GRAPH_SCHEMA,
}

# negatives: candidate texts per evaluation item; exactly one positive per item.
CANDIDATES_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,  # e.g. "sugarcrepe", "aro_vg_relation", "crepe_systematicity"
    "item_id": pl.String,
    "image": pl.String,  # image file or id; nullable for text-only checks
    "text": pl.String,
    "is_positive": pl.Boolean,
    "family": pl.String,  # atom, comp, swap, neg, replace, add
    "target": pl.String,  # obj, att, rel (nullable)
    "generator": pl.String,  # template, llm:<model>, imported:<source>
    "provenance": pl.String,  # free text: file, key, seed
}

# two-image sets (Winoground-style): caption_0 describes image_0, caption_1 describes image_1.
TWO_IMAGE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,  # e.g. "winoground", "bivlc", "vismin"
    "item_id": pl.String,
    "image_0": pl.String,  # image file or id, as the published file gives it
    "image_1": pl.String,
    "caption_0": pl.String,
    "caption_1": pl.String,
    "family": pl.String,  # swap, replace, add, ...
    "target": pl.String,  # obj, att, rel, ... (nullable)
    "generator": pl.String,  # imported:<source>
    "provenance": pl.String,  # free text: file, key, tags
}

# image-selection sets (SVO-Probes): one caption, the image it describes (image_0) and a
# negative image (image_1) that differs in one respect (family: subject, verb, object).
IMAGE_SELECTION_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "item_id": pl.String,
    "image_0": pl.String,  # the positive image, as the published file names it
    "image_1": pl.String,  # the negative image
    "caption": pl.String,
    "family": pl.String,  # what the negative image changes: subject, verb, object
    "target": pl.String,  # nullable
    "generator": pl.String,  # imported:<source>
    "provenance": pl.String,  # free text: file, key, tags
}

# evaluate: per retrieval set (pairs included), added to a set benchmark's predictions
# (evaluate.retrieval_sets.SET_PREDICTIONS_SCHEMA); counted per metric cell in the metric
# table's n_indistinguishable / n_tied (evaluate.metrics.add_flag_counts).
PREDICTION_FLAGS_SCHEMA: dict[str, pl.DataType] = {
    # a negative has a positive's token ids under the model's tokenizer and context: the
    # text tower reads the same input, so no weights can tell them apart
    "indistinguishable": pl.Boolean,
    # a negative with other token ids has exactly the best positive's similarity
    "tied": pl.Boolean,
}

# refine: one text-only score per (scorer, text); higher = more likely / acceptable.
SCORES_SCHEMA: dict[str, pl.DataType] = {
    "scorer": pl.String,
    "text_key": pl.String,  # sha256 of the UTF-8 text
    "score": pl.Float64,
}


def text_key(text: str) -> str:
    """The key of a text in the scores and embedding tables (``SCORES_SCHEMA.text_key``, the
    text embedding cache): sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame, schema: dict[str, pl.DataType], name: str) -> pl.DataFrame:
    """Select and cast ``frame`` to ``schema``; raise naming the table and missing columns."""
    missing = [column for column in schema if column not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing} of the contract")
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])
