"""Scoring with the models that score an (image, text) pair jointly (``vlcomp.models.joint``:
matching heads and VQAScore): pair scores and retrieval ranks, which
``scoring.JointScorer`` turns into the same prediction and metric tables as embedding
models give.

Cost per item (forward passes): a set of K candidates for one image costs one vision pass
and K fused passes (matching head) or K full passes (VQAScore); a two-image item 2 vision
passes and 4 fused passes, or 4 full passes. Retrieval over N images x M texts: N + M
unimodal passes and at most (N + M) x k fused passes (matching head, pairs shared between
the two directions), N x M full passes (VQAScore). ``PairScorer.counts`` counts them.

Scores are float32, cached per (image or crop, text) under the model's embedding cache
folder (``pair_cache``: the scorer's settings are part of the shard name); images are decoded
in this process (no DataLoader workers: the fused passes dominate).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image

from vlcomp.contracts import text_key
from vlcomp.evaluate.embed import embed_image_refs, embed_texts
from vlcomp.evaluate.images import (
    EmbeddingCache,
    ImageRef,
    UnreadableImageError,
    crop,
    crop_key,
    image_key,
    open_rgb,
)
from vlcomp.models.joint import PairScorer, for_retrieval
from vlcomp.models.parts import LoadedModel

Progress = Callable[[int, int], None] | None


# --------------------------------------------------------------------------- pair scores


def pair_cache(loaded: LoadedModel, image_cache: EmbeddingCache | None) -> EmbeddingCache | None:
    """The pair-score cache beside the model's image cache (None without one); its shards
    are named after the scorer's settings, so another template never reads them."""
    if image_cache is None:
        return None
    tag = json.dumps(loaded.model.settings(), sort_keys=True)
    return EmbeddingCache(
        image_cache.directory, f"pairs_{hashlib.sha256(tag.encode()).hexdigest()[:12]}"
    )


def score_pairs(
    loaded: LoadedModel,
    pairs: Sequence[tuple[ImageRef, str]],
    batch_size: int = 64,
    cache: EmbeddingCache | None = None,
    progress: Progress = None,
    failed: dict[ImageRef, str] | None = None,
) -> tuple[np.ndarray, int]:
    """float64 scores of (image or crop, text) pairs (as computed in float32) and the number
    computed (the rest came from the cache or from duplicates). Each image is decoded once
    per ``batch_size`` images; without ``failed`` an unreadable image raises
    ``UnreadableImageError``, with it the image is recorded there (ref -> message) and its
    pairs get NaN."""
    scorer = loaded.model
    assert isinstance(scorer, PairScorer)
    shas: dict[str, str | None] = {}
    unreadable_files: dict[str, str] = {}
    for path in dict.fromkeys(ref.path for ref, _ in pairs):
        try:
            shas[path] = image_key(path)
        except OSError as error:
            shas[path] = None
            unreadable_files[path] = f"{type(error).__name__}: {error}"
    bad = {ref: unreadable_files[ref.path] for ref, _ in pairs if ref.path in unreadable_files}
    keys = [
        None if shas[ref.path] is None else f"{crop_key(shas[ref.path], ref.box)}|{text_key(text)}"
        for ref, text in pairs
    ]
    new: dict[str, tuple[ImageRef, str]] = {}
    for key, pair in zip(keys, pairs, strict=True):
        if key is not None and (cache is None or key not in cache) and key not in new:
            new[key] = pair
    by_ref: dict[ImageRef, list[str]] = {}
    for key in sorted(new):  # by image (or crop), then text
        by_ref.setdefault(new[key][0], []).append(key)
    refs = list(by_ref)
    scores: dict[str, float] = {}
    done = 0
    for start in range(0, len(refs), batch_size):
        chunk = refs[start : start + batch_size]
        images: list[Image.Image] = []
        row_of: dict[ImageRef, int] = {}
        for ref in chunk:
            try:
                image = crop(open_rgb(ref.path), ref.box)
            except UnreadableImageError as error:
                bad[ref] = str(error)
                continue
            row_of[ref] = len(images)
            images.append(image)
        in_chunk = [k for ref in row_of for k in by_ref[ref]]
        if in_chunk:
            values = scorer.score_images(
                loaded, images, [(row_of[new[k][0]], new[k][1]) for k in in_chunk], batch_size
            )
            scores.update(zip(in_chunk, values.tolist(), strict=True))
        done += sum(len(by_ref[ref]) for ref in chunk)
        if progress:
            progress(done, len(new))
    if bad and failed is None:
        ref, message = next(iter(bad.items()))
        raise UnreadableImageError(f"{ref.path}: {message}")
    if failed is not None:
        failed.update(bad)
    if cache is not None and scores:
        computed = sorted(scores)
        cache.add(computed, np.asarray([[scores[k]] for k in computed], dtype=np.float32))
    out = np.full(len(pairs), np.nan, dtype=np.float64)
    for i, (key, (ref, _)) in enumerate(zip(keys, pairs, strict=True)):
        if key is None or ref in bad:
            continue
        out[i] = scores[key] if key in scores else float(cache.get(key)[0])  # type: ignore[union-attr]
    return out, len(scores)


# --------------------------------------------------------------------------- retrieval


