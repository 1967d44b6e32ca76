"""A model's training settings (the ``train`` block of ``models.<name>`` in the config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlcomp.negatives.lexicon import MIRROR_AXES


@dataclass(frozen=True)
class TrainSettings:
    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup_steps: int
    seed: int
    threads: int
    hard_negatives: str = "none"
    negatives_per_pair: int = 1  # hard negatives a pair brings to each step; 0: all it has
    mirror: tuple[str, ...] = ()  # axes along which pairs are mirrored (MIRROR_AXES)

    @staticmethod
    def from_config(entry: dict[str, Any]) -> TrainSettings:
        return TrainSettings(
            epochs=entry["epochs"],
            batch_size=entry["batch_size"],
            lr=entry["lr"],
            weight_decay=entry["weight_decay"],
            warmup_steps=entry["warmup_steps"],
            seed=entry["seed"],
            threads=entry["threads"],
            hard_negatives=entry.get("hard_negatives", "none"),
            negatives_per_pair=entry.get("negatives_per_pair", 1),
            mirror=tuple(axis for axis in MIRROR_AXES if axis in entry.get("mirror", ())),
        )
