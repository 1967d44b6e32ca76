"""One scoring interface for every loaded model: ``Scorer``, and ``scorer_of(loaded)``, the
only place that asks which kind of model it is.

Every evaluation scores (image or crop, text) pairs in one of a few shapes: candidate sets
(one image, its candidate texts), image pairs (Winoground, image selection: each caption
with two images), SugarCrepe++ triples (one image, two positives, one negative, and the
texts compared with each other) and image<->text retrieval over a whole gallery. A
``Scorer`` answers each shape; its two implementations compute them differently:

- ``EmbeddingScorer`` (open_clip models, transformers dual encoders): each distinct image
  (or crop) and text is embedded once through ``embed``'s caches, and a pair's score is the
  cosine of its two embeddings; retrieval ranks the whole gallery by cosine.
- ``JointScorer`` (``models.joint.PairScorer``: matching heads, VQAScore): each distinct
  pair is scored by the model, cached per pair (``joint_scoring``); retrieval ranks by the
  model's embeddings and reranks each query's best by the pair score, or scores every pair.

``score_name`` says what a score is (cosine, ITM log-odds, log-probability) and
``score_kind`` which of ``metrics.SCORE_KINDS`` that is, the ``score_kind`` of the model's
metric rows (``retrieval_score_kind`` for image<->text retrieval, which a pair scorer may
rerank by another score: BLIP's ITM match logit + ITC cosine). Text-only similarity
(SugarCrepe++'s TOT) is the cosine of two text embeddings, which a scorer without text
embeddings (VQAScore) does not have (``has_text_similarity``).

``score_candidates`` scores a benchmark's candidate sets into ``retrieval_sets.SCORES_SCHEMA``
rows, which ``retrieval_sets`` ranks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import text_key
from vlcomp.evaluate.embed import embed_image_refs, embed_texts
from vlcomp.evaluate.images import Box, EmbeddingCache, ImageRef
from vlcomp.evaluate.joint_scoring import pair_cache, retrieval_ranks, score_grid, score_pairs
from vlcomp.evaluate.metrics import (
    COSINE,
    ITM_LOG_ODDS,
    ITM_LOGIT_PLUS_COSINE,
    LOG_PROBABILITY,
    RANKS_SCHEMA,
    ranks_frame,
)
from vlcomp.evaluate.metrics import retrieval_ranks as embedding_retrieval_ranks
from vlcomp.evaluate.retrieval_sets import SCORES_SCHEMA, item_boxes
from vlcomp.models.joint import PairScorer
from vlcomp.models.parts import LoadedModel

Log = Callable[[str], None]
Progress = Callable[[str], Callable[[int, int], None] | None]  # label -> (done, total) or None

# The score kind (metrics.SCORE_KINDS) of each score a scorer names (``Scorer.score_name``,
# ``models.joint.PairScorer.score_name``).
SCORE_KIND_OF: dict[str, str] = {
    "cosine": COSINE,
    "itm_log_odds": ITM_LOG_ODDS,
    "itm_match_logit_plus_itc_cosine": ITM_LOGIT_PLUS_COSINE,
    "vqascore_mean_log_probability": LOG_PROBABILITY,
    "vqascore_log_probability": LOG_PROBABILITY,
}


def score_kind_of(score_name: str) -> str:
    """The ``metrics.SCORE_KINDS`` entry of a score name; ``ValueError`` for a score no kind
    is known for (a new pair scorer must say what its numbers are: add it to
    ``SCORE_KIND_OF``)."""
    if score_name not in SCORE_KIND_OF:
        raise ValueError(
            f"score {score_name!r} has no score kind: add it to scoring.SCORE_KIND_OF "
            f"(known: {sorted(SCORE_KIND_OF)})"
        )
    return SCORE_KIND_OF[score_name]


class Scorer(ABC):
    """What a loaded model offers the evaluation: the scores of (image, text) pairs in each
    shape an evaluation asks for. Arguments shared by every method: ``batch_size``, the
    model's ``image_cache`` and ``text_cache`` (``embed.open_model``; None: no cache),
    ``progress`` (label -> progress callback) and ``log``."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    @property
    @abstractmethod
    def score_name(self) -> str:
        """What a score is: ``cosine``, ``itm_log_odds``, ``vqascore_log_probability``."""

    @property
    def score_kind(self) -> str:
        """What the scores of ``score_sets``, ``score_image_pairs`` and ``score_triples``
        (image side) are, as ``metrics.SCORE_KINDS`` names it."""
        return score_kind_of(self.score_name)

    @property
    @abstractmethod
    def retrieval_score_kind(self) -> str:
        """What ``retrieval_ranks`` ranks by in the end, as ``metrics.SCORE_KINDS`` names it."""

    @property
    @abstractmethod
    def has_text_similarity(self) -> bool:
        """Whether ``text_vectors`` can compare texts with each other."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """What the scores depend on besides the weights (a pair scorer's pair-cache key)."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Forward passes so far by kind ("vision", "text", "pair"), where they are counted."""

    def text_vectors(
        self,
        texts: Sequence[str],
        batch_size: int,
        cache: EmbeddingCache | None,
        progress: Callable[[int, int], None] | None,
    ) -> tuple[np.ndarray, int]:
        """Normalised text embeddings (their dot products are the text-only similarities)
        and the number computed; ``ValueError`` when ``has_text_similarity`` is false."""
        if not self.has_text_similarity:
            raise ValueError(
                f"{self.loaded.spec.key} ({self.score_name}) has no text embeddings: text-only "
                "similarity is not available"
            )
        return embed_texts(self.loaded, texts, batch_size, cache, progress)

    @abstractmethod
    def score_sets(
        self,
        candidates: pl.DataFrame,
        ref_of_item: Mapping[str, ImageRef],
        batch_size: int,
        image_cache: EmbeddingCache | None,
        text_cache: EmbeddingCache | None,
        progress: Progress,
        log: Log | None,
        unreadable: dict[str, str] | None,
    ) -> tuple[pl.DataFrame, np.ndarray]:
        """The score of each candidate row (item_id, image, text) with its item's image
        (``ref_of_item``), float64, and the rows scored: rows of an image that fails to
        decode are left out and its image id recorded in ``unreadable`` (None: it raises
        ``UnreadableImageError``)."""

    @abstractmethod
    def score_image_pairs(
        self,
        items: pl.DataFrame,
        images: Mapping[str, str],
        text_columns: Sequence[str],
        batch_size: int,
        image_cache: EmbeddingCache | None,
        text_cache: EmbeddingCache | None,
        progress: Progress,
        log: Log | None,
    ) -> tuple[np.ndarray, dict[str, str]]:
        """Each item's texts (``text_columns``) scored with its image_0 and image_1:
        (items, texts, 2), float64, and the image ids that failed to decode (their items'
        rows are NaN). ``images``: image_id -> file for every image_0 / image_1."""

    @abstractmethod
    def score_triples(
        self,
        triples: pl.DataFrame,
        images: Mapping[str, str],
        boxes: Mapping[str, Box | None],
        batch_size: int,
        image_cache: EmbeddingCache | None,
        text_cache: EmbeddingCache | None,
        progress: Progress,
        log: Log | None,
    ) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
        """SugarCrepe++ ``triples`` (item_id, image, p1, p2, n): the image's (or the
        ``boxes`` crop's) scores (triples, 3) with P1, P2, N, the text-only similarities
        (triples, 3) cos(P1, P2), cos(P1, N), cos(P2, N), and the image ids that failed to
        decode (their rows are NaN). Needs ``has_text_similarity``."""

    @abstractmethod
    def retrieval_ranks(
        self,
        model: str,
        benchmark: str,
        items: pl.DataFrame,
        images: Mapping[str, str],
        batch_size: int,
        image_cache: EmbeddingCache | None,
        text_cache: EmbeddingCache | None,
        progress: Progress,
        log: Log,
    ) -> tuple[pl.DataFrame, dict[str, str]]:
        """``metrics.RANKS_SCHEMA`` ranks of an eval set's captions (``items``: item_id,
        image_id, text, sorted) and images, each against the whole gallery, and the image
        ids that failed to decode (left out with their captions)."""


def scorer_of(loaded: LoadedModel) -> Scorer:
    """The scorer of a loaded model: ``JointScorer`` for a model that scores pairs itself
    (``models.joint.PairScorer``), ``EmbeddingScorer`` for the rest."""
    if isinstance(loaded.model, PairScorer):
        return JointScorer(loaded)
    return EmbeddingScorer(loaded)


def score_candidates(
    model: str,
    loaded: LoadedModel,
    candidates: pl.DataFrame,
    images: Mapping[str, str],
    boxes: pl.DataFrame | None = None,
    batch_size: int = 256,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Progress = lambda label: None,
    log: Log | None = None,
    unreadable: dict[str, str] | None = None,
) -> pl.DataFrame:
    """The model's score of every candidate text with its item's image (or crop)
    (``Scorer.score_sets``: the cosine similarity of their embeddings, or the score
    of a model that scores pairs).

    ``images``: image_id -> file for every candidate's ``image`` (build it from the image
    index with ``images.lookup_images`` and leave out the items it cannot serve). A file that fails
    to decode raises, unless ``unreadable`` is given: then its image_id is recorded there
    (image_id -> message) and its items' rows are left out of the result."""
    for column in ("benchmark", "item_id", "image", "text", "is_positive", "family", "target"):
        if column not in candidates.columns:
            raise ValueError(f"candidates: missing column {column!r}")
    if candidates["image"].null_count():
        raise ValueError("candidates: rows without an image cannot be scored against one")
    unknown = sorted(set(candidates["image"].to_list()) - set(images))
    if unknown:
        raise ValueError(
            f"candidates: {len(unknown)} image(s) without a file, e.g. {unknown[0]!r} "
            "(exclude the items the image index cannot serve first)"
        )
    box_of = item_boxes(boxes)
    item_image = candidates.select("item_id", "image").unique(maintain_order=True)
    if item_image["item_id"].is_duplicated().any():
        raise ValueError("candidates: an item_id is paired with more than one image")
    ref_of_item = {
        item_id: ImageRef(images[name], box_of.get(item_id))
        for item_id, name in item_image.iter_rows()
    }
    candidates, similarity = scorer_of(loaded).score_sets(
        candidates, ref_of_item, batch_size, image_cache, text_cache, progress, log, unreadable
    )
    texts = candidates["text"].to_list()
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
        image="image",
        family="family",
        target="target",
        is_positive="is_positive",
        complexity=complexity,
        text_key=pl.Series([text_key(t) for t in texts], dtype=pl.String),
        similarity=pl.Series(similarity),
    ).select([pl.col(c).cast(t) for c, t in SCORES_SCHEMA.items()])


