"""Retrieval-set evaluation: one image (or crop) against its positive and hard negatives.

A *retrieval set* is one item's positive caption(s) together with its negatives of one
negative type (``family_target``, e.g. ``atom_obj``; CREPE's HN-ATOM sets are 1 + 4, HN-COMP
1 + 6, a SugarCrepe pair is 1 + 1). Candidates come in the ``CANDIDATES_SCHEMA`` contract;
when an item's negatives are of several types, each type is its own set, and every set holds
all of the item's positive rows (deduplicated by text).

Scoring (tie counts as wrong, ``vlcomp.evaluate.metrics.pessimistic_rank``): the rank of a set's best
positive is the number of negatives whose similarity is >= its own, so a set is ``correct``
(R@1 hit) only when the positive beats every negative strictly.

Metrics, per model and benchmark, for every split (and "all"), negative type (and "all":
``<metric>_micro`` over items, ``<metric>_macro`` = mean over negative types) and complexity
(and null = every complexity): ``R@K`` for each K and ``mean_R@K`` (mean over the Ks) for
sets of more than two candidates, ``accuracy`` for benchmarks whose sets are all pairs.
Chance rows (model "chance") hold the expectation under a random ranking, averaged over the
items: min(K, m) / m for m candidates with one positive (in general
1 - C(m - p, K) / C(m, K) for p positives). Every value carries a percentile bootstrap
confidence interval over items (stratified by negative type for macro averages), seeded from
(seed, benchmark, split, family, complexity) so that every model and the chance rows of one
cell are resampled with the same items (paired), and the same config gives the same bytes.

Images may be crops: a boxes table (item_id, x, y, width, height; the eval-items contract
qualifies) gives a region per item, cut with PIL before preprocessing. A crop's embedding
is cached under ``crop_key(image sha256, box)``; a whole image uses the image sha256 alone,
the same key as ``vlcomp.evaluate.embed.embed_images``, so the two share cache entries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from PIL import Image

from vlcomp.evaluate.embed import EmbeddingCache, cached_embed, embed_texts, image_key, text_key
from vlcomp.io import read_parquet_metadata, write_parquet
from vlcomp.evaluate.metrics import METRIC_SCHEMA, TIE_POLICY, chance_image_to_text, pessimistic_rank
from vlcomp.evaluate.models import LoadedModel

Log = Callable[[str], None]
Box = tuple[int, int, int, int]  # x, y, width, height in pixels

ALL = "all"
EXCLUDED = "excluded"  # a splits table was given but has no split for the item
CHANCE = "chance"

SET_METRIC_SCHEMA: dict[str, pl.DataType] = {
    **METRIC_SCHEMA,
    "complexity": pl.Int64,  # null: every complexity (and every row of benchmarks without one)
    "ci_low": pl.Float64,  # percentile bootstrap interval over items; null with 0 resamples
    "ci_high": pl.Float64,
}

SET_PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "item_id": pl.String,
    "family": pl.String,  # negative type: family_target, e.g. "swap_att"
    "split": pl.String,  # null: no splits table; "excluded": not in the splits table
    "complexity": pl.Int64,
    "n_candidates": pl.Int64,
    "n_positives": pl.Int64,
    "rank": pl.Int64,  # 0 = best; ties count against the positive
    "correct": pl.Boolean,  # rank == 0
    "pos_score": pl.Float64,  # best positive
    "neg_score": pl.Float64,  # best negative
    "pos_text_key": pl.String,
    "neg_text_key": pl.String,
}

SCORES_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "item_id": pl.String,
    "family": pl.String,
    "target": pl.String,
    "is_positive": pl.Boolean,
    "complexity": pl.Int64,
    "text_key": pl.String,
    "similarity": pl.Float64,
}


# --------------------------------------------------------------------------- embedding


@dataclass(frozen=True)
class ImageRef:
    """An image file and an optional region of it."""

    path: str
    box: Box | None = None


def crop_key(image_sha: str, box: Box | None) -> str:
    """Cache key of an image region: the image's sha256, plus the box when there is one."""
    if box is None:
        return image_sha
    x, y, width, height = box
    return f"{image_sha}@{x},{y},{width},{height}"


