"""The world's pair benchmark: every evaluation caption with one-change hard negatives.

Because the world knows every image's full scene (``scenes.parquet``), a foil is checked
against the image, not just the caption: a replaced colour or shape occurs nowhere in the
image, and a swap that would still be true of the image is rejected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.io import write_parquet
from vlcomp.negatives.graph_edits import Vocabulary, edit_caption
from vlcomp.world.vocab import CONVERSE, RELATION_SURFACES

BENCHMARK = "world_pairs"
GENERATOR = "template:graph-edit"


def world_vocabulary(world_cfg: Mapping[str, Any]) -> Vocabulary:
    relations = [r for r in world_cfg["relations"] if r in RELATION_SURFACES]
    return Vocabulary(
        attributes={"colour": list(world_cfg["colours"]), "size": list(world_cfg["sizes"])},
        objects=list(world_cfg["shapes"]),
        relation_surfaces={r: RELATION_SURFACES[r] for r in relations},
        converse={r: CONVERSE[r] for r in relations if CONVERSE[r] in relations},
    )


def build_world_pairs(
    world_cfg: Mapping[str, Any], truth: pl.DataFrame, scenes: pl.DataFrame, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Candidates (one positive + one negative per item) and failure counts by reason."""
    vocab = world_vocabulary(world_cfg)
    per_image: dict[int, dict[str, Any]] = {}
    for row in scenes.iter_rows(named=True):
        image = per_image.setdefault(
            row["image_id"], {"objects": set(), "attributes": set(), "bindings": set()}
        )
        image["objects"].add(row["shape"])
        image["attributes"].update((row["colour"], row["size"]))
        image["bindings"].update({(row["colour"], row["shape"]), (row["size"], row["shape"])})
    rows: list[dict[str, Any]] = []
    failures: Counter[tuple[str, str]] = Counter()
    rng = np.random.default_rng(seed)
    for caption in truth.sort("caption_id").iter_rows(named=True):
        image = per_image[caption["image_id"]]
        edits, failed = edit_caption(
            caption["text"],
            caption,
            image["objects"],
            image["attributes"],
            image["bindings"],
            vocab,
            rng,
        )
        for reason, count in failed.items():
            failures[(caption["caption_id"], reason)] += count
        for edit in edits:
            item_id = f"{caption['caption_id']}/{edit.family}_{edit.target}"
            common = {
                "benchmark": BENCHMARK,
                "item_id": item_id,
                "image": str(caption["image_id"]),
                "family": edit.family,
                "target": edit.target,
                "generator": GENERATOR,
            }
            rows.append(
                {
                    **common,
                    "text": caption["text"],
                    "is_positive": True,
                    "provenance": f"caption {caption['caption_id']}",
                }
            )
            rows.append(
                {
                    **common,
                    "text": edit.text,
                    "is_positive": False,
                    "provenance": f"edit {edit.detail}; seed {seed}",
                }
            )
    candidates = pl.DataFrame(rows, schema=CANDIDATES_SCHEMA)
    failure_table = (
        pl.DataFrame(
            [(reason, count) for (_, reason), count in failures.items()],
            schema={"reason": pl.String, "count": pl.Int64},
            orient="row",
        )
        .group_by("reason")
        .agg(pl.col("count").sum())
        .sort("reason")
    )
    return candidates, failure_table


def world_pairs_job(
    world_cfg: Mapping[str, Any],
    truth: str | Path,
    scenes: str | Path,
    seed: int,
    candidates_out: str | Path,
    failures_out: str | Path,
) -> None:
    candidates, failures = build_world_pairs(
        world_cfg, pl.read_parquet(truth), pl.read_parquet(scenes), seed
    )
    write_parquet(candidates, candidates_out, metadata={"seed": str(seed)})
    write_parquet(failures, failures_out)
