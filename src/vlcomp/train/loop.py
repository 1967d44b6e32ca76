"""The training loop: a small CLIP trained on (image, text) pairs with open_clip's contrastive
loss, or NegCLIP's with hard negatives, deterministically.

It runs on the CPU unless given another ``device``: the model is built (and seeded) on the
CPU, then it, the images and the token tables move to the device; the batch order and the
negatives' and mirrorings' draws stay on CPU generators, so every device sees the same draws.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import open_clip
import polars as pl
import torch
from PIL import Image

from vlcomp.models import loading as _models
from vlcomp.train.data import load_images
from vlcomp.train.losses import clip_loss, negclip_loss
from vlcomp.train.mirroring import Mirroring
from vlcomp.train.negatives import negative_rows, pick_negatives
from vlcomp.train.schedule import cosine_lr
from vlcomp.train.settings import TrainSettings


def train_clip(
    arch: str,
    pairs: pl.DataFrame,
    settings: TrainSettings,
    log: Callable[[str], None] = print,
    on_unreadable: Callable[[int, str], None] | None = None,
    negatives: Sequence[Sequence[str]] | None = None,
    start_from: str | None = None,
    device: torch.device | str = "cpu",
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    """Train ``arch`` from scratch on (image, text) pairs; return weights (on the CPU) and
    per-epoch loss.

    An image that fails to decode raises, unless ``on_unreadable`` is given: then its pairs
    are left out before training starts and ``on_unreadable(row, message)`` is called.
    ``negatives`` (NegCLIP-style training, one list per pair, possibly empty): in every step
    each pair with hard negatives contributes ``settings.negatives_per_pair`` of them (0: all),
    drawn from a seeded generator, to the batch's texts (``negclip_loss``); without it the
    loss is CLIP's. ``start_from``: a checkpoint of ``arch`` to fine-tune instead of
    training from scratch. ``device``: where the model trains (default: the CPU).
    """
    device = torch.device(device)
    model, preprocess = _initial_model(arch, settings, start_from, device)
    tokenizer = open_clip.get_tokenizer(arch)
    images, texts, negatives = _readable_pairs(pairs, preprocess, on_unreadable, negatives)
    n = len(texts)
    if n < settings.batch_size:
        raise ValueError(
            f"{n} pairs with a readable image, fewer than batch_size {settings.batch_size}"
        )
    tokens = tokenizer(texts).to(device)
    # Channels-last convolutions are about 1.25x faster on CPU for a ResNet tower (the same
    # arithmetic in another order; a ViT's patch embedding is the only conv it has).
    model = model.to(device=device, memory_format=torch.channels_last)
    images = images.to(device).contiguous(memory_format=torch.channels_last)
    steps_per_epoch = n // settings.batch_size
    total_steps = steps_per_epoch * settings.epochs
    # fused: one kernel for all parameters, about 10x faster on CPU than the default loop
    # (the 49,408-token embedding is most of the model's parameters).
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay, fused=True
    )
    order_rng = torch.Generator().manual_seed(settings.seed)
    step_loss = _StepLoss(model, images, tokens, texts, negatives, tokenizer, settings, device)
    if step_loss.mirroring is not None:
        log(
            f"mirroring pairs along {', '.join(settings.mirror)}; "
            f"{sum(a is not None for a in step_loss.mirroring.hard_axis)} of {n} pairs bring a "
            "hard negative image"
        )
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
            loss = step_loss(idx)
            _update(model, optimizer, loss)
            losses.append(loss.item())
            step += 1
        mean_loss = sum(losses) / len(losses)
        history.append({"epoch": epoch, "steps": step, "mean_loss": mean_loss})
        seconds = time.perf_counter() - started
        log(f"epoch {epoch}/{settings.epochs}: loss {mean_loss:.4f} ({seconds:.1f} s)")
    model.eval()
    weights = {name: tensor.cpu().contiguous() for name, tensor in model.state_dict().items()}
    return weights, pl.DataFrame(history)


def _initial_model(
    arch: str, settings: TrainSettings, start_from: str | None, device: torch.device
) -> tuple[Any, Callable[[Image.Image], torch.Tensor]]:
    """``arch``, seeded and on the CPU, with ``start_from``'s weights if given, and its
    preprocessing; deterministic algorithms from here on."""
    _models.check_architecture(arch)
    if device.type == "cuda":  # cuBLAS is deterministic only with a fixed workspace
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    torch.use_deterministic_algorithms(True)
    model, preprocess = _models.create_open_clip(arch)
    if start_from is not None:
        try:
            model.load_state_dict(torch.load(start_from, map_location="cpu", weights_only=True))
        except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as error:
            raise ValueError(f"{start_from}: not a checkpoint of {arch}: {error}") from error
    return model, preprocess


def _readable_pairs(
    pairs: pl.DataFrame,
    preprocess: Callable[[Image.Image], torch.Tensor],
    on_unreadable: Callable[[int, str], None] | None,
    negatives: Sequence[Sequence[str]] | None,
) -> tuple[torch.Tensor, list[str], list[Sequence[str]] | None]:
    """The images (CPU), texts and negative lists of the pairs whose image decodes."""
    failed: set[int] = set()

    def unreadable(row: int, message: str) -> None:
        failed.add(row)
        if on_unreadable is not None:
            on_unreadable(row, message)

    images = load_images(
        pairs["image"].to_list(), preprocess, unreadable if on_unreadable is not None else None
    )
    texts = [text for row, text in enumerate(pairs["text"].to_list()) if row not in failed]
    kept = None
    if negatives is not None:
        if len(negatives) != pairs.height:
            raise ValueError(f"{len(negatives)} negative lists for {pairs.height} pairs")
        kept = [options for row, options in enumerate(negatives) if row not in failed]
    return images, texts, kept


class _StepLoss:
    """The loss of one step's pairs (``idx``, a CPU tensor of pair indices): CLIP's, or
    NegCLIP's with the pairs' hard negatives drawn from a seeded generator; each pair
    mirrored first when ``settings.mirror`` asks for it."""

    def __init__(
        self,
        model: Any,
        images: torch.Tensor,
        tokens: torch.Tensor,
        texts: Sequence[str],
        negatives: Sequence[Sequence[str]] | None,
        tokenizer: Callable[[list[str]], torch.Tensor],
        settings: TrainSettings,
        device: torch.device,
    ) -> None:
        self.model, self.images, self.tokens, self.device = model, images, tokens, device
        self.per_pair = settings.negatives_per_pair
        self.negative_rows: list[list[int]] | None = None
        if negatives is not None:
            negative_tokens, self.negative_rows = negative_rows(negatives, tokenizer)
            self.negative_tokens = negative_tokens.to(device)
            self.negative_rng = np.random.default_rng([settings.seed, 1])
        self.mirroring = None
        if settings.mirror:
            self.mirroring = Mirroring(
                settings.mirror, texts, negatives, tokenizer, settings.seed
            ).to(device)

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        on_device = idx.to(self.device)
        drawn = None
        if self.mirroring is None:
            batch_images, batch_tokens = self.images[on_device], self.tokens[on_device]
        else:
            drawn = self.mirroring.draw(len(idx))
            batch_images = self.mirroring.images(self.images[on_device], drawn)
            batch_images = batch_images.contiguous(memory_format=torch.channels_last)
            batch_tokens = self.mirroring.texts(drawn, idx)
        image_features, text_features, logit_scale = self.model(batch_images, batch_tokens)
        if self.negative_rows is None:
            return clip_loss(image_features, text_features, logit_scale)
        pair_rows = [self.negative_rows[i] for i in idx.tolist()]
        picked = pick_negatives(pair_rows, self.per_pair, self.negative_rng)
        negative_images = None
        if self.mirroring is None:
            picked_tokens = self.negative_tokens[picked]
        else:
            assert drawn is not None
            picked_tokens = self.mirroring.picked_negative_tokens(pair_rows, picked, drawn)
            hard = self.mirroring.hard_images(batch_images, idx)
            if len(hard):
                hard = hard.contiguous(memory_format=torch.channels_last)
                negative_images = self.model.encode_image(hard, normalize=True)
        negative_features = (
            self.model.encode_text(picked_tokens, normalize=True) if picked else text_features[:0]
        )
        return negclip_loss(
            image_features, text_features, negative_features, logit_scale, negative_images
        )


def _update(model: Any, optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """One optimiser step on ``loss``; the logit scale kept within [0, log 100]."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, math.log(100))
