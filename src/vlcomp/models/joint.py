"""Models that score an (image, text) pair jointly (``models.<key>.transformers.kind``
``matching_head`` or ``vqascore``), scored into the same prediction and metric tables as
embedding models. Each kind has a ``definition`` (``hf_models.DEFINITIONS``): whose scoring
it reproduces; the definition is in the model's fingerprint and in its scorer's settings, so
no cached embedding or pair score crosses definitions.

**Matching heads** (``MatchingHead``; BLIP's ``BlipForImageTextRetrieval``): the vision
tower runs once per image (or crop); each (image, text) pair is one pass of the text encoder
cross-attending to the image tokens, and the ITM head's two logits give the score
``logit(match) - logit(no match)``: the log-odds of the match probability
``softmax(logits)[1]`` that BLIP reports, the same order without its saturation at 1.0 in
float32 (which would turn clear wins into ties). The model's ITC projections give
embeddings (``encode_image`` / ``encode_text``, normalised by the embedding code), which
image-text retrieval ranks every query's gallery by before it reranks the ``rerank_top_k``
best by the definition's retrieval score (``for_retrieval``), and SugarCrepe++'s text-only
comparison uses. Benchmarks score pairs by the ITM log-odds under both definitions.

- ``salesforce`` (default): BLIP's own code (salesforce/BLIP, ``train_retrieval.py``
  ``evaluation`` and ``models/blip_retrieval.py``): each caption through BLIP's
  ``pre_caption`` (lower case, ``.!"()*#:;~`` as spaces, 30 words) and at most 35 tokens;
  the ITM pass starts with the [ENC] token where the processor puts [CLS] (ITC keeps [CLS]);
  retrieval reranks each query's top k by ITC by the ITM match logit + the ITC cosine, k =
  256 (BLIP's COCO config; its Flickr30k config has 128). This is the protocol of BLIP's
  published COCO (k = 256) and Flickr30k (k = 128) retrieval recalls of its retrieval
  checkpoints (not checked here against those weights, which this machine lacks).
- ``transformers``: ``BlipForImageTextRetrieval.forward``: the processor's ``[CLS] ...
  [SEP]`` for ITM and ITC, the reranked order ITM's alone (k = all is exhaustive ITM), k =
  16: the numbers of code that calls transformers' BLIP, none of BLIP's papers.

**VQAScore** (``VQAScorer``; Lin et al. 2024; any model ``AutoModelForImageTextToText``
loads with a processor that has an image token, e.g. ``LlavaForConditionalGeneration``):
``prompt`` around ``question`` around the text, then the answer teacher-forced. Each pair is
one forward pass of the whole model (vision tower and language model over the image tokens
and the prompt); nothing is shared between pairs. There are no embeddings: retrieval scores
every (image, text) pair, and SugarCrepe++'s text-only comparison cannot be computed.

- ``t2v_metrics`` (default): t2v_metrics' LLaVA-1.5 wrapper (linzhiqiu/t2v_metrics,
  ``t2v_metrics/models/vqascore_models/llava_model.py`` as of commit 10d549b, the last with
  LLaVA-1.5): LLaVA's system message before ``USER:``, the image padded to a square of the
  image processor's mean colour (``image_aspect_ratio: pad``), the text tokenised in pieces
  around the image token as LLaVA's ``tokenizer_image_token`` does, the answer followed by
  the tokenizer's end token (``Yes</s>``); the score is the mean log-probability of those
  tokens, VQAScore = exp(score) (kept as a log so that near-certain answers do not tie at
  1.0 in float32). This is the protocol of the VQAScore paper's LLaVA-1.5 numbers
  (t2v_metrics runs it under bf16 autocast: ``evaluate.precision: bf16`` to match); not
  checked here against the real llava-1.5 weights and tokenizer, which this machine lacks.
- ``legacy_sum``: this project's earlier score: no system message, no padding, the whole
  text tokenised by the processor, the sum of the answer's log-probabilities without an end
  token."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from vlcomp.models import hf_models
from vlcomp.models.catalogue import ModelUnavailableError
from vlcomp.models.hf_models import (
    LEGACY_SUM,
    SALESFORCE,
    T2V_METRICS,
    TransformersSource,
)
from vlcomp.models.parts import LoadedModel, LoadedParts, ProcessorTokenizer, ProcessorTransform

# config.json "architectures" a matching_head may name.
MATCHING_ARCHITECTURES = ("BlipForImageTextRetrieval",)
# BLIP's retrieval evaluation: pre_caption's max_words for its COCO / Flickr30k test sets,
# and the tokenizer's max_length.
BLIP_CAPTION_WORDS = 30
BLIP_TEXT_TOKENS = 35
BLIP_ENC_TOKEN = "[ENC]"


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

    def retrieval_scorer(self) -> PairScorer:
        """The scorer whose pair score image-text retrieval reranks by (itself, unless the
        model's retrieval evaluation uses another score)."""
        return self

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} has no image embeddings")

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} has no text embeddings")


