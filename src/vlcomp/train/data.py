"""What a model trains on, independent of any training settings: a corpus's caption shards
(``contracts.CAPTIONS_SCHEMA``) turned into (image file, caption) pairs, the captions that
cannot be used with the reason why, the decoded images, and each pair's hard negatives."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import torch
from PIL import Image

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
    pairs, rejected = pairs_with_ids(caption_shards, images_root)
    return pairs.drop("image_id"), rejected


def pairs_with_ids(
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


def reason_counts(rejected: pl.DataFrame) -> dict[str, int]:
    """How many captions of a rejected table each reason left out, by reason."""
    return dict(sorted(Counter(rejected["reason"].to_list()).items()))


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


def negatives_per_pair(pairs: pl.DataFrame, table: str | Path) -> list[list[str]]:
    """Each pair's hard negative texts from a training negatives table (caption_id, negative;
    the ``negatives`` stage writes it), in the table's order (an empty list: none)."""
    schema = pl.read_parquet_schema(table)
    missing = [c for c in ("caption_id", "negative") if c not in schema]
    if missing:
        raise ValueError(f"{table}: not a training negatives table, missing column(s) {missing}")
    negatives = pl.read_parquet(table, columns=["caption_id", "negative"])
    by_caption: dict[str, list[str]] = {}
    for caption_id, text in negatives.iter_rows():
        by_caption.setdefault(caption_id, []).append(text)
    return [by_caption.get(caption_id, []) for caption_id in pairs["caption_id"].to_list()]
