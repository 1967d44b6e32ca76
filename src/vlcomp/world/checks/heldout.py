"""Held-in / held-out analysis on the synthetic world (the only place that reads the
world's ``holdout.parquet``).

The world knows which evaluation images show a training corpus's held-out atoms or
compounds (``results/world/eval/holdout.parquet``: image_id, corpus, kind, value). For a
model trained on corpus C, an evaluation item is ``held_out`` when its image is one of C's
held-out images and ``held_in`` otherwise; a model without a training corpus (e.g. a
pretrained one) only gets the "all" split.

Both jobs re-split tables the general evaluation wrote, without a model:
- ``heldout_metrics_job``: per-set predictions (``vlcomp.evaluate.retrieval_sets``; e.g. the
  pairs benchmark) -> the same metric table as every benchmark, per split;
- ``heldout_retrieval_job``: per-query retrieval ranks (``vlcomp.evaluate.metrics``) ->
  Recall@K per split.

The output tables are ``METRIC_SCHEMA`` with a ``training_corpus`` column after ``model``:
the corpus whose holdout defines the splits of the row (chance rows too, since the
held-in / held-out items differ between corpora).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.evaluate.metrics import METRIC_SCHEMA, EvalSettings, recall_table, with_score_kind
from vlcomp.evaluate.retrieval_sets import set_metric_table
from vlcomp.io import read_parquet_metadata, write_parquet
from vlcomp.vocabulary import HELD_IN, HELD_OUT

Log = Callable[[str], None]

HELDOUT_METRIC_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "training_corpus": pl.String,  # the corpus whose holdout defines held_in / held_out
    **{c: t for c, t in METRIC_SCHEMA.items() if c != "model"},
}


def held_out_images(holdout: str | Path, corpus: str) -> set[str]:
    """Image ids (as strings, the eval sets' ids) showing ``corpus``'s held-out items."""
    table = pl.read_parquet(holdout, columns=["image_id", "corpus"])
    return set(table.filter(pl.col("corpus") == corpus)["image_id"].cast(pl.String).to_list())


def holdout_split(image: pl.Expr, held_out: set[str] | None) -> pl.Expr:
    """held_in / held_out of an image id column; null (only "all") without a corpus."""
    if held_out is None:
        return pl.lit(None, pl.String)
    return (
        pl.when(image.cast(pl.String).is_in(sorted(held_out)))
        .then(pl.lit(HELD_OUT))
        .otherwise(pl.lit(HELD_IN))
    )


def _per_model(
    tables: Sequence[str],
    holdout: str,
    training_corpus: Mapping[str, str | None],
    image_column: str,
    log: Log,
) -> list[tuple[str, str | None, pl.DataFrame, str | None]]:
    """(model, corpus, table re-split by the corpus's holdout, the model's score kind from
    its file's metadata) for every model in ``tables``."""
    out = []
    frames = [pl.read_parquet(t) for t in tables]
    kinds = {
        model: read_parquet_metadata(t).get("score_kind")
        for t, f in zip(tables, frames, strict=True)
        for model in f["model"].unique().to_list()
    }
    frame = pl.concat(frames, how="diagonal_relaxed")
    if image_column not in frame.columns:
        raise ValueError(f"{image_column!r} column missing: cannot re-split by image")
    if frame[image_column].null_count():
        raise ValueError(f"{frame[image_column].null_count()} rows have no {image_column}")
    for (model,), rows in sorted(frame.group_by(["model"]), key=lambda g: g[0]):
        if model not in training_corpus:
            log(f"{model}: no training corpus given; only the 'all' split is reported")
        corpus = training_corpus.get(model)
        held_out = held_out_images(holdout, corpus) if corpus is not None else None
        rows = rows.with_columns(split=holdout_split(pl.col(image_column), held_out))
        if held_out is not None:
            n_out = int((rows["split"] == HELD_OUT).sum())
            log(f"{model} (trained on {corpus}): {n_out} of {rows.height} rows held out")
        out.append((model, corpus, rows, kinds.get(model)))
    return out


def _scored(table: pl.DataFrame, model: str, kind: str | None) -> pl.DataFrame:
    """``table`` with the model's score kind on its rows (none recorded: left null)."""
    return table if kind is None else with_score_kind(table, model, kind)


def _with_corpus(table: pl.DataFrame, corpus: str | None) -> pl.DataFrame:
    return table.with_columns(training_corpus=pl.lit(corpus, pl.String)).select(
        list(HELDOUT_METRIC_SCHEMA)
    )


def heldout_metrics_job(
    predictions: Sequence[str],
    holdout: str,
    training_corpus: Mapping[str, str | None],
    settings: dict[str, Any],
    out: str,
    log: Log = print,
    predictions_out: str | None = None,
) -> None:
    """Job: per-set predictions of one benchmark (one file per model) re-split into held_in /
    held_out by the item's image for the model's training corpus (``training_corpus``: model
    -> corpus, or None), and the same metric table as every benchmark per split.
    ``predictions_out`` (optional): the re-split predictions, e.g. for significance tests."""
    eval_settings = EvalSettings.from_config(settings)
    tables, resplit = [], []
    for model, corpus, rows, kind in _per_model(
        predictions, holdout, training_corpus, "image", log
    ):
        metrics = _scored(set_metric_table(rows, eval_settings), model, kind)
        tables.append(_with_corpus(metrics, corpus))
        resplit.append(rows)
    table = pl.concat(tables).unique(maintain_order=True) if tables else _empty()
    meta = {**read_parquet_metadata(predictions[0]), **eval_settings.metadata()}
    meta["holdout"] = str(holdout)
    write_parquet(table, out, metadata=meta)
    if predictions_out:
        write_parquet(pl.concat(resplit), predictions_out, metadata=meta)
    _log_headline(table, ("accuracy_micro", "R@1_micro"), log)


def heldout_retrieval_job(
    ranks: Sequence[str],
    holdout: str,
    training_corpus: Mapping[str, str | None],
    settings: dict[str, Any],
    out: str,
    log: Log = print,
) -> None:
    """Job: per-query retrieval ranks (one file per model) re-split into held_in / held_out by
    the query's image (for t2i, the caption's image) -> Recall@K per split
    (``settings["recall_at"]``) with chance rows and intervals."""
    eval_settings = EvalSettings.from_config(settings, ks_key="recall_at")
    tables = [
        _with_corpus(_scored(recall_table(rows, eval_settings), model, kind), corpus)
        for model, corpus, rows, kind in _per_model(
            ranks, holdout, training_corpus, "image_id", log
        )
    ]
    table = pl.concat(tables).unique(maintain_order=True) if tables else _empty()
    meta = {**read_parquet_metadata(ranks[0]), **eval_settings.metadata()}
    meta["holdout"] = str(holdout)
    write_parquet(table, out, metadata=meta)
    _log_headline(table, ("i2t_R@1", "t2i_R@1"), log)


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=HELDOUT_METRIC_SCHEMA)


def _log_headline(table: pl.DataFrame, metrics: Sequence[str], log: Log) -> None:
    rows = table.filter(
        pl.col("metric").is_in(list(metrics)) & pl.col("complexity").is_null()
        & (pl.col("family") == "all") & (pl.col("model") != "chance")
    )  # fmt: skip
    for row in rows.iter_rows(named=True):
        log(
            f"{row['model']} ({row['training_corpus']}) {row['benchmark']} {row['split']} "
            f"{row['metric']}: {row['value']:.3f} (n={row['n']})"
        )
