"""Models that score an (image, text) pair jointly (``models.<key>.transformers.kind``
``matching_head`` or ``vqascore``), scored into the same prediction and metric tables as
embedding models.

**Matching heads** (``MatchingHead``; BLIP's ``BlipForImageTextRetrieval``): the vision
tower runs once per image (or crop); each (image, text) pair is one pass of the text encoder
cross-attending to the image tokens, and the ITM head's two logits give the score
``logit(match) - logit(no match)``: the log-odds of the match probability
``softmax(logits)[1]`` that BLIP reports, the same order without its saturation at 1.0 in
float32 (which would turn clear wins into ties). The model's ITC projections give
embeddings (``encode_image`` / ``encode_text``, normalised by the embedding code): image-text
retrieval ranks every query's gallery by ITC and reranks its ``rerank_top_k`` best by ITM
(BLIP's retrieval evaluation; BLIP adds the ITC similarity to the ITM logit there, here the
reranked order is ITM's alone, so that k = all is exhaustive ITM), and SugarCrepe++'s
text-only comparison uses the ITC text embeddings. The ITM pass sees the text as the
processor tokenises it (``[CLS] ... [SEP]``), as ``BlipForImageTextRetrieval.forward`` does.

**VQAScore** (``VQAScorer``; Lin et al. 2024, t2v_metrics; any model
``AutoModelForImageTextToText`` loads with a processor that has an image token, e.g.
``LlavaForConditionalGeneration``): the score is ``log P(answer | image, prompt)``, the
teacher-forced sum of the answer tokens' log-probabilities after the prompt (``prompt``
around ``question`` around the text; VQAScore = exp(score)). Each pair is one forward pass
of the whole model (vision tower and language model over the image tokens and the prompt);
nothing is shared between pairs. There are no embeddings: retrieval scores every (image,
text) pair, and SugarCrepe++'s text-only comparison cannot be computed.

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
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from vlcomp.evaluate import hf_models
from vlcomp.evaluate.embed import (
    EmbeddingCache,
    ImageRef,
    UnreadableImageError,
    crop,
    crop_key,
    embed_image_refs,
    embed_texts,
    image_key,
    open_rgb,
    text_key,
)
from vlcomp.evaluate.hf_models import TransformersSource
from vlcomp.evaluate.models import (
    LoadedModel,
    LoadedParts,
    ModelUnavailableError,
    ProcessorTokenizer,
    ProcessorTransform,
)

Progress = Callable[[int, int], None] | None

# config.json "architectures" a matching_head may name.
MATCHING_ARCHITECTURES = ("BlipForImageTextRetrieval",)


class PairScorer(torch.nn.Module):
    """A model that scores (image, text) pairs. ``has_embeddings``: it also embeds each side
    (``encode_image`` / ``encode_text``), for a first retrieval stage and text-only
    comparisons. ``counts``: forward passes so far, by kind ("vision": unimodal image
    passes, "text": unimodal text passes, "pair": fused or full passes)."""

    has_embeddings = False
    score_name = ""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def settings(self) -> dict[str, Any]:
        """What the score depends on besides the weights (in the cache key)."""
        return {"score": self.score_name}

    def score_images(
        self, loaded: LoadedModel, images: Sequence[Image.Image], pairs: Sequence[tuple[int, str]],
        batch_size: int,
    ) -> np.ndarray:  # fmt: skip
        """float32 scores of ``pairs`` (index into ``images``, text)."""
        raise NotImplementedError

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} has no image embeddings")

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} has no text embeddings")


def is_pair_scorer(loaded: LoadedModel) -> bool:
    return isinstance(loaded.model, PairScorer)


# --------------------------------------------------------------------------- matching heads


class MatchingHead(PairScorer):
    """BLIP ITM (``BlipForImageTextRetrieval``): ITC embeddings and ITM log-odds."""

    has_embeddings = True
    score_name = "itm_log_odds"

    def __init__(self, model: torch.nn.Module, tokenizer: Any, context: int, top_k: int) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.context = int(context)
        self.rerank_top_k = int(top_k)
        self.pad_id = tokenizer.pad_token_id

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "context": self.context}

    def image_states(self, pixels: torch.Tensor) -> torch.Tensor:
        self.counts["vision"] += len(pixels)
        return self.model.vision_model(pixel_values=pixels).last_hidden_state

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.vision_proj(self.image_states(pixels)[:, 0, :])

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != self.pad_id).long()
        width = int(mask.sum(dim=1).max()) if ids.numel() else 0
        ids, mask = ids[:, :width], mask[:, :width]  # padding to the context changes nothing
        self.counts["text"] += len(ids)
        states = self.model.text_encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.model.text_proj(states[:, 0, :])

    def match(self, states: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        """ITM log-odds of each text with the image tokens ``states`` (one row per text)."""
        tokens = self.tokenizer(
            list(texts), padding="longest", truncation=True, max_length=self.context,
            return_tensors="pt",
        )  # fmt: skip
        device = states.device
        self.counts["pair"] += len(texts)
        hidden = self.model.text_encoder(
            input_ids=tokens["input_ids"].to(device),
            attention_mask=tokens["attention_mask"].to(device),
            encoder_hidden_states=states,
            encoder_attention_mask=torch.ones(states.shape[:-1], dtype=torch.long, device=device),
        ).last_hidden_state
        logits = self.model.itm_head(hidden[:, 0, :]).float()
        return logits[:, 1] - logits[:, 0]

    @torch.inference_mode()
    def score_images(self, loaded, images, pairs, batch_size):
        pixels = torch.stack([loaded.preprocess(image) for image in images]).to(loaded.device)
        with loaded.autocast():
            states = torch.cat(
                [
                    self.image_states(pixels[start : start + batch_size])
                    for start in range(0, len(pixels), batch_size)
                ]
            )
            out = []
            for start in range(0, len(pairs), batch_size):
                chunk = pairs[start : start + batch_size]
                rows = torch.tensor([i for i, _ in chunk], device=states.device)
                out.append(self.match(states[rows], [t for _, t in chunk]))
        return torch.cat(out).float().cpu().numpy() if out else np.zeros(0, np.float32)


def load_matching_head(
    key: str, source: TransformersSource, directory: Path, device: torch.device
) -> LoadedParts:
    import transformers

    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    names = config.get("architectures") or []
    if not names or names[0] not in MATCHING_ARCHITECTURES:
        raise ModelUnavailableError(
            f"models.{key}: {directory} holds {', '.join(names) or 'no named architecture'}; "
            f"kind matching_head loads {', '.join(MATCHING_ARCHITECTURES)} (config.json "
            "'architectures')"
        )
    try:
        model = getattr(transformers, names[0]).from_pretrained(
            directory, dtype=torch.float32, local_files_only=True
        )
        processor = transformers.AutoProcessor.from_pretrained(directory, local_files_only=True)
    except Exception as error:  # transformers raises many types; name the entry in every case
        raise ModelUnavailableError(f"models.{key}: could not load {directory}: {error}") from error
    tokenizer = processor.tokenizer
    context = _context(directory, tokenizer)
    model.to(device).eval()
    top_k = int(source.option("rerank_top_k"))
    scorer = MatchingHead(model, tokenizer, context, top_k).eval()
    return LoadedParts(
        model=scorer,
        preprocess=ProcessorTransform(processor.image_processor),
        tokenizer=ProcessorTokenizer(tokenizer, context),
        weights_sha256=hf_models.weights_sha256(hf_models.weight_files(key, directory)),
        details={
            "joint_score": "ITM log-odds logit(match) - logit(no match) (match probability = "
            "sigmoid of it)",
            "joint_cost": "per (image, text) pair one fused text-encoder pass; one vision pass "
            "per image; retrieval: ITC ranking, top k reranked by ITM",
            "rerank_top_k": str(top_k),
            "architecture": names[0],
        },
    )


def _context(directory: Path, tokenizer: Any) -> int:
    context = hf_models.transformers_context_length(str(directory))
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit < context else context


# --------------------------------------------------------------------------- VQAScore


class VQAScorer(PairScorer):
    """log P(answer | image, prompt) of a vision-language generation model."""

    score_name = "vqascore_log_probability"

    def __init__(
        self, model: torch.nn.Module, processor: Any, question: str, prompt: str, answer: str
    ) -> None:
        super().__init__()
        self.model = model
        self.processor = processor
        self.question, self.prompt, self.answer = question, prompt, answer
        self.image_token = str(processor.image_token)
        self.answer_ids, self.trailing = self._answer_tokens()

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "question": self.question,
            "prompt": self.prompt,
            "answer": self.answer,
            "answer_ids": self.answer_ids,
        }

    def text_of(self, text: str) -> str:
        """The model's input text for ``text``: prompt, question, then the answer."""
        question = self.question.replace("{text}", text)
        prompt = self.prompt.replace("{image}", self.image_token).replace("{question}", question)
        return f"{prompt} {self.answer}"

    def _answer_tokens(self) -> tuple[list[int], int]:
        """The answer's token ids after the prompt, and how many special tokens the
        tokenizer puts after it (an end token, for some)."""
        tokenizer = self.processor.tokenizer
        full = self.text_of("a photo")
        prompt_ids = tokenizer(full[: -len(self.answer) - 1])["input_ids"]
        full_ids = tokenizer(full)["input_ids"]
        same = 0
        while same < min(len(prompt_ids), len(full_ids)) and prompt_ids[same] == full_ids[same]:
            same += 1
        trailing = len(prompt_ids) - same  # tokens after the prompt in both (special ones)
        answer = full_ids[same : len(full_ids) - trailing]
        if not answer or prompt_ids[same:] != full_ids[len(full_ids) - trailing :]:
            raise ValueError(
                f"vqascore: the answer {self.answer!r} does not tokenise apart from the prompt "
                f"{self.prompt!r} (prompt ids end {prompt_ids[-4:]}, with the answer "
                f"{full_ids[-6:]}); change transformers.prompt or transformers.answer"
            )
        return [int(i) for i in answer], trailing

    def log_probabilities(
        self, images: Sequence[Image.Image], texts: Sequence[str]
    ) -> torch.Tensor:
        """log P(answer | image, prompt(text)) for each (image, text), one batch."""
        inputs = self.processor(
            images=list(images), text=[self.text_of(t) for t in texts], padding=True,
            return_tensors="pt",
        )  # fmt: skip
        device = next(self.model.parameters()).device
        inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        n_answer = len(self.answer_ids)
        ends = mask.sum(dim=1) - self.trailing  # one past each row's answer (right padding)
        first = ends - n_answer  # the answer's first position
        expected = torch.tensor(self.answer_ids, device=device)
        columns = first[:, None] + torch.arange(n_answer, device=device)[None, :]
        found = ids.gather(1, columns)
        if not bool((found == expected).all()):
            bad = int((found != expected).any(dim=1).nonzero()[0])
            raise ValueError(
                f"vqascore: the answer tokens {self.answer_ids} are not at the end of the "
                f"input of text {texts[bad]!r} (found {found[bad].tolist()})"
            )
        keep = ids.shape[1] - int(first.min()) + 1  # logits from the position before
        self.counts["pair"] += len(texts)
        logits = self.model(**inputs, logits_to_keep=keep).logits.float()
        offset = ids.shape[1] - keep
        log_p = torch.log_softmax(logits.gather(1, _expand(columns - 1 - offset, logits)), -1)
        return log_p.gather(2, found[:, :, None])[:, :, 0].sum(dim=1)

    @torch.inference_mode()
    def score_images(self, loaded, images, pairs, batch_size):
        out = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            with loaded.autocast():
                out.append(self.log_probabilities([images[i] for i, _ in chunk],
                                                  [t for _, t in chunk]))  # fmt: skip
        return torch.cat(out).float().cpu().numpy() if out else np.zeros(0, np.float32)


