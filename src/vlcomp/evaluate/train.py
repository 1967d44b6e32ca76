"""Training a small CLIP with open_clip's contrastive loss, deterministically on CPU.

A model trains on a corpus's ingested caption shards (``contracts.CAPTIONS_SCHEMA``), the
same captions the counting stages read; ``training_pairs`` turns their image ids into files.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import open_clip
import polars as pl
import torch
from PIL import Image

from vlcomp.evaluate import models as _models
from vlcomp.io import atomic_path, write_json, write_parquet
from vlcomp.negatives.lexicon import (
    HORIZONTAL,
    MIRROR_AXES,
    VERTICAL,
    mirror_text,
    relation_axis,
)

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp")

# Reasons a caption is not trained on (the ``reason`` column of the rejected table).
NO_IMAGE_ID = "no image id"
URL_NOT_DOWNLOADED = "url not downloaded"
NO_IMAGES_FOLDER = "no images folder"  # a relative image id, but the corpus names no folder
IMAGE_MISSING = "image missing"
IMAGE_UNREADABLE = "image unreadable"

PAIRS_SCHEMA: dict[str, pl.DataType] = {
    "caption_id": pl.String,
    "image": pl.String,
    "text": pl.String,
}
TRAIN_REJECTED_SCHEMA: dict[str, pl.DataType] = {
    "caption_id": pl.String,
    "image_id": pl.String,
    "reason": pl.String,
}


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


class _Files:
    """Which files exist, one ``os.scandir`` per folder asked about (not a stat per caption)."""

    def __init__(self) -> None:
        self._folders: dict[str, frozenset[str]] = {}

    def names(self, folder: str) -> frozenset[str]:
        if folder not in self._folders:
            try:
                with os.scandir(folder) as entries:
                    self._folders[folder] = frozenset(e.name for e in entries if e.is_file())
            except OSError:  # missing, not a folder, or not listable
                self._folders[folder] = frozenset()
        return self._folders[folder]

    def exists(self, path: str) -> bool:
        folder, name = os.path.split(path)
        return name in self.names(folder or ".")


def _resolve_image(
    image_id: str | None, images_root: str | None, files: _Files
) -> tuple[str | None, str | None]:
    """(path, None) for an image file that exists, else (None, reason)."""
    if image_id is None or image_id == "":
        return None, NO_IMAGE_ID
    if "://" in image_id:
        return None, URL_NOT_DOWNLOADED
    if os.path.isabs(image_id):
        return (image_id, None) if files.exists(image_id) else (None, IMAGE_MISSING)
    if images_root is None:
        return None, NO_IMAGES_FOLDER
    path = os.path.join(images_root, image_id)
    if files.exists(path):
        return path, None
    if not os.path.splitext(image_id)[1]:
        for ext in IMAGE_EXTENSIONS:
            for candidate in (f"{path}.{ext}", f"{path}.{ext.upper()}"):
                if files.exists(candidate):
                    return candidate, None
    return None, IMAGE_MISSING


def _readable(path: str) -> bool:
    """Whether PIL recognises the file as an image (reads the header, decodes nothing)."""
    try:
        with Image.open(path):
            return True
    except Exception:  # PIL raises OSError, SyntaxError, DecompressionBombError, ...
        return False


def read_caption_shards(caption_shards: Sequence[str | Path]) -> pl.DataFrame:
    """caption_id, image_id, text of the shards, in the order given, rows in file order."""
    columns = ["caption_id", "image_id", "text"]
    frames = []
    for shard in caption_shards:
        frame = pl.read_parquet(shard)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{shard}: not a captions table, missing column(s) {missing}")
        frames.append(frame.select(pl.col(c).cast(pl.String) for c in columns))
    if not frames:
        return pl.DataFrame(schema={c: pl.String for c in columns})
    return pl.concat(frames, how="vertical")


def training_pairs(
    caption_shards: Sequence[str | Path], images_root: str | Path | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The (image file, caption) pairs a model trains on, and the captions it cannot use.

    Reads the caption shards in the order given, keeping row order (training order depends
    only on that). An ``image_id`` that is an absolute path is used as is; a relative one
    resolves against ``images_root``, and one without an extension may also match
    ``<images_root>/<id>.<jpg|jpeg|png|webp>``. URLs (never downloaded here), null ids,
    missing files and files PIL does not recognise as images are rejected.

    Returns ``pairs`` (caption_id, image, text) and ``rejected`` (caption_id, image_id,
    reason), each in shard order.
    """
    pairs, rejected = _pairs_with_ids(caption_shards, images_root)
    return pairs.drop("image_id"), rejected


