"""Readers for image-caption training corpora in their native formats.

These read the (image, caption) pairs a model is trained on. Readers return a polars
frame with columns ``image`` (a path resolved against the corpus directory, or the URL
as given) and ``text``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

CORPUS_FORMATS = ("cc12m_tsv", "laion_parquet")


class CorpusFormatError(ValueError):
    """A corpus file that does not match its declared format (names file and row)."""


def read_cc12m_tsv(path: str | Path) -> pl.DataFrame:
    """CC12M's layout: no header, ``<url>\\t<caption>`` per line."""
    path = Path(path)
    urls: list[str] = []
    texts: list[str] = []
    with open(path, newline="", encoding="utf-8") as handle:
        for line_no, row in enumerate(
            csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), 1
        ):
            if len(row) != 2:
                raise CorpusFormatError(
                    f"{path}: line {line_no}: expected 2 tab-separated fields (url, caption), "
                    f"got {len(row)}"
                )
            urls.append(row[0])
            texts.append(row[1])
    return _resolve(pl.DataFrame({"image": urls, "text": texts}), path.parent)


def read_laion_parquet(path: str | Path) -> pl.DataFrame:
    """LAION-400M's layout: Parquet with (at least) ``URL`` and ``TEXT`` columns."""
    path = Path(path)
    frame = pl.read_parquet(path)
    missing = {"URL", "TEXT"} - set(frame.columns)
    if missing:
        raise CorpusFormatError(f"{path}: missing column(s) {sorted(missing)}")
    frame = frame.select(image=pl.col("URL"), text=pl.col("TEXT"))
    return _resolve(frame, path.parent)


def corpus_file(corpus_dir: str | Path, fmt: str) -> Path:
    names = {"cc12m_tsv": "captions.tsv", "laion_parquet": "part-00000.parquet"}
    if fmt not in names:
        raise ValueError(f"unknown corpus format '{fmt}' (known: {', '.join(CORPUS_FORMATS)})")
    return Path(corpus_dir) / names[fmt]


def read_corpus(path: str | Path, fmt: str) -> pl.DataFrame:
    if fmt == "cc12m_tsv":
        return read_cc12m_tsv(path)
    if fmt == "laion_parquet":
        return read_laion_parquet(path)
    raise ValueError(f"unknown corpus format '{fmt}' (known: {', '.join(CORPUS_FORMATS)})")


def _resolve(frame: pl.DataFrame, base: Path) -> pl.DataFrame:
    """Relative image paths are relative to the corpus file; URLs are kept as they are."""
    return frame.with_columns(
        image=pl.when(pl.col("image").str.contains("://"))
        .then(pl.col("image"))
        .otherwise(pl.lit(str(base) + "/") + pl.col("image"))
    )
