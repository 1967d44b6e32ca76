"""Training a small CLIP with open_clip's contrastive loss, deterministically on CPU."""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import open_clip
import polars as pl
import torch
from PIL import Image

from vlcomp.evaluate import models as _models  # registers the world model configs with open_clip
from vlcomp.io import atomic_path


@dataclass(frozen=True)
class TrainSettings:
    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup_steps: int
    seed: int
    threads: int

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
        )


def load_images(
    paths: list[str], preprocess: Callable[[Image.Image], torch.Tensor]
) -> torch.Tensor:
    tensors = []
    for path in paths:
        with Image.open(path) as image:
            tensors.append(preprocess(image.convert("RGB")))
    return torch.stack(tensors)


def cosine_lr(step: int, total: int, base: float, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base * (1.0 + math.cos(math.pi * progress))


def train_clip(
    arch: str,
    pairs: pl.DataFrame,
    settings: TrainSettings,
    log: Callable[[str], None] = print,
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    """Train ``arch`` from scratch on (image, text) pairs; return weights and per-epoch loss."""
    _models.check_architecture(arch)
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    torch.use_deterministic_algorithms(True)
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
    tokenizer = open_clip.get_tokenizer(arch)
    images = load_images(pairs["image"].to_list(), preprocess)
    tokens = tokenizer(pairs["text"].to_list())
    n = images.shape[0]
    if n < settings.batch_size:
        raise ValueError(f"corpus has {n} pairs, fewer than batch_size {settings.batch_size}")
    steps_per_epoch = n // settings.batch_size
    total_steps = steps_per_epoch * settings.epochs
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    loss_fn = open_clip.ClipLoss()
    order_rng = torch.Generator().manual_seed(settings.seed)
    history = []
    step = 0
    model.train()
    for epoch in range(1, settings.epochs + 1):
        started = time.perf_counter()
        order = torch.randperm(n, generator=order_rng)
        losses = []
        for batch in range(steps_per_epoch):
            idx = order[batch * settings.batch_size : (batch + 1) * settings.batch_size]
            for group in optimizer.param_groups:
                group["lr"] = cosine_lr(step, total_steps, settings.lr, settings.warmup_steps)
            image_features, text_features, logit_scale = model(images[idx], tokens[idx])
            loss = loss_fn(image_features, text_features, logit_scale)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            losses.append(loss.item())
            step += 1
        mean_loss = sum(losses) / len(losses)
        history.append({"epoch": epoch, "steps": step, "mean_loss": mean_loss})
        seconds = time.perf_counter() - started
        log(f"epoch {epoch}/{settings.epochs}: loss {mean_loss:.4f} ({seconds:.1f} s)")
    model.eval()
    return model.state_dict(), pl.DataFrame(history)


def save_checkpoint(state_dict: dict[str, torch.Tensor], path: str | Path) -> None:
    # torch.save names the zip's top folder after the file; saving to a buffer keeps the
    # bytes (and so the checkpoint's sha256, which keys embedding caches) reproducible.
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getvalue())