# --------------------------------------------------------------------------- embeddings


class EmbeddingScorer(Scorer):
    """Cosine similarity of the model's normalised image and text embeddings."""

    @property
    def score_name(self) -> str:
        return "cosine"

    @property
    def retrieval_score_kind(self) -> str:
        return self.score_kind

    @property
    def has_text_similarity(self) -> bool:
        return True

    def settings(self) -> dict[str, Any]:
        return {"score": self.score_name}

    def counts(self) -> dict[str, int]:
        return {}  # forward passes are not counted

    def score_sets(
        self, candidates, ref_of_item, batch_size, image_cache, text_cache, progress, log,
        unreadable,
    ):  # fmt: skip
        loaded = self.loaded
        item_image = candidates.select("item_id", "image").unique(maintain_order=True)
        unique_refs = list(dict.fromkeys(ref_of_item[i] for i in sorted(ref_of_item)))
        ref_row = {ref: i for i, ref in enumerate(unique_refs)}
        failed: dict[ImageRef, str] = {}
        image_vectors, new_images = embed_image_refs(
            loaded,
            unique_refs,
            batch_size,
            image_cache,
            progress("images"),
            failed if unreadable is not None else None,
        )
        if failed:
            assert unreadable is not None
            bad_items = set()
            for item_id, name in item_image.iter_rows():
                if ref_of_item[item_id] in failed:
                    unreadable.setdefault(name, failed[ref_of_item[item_id]])
                    bad_items.add(item_id)
            candidates = candidates.filter(~pl.col("item_id").is_in(sorted(bad_items)))
        texts = candidates["text"].to_list()
        text_vectors, new_texts = embed_texts(
            loaded, texts, batch_size, text_cache, progress("texts")
        )
        if log:
            log(
                f"embedded {new_images}/{len(unique_refs)} images or crops and "
                f"{new_texts}/{len(texts)} texts (the rest came from the cache)"
                + (f"; {len(failed)} images or crops could not be decoded" if failed else "")
            )
        rows = [ref_row[ref_of_item[i]] for i in candidates["item_id"].to_list()]
        if rows:
            similarity = np.einsum("ij,ij->i", text_vectors, image_vectors[rows]).astype(np.float64)
        else:
            similarity = np.zeros(0, dtype=np.float64)
        return candidates, similarity

    def score_image_pairs(
        self, items, images, text_columns, batch_size, image_cache, text_cache, progress, log
    ):
        ids = _pair_image_ids(items, images)
        texts = [text for column in text_columns for text in items[column].to_list()]
        refs = [ImageRef(images[i]) for i in ids]
        failed: dict[ImageRef, str] = {}
        image_vectors, new_images = embed_image_refs(
            self.loaded, refs, batch_size, image_cache, progress("images"), failed
        )
        unreadable = {i: failed[ref] for i, ref in zip(ids, refs, strict=True) if ref in failed}
        row_of = {i: k for k, i in enumerate(ids)}
        text_vectors, new_texts = embed_texts(
            self.loaded, texts, batch_size, text_cache, progress("texts")
        )
        if log:
            log(
                f"embedded {new_images}/{len(ids)} images and {new_texts}/{len(texts)} texts "
                "(the rest came from the cache)"
                + (f"; {len(unreadable)} images could not be decoded" if unreadable else "")
            )
        image_vectors = _same_width(image_vectors, text_vectors)
        rows = [[row_of[i] for i in items[column].to_list()] for column in ("image_0", "image_1")]
        pictures = np.stack([image_vectors[np.asarray(r, np.int64)] for r in rows], axis=1)
        n = items.height
        if len(text_columns) == 1:  # one caption: (items, dim) against (items, 2, dim)
            similarity = np.einsum("nd,nid->ni", text_vectors, pictures).astype(np.float64)
            return similarity[:, None, :], unreadable
        captions = np.stack(
            [text_vectors[k * n : (k + 1) * n] for k in range(len(text_columns))], axis=1
        )  # (items, texts, dim)
        similarity = np.einsum("ncd,nid->nci", captions, pictures).astype(np.float64)
        return similarity, unreadable

    def score_triples(
        self, triples, images, boxes, batch_size, image_cache, text_cache, progress, log
    ):
        item_refs, unique_refs = _triple_refs(triples, images, boxes)
        failed: dict[ImageRef, str] = {}
        image_vectors, new_images = embed_image_refs(
            self.loaded, unique_refs, batch_size, image_cache, progress("images"), failed
        )
        unreadable = _unreadable_images(triples, item_refs, failed)
        text_vectors = _triple_texts(
            self, triples, unique_refs, new_images, unreadable, batch_size, text_cache,
            progress, log,
        )  # fmt: skip
        image_vectors = _same_width(image_vectors, text_vectors)
        p1, p2, neg = _thirds(text_vectors)
        row_of = {ref: k for k, ref in enumerate(unique_refs)}
        picture = image_vectors[np.asarray([row_of[ref] for ref in item_refs], np.int64)]
        image_sims = np.stack([dot(picture, p1), dot(picture, p2), dot(picture, neg)], axis=1)
        return image_sims, _text_sims(p1, p2, neg), unreadable

    def retrieval_ranks(
        self, model, benchmark, items, images, batch_size, image_cache, text_cache, progress,
        log,
    ):  # fmt: skip
        image_ids = sorted(set(items["image_id"].to_list()))
        failed: dict[ImageRef, str] = {}
        image_vectors, new_images = embed_image_refs(
            self.loaded,
            [ImageRef(images[i]) for i in image_ids],
            batch_size,
            image_cache,
            progress("images"),
            failed,
        )
        unreadable = {
            i: failed[ImageRef(images[i])] for i in image_ids if ImageRef(images[i]) in failed
        }
        if unreadable:
            keep = [k for k, i in enumerate(image_ids) if i not in unreadable]
            image_ids, image_vectors = [image_ids[k] for k in keep], image_vectors[keep]
            items = items.filter(~pl.col("image_id").is_in(sorted(unreadable)))
            if not image_ids:  # nothing left to rank (nor any text to embed)
                return pl.DataFrame(schema=RANKS_SCHEMA), unreadable
        text_vectors, new_texts = embed_texts(
            self.loaded, items["text"].to_list(), batch_size, text_cache, progress("texts")
        )
        log(
            f"embedded {new_images}/{len(image_ids)} images and {new_texts}/{items.height} "
            "texts (the rest came from the cache)"
        )
        ranks = embedding_retrieval_ranks(
            model,
            benchmark,
            image_ids,
            image_vectors,
            items["item_id"].to_list(),
            items["image_id"].to_list(),
            text_vectors,
        )
        return ranks, unreadable


