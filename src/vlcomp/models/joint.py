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
text) pair, and SugarCrepe++'s text-only comparison cannot be computed."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from vlcomp.models import hf_models
from vlcomp.models.catalogue import ModelUnavailableError
from vlcomp.models.hf_models import TransformersSource
from vlcomp.models.parts import LoadedModel, LoadedParts, ProcessorTokenizer, ProcessorTransform

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