def _expand(positions: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """(rows, n) positions as gather indices over (rows, length, vocab) logits."""
    return positions[:, :, None].expand(-1, -1, logits.shape[-1])


def load_vqascore(
    key: str, source: TransformersSource, directory: Path, device: torch.device
) -> LoadedParts:
    import transformers

    try:
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            directory, dtype=torch.float32, local_files_only=True
        )
        processor = transformers.AutoProcessor.from_pretrained(directory, local_files_only=True)
    except Exception as error:  # transformers raises many types; name the entry in every case
        raise ModelUnavailableError(f"models.{key}: could not load {directory}: {error}") from error
    if not getattr(processor, "image_token", None):
        raise ModelUnavailableError(
            f"models.{key}: the processor of {directory} ({type(processor).__name__}) has no "
            "image token; kind vqascore needs a vision-language chat model's processor"
        )
    processor.tokenizer.padding_side = "right"  # the answer ends each row's real tokens
    options = source.resolved_options()
    try:
        scorer = VQAScorer(model, processor, options["question"], options["prompt"],
                           options["answer"]).eval()  # fmt: skip
    except ValueError as error:
        raise ModelUnavailableError(f"models.{key}.transformers: {error}") from error
    model.to(device).eval()
    tokenizer = processor.tokenizer
    answer_tokens = tokenizer.convert_ids_to_tokens(scorer.answer_ids)
    return LoadedParts(
        model=scorer,
        preprocess=ProcessorTransform(processor.image_processor),
        tokenizer=ProcessorTokenizer(tokenizer, _context(directory, tokenizer)),
        weights_sha256=hf_models.weights_sha256(hf_models.weight_files(key, directory)),
        details={
            "joint_score": "log P(answer | image, prompt), teacher-forced sum over the answer "
            "tokens (VQAScore = exp of it)",
            "joint_cost": "per (image, text) pair one full forward pass (vision tower and "
            "language model)",
            "vqascore_question": options["question"],
            "vqascore_prompt": options["prompt"],
            "vqascore_answer": options["answer"],
            "vqascore_answer_token_ids": json.dumps(scorer.answer_ids),
            "vqascore_answer_tokens": json.dumps(answer_tokens),
            "architecture": type(model).__name__,
        },
    )


