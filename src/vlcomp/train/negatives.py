"""Hard negative texts in training (NegCLIP-style): tokenised once, then drawn per step."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch


def negative_rows(
    negatives: Sequence[Sequence[str]], tokenizer: Callable[[list[str]], torch.Tensor]
) -> tuple[torch.Tensor, list[list[int]]]:
    """All hard negative texts tokenised once, and per pair the rows of its negatives."""
    texts: list[str] = []
    rows: list[list[int]] = []
    for options in negatives:
        rows.append(list(range(len(texts), len(texts) + len(options))))
        texts.extend(options)
    tokens = tokenizer(texts) if texts else torch.empty(0, dtype=torch.long)
    return tokens, rows


def pick_negatives(
    rows: Sequence[Sequence[int]], per_pair: int, rng: np.random.Generator
) -> list[int]:
    """The negative rows of one step: ``per_pair`` drawn without replacement from each
    pair's (all of them when it has fewer, or when ``per_pair`` is 0)."""
    if per_pair == 1:
        return [options[int(rng.integers(len(options)))] for options in rows if options]
    picked: list[int] = []
    for options in rows:
        if per_pair == 0 or len(options) <= per_pair:
            picked.extend(options)
        elif options:
            picked.extend(
                options[int(k)] for k in sorted(rng.choice(len(options), per_pair, replace=False))
            )
    return picked
