"""Training-caption input shared by the scorers that are trained: reading and fingerprinting."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl


def texts_digest(texts: Iterable[str]) -> str:
    """sha256 over the texts in order, each followed by a newline: names the training data."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def read_texts(paths: Sequence[str | Path], column: str = "text") -> pl.Series:
    """Concatenate the ``column`` of Parquet files, in the given order.

    A null text is an error naming the file (a caption table with holes is bad input, and
    dropping rows would change the training data without saying so).
    """
    if not paths:
        raise ValueError("no caption files given")
    parts: list[pl.Series] = []
    for path in paths:
        frame = pl.read_parquet(path)
        if column not in frame.columns:
            raise ValueError(f"{path}: no column '{column}' (columns: {frame.columns})")
        series = frame[column].cast(pl.String)
        nulls = series.null_count()
        if nulls:
            raise ValueError(f"{path}: {nulls} null value(s) in column '{column}'")
        parts.append(series)
    return pl.concat(parts).rename("text")
