"""Ranking metrics, the metric table every benchmark writes, and bootstrap intervals.

Tie policy: a tie counts as wrong. The rank of a correct item is the number of *other*
candidates whose similarity is greater than **or equal to** its own, so a model that gives
every candidate the same score gets no credit (unlike an unstable argsort, which would give
it arbitrary credit).

Every evaluation (retrieval sets, pairs, which are retrieval sets of two, and image<->text
retrieval) writes ``METRIC_SCHEMA`` rows: one value per model, benchmark, part, split,
negative type (``family``) and complexity, with the number of items ``n`` and a percentile
bootstrap interval over items, plus rows for model ``"chance"`` (the expectation under a
random ranking). The resampling of a cell is seeded from (seed, benchmark, [part,] split,
family, complexity), so every model and the chance rows of one cell are resampled with the
same items (paired), and the same config gives the same bytes.

Indistinguishable items and ties (retrieval sets and pairs): an item is
*indistinguishable* for a model when a negative tokenises to the same ids as a positive
under that model's tokenizer and context (the text tower reads the same input: it cannot
tell them apart, whatever its weights); it is *tied* when a negative that the tokenizer
does tell apart gets exactly the best positive's similarity. Both count as wrong (tie
policy); ``set_flags`` marks them per item and ``add_flag_counts`` counts them per metric
cell (``n_indistinguishable``, ``n_tied``; null for chance rows and for evaluations that do
not count them).

What a model's scores are (``score_kind``, one of ``SCORE_KINDS``): every metric here is
computed from ranks, but the ranking score differs by model: the cosine of image and text
embeddings (dual encoders), a matching head's ITM log-odds, BLIP's retrieval rerank score
(ITM match logit + ITC cosine) or a log-probability (VQAScore). The evaluation job sets it
on its model's rows (``with_score_kind``, from ``scoring.Scorer.score_kind``); a metric whose
scores are the same kind for every model keeps its own (SugarCrepe++'s text-only accuracy:
cosine). Chance rows and ground-truth oracles have none (null).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np
import polars as pl

from vlcomp.resampling import bootstrap_draws
from vlcomp.vocabulary import ALL, CHANCE, TIE_POLICY, negative_type

# What a model's metric values are computed from (``score_kind``).
COSINE = "cosine"  # of normalised image and text embeddings (or of two text embeddings)
ITM_LOG_ODDS = "itm_log_odds"  # a matching head's logit(match) - logit(no match)
ITM_LOGIT_PLUS_COSINE = "itm_logit_plus_cosine"  # BLIP's retrieval rerank score
LOG_PROBABILITY = "log_probability"  # log P(answer | image, question): VQAScore
SCORE_KINDS: tuple[str, ...] = (COSINE, ITM_LOG_ODDS, ITM_LOGIT_PLUS_COSINE, LOG_PROBABILITY)

METRIC_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,  # "chance": expectation under a random ranking
    "benchmark": pl.String,
    "part": pl.String,  # a labelled part of the benchmark (e.g. a training corpus); null: none
    "split": pl.String,  # "all" = every item
    "family": pl.String,  # negative type, e.g. "swap_att"; "all" where not applicable
    "metric": pl.String,  # e.g. accuracy, accuracy_micro, R@1, R@1_macro, i2t_R@5
    "value": pl.Float64,
    "n": pl.Int64,  # items (queries) behind the value
    "tie_policy": pl.String,
    "complexity": pl.Int64,  # null: every complexity (and every row of benchmarks without one)
    "ci_low": pl.Float64,  # percentile bootstrap interval over items; null with 0 resamples
    "ci_high": pl.Float64,
    # of the n items, those whose positive and a negative tokenise alike (set_flags), and
    # those tied with a negative the tokenizer tells apart; null: not counted (chance rows,
    # evaluations other than retrieval sets and pairs)
    "n_indistinguishable": pl.Int64,
    "n_tied": pl.Int64,
    "score_kind": pl.String,  # SCORE_KINDS; null: chance rows, oracles
}
FLAG_COUNT_COLUMNS = ("n_indistinguishable", "n_tied")
SCORE_KIND = "score_kind"
# The metric cell of a METRIC_SCHEMA row (with ``metric``, one row).
CELL_KEYS = ("model", "benchmark", "part", "split", "family", "complexity")

# Per-query ranks of image<->text retrieval (``retrieval_ranks``).
RANKS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "direction": pl.String,  # i2t: an image queries the captions; t2i: a caption the images
    "query_id": pl.String,  # image_id (i2t) or caption item_id (t2i)
    "image_id": pl.String,  # the query's image (i2t) or the caption's image (t2i)
    "split": pl.String,  # null: no split (only "all" is reported)
    "rank": pl.Int64,  # 0 = best; ties count against the correct item
    "n_candidates": pl.Int64,  # gallery size
    "n_positives": pl.Int64,  # correct candidates in the gallery
}


# --------------------------------------------------------------------------- ranks


def pessimistic_rank(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Rank (0 = best) of each row's best positive, counting ties against it.

    ``scores``: (queries, candidates) similarities; ``positive``: boolean mask of the same
    shape marking correct candidates (at least one per row).
    """
    if not positive.any(axis=1).all():
        raise ValueError("every query needs at least one correct candidate")
    best_positive = np.where(positive, scores, -np.inf).max(axis=1, keepdims=True)
    negatives_at_or_above = ((scores >= best_positive) & ~positive).sum(axis=1)
    return negatives_at_or_above


