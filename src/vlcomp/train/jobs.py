"""The job functions the workflow's ``train`` rule calls (``workflow/scripts/train_model.py``):
a model trained on a corpus's caption shards, its checkpoint, loss history, info and the
captions it could not train on written."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import torch

from vlcomp.io import atomic_path, write_json, write_parquet
from vlcomp.models.catalogue import file_sha256
from vlcomp.models.versions import provenance
from vlcomp.train.data import IMAGE_UNREADABLE, negatives_per_pair, pairs_with_ids, reason_counts
from vlcomp.train.loop import train_clip
from vlcomp.train.settings import TrainSettings

__all__ = ["TrainSettings", "save_checkpoint", "train_model_job"]


def save_checkpoint(state_dict: dict[str, torch.Tensor], path: str | Path) -> None:
    # torch.save names the zip's top folder after the file; saving to a buffer keeps the
    # bytes (and so the checkpoint's sha256, which keys embedding caches) reproducible.
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getvalue())


def train_model_job(
    model_key: str,
    model_entry: dict[str, Any],
    caption_shards: Sequence[str],
    images_root: str | None,
    checkpoint: str,
    history: str,
    info: str,
    rejected_out: str,
    log: Callable[[str], None] = print,
    hard_negatives: str | None = None,
    start_from: str | None = None,
) -> None:
    """Train ``models.<model_key>`` on a corpus's caption shards; write its checkpoint, loss
    history, info.json and the captions it could not train on (``rejected_out``).
    ``hard_negatives``: the corpus's training negatives table (caption_id, negative; the
    ``negatives`` stage writes it) when the train block asks for NegCLIP-style training;
    ``start_from``: the checkpoint of the model named by ``train.start_from``."""
    arch = model_entry["open_clip"]
    settings = TrainSettings.from_config(model_entry["train"], f"models.{model_key}.train")
    if (settings.hard_negatives != "none") != (hard_negatives is not None):
        raise ValueError(
            f"models.{model_key}: train.hard_negatives is {settings.hard_negatives!r} but "
            f"{'no' if hard_negatives is None else 'a'} negatives table was given"
        )
    pairs, rejected = _usable_pairs(model_key, caption_shards, images_root)
    shards = ", ".join(str(s) for s in caption_shards) or "(no shards)"
    unreadable: list[int] = []
    log(
        f"training {arch} on {pairs.height} pairs from {len(caption_shards)} caption shard(s) "
        f"({rejected.height} captions rejected: {reason_counts(rejected)})"
    )

    def record(row: int, message: str) -> None:
        unreadable.append(row)
        log(f"{pairs['image'][row]}: {IMAGE_UNREADABLE}: {message}")

    negatives = None
    if hard_negatives is not None:
        negatives = negatives_per_pair(pairs, hard_negatives)
        covered = sum(1 for options in negatives if options)
        log(
            f"NegCLIP-style training: {sum(map(len, negatives))} hard negatives from "
            f"{hard_negatives} for {covered} of {pairs.height} pairs"
        )
    try:
        state, losses = train_clip(
            arch, pairs.drop("image_id"), settings, log, on_unreadable=record,
            negatives=negatives, start_from=start_from,
        )  # fmt: skip
    except ValueError as error:
        raise ValueError(f"models.{model_key}: caption shards {shards}: {error}") from error
    if unreadable:
        failed = pairs[unreadable].select(
            "caption_id", "image_id", reason=pl.lit(IMAGE_UNREADABLE, dtype=pl.String)
        )
        rejected = pl.concat([rejected, failed])
    save_checkpoint(state, checkpoint)
    write_parquet(losses, history, metadata=provenance(model=model_key, arch=arch))
    write_parquet(rejected, rejected_out, metadata=provenance(model=model_key))
    write_json(
        {
            "model": model_key,
            "arch": arch,
            "train": model_entry["train"],
            "start_from": None if start_from is None else file_sha256(start_from),
            "caption_shards": [str(s) for s in caption_shards],
            "images": images_root,
            "n_pairs": pairs.height - len(unreadable),
            "n_rejected": rejected.height,
            "rejected_reasons": reason_counts(rejected),
            "final_loss": losses["mean_loss"][-1],
            "checkpoint_sha256": file_sha256(checkpoint),
            "versions": provenance(),
        },
        info,
    )


def _usable_pairs(
    model_key: str, caption_shards: Sequence[str], images_root: str | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``pairs_with_ids`` of the shards; raises, naming them, when no pair is usable."""
    pairs, rejected = pairs_with_ids(caption_shards, images_root)
    if pairs.height == 0:
        shards = ", ".join(str(s) for s in caption_shards) or "(no shards)"
        reasons = reason_counts(rejected)
        raise ValueError(
            f"models.{model_key}: no usable (image, caption) pair in the caption shards "
            f"{shards} (images folder: {images_root}); rejected: {reasons or 'no captions'}"
        )
    return pairs, rejected