# --------------------------------------------------------------------------- pair scorers


class JointScorer(Scorer):
    """A model's own score of each (image, text) pair (``models.joint.PairScorer``), through
    ``joint_scoring`` with a per-pair cache beside the image cache (``pair_cache``)."""

    def __init__(self, loaded: LoadedModel) -> None:
        super().__init__(loaded)
        assert isinstance(loaded.model, PairScorer)
        self.model: PairScorer = loaded.model

    @property
    def score_name(self) -> str:
        return self.model.score_name

    @property
    def retrieval_score_kind(self) -> str:
        return score_kind_of(self.model.retrieval_scorer().score_name)

    @property
    def has_text_similarity(self) -> bool:
        return self.model.has_embeddings

    def settings(self) -> dict[str, Any]:
        return self.model.settings()

    def counts(self) -> dict[str, int]:
        return dict(self.model.counts)

    def score_sets(
        self, candidates, ref_of_item, batch_size, image_cache, text_cache, progress, log,
        unreadable,
    ):  # fmt: skip
        loaded = self.loaded
        pairs = [
            (ref_of_item[i], t)
            for i, t in zip(
                candidates["item_id"].to_list(), candidates["text"].to_list(), strict=True
            )
        ]
        failed: dict[ImageRef, str] = {}
        scores, computed = score_pairs(
            loaded, pairs, batch_size, pair_cache(loaded, image_cache), progress("pairs"),
            failed if unreadable is not None else None,
        )  # fmt: skip
        if failed:
            assert unreadable is not None
            bad_items = set()
            for item_id, name in candidates.select("item_id", "image").unique().iter_rows():
                if ref_of_item[item_id] in failed:
                    unreadable.setdefault(name, failed[ref_of_item[item_id]])
                    bad_items.add(item_id)
            keep = ~candidates["item_id"].is_in(sorted(bad_items)).to_numpy()
            candidates, scores = candidates.filter(keep), scores[keep]
        if log:
            log(
                f"scored {computed}/{len(pairs)} (image, text) pairs with {loaded.spec.key}'s "
                f"{self.score_name} (the rest: repeated pairs or the cache)"
                + (f"; {len(failed)} images or crops could not be decoded" if failed else "")
            )
        return candidates, scores

    def score_image_pairs(
        self, items, images, text_columns, batch_size, image_cache, text_cache, progress, log
    ):
        ids = _pair_image_ids(items, images)
        refs = [
            [ImageRef(images[a]), ImageRef(images[b])]
            for a, b in items.select("image_0", "image_1").iter_rows()
        ]
        scores, failed = score_grid(
            self.loaded, refs, items.select(text_columns).rows(), batch_size, image_cache,
            progress, log,
        )  # fmt: skip
        unreadable = {i: failed[ImageRef(images[i])] for i in ids if ImageRef(images[i]) in failed}
        return scores, unreadable

    def score_triples(
        self, triples, images, boxes, batch_size, image_cache, text_cache, progress, log
    ):
        item_refs, unique_refs = _triple_refs(triples, images, boxes)
        columns = triples.select("p1", "p2", "n").rows()
        grid, failed = score_grid(
            self.loaded, [[ref] for ref in item_refs], columns, batch_size, image_cache,
            progress, log,
        )  # fmt: skip
        unreadable = _unreadable_images(triples, item_refs, failed)
        text_vectors = _triple_texts(
            self, triples, unique_refs, 0, unreadable, batch_size, text_cache, progress, log
        )
        return grid[:, :, 0], _text_sims(*_thirds(text_vectors)), unreadable

    def retrieval_ranks(
        self, model, benchmark, items, images, batch_size, image_cache, text_cache, progress,
        log,
    ):  # fmt: skip
        image_ids = sorted(set(items["image_id"].to_list()))
        code = {image_id: k for k, image_id in enumerate(image_ids)}
        refs = [ImageRef(images[i]) for i in image_ids]
        failed: dict[ImageRef, str] = {}
        usable, i2t, t2i, counts = retrieval_ranks(
            self.loaded, refs, items["text"].to_list(),
            np.array([code[i] for i in items["image_id"]]), batch_size, image_cache, text_cache,
            progress, failed,
        )  # fmt: skip
        rerank_score = self.model.retrieval_scorer().score_name
        how = (
            f"ITC ranking, top {self.model.rerank_top_k} reranked by {rerank_score}"
            if self.model.has_embeddings
            else f"every pair scored ({rerank_score})"
        )
        log(
            f"{how}: {counts['pair']} pair passes, {counts['vision']} image and "
            f"{counts['text']} text passes for {len(image_ids)} images x {items.height} texts "
            "(the rest came from the caches)"
        )
        unreadable = {
            i: failed[ref] for i, ref in zip(image_ids, refs, strict=True) if ref in failed
        }
        kept = items.filter(~items["image_id"].is_in(sorted(unreadable)))
        ranks = ranks_frame(
            model, benchmark, [i for i, ok in zip(image_ids, usable, strict=True) if ok],
            kept["item_id"].to_list(), kept["image_id"].to_list(), i2t, t2i,
        )  # fmt: skip
        return ranks, unreadable