def _pairs_with_ids(
    caption_shards: Sequence[str | Path], images_root: str | Path | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``training_pairs``, with the pairs' ``image_id`` kept (for rejecting them later)."""
    captions = read_caption_shards(caption_shards)
    root = None if images_root is None else str(images_root)
    files = _Files()
    resolved: dict[str | None, tuple[str | None, str | None]] = {}
    readable: dict[str, bool] = {}
    pairs: dict[str, list[str]] = {"caption_id": [], "image": [], "text": [], "image_id": []}
    rejected: dict[str, list[str | None]] = {"caption_id": [], "image_id": [], "reason": []}
    for caption_id, image_id, text in captions.iter_rows():
        if image_id not in resolved:
            resolved[image_id] = _resolve_image(image_id, root, files)
        path, reason = resolved[image_id]
        if path is not None:
            if path not in readable:
                readable[path] = _readable(path)
            if not readable[path]:
                reason = IMAGE_UNREADABLE
        if reason is None:
            pairs["caption_id"].append(caption_id)
            pairs["image"].append(path)
            pairs["text"].append(text)
            pairs["image_id"].append(image_id)
        else:
            rejected["caption_id"].append(caption_id)
            rejected["image_id"].append(image_id)
            rejected["reason"].append(reason)
    return (
        pl.DataFrame(pairs, schema={**PAIRS_SCHEMA, "image_id": pl.String}),
        pl.DataFrame(rejected, schema=TRAIN_REJECTED_SCHEMA),
    )


def load_images(
    paths: list[str],
    preprocess: Callable[[Image.Image], torch.Tensor],
    on_error: Callable[[int, str], None] | None = None,
) -> torch.Tensor:
    """Decode and preprocess each image (each distinct file once), stacked in order.

    A file that fails to decode raises, unless ``on_error`` is given: then it is left out
    of the stack and ``on_error(index, message)`` is called for each of its rows.
    """
    decoded: dict[str, torch.Tensor | str] = {}
    tensors = []
    for index, path in enumerate(paths):
        if path not in decoded:
            try:
                with Image.open(path) as image:
                    decoded[path] = preprocess(image.convert("RGB"))
            except Exception as error:  # any decoder failure: truncated, corrupt, ...
                if on_error is None:
                    raise OSError(f"{path}: cannot decode image: {error}") from error
                decoded[path] = f"{type(error).__name__}: {error}"
        value = decoded[path]
        if isinstance(value, str):
            assert on_error is not None
            on_error(index, value)
        else:
            tensors.append(value)
    if not tensors:
        return torch.empty(0)
    return torch.stack(tensors)


def cosine_lr(step: int, total: int, base: float, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base * (1.0 + math.cos(math.pi * progress))


def negclip_loss(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    negative_features: torch.Tensor,
    logit_scale: torch.Tensor,
    negative_image_features: torch.Tensor | None = None,
) -> torch.Tensor:
    """NegCLIP's contrastive loss: image -> text over the batch's captions *and* its hard
    negative texts (B x (B + m) logits), text -> image over the batch's images as in CLIP
    and, when given, its hard negative images (B x (B + k)); the mean of the two
    cross-entropies. Features are L2-normalised."""
    labels = torch.arange(image_features.shape[0])
    texts = torch.cat([text_features, negative_features])
    images = image_features
    if negative_image_features is not None:
        images = torch.cat([image_features, negative_image_features])
    per_image = logit_scale * image_features @ texts.T
    per_text = logit_scale * text_features @ images.T
    return (
        torch.nn.functional.cross_entropy(per_image, labels)
        + torch.nn.functional.cross_entropy(per_text, labels)
    ) / 2


def _negative_rows(
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


def _pick_negatives(
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


_FLIP_DIM = {HORIZONTAL: -1, VERTICAL: -2}  # image columns, rows


class _Mirroring:
    """Seeded mirroring of each step's pairs along ``axes`` (``TrainSettings.mirror``).

    Each pair is mirrored along each axis with probability 1/2, its caption and hard
    negatives rewritten to match (``lexicon.mirror_text``: "left" <-> "right", "above" ->
    "below", ...; a relation negative along a mirrored axis becomes the caption itself,
    ``_mirrored_negative``). A pair one of whose hard negatives changes a spatial relation along an
    axis also brings its (possibly mirrored) image mirrored along that axis as a hard
    negative *image* for its caption: every relation along that axis turns into its
    converse there, and the generator keeps a relation negative only where the converse
    is false of the image, so the caption is false of the mirrored image. Both word
    priors and bags of words are then useless against it: only where things are tells
    the two images apart.
    """

    def __init__(
        self,
        axes: Sequence[str],
        texts: Sequence[str],
        negatives: Sequence[Sequence[str]] | None,
        tokenizer: Callable[[list[str]], torch.Tensor],
        seed: int,
    ) -> None:
        self.axes = tuple(axes)
        self.combos = [
            tuple(a for k, a in enumerate(self.axes) if mask >> k & 1)
            for mask in range(2 ** len(self.axes))
        ]
        self.text_tokens = torch.stack(
            [tokenizer([self._mirrored(t, combo) for t in texts]) for combo in self.combos]
        )
        self.hard_axis: list[str | None] = [None] * len(texts)
        self.negative_tokens = torch.empty(0, dtype=torch.long)
        if negatives is not None:
            flat = [
                (text, option, relation_axis(text, option))
                for text, options in zip(texts, negatives, strict=True)
                for option in options
            ]
            if flat:
                self.negative_tokens = torch.stack(
                    [
                        tokenizer([self._mirrored_negative(*row, combo) for row in flat])
                        for combo in self.combos
                    ]
                )
            for row, (text, options) in enumerate(zip(texts, negatives, strict=True)):
                found = (relation_axis(text, option) for option in options)
                self.hard_axis[row] = next((a for a in found if a in self.axes), None)
        self.rng = np.random.default_rng([seed, 2])

    @classmethod
    def _mirrored_negative(
        cls, text: str, negative: str, axis: str | None, combo: tuple[str, ...]
    ) -> str:
        """A negative of the pair mirrored by ``combo``. One that changes a relation along a
        mirrored axis becomes the caption itself, mirrored along the other axes only: false
        of the mirrored image, and the pair's two texts trade places ("beneath" against
        "above" becomes "above" against "beneath"), so that no word is more often the
        positive than the negative. Mirroring the negative's words instead would keep a
        prior wherever the generator's converses are not each other's ("beneath" ->
        "above" -> "below")."""
        if axis is not None and axis in combo:
            return cls._mirrored(text, tuple(a for a in combo if a != axis))
        return cls._mirrored(negative, combo)

    @staticmethod
    def _mirrored(text: str, combo: tuple[str, ...]) -> str:
        for axis in combo:
            text = mirror_text(text, axis)
        return text

    def draw(self, n: int) -> torch.Tensor:
        """The mirroring (an index into ``combos``) of each of a step's ``n`` pairs."""
        return torch.from_numpy(self.rng.integers(len(self.combos), size=n))

    def images(self, images: torch.Tensor, drawn: torch.Tensor) -> torch.Tensor:
        drawn = drawn.to(images.device)
        for k, axis in enumerate(self.axes):
            mask = ((drawn >> k) & 1).bool().view(-1, 1, 1, 1)
            images = torch.where(mask, images.flip(_FLIP_DIM[axis]), images)
        return images

    def picked_negative_tokens(
        self, pair_rows: Sequence[Sequence[int]], picked: Sequence[int], drawn: torch.Tensor
    ) -> torch.Tensor:
        """The tokens of a step's ``picked`` negative rows, each mirrored as its pair was
        (``pair_rows``: each pair's negative rows, in batch order, as ``drawn``)."""
        row_drawn = {r: int(drawn[j]) for j, rows in enumerate(pair_rows) for r in rows}
        return self.negative_tokens[
            torch.tensor([row_drawn[r] for r in picked], dtype=torch.long),
            torch.tensor(picked, dtype=torch.long),
        ]

    def hard_images(self, images: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The hard negative images of a step's (mirrored) ``images``, of those pairs that
        have one, in batch order."""
        axes = [self.hard_axis[i] for i in idx.tolist()]
        keep = [j for j, axis in enumerate(axes) if axis is not None]
        chosen = images[keep]
        horizontal = torch.tensor([axes[j] == HORIZONTAL for j in keep], device=images.device).view(
            -1, 1, 1, 1
        )
        return torch.where(horizontal, chosen.flip(-1), chosen.flip(-2))


def train_clip(
    arch: str,
    pairs: pl.DataFrame,
    settings: TrainSettings,
    log: Callable[[str], None] = print,
    on_unreadable: Callable[[int, str], None] | None = None,
    negatives: Sequence[Sequence[str]] | None = None,
    start_from: str | None = None,
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    """Train ``arch`` from scratch on (image, text) pairs; return weights and per-epoch loss.

    An image that fails to decode raises, unless ``on_unreadable`` is given: then its pairs
    are left out before training starts and ``on_unreadable(row, message)`` is called.
    ``negatives`` (NegCLIP-style training, one list per pair, possibly empty): in every step
    each pair with hard negatives contributes ``settings.negatives_per_pair`` of them (0: all),
    drawn from a seeded generator, to the batch's texts (``negclip_loss``); without it the
    loss is CLIP's. ``start_from``: a checkpoint of ``arch`` to fine-tune instead of
    training from scratch.
    """
    _models.check_architecture(arch)
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    torch.use_deterministic_algorithms(True)
    model, preprocess = _models.create_open_clip(arch)
    if start_from is not None:
        try:
            model.load_state_dict(torch.load(start_from, map_location="cpu", weights_only=True))
        except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as error:
            raise ValueError(f"{start_from}: not a checkpoint of {arch}: {error}") from error
    tokenizer = open_clip.get_tokenizer(arch)
    failed: set[int] = set()

    def unreadable(row: int, message: str) -> None:
        failed.add(row)
        if on_unreadable is not None:
            on_unreadable(row, message)

    images = load_images(
        pairs["image"].to_list(), preprocess, unreadable if on_unreadable is not None else None
    )
    texts = [text for row, text in enumerate(pairs["text"].to_list()) if row not in failed]
    if negatives is not None:
        if len(negatives) != pairs.height:
            raise ValueError(f"{len(negatives)} negative lists for {pairs.height} pairs")
        negatives = [options for row, options in enumerate(negatives) if row not in failed]
    n = len(texts)
    if n < settings.batch_size:
        raise ValueError(
            f"{n} pairs with a readable image, fewer than batch_size {settings.batch_size}"
        )
    tokens = tokenizer(texts)
    # Channels-last convolutions are about 1.25x faster on CPU for a ResNet tower (the same
    # arithmetic in another order; a ViT's patch embedding is the only conv it has).
    model = model.to(memory_format=torch.channels_last)
    images = images.contiguous(memory_format=torch.channels_last)
    steps_per_epoch = n // settings.batch_size
    total_steps = steps_per_epoch * settings.epochs
    # fused: one kernel for all parameters, about 10x faster on CPU than the default loop
    # (the 49,408-token embedding is most of the model's parameters).
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay, fused=True
    )
    loss_fn = open_clip.ClipLoss()
    order_rng = torch.Generator().manual_seed(settings.seed)
    if negatives is not None:
        negative_tokens, negative_rows = _negative_rows(negatives, tokenizer)
        negative_rng = np.random.default_rng([settings.seed, 1])
    mirroring = None
    if settings.mirror:
        mirroring = _Mirroring(settings.mirror, texts, negatives, tokenizer, settings.seed)
        log(
            f"mirroring pairs along {', '.join(settings.mirror)}; "
            f"{sum(a is not None for a in mirroring.hard_axis)} of {n} pairs bring a hard "
            "negative image"
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
            if mirroring is None:
                batch_images, batch_tokens = images[idx], tokens[idx]
            else:
                drawn = mirroring.draw(len(idx))
                batch_images = mirroring.images(images[idx], drawn)
                batch_images = batch_images.contiguous(memory_format=torch.channels_last)
                batch_tokens = mirroring.text_tokens[drawn, idx]
            image_features, text_features, logit_scale = model(batch_images, batch_tokens)
            if negatives is None:
                loss = loss_fn(image_features, text_features, logit_scale)
            else:
                pair_rows = [negative_rows[i] for i in idx.tolist()]
                picked = _pick_negatives(pair_rows, settings.negatives_per_pair, negative_rng)
                negative_images = None
                if mirroring is None:
                    picked_tokens = negative_tokens[picked]
                else:
                    picked_tokens = mirroring.picked_negative_tokens(pair_rows, picked, drawn)
                    hard = mirroring.hard_images(batch_images, idx)
                    if len(hard):
                        hard = hard.contiguous(memory_format=torch.channels_last)
                        negative_images = model.encode_image(hard, normalize=True)
                negative_features = (
                    model.encode_text(picked_tokens, normalize=True)
                    if picked
                    else text_features[:0]
                )
                loss = negclip_loss(
                    image_features, text_features, negative_features, logit_scale,
                    negative_images,
                )  # fmt: skip
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
    weights = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    return weights, pl.DataFrame(history)


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
    settings = TrainSettings.from_config(model_entry["train"])
    if (settings.hard_negatives != "none") != (hard_negatives is not None):
        raise ValueError(
            f"models.{model_key}: train.hard_negatives is {settings.hard_negatives!r} but "
            f"{'no' if hard_negatives is None else 'a'} negatives table was given"
        )
    pairs, rejected = _pairs_with_ids(caption_shards, images_root)
    shards = ", ".join(str(s) for s in caption_shards) or "(no shards)"
    if pairs.height == 0:
        reasons = _reason_counts(rejected)
        raise ValueError(
            f"models.{model_key}: no usable (image, caption) pair in the caption shards "
            f"{shards} (images folder: {images_root}); rejected: {reasons or 'no captions'}"
        )
    unreadable: list[int] = []
    log(
        f"training {arch} on {pairs.height} pairs from {len(caption_shards)} caption shard(s) "
        f"({rejected.height} captions rejected: {_reason_counts(rejected)})"
    )

    def record(row: int, message: str) -> None:
        unreadable.append(row)
        log(f"{pairs['image'][row]}: {IMAGE_UNREADABLE}: {message}")

    negatives = None
    if hard_negatives is not None:
        negatives = _negatives_per_pair(pairs, hard_negatives)
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
    n_pairs = pairs.height - len(unreadable)
    save_checkpoint(state, checkpoint)
    write_parquet(losses, history, metadata=_models.provenance(model=model_key, arch=arch))
    write_parquet(rejected, rejected_out, metadata=_models.provenance(model=model_key))
    write_json(
        {
            "model": model_key,
            "arch": arch,
            "train": model_entry["train"],
            "start_from": None if start_from is None else _models.file_sha256(start_from),
            "caption_shards": [str(s) for s in caption_shards],
            "images": images_root,
            "n_pairs": n_pairs,
            "n_rejected": rejected.height,
            "rejected_reasons": _reason_counts(rejected),
            "final_loss": losses["mean_loss"][-1],
            "checkpoint_sha256": _models.file_sha256(checkpoint),
            "versions": _models.provenance(),
        },
        info,
    )


def _negatives_per_pair(pairs: pl.DataFrame, table: str) -> list[list[str]]:
    """Each pair's hard negative texts, in the table's order (an empty list: none)."""
    schema = pl.read_parquet_schema(table)
    missing = [c for c in ("caption_id", "negative") if c not in schema]
    if missing:
        raise ValueError(f"{table}: not a training negatives table, missing column(s) {missing}")
    negatives = pl.read_parquet(table, columns=["caption_id", "negative"])
    by_caption: dict[str, list[str]] = {}
    for caption_id, text in negatives.iter_rows():
        by_caption.setdefault(caption_id, []).append(text)
    return [by_caption.get(caption_id, []) for caption_id in pairs["caption_id"].to_list()]


def _reason_counts(rejected: pl.DataFrame) -> dict[str, int]:
    return dict(sorted(Counter(rejected["reason"].to_list()).items()))
