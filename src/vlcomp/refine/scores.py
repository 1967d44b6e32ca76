"""Text-only scores for candidate tables: computing, validating and looking them up."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import SCORES_SCHEMA
from vlcomp.scorers.base import TextScorer

ScorerLike = TextScorer | Mapping[str, Any] | str


def text_key(text: str) -> str:
    # Same key as vlcomp.embed.text_key, without importing torch for it.
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolve_scorer(spec: ScorerLike) -> TextScorer:
    """A scorer object as is; a spec (config mapping or name) through ``make_scorer``."""
    if isinstance(spec, TextScorer):
        return spec
    try:
        from vlcomp.scorers import make_scorer  # type: ignore[attr-defined]
    except ImportError as error:
        raise RuntimeError(
            f"scorer spec {spec!r} needs vlcomp.scorers.make_scorer, which is not available"
        ) from error
    return make_scorer(spec)


def score_texts(scorer: TextScorer, texts: Iterable[str], batch_size: int = 512) -> pl.DataFrame:
    """Scores (``SCORES_SCHEMA``) of the distinct ``texts``, sorted by text_key."""
    unique = sorted(set(texts), key=text_key)
    values: list[np.ndarray] = []
    for start in range(0, len(unique), batch_size):
        batch = unique[start : start + batch_size]
        out = np.asarray(scorer.score(batch), dtype=np.float64).reshape(-1)
        if out.shape[0] != len(batch):
            raise ValueError(
                f"scorer {scorer.name!r} returned {out.shape[0]} scores for {len(batch)} texts"
            )
        if not np.isfinite(out).all():
            bad = batch[int(np.flatnonzero(~np.isfinite(out))[0])]
            raise ValueError(f"scorer {scorer.name!r} returned a non-finite score for {bad!r}")
        values.append(out)
    return pl.DataFrame(
        {
            "scorer": [scorer.name] * len(unique),
            "text_key": [text_key(t) for t in unique],
            "score": np.concatenate(values) if values else np.zeros(0),
        },
        schema=SCORES_SCHEMA,
    )


def score_candidates(
    candidates: pl.DataFrame,
    scorers: Sequence[ScorerLike],
    cache: pl.DataFrame | None = None,
    batch_size: int = 512,
) -> pl.DataFrame:
    """Scores of every candidate text for every scorer, reusing rows already in ``cache``."""
    texts = candidates["text"].unique().to_list()
    keys = {text_key(t): t for t in texts}
    parts = []
    for spec in scorers:
        scorer = resolve_scorer(spec)
        have = (
            cache.filter((pl.col("scorer") == scorer.name) & pl.col("text_key").is_in(list(keys)))
            if cache is not None
            else pl.DataFrame(schema=SCORES_SCHEMA)
        )
        known = set(have["text_key"].to_list())
        fresh = score_texts(scorer, [t for k, t in keys.items() if k not in known], batch_size)
        parts.extend([have.select(list(SCORES_SCHEMA)), fresh])
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
    keyed = with_text_keys(candidates)
    joined = keyed.join(table, on="text_key", how="left")
    missing = joined.filter(pl.col("score").is_null())
    if missing.height:
        raise ValueError(
            f"scorer {scorer!r} has no score for {missing.height} candidate text(s), "
            f"e.g. {missing['text'][0]!r} (item {missing['item_id'][0]})"
        )
    if not joined["score"].is_finite().all():
        raise ValueError(f"scorer {scorer!r} has non-finite scores")
    return joined.drop("text_key")
