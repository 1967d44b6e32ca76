"""Training small CLIPs (CLIP's or NegCLIP's contrastive loss), reusable outside the workflow:
``data`` (caption shards -> (image, caption) pairs, rejection reasons, images, a pair's hard
negatives), ``negatives`` (hard negatives drawn per step), ``mirroring`` (mirror
augmentation), ``losses``, ``schedule``, ``loop`` (``train_clip``, on the CPU or a given
device), ``settings`` and ``jobs`` (the functions the workflow's ``train`` rule calls).

The names below are re-exported lazily: importing ``vlcomp.train.losses`` or ``.schedule``
needs torch and open_clip only, not the data or job modules' polars and pillow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "IMAGE_MISSING": "data",
    "IMAGE_UNREADABLE": "data",
    "NO_IMAGE_ID": "data",
    "NO_IMAGES_FOLDER": "data",
    "PAIRS_SCHEMA": "data",
    "TRAIN_REJECTED_SCHEMA": "data",
    "URL_NOT_DOWNLOADED": "data",
    "load_images": "data",
    "negatives_per_pair": "data",
    "read_caption_shards": "data",
    "training_pairs": "data",
    "clip_loss": "losses",
    "negclip_loss": "losses",
    "cosine_lr": "schedule",
    "FLIP_DIM": "mirroring",
    "Mirroring": "mirroring",
    "negative_rows": "negatives",
    "pick_negatives": "negatives",
    "train_clip": "loop",
    "TrainSettings": "settings",
    "save_checkpoint": "jobs",
    "train_model_job": "jobs",
}
__all__ = [
    "FLIP_DIM",
    "IMAGE_MISSING",
    "IMAGE_UNREADABLE",
    "Mirroring",
    "NO_IMAGES_FOLDER",
    "NO_IMAGE_ID",
    "PAIRS_SCHEMA",
    "TRAIN_REJECTED_SCHEMA",
    "TrainSettings",
    "URL_NOT_DOWNLOADED",
    "clip_loss",
    "cosine_lr",
    "load_images",
    "negative_rows",
    "negatives_per_pair",
    "negclip_loss",
    "pick_negatives",
    "read_caption_shards",
    "save_checkpoint",
    "train_clip",
    "train_model_job",
    "training_pairs",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from vlcomp.train.data import (
        IMAGE_MISSING,
        IMAGE_UNREADABLE,
        NO_IMAGE_ID,
        NO_IMAGES_FOLDER,
        PAIRS_SCHEMA,
        TRAIN_REJECTED_SCHEMA,
        URL_NOT_DOWNLOADED,
        load_images,
        negatives_per_pair,
        read_caption_shards,
        training_pairs,
    )
    from vlcomp.train.jobs import save_checkpoint, train_model_job
    from vlcomp.train.loop import train_clip
    from vlcomp.train.losses import clip_loss, negclip_loss
    from vlcomp.train.mirroring import FLIP_DIM, Mirroring
    from vlcomp.train.negatives import negative_rows, pick_negatives
    from vlcomp.train.schedule import cosine_lr
    from vlcomp.train.settings import TrainSettings