LOADERS: dict[str, Callable[[str, TransformersSource, Path, torch.device], LoadedParts]] = {
    hf_models.MATCHING_HEAD: load_matching_head,
    hf_models.VQASCORE: load_vqascore,
}


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


def score_grid(
    loaded: LoadedModel,
    refs: Sequence[Sequence[ImageRef]],
    texts: Sequence[Sequence[str]],
    batch_size: int = 64,
    image_cache: EmbeddingCache | None = None,
    progress: Callable[[str], Progress] = lambda label: None,
    log: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, dict[ImageRef, str]]:
    """Per item, every one of its texts scored with every one of its images (or crops):
    shape (items, texts, images), float64, and the refs that failed to decode (their
    items' scores are NaN). ``refs`` and ``texts``: one list per item, each of one length."""
    n_texts = len(texts[0]) if texts else 0
    n_images = len(refs[0]) if refs else 0
    pairs = [
        (ref, text)
        for item_refs, item_texts in zip(refs, texts, strict=True)
        for text in item_texts
        for ref in item_refs
    ]
    failed: dict[ImageRef, str] = {}
    scores, computed = score_pairs(
        loaded, pairs, batch_size, pair_cache(loaded, image_cache), progress("pairs"), failed
    )
    if log:
        log(
            f"scored {computed}/{len(pairs)} (image, text) pairs with {loaded.spec.key}'s "
            f"{loaded.model.score_name} (the rest: repeated pairs or the cache)"
            + (f"; {len(failed)} images could not be decoded" if failed else "")
        )
    return scores.reshape(len(refs), n_texts, n_images), failed


