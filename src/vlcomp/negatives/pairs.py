"""A pair benchmark (SugarCrepe style: one positive, one negative) from evaluation items.

Every item of an evaluation set (``contracts.EVAL_ITEMS_SCHEMA``: captions or regions with
their scene graphs, annotated or parsed) gets up to four one-change hard negatives from
``graph_edits``: replace attribute / object / relation, swap attributes. Nothing outside
the evaluation set is needed:

- what an image contains is the union of the graphs of all items of that image (objects,
  attribute values, attribute-object bindings, spatial relations), so a foil is never
  something another caption or region of the same image states;
- the vocabulary is what the evaluation set states: object lemmas, attribute values of a
  kind of the generic lexicon (``negatives.lexicon``), spatial predicates whose converse
  it also states.

Outputs: candidates (``CANDIDATES_SCHEMA``; item_id ``<eval item id>/<family>_<target>``,
image = the eval item's image_id, generator ``template:graph-edit``), the boxes of the
items (``BOXES_SCHEMA``: a region item is evaluated on its crop; a null box is the whole
image) and failure counts by reason (``graph_edits.REASONS``; one per item and edit kind
without an edit). Each item's edits are drawn from its own generator, seeded from (seed,
crc32(item id)), so the same inputs give the same files.

With a ``context.ContextCheck`` an edit whose text tokenises like the caption within the
text encoders' context (a change after the last token they read) is dropped and counted as
``<family> <target>: context: identical within N tokens``.
"""

from __future__ import annotations

import zlib
from collections import Counter
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA, conform

from .context import ContextCheck
from .graph_edits import ImageContents, RelationBalance, Vocabulary, edit_caption

GENERATOR = "template:graph-edit"
NO_TEXT = "item: no text"

BOXES_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "x": pl.Int64,  # null: the whole image
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "eval_item_id": pl.String,
}
FAILURES_SCHEMA: dict[str, pl.DataType] = {"reason": pl.String, "count": pl.Int64}


def _image_key(item: dict[str, Any]) -> str:
    """Items without an image id stand alone."""
    image = item["image_id"]
    return f"image:{image}" if image is not None else f"item:{item['item_id']}"


def image_contents(items: list[dict[str, Any]]) -> dict[str, ImageContents]:
    """Per image (``_image_key``), the union of the graphs of its items."""
    contents: dict[str, ImageContents] = {}
    for item in items:
        contents.setdefault(_image_key(item), ImageContents()).add(item)
    return contents


def template_pairs(
    items: pl.DataFrame, seed: int, benchmark: str, context: ContextCheck | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Candidates (one positive + one negative per pair item) and failure counts by
    reason. The boxes of the pair items are ``pair_boxes(candidates, items)``. ``context``:
    drop (and count) edits identical to the caption within its context."""
    rows = conform(items, EVAL_ITEMS_SCHEMA, "eval items").sort("item_id").to_dicts()
    ids = Counter(row["item_id"] for row in rows)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        raise ValueError(f"eval items: item_id repeats: {repeated[:5]}")
    vocab = Vocabulary.from_graphs(rows)
    contents = image_contents(rows)
    candidates: list[dict[str, Any]] = []
    failures: Counter[str] = Counter()
    balance = RelationBalance(row["text"] or "" for row in rows)
    for item in rows:
        text = item["text"]
        if not text or not text.strip():
            failures[NO_TEXT] += 1
            continue
        rng = np.random.default_rng([seed, zlib.crc32(item["item_id"].encode("utf-8"))])
        edits, failed = edit_caption(text, item, contents[_image_key(item)], vocab, rng, balance)
        failures.update(failed)
        for edit in edits:
            if context is not None and context.identical(text, edit.text):
                failures[f"{edit.family} {edit.target}: {context.reason}"] += 1
                continue
            common = {
                "benchmark": benchmark,
                "item_id": f"{item['item_id']}/{edit.family}_{edit.target}",
                "image": item["image_id"],
                "family": edit.family,
                "target": edit.target,
                "generator": GENERATOR,
            }
            candidates.append(
                {
                    **common,
                    "text": text,
                    "is_positive": True,
                    "provenance": f"eval item {item['item_id']}",
                }
            )
            candidates.append(
                {
                    **common,
                    "text": edit.text,
                    "is_positive": False,
                    "provenance": f"edit {edit.detail}; seed {seed}",
                }
            )
    failure_table = pl.DataFrame(sorted(failures.items()), schema=FAILURES_SCHEMA, orient="row")
    return pl.DataFrame(candidates, schema=CANDIDATES_SCHEMA), failure_table


def pair_boxes(candidates: pl.DataFrame, items: pl.DataFrame) -> pl.DataFrame:
    """One row per pair item: the box of its evaluation item (null = whole image)."""
    eval_boxes = items.select(pl.col("item_id").alias("eval_item_id"), "x", "y", "width", "height")
    pair_items = (
        candidates.select("item_id")
        .unique(maintain_order=True)
        .with_columns(pl.col("item_id").str.replace(r"/[^/]*$", "").alias("eval_item_id"))
    )
    return (
        pair_items.join(eval_boxes, on="eval_item_id", how="left", maintain_order="left")
        .select(list(BOXES_SCHEMA))
        .cast(BOXES_SCHEMA)  # type: ignore[arg-type]
    )
