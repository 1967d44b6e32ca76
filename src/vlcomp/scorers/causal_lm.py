"""Causal language-model scorers (GPT-2, OPT, ... or a tiny GPT-2 trained here).

Each caption is tokenised without special tokens and the model's start token (BOS, or EOS
where there is no BOS, as GPT-2's ``<|endoftext|>``) is put in front, so that the first
word is predicted too; this is what the Hugging Face ``evaluate`` perplexity metric does
with ``add_start_token=True``, which the linguistic-priors paper's perplexities follow.
No end token is appended. Batches are right-padded and the padding is masked out of both
the attention and the sum.

Per caption: ``mean_logprob`` = mean natural-log probability of its tokens; perplexity =
``exp(-mean_logprob)``. ``score`` is ``mean_logprob`` (default) or ``neg_perplexity``
(``-perplexity``); both rank one model's captions the same way, they differ only when
several models are averaged. An empty caption (no tokens) scores NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from vlcomp.scorers.hf import (
    length_sorted_batches,
    pick_device,
    resolve_model,
    torch_dtype,
)

SCORE_TYPES = ("mean_logprob", "neg_perplexity")


class CausalLMScorer:
    """Mean token log-probability (or minus perplexity) under one causal LM."""

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 32,
        score: str = "mean_logprob",
        add_bos: bool = True,
        max_length: int | None = None,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if score not in SCORE_TYPES:
            raise ValueError(f"causal_lm score must be one of {SCORE_TYPES}, got '{score}'")
        resolved = resolve_model(model)
        self.score_type = score
        self.add_bos = add_bos
        self.batch_size = batch_size
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(resolved.directory)
        self.model = AutoModelForCausalLM.from_pretrained(
            resolved.directory, dtype=torch_dtype(dtype)
        ).to(self.device)
        self.model.eval()
        start = self.tokenizer.bos_token_id
        if start is None:
            start = self.tokenizer.eos_token_id
        if add_bos and start is None:
            raise ValueError(f"{model}: the tokenizer has neither a BOS nor an EOS token")
        self.start_id = start
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        limit = getattr(self.model.config, "max_position_embeddings", None) or getattr(
            self.model.config, "n_positions", None
        )
        self.max_length = max_length or limit or 1024
        suffix = "" if add_bos else "-nobos"
        self.name = f"causal_lm/{resolved.tag()}/{score}{suffix}"

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        prefix = [self.start_id] if self.add_bos else []
        return [(prefix + ids)[: self.max_length] for ids in encoded]

    @torch.no_grad()
    def token_logprob_sums(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per caption: the sum of its tokens' natural-log probabilities, and their number."""
        sequences = self._encode(texts) if len(texts) else []
        totals = np.zeros(len(texts))
        counts = np.zeros(len(texts), dtype=np.int64)
        for batch in length_sorted_batches([len(s) for s in sequences], self.batch_size):
            width = max(len(sequences[i]) for i in batch)
            if width < 2:  # nothing to predict in any caption of this batch
                continue
            ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, : len(sequences[i])] = torch.tensor(sequences[i])
                mask[row, : len(sequences[i])] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            nll = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
            target_mask = mask[:, 1:].float()
            totals[batch] = (-(nll * target_mask).sum(1)).cpu().double().numpy()
            counts[batch] = target_mask.sum(1).long().cpu().numpy()
        return totals, counts

    def mean_logprob(self, texts: Sequence[str]) -> np.ndarray:
        totals, counts = self.token_logprob_sums(texts)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)

    def total_logprob(self, texts: Sequence[str]) -> np.ndarray:
        return self.token_logprob_sums(texts)[0]

    def perplexity(self, texts: Sequence[str]) -> np.ndarray:
        return np.exp(-self.mean_logprob(texts))

    def score(self, texts: Sequence[str]) -> np.ndarray:
        mean = self.mean_logprob(texts)
        return mean if self.score_type == "mean_logprob" else -np.exp(-mean)


class CausalLMAverageScorer:
    """The mean of several causal LMs' scores, as the linguistic-priors paper averages LMs.

    With ``score: neg_perplexity`` this is minus the models' mean perplexity; with
    ``mean_logprob``, minus the log of their geometric-mean perplexity.
    """

    def __init__(self, scorers: Sequence[CausalLMScorer]) -> None:
        if not scorers:
            raise ValueError("causal_lm_average needs at least one model")
        self.scorers = list(scorers)
        self.name = "causal_lm_average[" + ",".join(s.name for s in self.scorers) + "]"

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return np.mean([scorer.score(texts) for scorer in self.scorers], axis=0)