def crop(image: Image.Image, box: Box | None) -> Image.Image:
    """Cut ``box`` (x, y, width, height) out of ``image``, clipped to the image."""
    if box is None:
        return image
    x, y, width, height = box
    left, top = max(0, x), max(0, y)
    right, bottom = min(image.width, x + width), min(image.height, y + height)
    if width <= 0 or height <= 0 or right <= left or bottom <= top:
        raise ValueError(f"box {box} is empty or outside the {image.width}x{image.height} image")
    return image.crop((left, top, right, bottom))


def embed_image_refs(
    loaded: LoadedModel,
    refs: Sequence[ImageRef],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Embed images or crops, batched, through the content-hash cache; return vectors and the
    number computed (the rest came from the cache or from duplicates)."""
    device = next(loaded.model.parameters()).device
    shas: dict[str, str] = {}
    for ref in refs:
        if ref.path not in shas:
            shas[ref.path] = image_key(ref.path)

    def encode(batch: Sequence[object]) -> torch.Tensor:
        tensors = []
        for ref in batch:
            assert isinstance(ref, ImageRef)
            with Image.open(ref.path) as image:
                tensors.append(loaded.preprocess(crop(image.convert("RGB"), ref.box)))
        return loaded.model.encode_image(torch.stack(tensors).to(device))

    keys = [crop_key(shas[ref.path], ref.box) for ref in refs]
    return cached_embed(keys, list(refs), encode, cache, batch_size, progress)


def resolve_image(images_dir: str | Path, name: str) -> str:
    """``images_dir/name`` if that file exists, else ``images_dir/name.png``."""
    direct = Path(images_dir) / name
    if direct.is_file():
        return str(direct)
    png = Path(images_dir) / f"{name}.png"
    if png.is_file():
        return str(png)
    raise FileNotFoundError(f"no image {name!r} under {images_dir} (tried {direct} and {png})")


def item_boxes(boxes: pl.DataFrame | None) -> dict[str, Box | None]:
    """item_id -> box from a table with item_id, x, y, width, height (null box: whole image)."""
    if boxes is None:
        return {}
    missing = [c for c in ("item_id", "x", "y", "width", "height") if c not in boxes.columns]
    if missing:
        raise ValueError(f"boxes: missing column(s) {missing}")
    if boxes["item_id"].is_duplicated().any():
        raise ValueError("boxes: duplicate item_id")
    out: dict[str, Box | None] = {}
    for item_id, x, y, w, h in boxes.select("item_id", "x", "y", "width", "height").iter_rows():
        values = (x, y, w, h)
        if all(v is None for v in values):
            out[str(item_id)] = None
        elif any(v is None for v in values):
            raise ValueError(f"boxes: item {item_id!r} has a partial box {values}")
        else:
            out[str(item_id)] = (int(x), int(y), int(w), int(h))
    return out


def score_candidates(
    model: str,
    loaded: LoadedModel,
    candidates: pl.DataFrame,
    images_dir: str | Path,
    boxes: pl.DataFrame | None = None,
    batch_size: int = 256,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Callable[[str], Callable[[int, int], None] | None] = lambda label: None,
    log: Log | None = None,
) -> pl.DataFrame:
    """Cosine similarity of every candidate text with its item's image (or crop)."""
    for column in ("benchmark", "item_id", "image", "text", "is_positive", "family", "target"):
        if column not in candidates.columns:
            raise ValueError(f"candidates: missing column {column!r}")
    if candidates["image"].null_count():
        raise ValueError("candidates: rows without an image cannot be scored against one")
    box_of = item_boxes(boxes)
    paths = {name: resolve_image(images_dir, name) for name in set(candidates["image"])}
    item_image = candidates.select("item_id", "image").unique(maintain_order=True)
    if item_image["item_id"].is_duplicated().any():
        raise ValueError("candidates: an item_id is paired with more than one image")
    refs = [
        ImageRef(paths[name], box_of.get(item_id))
        for item_id, name in item_image.sort("item_id").iter_rows()
    ]
    ref_row = {ref: i for i, ref in enumerate(dict.fromkeys(refs))}
    unique_refs = list(ref_row)
    image_vectors, new_images = embed_image_refs(
        loaded, unique_refs, batch_size, image_cache, progress("images")
    )
    texts = candidates["text"].to_list()
    text_vectors, new_texts = embed_texts(loaded, texts, batch_size, text_cache, progress("texts"))
    if log:
        log(
            f"embedded {new_images}/{len(unique_refs)} images or crops and "
            f"{new_texts}/{len(texts)} texts (the rest came from the cache)"
        )
    row_of_item = {
        item_id: ref_row[ImageRef(paths[name], box_of.get(item_id))]
        for item_id, name in item_image.iter_rows()
    }
    rows = [row_of_item[i] for i in candidates["item_id"].to_list()]
    similarity = np.einsum("ij,ij->i", text_vectors, image_vectors[rows]).astype(np.float64)
    if "complexity" in candidates.columns:
        complexity = pl.col("complexity").cast(pl.Int64)
    elif boxes is not None and "complexity" in boxes.columns:
        of_item = dict(boxes.select(pl.col("item_id").cast(pl.String), "complexity").iter_rows())
        complexity = pl.col("item_id").replace_strict(of_item, default=None, return_dtype=pl.Int64)
    else:
        complexity = pl.lit(None, pl.Int64)
    return candidates.select(
        model=pl.lit(model),
        benchmark="benchmark",
        item_id="item_id",
        family="family",
        target="target",
        is_positive="is_positive",
        complexity=complexity,
        text_key=pl.Series([text_key(t) for t in texts], dtype=pl.String),
        similarity=pl.Series(similarity),
    ).select([pl.col(c).cast(t) for c, t in SCORES_SCHEMA.items()])


# --------------------------------------------------------------------------- ranking


def negative_type(family: pl.Expr, target: pl.Expr) -> pl.Expr:
    """``family_target`` (``family`` alone when the target is null)."""
    return (
        pl.when(target.is_null())
        .then(family)
        .otherwise(pl.concat_str(family, target, separator="_"))
    )


def rank_sets(scores: pl.DataFrame) -> pl.DataFrame:
    """Per retrieval set: rank of the best positive among its candidates (tie = wrong).

    ``scores``: model, benchmark, item_id, family, target, is_positive, text_key, similarity
    and optionally complexity (``SCORES_SCHEMA``). Returns ``SET_PREDICTIONS_SCHEMA`` rows
    with ``split`` null (see ``attach_splits``).
    """
    missing = [c for c in SCORES_SCHEMA if c not in scores.columns and c != "complexity"]
    if missing:
        raise ValueError(f"scores: missing column(s) {missing}")
    if not np.isfinite(scores["similarity"].to_numpy()).all():
        raise ValueError("scores: non-finite similarity")
    frame = scores.with_columns(
        complexity=(pl.col("complexity") if "complexity" in scores.columns else pl.lit(None)).cast(
            pl.Int64
        ),
        family=negative_type(pl.col("family"), pl.col("target")),
    )
    item = ["model", "benchmark", "item_id"]
    positives = (
        frame.filter(pl.col("is_positive"))
        .select(*item, "text_key", "similarity", pos_complexity=pl.col("complexity"))
        .unique(subset=[*item, "text_key"], keep="first", maintain_order=True)
    )
    negatives = frame.filter(~pl.col("is_positive")).unique(
        subset=[*item, "family", "text_key"], keep="first", maintain_order=True
    )
    sets = negatives.select(*item, "family").unique()
    _require_both(positives.select(item).unique(), sets.select(item).unique())
    members = pl.concat(
        [
            negatives.select(*item, "family", "text_key", "similarity", "complexity",
                             is_positive=pl.lit(False)),
            sets.join(positives, on=item, how="inner").select(
                *item, "family", "text_key", "similarity",
                complexity=pl.col("pos_complexity"), is_positive=pl.lit(True)
            ),
        ]
    ).sort([*item, "family", "is_positive", "similarity", "text_key"],
           descending=[False, False, False, False, True, True, False])  # fmt: skip
    members = members.with_columns(
        set_index=pl.struct(*item, "family").rle_id().cast(pl.Int64),
    ).with_columns(slot=pl.int_range(pl.len()).over("set_index"))
    n_sets = int(members["set_index"].max()) + 1 if members.height else 0
    width = int(members["slot"].max()) + 1 if members.height else 0
    scores_matrix = np.full((n_sets, width), -np.inf)
    positive_mask = np.zeros((n_sets, width), dtype=bool)
    set_idx, slot = members["set_index"].to_numpy(), members["slot"].to_numpy()
    scores_matrix[set_idx, slot] = members["similarity"].to_numpy()
    positive_mask[set_idx, slot] = members["is_positive"].to_numpy()
    ranks = pessimistic_rank(scores_matrix, positive_mask) if n_sets else np.zeros(0, np.int64)
    summary = (
        members.group_by("set_index")
        .agg(
            *[pl.col(c).first() for c in (*item, "family")],
            complexity=pl.col("complexity").drop_nulls().max(),
            n_candidates=pl.len(),
            n_positives=pl.col("is_positive").sum(),
            pos_score=pl.col("similarity").filter(pl.col("is_positive")).first(),
            pos_text_key=pl.col("text_key").filter(pl.col("is_positive")).first(),
            neg_score=pl.col("similarity").filter(~pl.col("is_positive")).first(),
            neg_text_key=pl.col("text_key").filter(~pl.col("is_positive")).first(),
        )
        .sort("set_index")
        .with_columns(rank=pl.Series(ranks.astype(np.int64)), split=pl.lit(None, pl.String))
        .with_columns(correct=pl.col("rank") == 0)
    )
    return summary.select([pl.col(c).cast(t) for c, t in SET_PREDICTIONS_SCHEMA.items()]).sort(
        "model", "benchmark", "item_id", "family"
    )


def _require_both(with_positive: pl.DataFrame, with_negative: pl.DataFrame) -> None:
    keys = with_positive.columns
    lonely = with_negative.join(with_positive, on=keys, how="anti")
    if lonely.height:
        raise ValueError(
            f"{lonely.height} item(s) have negatives but no positive, e.g. {lonely.row(0)}"
        )
    bare = with_positive.join(with_negative, on=keys, how="anti")
    if bare.height:
        raise ValueError(
            f"{bare.height} item(s) have a positive but no negative, e.g. {bare.row(0)}"
        )


def split_keys(boxes: pl.DataFrame | None) -> dict[str, str]:
    """Candidate item_id -> eval item_id from a regions table with ``eval_item_id`` (the
    systematicity generator's), so that splits keyed by eval item apply; else empty."""
    if boxes is None or "eval_item_id" not in boxes.columns:
        return {}
    return dict(boxes.select(pl.col("item_id", "eval_item_id").cast(pl.String)).iter_rows())


def attach_splits(
    predictions: pl.DataFrame,
    splits: pl.DataFrame | None,
    column: str = "split",
    key_of: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Set ``split`` from a table item_id -> ``column``; items it lacks (or null) are
    "excluded". Without a table the split stays null (only "all" is reported). ``key_of``
    maps a candidate item_id to the splits table's item_id (default: the same)."""
    if splits is None:
        return predictions.with_columns(split=pl.lit(None, pl.String))
    missing = [c for c in ("item_id", column) if c not in splits.columns]
    if missing:
        raise ValueError(f"splits: missing column(s) {missing}")
    table = splits.select(pl.col("item_id").cast(pl.String), split=pl.col(column).cast(pl.String))
    if table["item_id"].is_duplicated().any():
        raise ValueError("splits: duplicate item_id (filter the table to one corpus and rule)")
    keyed = predictions.drop("split").with_columns(
        _split_key=pl.col("item_id").replace(dict(key_of)) if key_of else pl.col("item_id")
    )
    return (
        keyed.join(table.rename({"item_id": "_split_key"}), on="_split_key", how="left")
        .with_columns(pl.col("split").fill_null(EXCLUDED))
        .select(list(predictions.columns))
    )


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class SetEvalSettings:
    ks: tuple[int, ...] = (1, 3, 5)
    resamples: int = 1000
    seed: int = 0
    level: float = 0.95

    @staticmethod
    def from_config(entry: Mapping[str, Any]) -> SetEvalSettings:
        """Keys (all optional): recall_at, bootstrap_resamples, bootstrap_seed, ci_level."""
        settings = SetEvalSettings(
            ks=tuple(int(k) for k in entry.get("recall_at", (1, 3, 5))),
            resamples=int(entry.get("bootstrap_resamples", 1000)),
            seed=int(entry.get("bootstrap_seed", 0)),
            level=float(entry.get("ci_level", 0.95)),
        )
        if not settings.ks or min(settings.ks) < 1:
            raise ValueError(f"recall_at must list K >= 1, got {settings.ks}")
        if settings.resamples < 0 or not 0 < settings.level < 1:
            raise ValueError("bootstrap_resamples must be >= 0 and ci_level in (0, 1)")
        return settings

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
        n = values.shape[0]
        chunk = max(1, 2_000_000 // max(1, n))
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            total[start:stop] += values[idx].mean(axis=1)
    return total / len(strata)


def percentile_interval(
    strata: Sequence[np.ndarray], resamples: int, level: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper percentile bounds per column; NaN without resamples."""
    q = strata[0].shape[1]
    if resamples == 0:
        return np.full(q, np.nan), np.full(q, np.nan)
    if all((part == part[0]).all() for part in strata):  # constant: every resample agrees
        point = np.mean([part[0] for part in strata], axis=0)
        return point, point.copy()
    draws = bootstrap_means(strata, resamples, rng)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return low, high


def chance_recall(n_candidates: np.ndarray, n_positives: np.ndarray, k: int) -> np.ndarray:
    """Per item: probability that a positive lands in a random top K."""
    return np.array(
        [
            chance_image_to_text(int(m), int(p), k)
            for m, p in zip(n_candidates, n_positives, strict=True)
        ],
        dtype=np.float64,
    )


def _item_values(
    frame: pl.DataFrame, ks: Sequence[int], pairs: bool
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Metric names and per-item values (model, chance), each (items, metrics)."""
    ranks = frame["rank"].to_numpy()
    m, p = frame["n_candidates"].to_numpy(), frame["n_positives"].to_numpy()
    if pairs:
        return (
            ["accuracy"],
            (ranks == 0)[:, None].astype(np.float64),
            chance_recall(m, p, 1)[:, None],
        )
    hits = np.stack([(ranks < k).astype(np.float64) for k in ks], axis=1)
    chance = np.stack([chance_recall(m, p, k) for k in ks], axis=1)
    names = [f"R@{k}" for k in ks]
    if len(ks) > 1:
        names.append("mean_R@K")
        hits = np.column_stack([hits, hits.mean(axis=1)])
        chance = np.column_stack([chance, chance.mean(axis=1)])
    return names, hits, chance


def set_metric_table(
    predictions: pl.DataFrame, settings: SetEvalSettings = SetEvalSettings()
) -> pl.DataFrame:
    """``SET_METRIC_SCHEMA`` rows for every model in ``predictions`` plus chance rows."""
    rows: list[tuple] = []
    for (model, benchmark), frame in sorted(
        predictions.group_by(["model", "benchmark"]), key=lambda group: group[0]
    ):
        frame = frame.sort("item_id", "family")
        pairs = bool((frame["n_candidates"] == 2).all())
        names, values, chance = _item_values(frame, settings.ks, pairs)
        split = frame["split"].to_numpy()
        family = frame["family"].to_numpy()
        complexity = frame["complexity"].to_numpy()
        has_complexity = frame["complexity"].null_count() < frame.height
        splits = [ALL, *sorted(set(frame["split"].drop_nulls().to_list()))]
        families = sorted(set(family.tolist()))
        levels: list[int | None] = [None]
        if has_complexity:
            levels += sorted(int(c) for c in frame["complexity"].drop_nulls().unique())
        for s in splits:
            in_split = np.ones(frame.height, bool) if s == ALL else split == s
            for level in levels:
                cell = in_split if level is None else in_split & (complexity == level)
                if not cell.any():
                    continue
                per_family = []
                for f in families:
                    sel = cell & (family == f)
                    if sel.any():
                        per_family.append(sel)
                        rows += _rows(model, benchmark, s, f, level, names, values, chance, [sel],
                                      settings, "")  # fmt: skip
                rows += _rows(model, benchmark, s, ALL, level, names, values, chance, [cell],
                              settings, "_micro")  # fmt: skip
                rows += _rows(model, benchmark, s, ALL, level, names, values, chance, per_family,
                              settings, "_macro")  # fmt: skip
    table = pl.DataFrame(rows, schema=SET_METRIC_SCHEMA, orient="row")
    table = table.with_columns(pl.col("ci_low", "ci_high").fill_nan(None))
    return table.unique(maintain_order=True)


def _rows(
    model: str,
    benchmark: str,
    split: str,
    family: str,
    complexity: int | None,
    names: list[str],
    values: np.ndarray,
    chance: np.ndarray,
    strata: list[np.ndarray],
    settings: SetEvalSettings,
    suffix: str,
) -> list[tuple]:
    n = int(sum(int(s.sum()) for s in strata))
    out = []
    key = (benchmark, split, family + suffix, complexity)
    for who, matrix in ((model, values), (CHANCE, chance)):
        parts = [matrix[s] for s in strata]
        point = np.mean([p.mean(axis=0) for p in parts], axis=0)
        low, high = percentile_interval(
            parts, settings.resamples, settings.level, cell_rng(settings.seed, *key)
        )
        for j, name in enumerate(names):
            out.append(
                (who, benchmark, split, family, name + suffix, float(point[j]), n, TIE_POLICY,
                 complexity, float(low[j]), float(high[j]))
            )  # fmt: skip
    return out


# --------------------------------------------------------------------------- jobs


def metrics_from_scores(
    scores: str | Path,
    splits: str | Path | None,
    split_column: str,
    settings: Mapping[str, Any],
    predictions_out: str | Path,
    metrics_out: str | Path,
    boxes: str | Path | None = None,
    log: Log = print,
) -> None:
    """Job: per-candidate scores -> per-item predictions and metric table (no model needed;
    rerun it for another split rule or bootstrap setting). ``boxes`` is only read for its
    ``eval_item_id`` column (see ``split_keys``)."""
    set_settings = SetEvalSettings.from_config(settings)
    split_table = pl.read_parquet(splits) if splits else None
    key_of = split_keys(pl.read_parquet(boxes)) if boxes else None
    predictions = attach_splits(
        rank_sets(pl.read_parquet(scores)), split_table, split_column, key_of
    )
    metrics = set_metric_table(predictions, set_settings)
    meta = {
        **read_parquet_metadata(scores),
        **set_settings.metadata(),
        "split_column": split_column,
    }
    write_parquet(predictions, predictions_out, metadata=meta)
    write_parquet(metrics, metrics_out, metadata=meta)
    _log_summary(metrics, log)


def evaluate_candidate_sets(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    candidates: str | Path,
    images_dir: str | Path,
    cache_dir: str | Path,
    predictions_out: str | Path,
    metrics_out: str | Path,
    boxes: str | Path | None = None,
    splits: str | Path | None = None,
    split_column: str = "split",
    scores_out: str | Path | None = None,
    log: Log = print,
) -> None:
    """Job: embed every candidate text and item image (or crop) with one model, through the
    shared embedding cache, and write per-item predictions and the metric table (and, when
    ``scores_out`` is given, the per-candidate similarities).

    ``boxes``: item_id, x, y, width, height (null: whole image), optionally ``complexity``
    (the productivity items table) and ``eval_item_id`` (the systematicity regions table; the
    splits table is then looked up by eval item). ``splits``: item_id and ``split_column``
    (e.g. the assignments' crepe_split / split_strict, filtered to one training corpus).
    ``settings``: device, threads, batch_size (as ``evaluate`` in the config) and the
    optional ``SetEvalSettings.from_config`` keys."""
    from vlcomp.evaluate.jobs import model_metadata, open_model, progress_bar

    set_settings = SetEvalSettings.from_config(settings)
    box_table = pl.read_parquet(boxes) if boxes else None
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, str(cache_dir), log
    )
    scored = score_candidates(
        model_key,
        loaded,
        pl.read_parquet(candidates),
        images_dir,
        boxes=box_table,
        batch_size=int(settings["batch_size"]),
        image_cache=image_cache,
        text_cache=text_cache,
        progress=progress_bar,
        log=log,
    )
    split_table = pl.read_parquet(splits) if splits else None
    predictions = attach_splits(rank_sets(scored), split_table, split_column, split_keys(box_table))
    metrics = set_metric_table(predictions, set_settings)
    meta = {
        **model_metadata(model_key, loaded),
        **set_settings.metadata(),
        "split_column": split_column,
    }
    if scores_out:
        write_parquet(scored, scores_out, metadata=meta)
    write_parquet(predictions, predictions_out, metadata=meta)
    write_parquet(metrics, metrics_out, metadata=meta)
    _log_summary(metrics, log)


def _log_summary(metrics: pl.DataFrame, log: Log) -> None:
    headline = metrics.filter(
        pl.col("complexity").is_null()
        & (pl.col("family") == ALL)
        & pl.col("metric").is_in(["R@1_micro", "accuracy_micro"])
    )
    for row in headline.iter_rows(named=True):
        log(
            f"{row['model']} {row['benchmark']} {row['split']} {row['metric']}: "
            f"{row['value']:.3f} [{row['ci_low']}, {row['ci_high']}] (n={row['n']})"
        )