# --------------------------------------------------------------------------- shared pieces


def _pair_image_ids(items: pl.DataFrame, images: Mapping[str, str]) -> list[str]:
    """The distinct image_0 / image_1 ids of ``items``, sorted; each must have a file."""
    ids = sorted(set(items["image_0"].to_list()) | set(items["image_1"].to_list()))
    unknown = [i for i in ids if i not in images]
    if unknown:
        raise ValueError(f"two-image: {len(unknown)} image(s) without a file, e.g. {unknown[0]!r}")
    return ids


def _triple_refs(
    triples: pl.DataFrame, images: Mapping[str, str], boxes: Mapping[str, Box | None]
) -> tuple[list[ImageRef], list[ImageRef]]:
    """Each triple's image (or crop), and the distinct ones in order."""
    item_refs = [
        ImageRef(images[image], boxes.get(item))
        for item, image in triples.select("item_id", "image").iter_rows()
    ]
    return item_refs, list(dict.fromkeys(item_refs))


def _unreadable_images(
    triples: pl.DataFrame, item_refs: Sequence[ImageRef], failed: Mapping[ImageRef, str]
) -> dict[str, str]:
    """image id -> message for the triples whose image (or crop) failed to decode."""
    unreadable: dict[str, str] = {}
    for ref, image in zip(item_refs, triples["image"].to_list(), strict=True):
        if ref in failed:
            unreadable.setdefault(image, failed[ref])
    return unreadable


