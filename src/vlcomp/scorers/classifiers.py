"""Text classifiers as scorers: grammatical acceptability (CoLA) and Vera plausibility.

These are the two text-only models SugarCrepe's adversarial refinement uses
(``text_model_eval.py``); their weights must already be local (see ``hf.resolve_model``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from vlcomp.scorers.hf import length_sorted_batches, pick_device, resolve_model, torch_dtype

# Vera's scoring head lives in three rows of its T5 input embedding (model card and
# SugarCrepe's text_model_eval.py): the weight vector, the bias, and the calibration
# temperature. Every Vera checkpoint has T5's 32,128-row vocabulary.
VERA_WEIGHT_ROW, VERA_BIAS_ROW, VERA_TEMPERATURE_ROW = 32099, 32098, 32097


def _acceptable_index(id2label: dict[int, str], override: int | None) -> int:
    if override is not None:
        return override
    for index, label in id2label.items():
        if str(label).lower() in {"acceptable", "grammatical"}:
            return int(index)
    # textattack's CoLA models keep the generic names; LABEL_1 is "acceptable".
    return 1


class ColaScorer:
    """P(acceptable) from a sequence classifier fine-tuned on CoLA.

    Default ``textattack/distilbert-base-uncased-CoLA`` as in SugarCrepe, whose
    pipeline-based score (the LABEL_1 probability) equals the softmax probability here.
    """

    def __init__(
        self,
        model: str = "textattack/distilbert-base-uncased-CoLA",
        *,
        batch_size: int = 64,
        max_length: int = 128,
        acceptable_label: int | None = None,
        device: str = "cpu",
    ) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        resolved = resolve_model(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(resolved.directory)
        self.model = AutoModelForSequenceClassification.from_pretrained(resolved.directory)
        self.model.to(self.device).eval()
        if self.model.config.num_labels < 2:
            raise ValueError(f"{model}: a CoLA classifier needs 2 labels")
        self.acceptable = _acceptable_index(self.model.config.id2label, acceptable_label)
        self.name = f"cola/{resolved.tag()}"

    @torch.no_grad()
    def score(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(texts))
        lengths = [len(t) for t in texts]
        for batch in length_sorted_batches(lengths, self.batch_size):
            encoded = self.tokenizer(
                [texts[i] for i in batch],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            logits = self.model(**encoded).logits.float()
            out[batch] = logits.softmax(-1)[:, self.acceptable].cpu().double().numpy()
        return out


class VeraScorer:
    """Vera's calibrated plausibility, ``sigmoid((w . h + b) / t)`` in [0, 1].

    ``h`` is the T5 encoder's last hidden state at the caption's final token (the ``</s>``
    the tokenizer appends), with ``w``, ``b`` and ``t`` read from the embedding rows above,
    as Vera's model card does. Inputs are truncated to 128 tokens as there.
    """

    def __init__(
        self,
        model: str = "liujch1998/vera",
        *,
        batch_size: int = 16,
        max_length: int = 128,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        from transformers import AutoTokenizer, T5EncoderModel

        resolved = resolve_model(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(resolved.directory)
        self.tokenizer.padding_side = "right"  # the final real token is found by counting
        self.model = T5EncoderModel.from_pretrained(resolved.directory, dtype=torch_dtype(dtype))
        self.model.to(self.device).eval()
        shared = self.model.shared.weight
        if shared.shape[0] <= VERA_WEIGHT_ROW:
            raise ValueError(
                f"{model}: embedding has {shared.shape[0]} rows; a Vera checkpoint has 32128"
            )
        with torch.no_grad():
            self.weight = shared[VERA_WEIGHT_ROW, :].float().clone()
            self.bias = float(shared[VERA_BIAS_ROW, 0])
            self.temperature = float(shared[VERA_TEMPERATURE_ROW, 0])
        self.name = f"vera/{resolved.tag()}"

    @torch.no_grad()
    def score(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(texts))
        lengths = [len(t) for t in texts]
        for batch in length_sorted_batches(lengths, self.batch_size):
            encoded = self.tokenizer(
                [texts[i] for i in batch],
                padding="longest",
                truncation="longest_first",
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            hidden = self.model(**encoded).last_hidden_state.float()  # (B, L, D)
            last = encoded["attention_mask"].sum(1) - 1  # right padding: the final real token
            final = hidden[torch.arange(len(batch), device=hidden.device), last]
            logits = final @ self.weight.to(final.device) + self.bias
            out[batch] = torch.sigmoid(logits / self.temperature).cpu().double().numpy()
        return out