def for_retrieval(loaded: LoadedModel) -> LoadedModel:
    """``loaded`` with its pair scorer's ``retrieval_scorer`` (``loaded`` itself when that is
    the same scorer; calling it twice changes nothing)."""
    scorer = loaded.model
    assert isinstance(scorer, PairScorer)
    view = scorer.retrieval_scorer()
    return loaded if view is scorer else dataclasses.replace(loaded, model=view)


# --------------------------------------------------------------------------- matching heads


def pre_caption(caption: str, max_words: int = BLIP_CAPTION_WORDS) -> str:
    """A caption as BLIP's datasets hand it to the model (salesforce/BLIP ``data/utils.py``
    ``pre_caption``): lower case, each of ``.!"()*#:;~`` a space, runs of two or more
    whitespace characters one space, no spaces at the ends, the first ``max_words`` words."""
    text = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    text = re.sub(r"\s{2,}", " ", text).rstrip("\n").strip(" ")
    words = text.split(" ")
    return " ".join(words[:max_words]) if len(words) > max_words else text


class CaptionTokenizer(ProcessorTokenizer):
    """``ProcessorTokenizer`` of captions after BLIP's ``pre_caption`` (the ITC text side of
    the ``salesforce`` definition)."""

    def __call__(self, texts: str | Sequence[str]) -> torch.Tensor:
        texts = [texts] if isinstance(texts, str) else list(texts)
        return super().__call__([pre_caption(t) for t in texts])


