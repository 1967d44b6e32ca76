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
) -> None:
    """The pair benchmark (one positive, one negative per item) of an evaluation set's
    items: candidates, the items' boxes and failure counts by reason."""
    items = pl.read_parquet(eval_items)
    candidates, failures = template_pairs(items, seed, benchmark)
    boxes = pair_boxes(candidates, items)
    metadata = {"seed": str(seed), "benchmark": benchmark, "generator": GENERATOR}
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
) -> None:
    """CREPE productivity on a Visual Genome folder; HN-ATOM foils and attribute kinds from
    the folder's own scene graphs and the generic lexicon (``attribute_kinds`` in
    ``settings`` overrides the lexicon's kinds)."""
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
    )
    for row in summary.iter_rows(named=True):
        log(str(row))
