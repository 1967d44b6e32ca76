"""The learning-rate schedule: linear warm-up, then cosine decay to zero."""

from __future__ import annotations

import math


def cosine_lr(step: int, total: int, base: float, warmup: int) -> float:
    """The learning rate of ``step`` (0-based) of ``total``: ``base * (step + 1) / warmup``
    during the ``warmup`` steps, then half a cosine from ``base`` down to 0 at ``total``."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base * (1.0 + math.cos(math.pi * progress))
