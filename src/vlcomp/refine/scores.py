"""Text-only scores for candidate tables: computing, validating and looking them up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import SCORES_SCHEMA, text_key
from vlcomp.scorers.base import TextScorer

ScorerLike = TextScorer | Mapping[str, Any]

__all__ = ["ScorerLike", "attach_scores", "resolve_scorer", "score_candidates", "text_key"]


def resolve_scorer(spec: ScorerLike) -> TextScorer:
    """A scorer object as is; a config mapping through ``vlcomp.scorers.make_scorer``."""
    if isinstance(spec, TextScorer):
        return spec
    from vlcomp.scorers import make_scorer

    return make_scorer(dict(spec))


def _score_batches(scorer: TextScorer, texts: list[str], batch_size: int) -> np.ndarray:
    values = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        out = np.asarray(scorer.score(batch), dtype=np.float64).reshape(-1)
        if out.shape[0] != len(batch):
            raise ValueError(
                f"scorer {scorer.name!r} returned {out.shape[0]} scores for {len(batch)} texts"
            )
        values.append(out)
    return np.concatenate(values) if values else np.zeros(0)


def score_candidates(
    candidates: pl.DataFrame,
    scorers: Sequence[ScorerLike],
    cache_path: str | Path | None = None,
    batch_size: int = 512,
) -> pl.DataFrame:
    """Scores (``SCORES_SCHEMA``, sorted) of every distinct candidate text for every scorer.

    With ``cache_path`` the shared score cache of ``vlcomp.scorers`` is used and extended
    (only texts it lacks are scored); without, everything is scored in memory.
    """
    texts = sorted(set(candidates["text"].to_list()))
    keys = [text_key(t) for t in texts]
    parts = []
    for spec in scorers:
        scorer = resolve_scorer(spec)
        if cache_path is not None:
            from vlcomp.scorers.cache import score_texts

            values = score_texts(scorer, texts, cache_path, batch_size, progress=False)
        else:
            values = _score_batches(scorer, texts, batch_size)
        if not np.isfinite(values).all():
            bad = texts[int(np.flatnonzero(~np.isfinite(values))[0])]
            raise ValueError(f"scorer {scorer.name!r} gave a non-finite score for {bad!r}")
        parts.append(
            pl.DataFrame(
                {"scorer": [scorer.name] * len(texts), "text_key": keys, "score": values},
                schema=SCORES_SCHEMA,
            )
        )
    if not parts:
        return pl.DataFrame(schema=SCORES_SCHEMA)
    return pl.concat(parts).unique(["scorer", "text_key"], keep="first").sort("scorer", "text_key")


def with_text_keys(
    frame: pl.DataFrame, column: str = "text", alias: str = "text_key"
) -> pl.DataFrame:
    keys = {t: text_key(t) for t in frame[column].unique().to_list()}
    return frame.with_columns(
        pl.col(column).replace_strict(keys, return_dtype=pl.String).alias(alias)
    )


def scorer_names(scores: pl.DataFrame) -> list[str]:
    return sorted(scores["scorer"].unique().to_list())


def attach_scores(candidates: pl.DataFrame, scores: pl.DataFrame, scorer: str) -> pl.DataFrame:
    """``candidates`` with a ``score`` column for ``scorer``; error if any text has none."""
    table = scores.filter(pl.col("scorer") == scorer).select("text_key", "score")
    if table.height == 0:
        raise ValueError(f"no scores for scorer {scorer!r} (have {scorer_names(scores)})")
    joined = with_text_keys(candidates).join(table, on="text_key", how="left")
    missing = joined.filter(pl.col("score").is_null())
    if missing.height:
        raise ValueError(
            f"scorer {scorer!r} has no score for {missing.height} candidate text(s), "
            f"e.g. {missing['text'][0]!r} (item {missing['item_id'][0]})"
        )
    if not joined["score"].is_finite().all():
        raise ValueError(f"scorer {scorer!r} has non-finite scores")
    return joined.drop("text_key")
