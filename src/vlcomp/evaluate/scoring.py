"""One scoring interface for every loaded model: ``Scorer``, and ``scorer_of(loaded)``, the
only place that asks which kind of model it is.

Every selection task (candidate sets, two-image items, image selection, SugarCrepe++
triples) comes as one item shape, ``selection.Selection`` (instances x texts x images), and
is scored by one method, ``Scorer.score_selection``; image<->text retrieval over a whole
gallery is the other question a scorer answers. Its two implementations compute them
differently:

- ``EmbeddingScorer`` (open_clip models, transformers dual encoders): each distinct image
  (or crop) and text is embedded once through ``embed``'s caches, and a cell's score is the
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
from vlcomp.evaluate.images import EmbeddingCache, ImageRef
from vlcomp.evaluate.joint_scoring import pair_cache, retrieval_ranks, score_pairs
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
from vlcomp.evaluate.selection import Selection, candidate_selection, row_dots, scatter
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
    """What a loaded model offers the evaluation: the scores of every selection task
    (``score_selection``), text embeddings (``text_vectors``) and gallery retrieval
    (``retrieval_ranks``). Arguments shared by every method: ``batch_size``, the model's
    ``image_cache`` and ``text_cache`` (``embed.open_model``; None: no cache), ``progress``
    (label -> progress callback) and ``log``."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    @property
    @abstractmethod
    def score_name(self) -> str:
        """What a score is: ``cosine``, ``itm_log_odds``, ``vqascore_log_probability``."""

    @property
    def score_kind(self) -> str:
        """What the scores of ``score_selection`` are, as ``metrics.SCORE_KINDS`` names it."""
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
    def score_selection(
        self,
        selection: Selection,
        batch_size: int,
        image_cache: EmbeddingCache | None,
        text_cache: EmbeddingCache | None,
        progress: Progress,
        log: Log | None,
        failed: dict[ImageRef, str] | None,
    ) -> np.ndarray:
        """The score of every text of each instance with every one of its images: shape
        ``selection.shape`` (instances, texts, images), float64, NaN at padding and at every
        cell of an instance an image of which failed to decode. Such images are recorded in
        ``failed`` (ref -> message); with ``failed`` None an unreadable image raises
        ``UnreadableImageError``."""

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
    (``Scorer.score_selection``: the cosine similarity of their embeddings, or the score
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
    selection, position = candidate_selection(candidates, ref_of_item)
    failed: dict[ImageRef, str] = {}
    scores = scorer_of(loaded).score_selection(
        selection, batch_size, image_cache, text_cache, progress, log,
        failed if unreadable is not None else None,
    )  # fmt: skip
    similarity = np.array([scores[n, c, 0] for n, c in position], dtype=np.float64)
    if failed:
        assert unreadable is not None
        for image, message in selection.unreadable(failed).items():
            unreadable.setdefault(image, message)
        usable = selection.usable(failed)
        keep = np.array([usable[n] for n, _ in position], dtype=bool)
        candidates, similarity = candidates.filter(pl.Series(keep)), similarity[keep]
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

    def score_selection(
        self, selection, batch_size, image_cache, text_cache, progress, log, failed
    ):
        refs = selection.distinct_refs()
        bad: dict[ImageRef, str] = {}
        image_vectors, new_images = embed_image_refs(
            self.loaded, refs, batch_size, image_cache, progress("images"),
            bad if failed is not None else None,
        )  # fmt: skip
        if failed is not None:
            failed.update(bad)
        cells = selection.cells(selection.usable(bad))
        texts = list(dict.fromkeys(selection.texts[n][c] for n, c, _ in cells))
        text_vectors, new_texts = embed_texts(
            self.loaded, texts, batch_size, text_cache, progress("texts")
        )
        if log:
            log(
                f"embedded {new_images}/{len(refs)} images or crops and "
                f"{new_texts}/{len(texts)} texts (the rest came from the cache)"
                + (f"; {len(bad)} images or crops could not be decoded" if bad else "")
            )
        if not cells:
            return scatter(selection.shape, cells, np.zeros(0))
        ref_row = {ref: k for k, ref in enumerate(refs)}
        text_row = {text: k for k, text in enumerate(texts)}
        image_rows = [ref_row[selection.refs[n][i]] for n, _, i in cells]
        text_rows = [text_row[selection.texts[n][c]] for n, c, _ in cells]
        values = row_dots(text_vectors[text_rows], image_vectors[image_rows])
        return scatter(selection.shape, cells, values)

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

    def score_selection(
        self, selection, batch_size, image_cache, text_cache, progress, log, failed
    ):
        loaded = self.loaded
        cells = selection.cells([True] * selection.shape[0])
        pairs = [(selection.refs[n][i], selection.texts[n][c]) for n, c, i in cells]
        bad: dict[ImageRef, str] = {}
        scores, computed = score_pairs(
            loaded, pairs, batch_size, pair_cache(loaded, image_cache), progress("pairs"),
            bad if failed is not None else None,
        )  # fmt: skip
        if failed is not None:
            failed.update(bad)
        if log:
            log(
                f"scored {computed}/{len(pairs)} (image, text) pairs with {loaded.spec.key}'s "
                f"{self.score_name} (the rest: repeated pairs or the cache)"
                + (f"; {len(bad)} images or crops could not be decoded" if bad else "")
            )
        out = scatter(selection.shape, cells, scores)
        out[~np.asarray(selection.usable(bad), dtype=bool)] = np.nan
        return out

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