def _triple_texts(
    scorer: Scorer,
    triples: pl.DataFrame,
    unique_refs: Sequence[ImageRef],
    new_images: int,
    unreadable: Mapping[str, str],
    batch_size: int,
    text_cache: EmbeddingCache | None,
    progress: Progress,
    log: Log | None,
) -> np.ndarray:
    """The vectors of the triples' texts (every P1, every P2, every N), logged with the
    ``new_images`` embedded of ``unique_refs``."""
    texts = [*triples["p1"].to_list(), *triples["p2"].to_list(), *triples["n"].to_list()]
    text_vectors, new_texts = scorer.text_vectors(texts, batch_size, text_cache, progress("texts"))
    if log:
        log(
            f"embedded {new_images}/{len(unique_refs)} images or crops and "
            f"{new_texts}/{len(texts)} texts (the rest came from the cache)"
            + (f"; {len(unreadable)} images could not be decoded" if unreadable else "")
        )
    return text_vectors


def _thirds(text_vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P1, P2 and N vectors of ``_triple_texts``."""
    n = len(text_vectors) // 3
    return text_vectors[:n], text_vectors[n : 2 * n], text_vectors[2 * n :]


def _text_sims(p1: np.ndarray, p2: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """(triples, 3): cos(P1, P2), cos(P1, N), cos(P2, N)."""
    return np.stack([dot(p1, p2), dot(p1, neg), dot(p2, neg)], axis=1)


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products (cosine similarities of normalised vectors), float64."""
    return np.einsum("nd,nd->n", a, b).astype(np.float64)


def _same_width(image_vectors: np.ndarray, text_vectors: np.ndarray) -> np.ndarray:
    """NaN rows of the text width when no image could be embedded (width 0)."""
    width = text_vectors.shape[-1] if text_vectors.ndim == 2 else 0
    if image_vectors.ndim == 2 and image_vectors.shape[1] == width:
        return image_vectors
    return np.full((len(image_vectors), width), np.nan, dtype=np.float32)