def recall_at(ranks: np.ndarray, k: int) -> float:
    return float((ranks < k).mean()) if ranks.size else float("nan")


def chance_text_to_image(n_images: int, k: int) -> float:
    """One correct image among ``n_images``: P(it lands in the top k) at random."""
    return min(k, n_images) / n_images


def chance_image_to_text(n_texts: int, n_correct: int, k: int) -> float:
    """P(at least one of ``n_correct`` captions among ``n_texts`` is in a random top k)."""
    k = min(k, n_texts)
    return 1.0 - comb(n_texts - n_correct, k) / comb(n_texts, k)


def chance_recall(n_candidates: np.ndarray, n_positives: np.ndarray, k: int) -> np.ndarray:
    """Per query: probability that a positive lands in a random top K."""
    return np.array(
        [
            chance_image_to_text(int(m), int(p), k)
            for m, p in zip(n_candidates, n_positives, strict=True)
        ],
        dtype=np.float64,
    )


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class EvalSettings:
    ks: tuple[int, ...] = (1, 3, 5)
    resamples: int = 1000
    seed: int = 0
    level: float = 0.95

    @staticmethod
    def from_config(entry: Mapping[str, Any], ks_key: str = "set_recall_at") -> EvalSettings:
        """Keys of ``evaluate`` (all optional, checked by the config schema): ``ks_key``
        (else recall_at), bootstrap_resamples, bootstrap_seed, ci_level. The mapping also
        holds the embedding's keys, which are not read here."""
        from vlcomp.settings import settings_from

        keys = {
            "ks": ks_key if ks_key in entry else "recall_at",
            "resamples": "bootstrap_resamples",
            "seed": "bootstrap_seed",
            "level": "ci_level",
        }
        return settings_from(EvalSettings, entry, "evaluate", keys=keys, shared=True)

    def metadata(self) -> dict[str, str]:
        return {
            "tie_policy": TIE_POLICY,
            "ci": f"percentile bootstrap over items, level {self.level}",
            "bootstrap_resamples": str(self.resamples),
            "bootstrap_seed": str(self.seed),
        }


