"""A Parquet cache of text scores keyed by (scorer name, sha256 of the text)."""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.contracts import SCORES_SCHEMA, conform, empty, text_key
from vlcomp.io import write_parquet
from vlcomp.scorers.base import TextScorer


def read_scores(cache_path: str | Path, scorer_name: str | None = None) -> pl.DataFrame:
    """The cached rows (``SCORES_SCHEMA``), all or one scorer's; empty when there is no cache."""
    path = Path(cache_path)
    if not path.exists():
        return empty(SCORES_SCHEMA)
    frame = conform(pl.read_parquet(path), SCORES_SCHEMA, str(path))
    return frame if scorer_name is None else frame.filter(pl.col("scorer") == scorer_name)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise writers of one cache (two jobs that share it must not drop each other's rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _append(path: Path, new_rows: pl.DataFrame) -> None:
    with _locked(path):
        current = read_scores(path)
        fresh = new_rows.join(current, on=["scorer", "text_key"], how="anti")
        if fresh.is_empty():
            return
        merged = pl.concat([current, fresh]).sort(["scorer", "text_key"])
        write_parquet(merged, path, metadata={"schema": "SCORES_SCHEMA"})


def score_texts(
    scorer: TextScorer,
    texts: Sequence[str],
    cache_path: str | Path,
    batch_size: int = 1024,
    progress: bool = True,
) -> np.ndarray:
    """Scores of ``texts`` in order, computing only those not cached for ``scorer.name``.

    Each distinct text is scored once, in batches of ``batch_size`` (progress on stderr).
    New scores are merged into the cache file in one atomic write, sorted by
    (scorer, text_key) so that the same contents give the same bytes.
    """
    from tqdm import tqdm

    path = Path(cache_path)
    bad = next((i for i, text in enumerate(texts) if not isinstance(text, str)), None)
    if bad is not None:
        raise TypeError(f"text {bad} is {texts[bad]!r}, not a string")
    keys = [text_key(text) for text in texts]
    known = dict(read_scores(path, scorer.name).select("text_key", "score").iter_rows())
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known and key not in missing:
            missing[key] = text
    if missing:
        todo_keys = list(missing)
        computed: list[float] = []
        with tqdm(
            total=len(todo_keys), desc=scorer.name, file=sys.stderr, disable=not progress
        ) as bar:
            for start in range(0, len(todo_keys), batch_size):
                chunk = [missing[k] for k in todo_keys[start : start + batch_size]]
                scores = np.asarray(scorer.score(chunk), dtype=np.float64)
                if scores.shape != (len(chunk),):
                    raise ValueError(
                        f"{scorer.name}: score() returned shape {scores.shape} "
                        f"for {len(chunk)} texts"
                    )
                computed.extend(scores.tolist())
                bar.update(len(chunk))
        new_rows = pl.DataFrame(
            {"scorer": [scorer.name] * len(todo_keys), "text_key": todo_keys, "score": computed},
            schema=SCORES_SCHEMA,
        )
        _append(path, new_rows)
        known.update(zip(todo_keys, computed, strict=True))
    return np.array([known[key] for key in keys], dtype=np.float64)