def rerank_ranks(
    first: np.ndarray, second: np.ndarray, top: np.ndarray, positive: np.ndarray
) -> np.ndarray:
    """Rank (0 = best, ties against the positive) of each query's best positive when the
    candidates in ``top`` come first, ordered by ``second`` (read only there), and the rest
    after them, ordered by ``first``. All arrays (queries, candidates); ``top`` everywhere
    is ranking by ``second`` alone (``metrics.pessimistic_rank``)."""
    if not positive.any(axis=1).all():
        raise ValueError("every query needs at least one correct candidate")
    positive_top = positive & top
    best = np.where(positive_top, second, -np.inf).max(axis=1, keepdims=True)
    rank_top = ((second >= best) & top & ~positive).sum(axis=1)
    rest = positive & ~top
    best_rest = np.where(rest, first, -np.inf).max(axis=1, keepdims=True)
    rank_rest = (top & ~positive).sum(axis=1) + ((first >= best_rest) & ~top & ~positive).sum(
        axis=1
    )
    return np.where(positive_top.any(axis=1), rank_top, rank_rest).astype(np.int64)


def top_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` highest (ties: the earlier column)."""
    mask = np.zeros(scores.shape, dtype=bool)
    if scores.size:
        best = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        np.put_along_axis(mask, best, True, axis=1)
    return mask


def retrieval_ranks(
    loaded: LoadedModel,
    image_refs: Sequence[ImageRef],
    texts: Sequence[str],
    text_image: np.ndarray,
    batch_size: int = 64,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Callable[[str], Progress] = lambda label: None,
    failed: dict[ImageRef, str] | None = None,
    top_k: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Image->text and text->image ranks over the whole gallery with a pair scorer:
    ``(usable, i2t, t2i, counts)``. ``text_image``: each text's image (index into
    ``image_refs``). A scorer with embeddings ranks by their similarity and reranks each
    query's ``top_k`` (default the model's ``rerank_top_k``) by the pair score; one without
    scores every pair. ``usable``: the images that could be decoded (``failed`` gets the
    others); ``i2t`` ranks those images, ``t2i`` the texts of those images, in order."""
    loaded = for_retrieval(loaded)  # the score the model's own retrieval reranks by
    scorer = loaded.model
    assert isinstance(scorer, PairScorer)
    before = Counter(scorer.counts)
    text_image = np.asarray(text_image, dtype=np.int64)
    if scorer.has_embeddings:
        found: dict[ImageRef, str] = {}
        image_vectors, _ = embed_image_refs(
            loaded, image_refs, batch_size, image_cache, progress("images"), found
        )
        if found and failed is None:
            raise UnreadableImageError(next(iter(found.values())))
        (failed if failed is not None else {}).update(found)
        usable = np.array([ref not in found for ref in image_refs], dtype=bool)
        text_vectors, _ = embed_texts(loaded, texts, batch_size, text_cache, progress("texts"))
        k = int(top_k or getattr(scorer, "rerank_top_k", 0) or max(len(texts), len(image_refs)))
    else:
        usable = np.ones(len(image_refs), dtype=bool)
        image_vectors = text_vectors = None
        k = max(len(texts), len(image_refs))
    kept_images = np.flatnonzero(usable)
    kept_texts = np.flatnonzero(usable[text_image])
    code = {int(i): c for c, i in enumerate(kept_images)}
    owner = np.array([code[int(text_image[t])] for t in kept_texts], dtype=np.int64)
    if image_vectors is not None and text_vectors is not None:
        first = image_vectors[kept_images] @ text_vectors[kept_texts].T
    else:
        first = np.zeros((len(kept_images), len(kept_texts)), dtype=np.float32)
    top_i2t = top_mask(first, min(k, len(kept_texts)))
    top_t2i = top_mask(first.T, min(k, len(kept_images)))
    needed = top_i2t | top_t2i.T
    rows, columns = np.nonzero(needed)
    pair_list = [
        (image_refs[kept_images[r]], texts[kept_texts[c]])
        for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
    ]
    cache = pair_cache(loaded, image_cache)
    bad: dict[ImageRef, str] = {}
    values, _ = score_pairs(loaded, pair_list, batch_size, cache, progress("pairs"), bad)
    if bad:
        if failed is None:
            raise UnreadableImageError(next(iter(bad.values())))
        failed.update(bad)
        good = np.array([image_refs[i] not in bad for i in kept_images], dtype=bool)
        # leave the failed images (and their texts) out and rank the rest
        keep_rows = np.flatnonzero(good)
        keep_columns = np.flatnonzero(good[owner])
        usable[kept_images[~good]] = False
        kept_images, kept_texts = kept_images[keep_rows], kept_texts[keep_columns]
        recode = {int(r): c for c, r in enumerate(keep_rows)}
        owner = np.array([recode[int(o)] for o in owner[keep_columns]], dtype=np.int64)
        second = np.full(needed.shape, np.nan)
        second[rows, columns] = values
        second = second[np.ix_(keep_rows, keep_columns)]
        first = first[np.ix_(keep_rows, keep_columns)]
        top_i2t = top_i2t[np.ix_(keep_rows, keep_columns)]
        top_t2i = top_t2i[np.ix_(keep_columns, keep_rows)]
    else:
        second = np.full(needed.shape, np.nan)
        second[rows, columns] = values
    positive = owner[None, :] == np.arange(len(kept_images))[:, None]
    has_text = positive.any(axis=1)
    i2t = np.zeros(len(kept_images), dtype=np.int64)
    if has_text.any():
        i2t[has_text] = rerank_ranks(
            first[has_text], second[has_text], top_i2t[has_text], positive[has_text]
        )
    t2i = rerank_ranks(first.T, second.T, top_t2i, positive.T) if len(kept_texts) else i2t[:0]
    counts = {name: scorer.counts[name] - before[name] for name in ("vision", "text", "pair")}
    return usable, i2t, t2i, counts
