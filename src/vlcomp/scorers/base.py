"""The scorer interface every text-only scorer implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TextScorer(Protocol):
    """Scores captions without looking at any image.

    ``name`` identifies the scorer *and its weights or training data* (it keys score caches),
    e.g. ``"ngram3-kn/cc12m@<sha>"``. ``score`` returns one float per text, higher = more
    likely / more acceptable; it must be deterministic for a given name.
    """

    name: str

    def score(self, texts: Sequence[str]) -> np.ndarray: ...
