"""Text-only scorers: higher score = more likely / more acceptable caption.

Heavy modules (torch, transformers, sentence-transformers) load on first use of a name
that needs them, so ``from vlcomp.scorers import TextScorer`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from vlcomp.scorers.base import TextScorer

_EXPORTS = {
    "NgramLM": "ngram",
    "train_ngram": "ngram",
    "CausalLMScorer": "causal_lm",
    "CausalLMAverageScorer": "causal_lm",
    "fit_tiny_gpt2": "tiny_gpt2",
    "train_tiny_gpt2": "tiny_gpt2",
    "ColaScorer": "classifiers",
    "VeraScorer": "classifiers",
    "MiniLMFamiliarityScorer": "familiarity",
    "build_minilm_index": "familiarity",
    "build_index_from_texts": "familiarity",
    "ModelNotAvailableError": "hf",
    "score_texts": "cache",
    "read_scores": "cache",
    "make_scorer": "factory",
    "read_texts": "corpus",
    "text_key": "corpus",
}

__all__ = ["TextScorer", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'vlcomp.scorers' has no attribute '{name}'")
    return getattr(import_module(f"vlcomp.scorers.{_EXPORTS[name]}"), name)