def cell_rng(seed: int, *key: object) -> np.random.Generator:
    """A generator seeded by ``seed`` and a stable hash of ``key`` (never Python's hash)."""
    digest = hashlib.sha256("\x1f".join(str(k) for k in key).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def bootstrap_means(
    strata: Sequence[np.ndarray], resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Resampled statistic, shape (resamples, q): each stratum (n_i, q) is resampled with
    replacement on its own, and the statistic is the mean over strata of the column means
    (one stratum: the plain mean)."""
    q = strata[0].shape[1]
    total = np.zeros((resamples, q))
    for values in strata:
        start = 0
        for idx in bootstrap_draws(values.shape[0], resamples, rng):
            total[start : start + len(idx)] += values[idx].mean(axis=1)
            start += len(idx)
    return total / len(strata)


def percentile_interval(
    strata: Sequence[np.ndarray], resamples: int, level: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper percentile bounds per column; NaN without resamples. A column that is
    constant in every stratum gets its value as both bounds (every resample agrees)."""
    q = strata[0].shape[1]
    if resamples == 0:
        return np.full(q, np.nan), np.full(q, np.nan)
    constant = np.logical_and.reduce([(part == part[0]).all(axis=0) for part in strata])
    point = np.mean([part[0] for part in strata], axis=0)
    if constant.all():
        return point, point.copy()
    low, high = point.astype(np.float64), point.astype(np.float64)
    varying = ~constant
    draws = bootstrap_means([part[:, varying] for part in strata], resamples, rng)
    tail = (1.0 - level) / 2.0
    low[varying], high[varying] = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return low, high


def metric_rows(
    model: str,
    benchmark: str,
    part: str | None,
    split: str,
    family: str,
    complexity: int | None,
    names: Sequence[str],
    values: np.ndarray,
    chance: np.ndarray,
    strata: Sequence[np.ndarray],
    settings: EvalSettings,
    suffix: str = "",
) -> list[tuple]:
    """``METRIC_SCHEMA`` rows of one cell, for the model and for chance.

    ``values`` / ``chance``: per-item values (items, len(names)); ``strata``: boolean masks
    over the items; the point value is the mean over strata of the per-stratum means (one
    stratum: micro; one per negative type: macro), and the interval resamples each stratum.
    """
    n = int(sum(int(s.sum()) for s in strata))
    key = (benchmark, split, family + suffix, complexity)
    if part is not None:
        key = (benchmark, part, split, family + suffix, complexity)
    out = []
    q = len(names)
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if values.dtype == chance.dtype:
        # The model and chance share the cell's resamples: one bootstrap of both side by side.
        lows, highs = percentile_interval(
            [np.hstack([values[s], chance[s]]) for s in strata],
            settings.resamples, settings.level, cell_rng(settings.seed, *key),
        )  # fmt: skip
        bounds = {model: (lows[:q], highs[:q]), CHANCE: (lows[q:], highs[q:])}
    else:  # stacking would widen the narrower type (boolean hits) and slow the resampling
        for who, matrix in ((model, values), (CHANCE, chance)):
            bounds[who] = percentile_interval(
                [matrix[s] for s in strata],
                settings.resamples, settings.level, cell_rng(settings.seed, *key),
            )  # fmt: skip
    for who, matrix in ((model, values), (CHANCE, chance)):
        point = np.mean([matrix[s].mean(axis=0) for s in strata], axis=0)
        low, high = bounds[who]
        for j, name in enumerate(names):
            out.append(
                (who, benchmark, part, split, family, name + suffix, float(point[j]), n,
                 TIE_POLICY, complexity, float(low[j]), float(high[j]))
            )  # fmt: skip
    return out


def metric_frame(rows: Sequence[tuple]) -> pl.DataFrame:
    """``METRIC_SCHEMA`` frame from ``metric_rows`` tuples (NaN bounds become null; the flag
    counts null, see ``add_flag_counts``; the score kind null, see ``with_score_kind``)."""
    added = (*FLAG_COUNT_COLUMNS, SCORE_KIND)
    base = {c: t for c, t in METRIC_SCHEMA.items() if c not in added}
    table = pl.DataFrame(list(rows), schema=base, orient="row")
    return (
        table.with_columns(pl.col("ci_low", "ci_high").fill_nan(None))
        .with_columns(pl.lit(None, METRIC_SCHEMA[c]).alias(c) for c in added)
        .select(list(METRIC_SCHEMA))
        .unique(maintain_order=True)
    )


def with_score_kind(metrics: pl.DataFrame, model: str, score_kind: str) -> pl.DataFrame:
    """``metrics`` with ``score_kind`` on the rows of ``model`` that have none (a metric
    that sets its own keeps it; chance rows and other models' rows are left as they are).
    ``ValueError`` for a kind not in ``SCORE_KINDS`` or a table whose rows are all of other
    models."""
    if score_kind not in SCORE_KINDS:
        raise ValueError(f"score kind {score_kind!r} of {model}: not one of {list(SCORE_KINDS)}")
    if model == CHANCE:
        raise ValueError(f"chance rows have no score kind (asked for {score_kind!r})")
    if metrics.height and not (metrics["model"] == model).any():
        models = sorted(set(metrics["model"].to_list()))
        raise ValueError(f"no metric row of model {model!r} (the table has {models})")
    if SCORE_KIND not in metrics.columns:
        metrics = metrics.with_columns(pl.lit(None, pl.String).alias(SCORE_KIND))
    return metrics.with_columns(
        pl.when(pl.col("model") == model)
        .then(pl.col(SCORE_KIND).fill_null(score_kind))
        .otherwise(pl.col(SCORE_KIND))
        .alias(SCORE_KIND)
    )


def split_order(splits: Sequence[str | None]) -> list[str]:
    """ "all" first, then every other split name, sorted; null splits only count in "all"."""
    return [ALL, *sorted({s for s in splits if s is not None} - {ALL})]


# ----------------------------------------------------- indistinguishable and tied items


def set_flags(scores: pl.DataFrame, tokens: Mapping[str, Hashable]) -> pl.DataFrame:
    """Per retrieval set (model, benchmark, item_id, family = the negative type, as
    ``retrieval_sets.rank_sets`` forms them): ``indistinguishable``, a negative whose token
    ids equal a positive's, and ``tied``, a negative with other token ids whose similarity
    equals the best positive's (``contracts.PREDICTION_FLAGS_SCHEMA``).

    ``scores``: ``retrieval_sets.SCORES_SCHEMA`` rows; ``tokens``: text_key -> the text's
    token ids under the model's tokenizer and context (anything hashable), for every
    text_key of ``scores``."""
    item = ["model", "benchmark", "item_id"]
    columns = [*item, "family", "flag_ids", "is_positive", "similarity"]
    if not scores.height:
        return pl.DataFrame(schema={c: pl.String for c in (*item, "family")}).with_columns(
            indistinguishable=pl.lit(None, pl.Boolean), tied=pl.lit(None, pl.Boolean)
        )
    missing = sorted(set(scores["text_key"].to_list()) - set(tokens))
    if missing:
        raise ValueError(f"set_flags: {len(missing)} text(s) without token ids, e.g. {missing[0]}")
    codes: dict[Hashable, int] = {}
    code_of = {key: codes.setdefault(ids, len(codes)) for key, ids in tokens.items()}
    frame = scores.with_columns(
        family=negative_type(pl.col("family"), pl.col("target")),
        flag_ids=pl.col("text_key").replace_strict(code_of, return_dtype=pl.Int64),
    ).select(columns)
    positives = (
        frame.filter(pl.col("is_positive"))
        .group_by(item)
        .agg(pos_ids=pl.col("flag_ids").unique(), best=pl.col("similarity").max())
    )
    same = pl.col("pos_ids").list.contains(pl.col("flag_ids"))
    return (
        frame.filter(~pl.col("is_positive"))
        .join(positives, on=item, how="inner")
        .group_by([*item, "family"])
        .agg(
            indistinguishable=same.any(),
            tied=(~same & (pl.col("similarity") == pl.col("best"))).any(),
        )
        .sort([*item, "family"])
    )


def add_flag_counts(metrics: pl.DataFrame, predictions: pl.DataFrame) -> pl.DataFrame:
    """``metrics`` with ``n_indistinguishable`` and ``n_tied`` of every model row counted
    from the per-item flags of ``predictions`` (``SET_PREDICTIONS_SCHEMA`` with
    ``PREDICTION_FLAGS_SCHEMA``) over the cell's items, as ``retrieval_sets.set_metric_table``
    forms cells: split "all" and each named split, family "all" and each negative type,
    complexity null (all) and each level. Chance rows keep null."""
    flags = [c for c in ("indistinguishable", "tied") if c in predictions.columns]
    if len(flags) < 2 or not predictions.height:
        return metrics
    if "part" not in predictions.columns:
        predictions = predictions.with_columns(part=pl.lit(None, pl.String))
    rows = predictions.select(*CELL_KEYS, *flags)
    for column, everything in (("split", pl.lit(ALL)), ("family", pl.lit(ALL)),
                               ("complexity", pl.lit(None, pl.Int64))):  # fmt: skip
        named = pl.col(column).is_not_null()
        if column != "complexity":
            named &= pl.col(column) != ALL
        rows = pl.concat([rows.with_columns(everything.alias(column)), rows.filter(named)])
    counts = rows.group_by(CELL_KEYS).agg(
        n_indistinguishable=pl.col("indistinguishable").sum().cast(pl.Int64),
        n_tied=pl.col("tied").sum().cast(pl.Int64),
    )
    order = list(metrics.columns) + [c for c in FLAG_COUNT_COLUMNS if c not in metrics.columns]
    return (
        metrics.drop(FLAG_COUNT_COLUMNS, strict=False)
        .join(counts, on=list(CELL_KEYS), how="left", nulls_equal=True, maintain_order="left")
        .select(order)
    )


# --------------------------------------------------------------------------- retrieval


def _ranks_in_blocks(
    queries: np.ndarray,
    query_keys: np.ndarray,
    gallery: np.ndarray,
    gallery_keys: np.ndarray,
    block: int = 1024,
) -> np.ndarray:
    """Pessimistic rank of each query against the whole gallery (correct: same key), a block
    of queries at a time so that the similarity matrix is never held whole."""
    ranks = np.zeros(len(queries), dtype=np.int64)
    for start in range(0, len(queries), block):
        stop = start + block
        scores = queries[start:stop] @ gallery.T
        positive = query_keys[start:stop, None] == gallery_keys[None, :]
        ranks[start:stop] = pessimistic_rank(scores, positive)
    return ranks


def retrieval_ranks(
    model: str,
    benchmark: str,
    image_ids: Sequence[str],
    image_emb: np.ndarray,
    text_ids: Sequence[str],
    text_image_ids: Sequence[str],
    text_emb: np.ndarray,
    image_split: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """``RANKS_SCHEMA``: every image ranks every caption (i2t) and every caption ranks every
    image (t2i); a caption is correct for its own image. ``image_split`` (image_id -> split)
    labels images and their captions; without it the split is null."""
    image_ids = [str(i) for i in image_ids]
    text_image_ids = [str(i) for i in text_image_ids]
    codes = {image_id: code for code, image_id in enumerate(image_ids)}
    if len(codes) != len(image_ids):
        raise ValueError("retrieval: duplicate image ids in the gallery")
    unknown = sorted(set(text_image_ids) - set(codes))
    if unknown:
        raise ValueError(f"retrieval: {len(unknown)} caption image(s) not in the gallery")
    image_code = np.arange(len(image_ids))
    text_code = np.array([codes[i] for i in text_image_ids], dtype=np.int64)
    i2t = _ranks_in_blocks(image_emb, image_code, text_emb, text_code)
    t2i = _ranks_in_blocks(text_emb, text_code, image_emb, image_code)
    return ranks_frame(model, benchmark, image_ids, text_ids, text_image_ids, i2t, t2i, image_split)


def ranks_frame(
    model: str,
    benchmark: str,
    image_ids: Sequence[str],
    text_ids: Sequence[str],
    text_image_ids: Sequence[str],
    i2t: np.ndarray,
    t2i: np.ndarray,
    image_split: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """``RANKS_SCHEMA`` rows from the ranks of each image (``i2t``, in ``image_ids`` order)
    and each text (``t2i``), however they were ranked (embeddings or a pair scorer)."""
    image_ids = [str(i) for i in image_ids]
    text_image_ids = [str(i) for i in text_image_ids]
    codes = {image_id: code for code, image_id in enumerate(image_ids)}
    text_code = np.array([codes[i] for i in text_image_ids], dtype=np.int64)
    captions_per_image = np.bincount(text_code, minlength=len(image_ids))
    split_of = dict(image_split or {})
    frames = [
        pl.DataFrame(
            {
                "direction": "i2t",
                "query_id": image_ids,
                "image_id": image_ids,
                "rank": i2t,
                "n_candidates": len(text_image_ids),
                "n_positives": captions_per_image,
            }
        ),
        pl.DataFrame(
            {
                "direction": "t2i",
                "query_id": [str(t) for t in text_ids],
                "image_id": text_image_ids,
                "rank": t2i,
                "n_candidates": len(image_ids),
                "n_positives": 1,
            }
        ),
    ]
    return pl.concat(
        [
            frame.with_columns(
                model=pl.lit(model),
                benchmark=pl.lit(benchmark),
                split=pl.col("image_id").replace_strict(split_of, default=None),
            ).select([pl.col(c).cast(t) for c, t in RANKS_SCHEMA.items()])
            for frame in frames
        ]
    )


def recall_table(ranks: pl.DataFrame, settings: EvalSettings) -> pl.DataFrame:
    """``METRIC_SCHEMA`` rows from ``RANKS_SCHEMA`` ranks: ``<direction>_R@<K>`` per model,
    benchmark and split ("all" plus every non-null split), with chance rows and intervals.
    A query with no correct candidate (an i2t image without captions) is left out."""
    rows: list[tuple] = []
    ranks = ranks.filter(pl.col("n_positives") > 0)
    for (model, benchmark), frame in sorted(
        ranks.group_by(["model", "benchmark"]), key=lambda group: group[0]
    ):
        for direction in ("i2t", "t2i"):
            queries = frame.filter(pl.col("direction") == direction).sort("query_id")
            if not queries.height:
                continue
            rank = queries["rank"].to_numpy()
            m, p = queries["n_candidates"].to_numpy(), queries["n_positives"].to_numpy()
            names = [f"{direction}_R@{k}" for k in settings.ks]
            hits = np.stack([(rank < k).astype(np.float64) for k in settings.ks], axis=1)
            chance = np.stack([chance_recall(m, p, k) for k in settings.ks], axis=1)
            split = queries["split"].to_numpy()
            for s in split_order(queries["split"].to_list()):
                cell = np.ones(queries.height, bool) if s == ALL else split == s
                if cell.any():
                    rows += metric_rows(model, benchmark, None, s, ALL, None, names, hits,
                                        chance, [cell], settings)  # fmt: skip
    return metric_frame(rows)


def retrieval_table(
    model: str,
    benchmark: str,
    image_ids: Sequence[str],
    image_emb: np.ndarray,
    text_ids: Sequence[str],
    text_image_ids: Sequence[str],
    text_emb: np.ndarray,
    image_split: Mapping[str, str] | None = None,
    settings: EvalSettings = EvalSettings(ks=(1, 5)),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Image->text and text->image Recall@K over the whole gallery: the metric table and the
    per-query ranks (for re-splitting and significance tests).

    Every query is ranked against the full gallery; ``image_split`` assigns images (and so
    their captions) to splits, reported beside "all".
    """
    ranks = retrieval_ranks(
        model, benchmark, image_ids, image_emb, text_ids, text_image_ids, text_emb, image_split
    )
    return recall_table(ranks, settings), ranks
