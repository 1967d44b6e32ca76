"""A model's training settings (the ``train`` block of ``models.<name>`` in the config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlcomp.negatives.lexicon import MIRROR_AXES
from vlcomp.settings import settings_from

# Keys of the train block that the workflow reads (the job's inputs), not the training loop.
WORKFLOW_KEYS = ("corpus", "start_from")


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
    def from_config(entry: Mapping[str, Any], where: str = "train") -> TrainSettings:
        """From a train block (validated and filled by the config schema; ``where`` its key,
        ``models.<name>.train``). The mirror axes are kept in MIRROR_AXES's order."""
        block = {k: v for k, v in entry.items() if k not in WORKFLOW_KEYS}
        if "mirror" in block:
            block["mirror"] = [axis for axis in MIRROR_AXES if axis in block["mirror"]]
        return settings_from(TrainSettings, block, where)