class MatchingHead(PairScorer):
    """BLIP ITM (``BlipForImageTextRetrieval``): ITC embeddings and ITM log-odds, per
    ``definition`` (``salesforce``: captions through ``pre_caption``, the ITM pass starting
    with ``enc_token_id``; ``transformers``: the processor's tokens as they are)."""

    has_embeddings = True
    score_name = "itm_log_odds"

    def __init__(
        self, model: torch.nn.Module, tokenizer: Any, context: int, top_k: int,
        definition: str = SALESFORCE, enc_token_id: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.context = int(context)
        self.rerank_top_k = int(top_k)
        self.definition = definition
        self.enc_token_id = enc_token_id
        self.pad_id = tokenizer.pad_token_id

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "context": self.context, "definition": self.definition}

    def retrieval_scorer(self) -> PairScorer:
        return BlipRetrievalScore(self) if self.definition == SALESFORCE else self

    def caption(self, text: str) -> str:
        return pre_caption(text) if self.definition == SALESFORCE else text

    def image_states(self, pixels: torch.Tensor) -> torch.Tensor:
        self.counts["vision"] += len(pixels)
        return self.model.vision_model(pixel_values=pixels).last_hidden_state

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model.vision_proj(self.image_states(pixels)[:, 0, :])

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != self.pad_id).long()
        width = int(mask.sum(dim=1).max()) if ids.numel() else 0
        ids, mask = ids[:, :width], mask[:, :width]  # padding to the context changes nothing
        return self.text_embedding(ids, mask)

    def text_embedding(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ITC text embedding (unnormalised): the text encoder alone, [CLS] projected."""
        self.counts["text"] += len(ids)
        states = self.model.text_encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.model.text_proj(states[:, 0, :])

    def tokens(self, texts: Sequence[str], device: torch.device) -> tuple[torch.Tensor, ...]:
        """(ids, mask) of ``texts`` as the ITC pass reads them: [CLS] first."""
        tokens = self.tokenizer(
            [self.caption(t) for t in texts], padding="longest", truncation=True,
            max_length=self.context, return_tensors="pt",
        )  # fmt: skip
        return tokens["input_ids"].to(device), tokens["attention_mask"].to(device)

    def itm_logits(
        self, states: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """The ITM head's (no match, match) logits of each row of ``ids`` with the image
        tokens ``states``; the first token [ENC] under the ``salesforce`` definition."""
        if self.enc_token_id is not None:
            ids = ids.clone()
            ids[:, 0] = self.enc_token_id
        self.counts["pair"] += len(ids)
        hidden = self.model.text_encoder(
            input_ids=ids,
            attention_mask=mask,
            encoder_hidden_states=states,
            encoder_attention_mask=torch.ones(
                states.shape[:-1], dtype=torch.long, device=states.device
            ),
        ).last_hidden_state
        return self.model.itm_head(hidden[:, 0, :]).float()

    def match(self, states: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        """ITM log-odds of each text with the image tokens ``states`` (one row per text)."""
        logits = self.itm_logits(states, *self.tokens(texts, states.device))
        return logits[:, 1] - logits[:, 0]

    def retrieval_match(self, states: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        """BLIP's retrieval score of each text with the image tokens ``states``: the ITM
        match logit + the ITC cosine (``train_retrieval.evaluation``: ``score + topk_sim``)."""
        ids, mask = self.tokens(texts, states.device)
        logits = self.itm_logits(states, ids, mask)
        distinct = list(dict.fromkeys(texts))
        row = {text: k for k, text in enumerate(distinct)}
        first = [texts.index(text) for text in distinct]
        text_vectors = torch.nn.functional.normalize(
            self.text_embedding(ids[first], mask[first]).float(), dim=-1
        )[[row[t] for t in texts]]
        image_vectors = torch.nn.functional.normalize(
            self.model.vision_proj(states[:, 0, :]).float(), dim=-1
        )
        return logits[:, 1] + (image_vectors * text_vectors).sum(dim=-1)

    @torch.inference_mode()
    def score_images(self, loaded, images, pairs, batch_size):
        return self.score_with(self.match, loaded, images, pairs, batch_size)

    def score_with(
        self, score: Callable[[torch.Tensor, Sequence[str]], torch.Tensor], loaded: LoadedModel,
        images: Sequence[Image.Image], pairs: Sequence[tuple[int, str]], batch_size: int,
    ) -> np.ndarray:  # fmt: skip
        """``score`` of each pair: one vision pass per image, ``batch_size`` pairs a call."""
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
                out.append(score(states[rows], [t for _, t in chunk]))
        return torch.cat(out).float().cpu().numpy() if out else np.zeros(0, np.float32)


class BlipRetrievalScore(PairScorer):
    """The pair score BLIP's retrieval evaluation reranks by (``salesforce`` definition):
    ITM match logit + ITC cosine, over the same model, embeddings and pass counts as its
    ``MatchingHead``."""

    has_embeddings = True
    score_name = "itm_match_logit_plus_itc_cosine"

    def __init__(self, head: MatchingHead) -> None:
        super().__init__()
        self.head = head
        self.counts = head.counts
        self.rerank_top_k = head.rerank_top_k

    def settings(self) -> dict[str, Any]:
        return {**self.head.settings(), "score": self.score_name}

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.head.encode_image(pixels)

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head.encode_text(ids)

    @torch.inference_mode()
    def score_images(self, loaded, images, pairs, batch_size):
        return self.head.score_with(self.head.retrieval_match, loaded, images, pairs, batch_size)


def blip_enc_token_id(tokenizer: Any, text_config: dict[str, Any]) -> tuple[int, str] | None:
    """BLIP's [ENC] token id and where it came from: the tokenizer's own [ENC], else BLIP's
    vocabulary layout (``models/blip.py`` ``init_tokenizer``: BERT's WordPiece vocabulary,
    then [DEC], which is the text config's ``bos_token_id``, then [ENC], the last of
    ``vocab_size``) when the text config has it and the tokenizer gives that id to no
    token. None: neither."""
    found = tokenizer.convert_tokens_to_ids(BLIP_ENC_TOKEN)
    if isinstance(found, int) and found != tokenizer.unk_token_id:
        return found, f"the tokenizer's {BLIP_ENC_TOKEN}"
    bos, size = text_config.get("bos_token_id"), text_config.get("vocab_size")
    if (
        isinstance(bos, int)
        and isinstance(size, int)
        and size == bos + 2
        and len(tokenizer) <= bos + 1
    ):
        return bos + 1, (
            f"BLIP's vocabulary layout: [DEC] = bos_token_id {bos}, {BLIP_ENC_TOKEN} = {bos + 1}, "
            f"the last of vocab_size {size}"
        )
    return None


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
    definition = source.option("definition")
    context = _context(directory, tokenizer)
    enc_id, enc_source = None, ""
    if definition == SALESFORCE:
        context = min(context, BLIP_TEXT_TOKENS)
        enc = blip_enc_token_id(tokenizer, config.get("text_config") or {})
        if enc is None:
            raise ModelUnavailableError(
                f"models.{key}.transformers.definition: {SALESFORCE} starts BLIP's ITM pass "
                f"with the {BLIP_ENC_TOKEN} token, which the tokenizer of {directory} lacks, "
                "and its text config is not BLIP's vocabulary layout (BERT's, then [DEC] = "
                f"bos_token_id, then {BLIP_ENC_TOKEN} = vocab_size - 1); add {BLIP_ENC_TOKEN} "
                "to the tokenizer (add_special_tokens) or set definition: transformers"
            )
        enc_id, enc_source = enc
    model.to(device).eval()
    top_k = int(source.option("rerank_top_k"))
    scorer = MatchingHead(model, tokenizer, context, top_k, definition, enc_id).eval()
    wrapper = CaptionTokenizer if definition == SALESFORCE else ProcessorTokenizer
    if definition == SALESFORCE:
        how = {
            "joint_score": "ITM log-odds logit(match) - logit(no match) with [ENC] first "
            "(match probability = sigmoid of it); retrieval reranks by ITM match logit + "
            "ITC cosine (BLIP's train_retrieval.py)",
            "blip_enc_token_id": f"{enc_id} ({enc_source})",
            "blip_captions": f"pre_caption (max {BLIP_CAPTION_WORDS} words), at most "
            f"{context} tokens",
        }
    else:
        how = {
            "joint_score": "ITM log-odds logit(match) - logit(no match) with [CLS] first "
            "(BlipForImageTextRetrieval.forward; match probability = sigmoid of it); "
            "retrieval reranks by it alone",
        }
    return LoadedParts(
        model=scorer,
        preprocess=ProcessorTransform(processor.image_processor),
        tokenizer=wrapper(tokenizer, context),
        weights_sha256=hf_models.weights_sha256(hf_models.weight_files(key, directory)),
        details={
            **how,
            "joint_definition": definition,
            "joint_cost": "per (image, text) pair one fused text-encoder pass; one vision pass "
            "per image; retrieval: ITC ranking, top k reranked",
            "rerank_top_k": str(top_k),
            "architecture": names[0],
        },
    )


def _context(directory: Path, tokenizer: Any) -> int:
    context = hf_models.transformers_context_length(str(directory))
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit < context else context


# --------------------------------------------------------------------------- VQAScore


def pad_to_square(image: Image.Image, fill: tuple[int, ...]) -> Image.Image:
    """``image`` centred on a square of colour ``fill`` whose side is its longer side (LLaVA's
    ``expand2square``, t2v_metrics' ``image_aspect_ratio: pad``)."""
    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    square = Image.new(image.mode, (side, side), fill)
    square.paste(image, ((side - width) // 2, (side - height) // 2))
    return square


class VQAScorer(PairScorer):
    """log P(answer | image, prompt) of a vision-language generation model, per
    ``definition``: ``t2v_metrics`` the mean over the answer's tokens and the end token,
    ``legacy_sum`` the sum over the answer's tokens."""

    def __init__(
        self, model: torch.nn.Module, processor: Any, question: str, prompt: str, answer: str,
        definition: str = T2V_METRICS,
    ) -> None:  # fmt: skip
        super().__init__()
        if definition not in (T2V_METRICS, LEGACY_SUM):
            raise ValueError(f"vqascore: unknown definition {definition!r}")
        self.model = model
        self.processor = processor
        self.question, self.prompt, self.answer = question, prompt, answer
        self.definition = definition
        self.score_name = (
            "vqascore_mean_log_probability"
            if definition == T2V_METRICS
            else "vqascore_log_probability"
        )
        tokenizer = processor.tokenizer
        self.image_token = str(processor.image_token)
        self.image_token_id = int(tokenizer.convert_tokens_to_ids(self.image_token))
        self.end = ""
        if definition == T2V_METRICS:
            if not tokenizer.eos_token:
                raise ValueError(
                    f"vqascore: definition {T2V_METRICS} scores the answer with the end token, "
                    f"and the tokenizer ({type(tokenizer).__name__}) has none"
                )
            self.end = str(tokenizer.eos_token)
        self.answer_ids, self.trailing = self._answer_tokens()

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "definition": self.definition,
            "question": self.question,
            "prompt": self.prompt,
            "answer": self.answer,
            "answer_ids": self.answer_ids,
        }

    def prompt_of(self, text: str) -> str:
        """The conversation before the answer for ``text``, with the processor's image token."""
        question = self.question.replace("{text}", text)
        return self.prompt.replace("{image}", self.image_token).replace("{question}", question)

    def text_of(self, text: str) -> str:
        """The model's input text for ``text``: prompt, question, the answer (and under
        ``t2v_metrics`` the end token)."""
        return f"{self.prompt_of(text)} {self.answer}{self.end}"

    def token_ids(self, text: str, image_tokens: int = 1) -> list[int]:
        """``text``'s token ids with each image token repeated ``image_tokens`` times:
        ``legacy_sum`` the tokenizer's over the whole text (as the processor tokenises it);
        ``t2v_metrics`` LLaVA's ``tokenizer_image_token``: each piece between image tokens
        tokenised alone, the first piece's start token kept and the start token of the
        others dropped."""
        tokenizer = self.processor.tokenizer
        if self.definition == LEGACY_SUM:
            ids = tokenizer(text)["input_ids"]
            image = [self.image_token_id] * image_tokens
            return [
                i for token in ids for i in (image if token == self.image_token_id else [token])
            ]
        pieces = [tokenizer(piece)["input_ids"] for piece in text.split(self.image_token)]
        bos = tokenizer.bos_token_id
        skip = 1 if bos is not None and pieces[0][:1] == [bos] else 0
        ids = list(pieces[0][:skip])
        for k, piece in enumerate(pieces):
            if k:
                ids += [self.image_token_id] * image_tokens
            ids += piece[skip:]
        return ids

    def _answer_tokens(self) -> tuple[list[int], int]:
        """The scored token ids after the prompt (the answer's, and the end token under
        ``t2v_metrics``), and how many special tokens the tokenizer puts after them."""
        prompt_ids = self.token_ids(self.prompt_of("a photo"))
        full_ids = self.token_ids(self.text_of("a photo"))
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

    def model_inputs(
        self, images: Sequence[Image.Image], texts: Sequence[str], device: torch.device
    ) -> dict[str, Any]:
        """The model's inputs for (image, text) rows, right-padded."""
        if self.definition == LEGACY_SUM:
            inputs = self.processor(
                images=list(images), text=[self.text_of(t) for t in texts], padding=True,
                return_tensors="pt",
            )  # fmt: skip
            return {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
        image_processor = self.processor.image_processor
        fill = tuple(int(x * 255) for x in image_processor.image_mean)
        vision = self.processor(
            images=[pad_to_square(image, fill) for image in images],
            text=[self.image_token] * len(images), return_tensors="pt",
        )  # fmt: skip
        counts = (vision["input_ids"] == self.image_token_id).sum(dim=1).tolist()
        rows = [self.token_ids(self.text_of(t), n) for t, n in zip(texts, counts, strict=True)]
        width = max(len(r) for r in rows)
        tokenizer = self.processor.tokenizer
        pad = next(i for i in (tokenizer.pad_token_id, tokenizer.unk_token_id, 0) if i is not None)
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        inputs = {k: v for k, v in vision.items() if k not in ("input_ids", "attention_mask")}
        inputs = {"input_ids": ids, "attention_mask": mask, **inputs}
        return {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}

    def log_probabilities(
        self, images: Sequence[Image.Image], texts: Sequence[str]
    ) -> torch.Tensor:
        """The score of each (image, text), one batch: log P(answer | image, prompt(text)),
        the mean (``t2v_metrics``) or the sum (``legacy_sum``) over the scored tokens."""
        device = next(self.model.parameters()).device
        inputs = self.model_inputs(images, texts, device)
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
        per_token = log_p.gather(2, found[:, :, None])[:, :, 0]
        return per_token.mean(dim=1) if self.definition == T2V_METRICS else per_token.sum(dim=1)

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
    definition = options["definition"]
    try:
        scorer = VQAScorer(model, processor, options["question"], options["prompt"],
                           options["answer"], definition).eval()  # fmt: skip
    except ValueError as error:
        raise ModelUnavailableError(f"models.{key}.transformers: {error}") from error
    model.to(device).eval()
    tokenizer = processor.tokenizer
    answer_tokens = tokenizer.convert_ids_to_tokens(scorer.answer_ids)
    if definition == T2V_METRICS:
        how = {
            "joint_score": "mean log P over the answer tokens and the end token, "
            "teacher-forced (t2v_metrics' LLaVA-1.5 VQAScore = exp of it)",
            "vqascore_image_padding": "square, the image processor's mean colour",
            "vqascore_tokenisation": "pieces around the image token (LLaVA's "
            "tokenizer_image_token)",
        }
    else:
        how = {
            "joint_score": "log P(answer | image, prompt), teacher-forced sum over the answer "
            "tokens, no end token (VQAScore = exp of it)",
        }
    return LoadedParts(
        model=scorer,
        preprocess=ProcessorTransform(processor.image_processor),
        tokenizer=ProcessorTokenizer(tokenizer, _context(directory, tokenizer)),
        weights_sha256=hf_models.weights_sha256(hf_models.weight_files(key, directory)),
        details={
            **how,
            "joint_definition": definition,
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