def pair_retrieval_ranks(
    model: str,
    benchmark: str,
    loaded: LoadedModel,
    items: Any,
    images: dict[str, str],
    batch_size: int,
    image_cache: EmbeddingCache | None,
    text_cache: EmbeddingCache | None,
    progress: Callable[[str], Progress],
    log: Callable[[str], None],
) -> tuple[Any, dict[str, str]]:
    """``metrics.RANKS_SCHEMA`` ranks of an eval set's captions (``items``: item_id,
    image_id, text, sorted) and images with a pair scorer (``retrieval_ranks``), and the
    image ids that failed to decode (left out with their captions)."""
    from vlcomp.evaluate.metrics import ranks_frame

    image_ids = sorted(set(items["image_id"].to_list()))
    code = {image_id: k for k, image_id in enumerate(image_ids)}
    refs = [ImageRef(images[i]) for i in image_ids]
    failed: dict[ImageRef, str] = {}
    usable, i2t, t2i, counts = retrieval_ranks(
        loaded, refs, items["text"].to_list(), np.array([code[i] for i in items["image_id"]]),
        batch_size, image_cache, text_cache, progress, failed,
    )  # fmt: skip
    scorer = loaded.model
    how = (
        f"ITC ranking, top {scorer.rerank_top_k} reranked by {scorer.score_name}"
        if scorer.has_embeddings
        else f"every pair scored ({scorer.score_name})"
    )
    log(
        f"{how}: {counts['pair']} pair passes, {counts['vision']} image and {counts['text']} "
        f"text passes for {len(image_ids)} images x {items.height} texts (the rest came "
        "from the caches)"
    )
    unreadable = {i: failed[ref] for i, ref in zip(image_ids, refs, strict=True) if ref in failed}
    kept = items.filter(~items["image_id"].is_in(sorted(unreadable)))
    ranks = ranks_frame(
        model, benchmark, [i for i, ok in zip(image_ids, usable, strict=True) if ok],
        kept["item_id"].to_list(), kept["image_id"].to_list(), i2t, t2i,
    )  # fmt: skip
    return ranks, unreadable
