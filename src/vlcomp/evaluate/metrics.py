"""Retrieval metrics from embedding tables.

Tie policy: a tie counts as wrong. The rank of a correct item is the number of *other*
candidates whose similarity is greater than **or equal to** its own, so a model that gives
every candidate the same score gets no credit (unlike an unstable argsort, which would give
it arbitrary credit).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np
import polars as pl

TIE_POLICY = "tie_counts_as_wrong"

METRIC_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "split": pl.String,
    "family": pl.String,  # negative type, e.g. "swap_att"; "all" where not applicable
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Int64,
    "tie_policy": pl.String,
}


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


def retrieval_table(
    model: str,
    benchmark: str,
    image_ids: np.ndarray,
    image_emb: np.ndarray,
    text_ids: np.ndarray,
    text_image_ids: np.ndarray,
    text_emb: np.ndarray,
    image_split: dict[int, str],
    ks: Sequence[int] = (1, 5),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Image->text and text->image Recall@K over the whole gallery, reported per split.

    Every query is ranked against the full gallery; ``image_split`` assigns images (and so
    their captions) to splits, and an ``all`` split over every query is always added.
    Returns the metric table and the per-query ranks (for inspection and significance tests).
    """
    sims = image_emb @ text_emb.T  # (images, texts)
    match = image_ids[:, None] == text_image_ids[None, :]
    i2t_rank = pessimistic_rank(sims, match)
    t2i_rank = pessimistic_rank(sims.T, match.T)
    image_splits = np.array([image_split.get(int(i), "all") for i in image_ids])
    text_splits = np.array([image_split.get(int(i), "all") for i in text_image_ids])
    captions_per_image = match.sum(axis=1)

    rows = []
    for split in ["all", *sorted(set(image_split.values()))]:
        img_sel = (
            np.ones_like(image_splits, dtype=bool) if split == "all" else image_splits == split
        )
        txt_sel = np.ones_like(text_splits, dtype=bool) if split == "all" else text_splits == split
        n_img, n_txt = int(img_sel.sum()), int(txt_sel.sum())
        for k in ks:
            chance_i2t = (
                float(
                    np.mean(
                        [
                            chance_image_to_text(len(text_image_ids), int(c), k)
                            for c in captions_per_image[img_sel]
                        ]
                    )
                )
                if img_sel.any()
                else float("nan")
            )
            i2t, t2i = f"i2t_R@{k}", f"t2i_R@{k}"
            rows += [
                (model, benchmark, split, "all", i2t, recall_at(i2t_rank[img_sel], k), n_img),
                (model, benchmark, split, "all", t2i, recall_at(t2i_rank[txt_sel], k), n_txt),
                ("chance", benchmark, split, "all", i2t, chance_i2t, n_img),
                (
                    "chance",
                    benchmark,
                    split,
                    "all",
                    t2i,
                    chance_text_to_image(len(image_ids), k),
                    n_txt,
                ),
            ]
    table = pl.DataFrame([(*r, TIE_POLICY) for r in rows], schema=METRIC_SCHEMA, orient="row")
    ranks = pl.concat(
        [
            pl.DataFrame(
                {
                    "model": model,
                    "direction": "i2t",
                    "query_id": image_ids.astype(np.int64).astype(str),
                    "split": image_splits,
                    "rank": i2t_rank.astype(np.int64),
                }
            ),
            pl.DataFrame(
                {
                    "model": model,
                    "direction": "t2i",
                    "query_id": text_ids.astype(str),
                    "split": text_splits,
                    "rank": t2i_rank.astype(np.int64),
                }
            ),
        ]
    )
    return table, ranks


def pair_accuracy_table(
    model: str,
    benchmark: str,
    predictions: pl.DataFrame,
) -> pl.DataFrame:
    """Binary accuracy (positive scored above the negative; a tie is wrong) per split and
    family, micro over items and macro over families, with chance rows (0.5).

    ``predictions``: one row per item with ``split``, ``family`` and boolean ``correct``.
    """
    rows = []
    splits = ["all", *sorted(set(predictions["split"].to_list()) - {"all"})]
    families = sorted(set(predictions["family"].to_list()))
    for split in splits:
        in_split = predictions if split == "all" else predictions.filter(pl.col("split") == split)
        per_family = []
        for family in families:
            part = in_split.filter(pl.col("family") == family)
            if part.height:
                accuracy = float(part["correct"].mean())
                per_family.append(accuracy)
                rows.append((model, benchmark, split, family, "accuracy", accuracy, part.height))
                rows.append(("chance", benchmark, split, family, "accuracy", 0.5, part.height))
        if in_split.height:
            micro = float(in_split["correct"].mean())
            rows.append((model, benchmark, split, "all", "accuracy_micro", micro, in_split.height))
            rows.append(
                (model, benchmark, split, "all", "accuracy_macro", float(np.mean(per_family)),
                 in_split.height)
            )  # fmt: skip
            rows.append(("chance", benchmark, split, "all", "accuracy_micro", 0.5, in_split.height))
            rows.append(("chance", benchmark, split, "all", "accuracy_macro", 0.5, in_split.height))
    return pl.DataFrame([(*r, TIE_POLICY) for r in rows], schema=METRIC_SCHEMA, orient="row")
