"""The image index, image files and crops, and the embedding cache: what an evaluation
needs of images and stored vectors without a model (nothing here imports torch).

Image files are never guessed from ids: every evaluation looks an eval set's image_id up in
its image index (``results/eval_sets/{evalset}/images.parquet``, ``IMAGE_INDEX_SCHEMA``).
Items whose image is not usable (status missing / unreadable, an id the index lacks, or a
file that fails to decode while embedding) are left out of the metrics and listed in an
``EXCLUDED_SCHEMA`` table.

Images may be crops: an ``ImageRef`` is a file and an optional box (x, y, width, height),
cut with PIL before preprocessing. A crop's embedding is cached under
``crop_key(image sha256, box)``; a whole image under the image sha256 alone.

Embeddings are keyed by (model fingerprint, sha256 of the image bytes or of the UTF-8
text: ``contracts.text_key``). The cache is a folder of Parquet shards per model; a rerun,
or a text shared by several candidate sets, is embedded once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from PIL import Image
from tqdm import tqdm

from vlcomp.io import write_parquet

Log = Callable[[str], None]
Box = tuple[int, int, int, int]  # x, y, width, height in pixels

EMBEDDING_COLUMNS = ("key", "embedding")

OK, MISSING, UNREADABLE = "ok", "missing", "unreadable"
IMAGE_INDEX_SCHEMA: dict[str, pl.DataType] = {
    "image_id": pl.String,
    "path": pl.String,  # null unless status is ok
    "status": pl.String,  # ok, missing, unreadable
    "detail": pl.String,
}
EXCLUDED_SCHEMA: dict[str, pl.DataType] = {
    "part": pl.String,  # the benchmark part the item belongs to (null: none)
    "item_id": pl.String,
    "image_id": pl.String,
    "status": pl.String,  # missing or unreadable
    "detail": pl.String,
}


def progress_bar(label: str) -> Callable[[int, int], None]:
    """A tqdm bar (on stderr, i.e. the job log) updated with (done, total)."""
    bar: dict[str, tqdm] = {}

    def update(done: int, total: int) -> None:
        if label not in bar:
            bar[label] = tqdm(total=total, desc=label, mininterval=2.0)
        bar[label].n = done
        bar[label].refresh()
        if done >= total:
            bar[label].close()

    return update


# --------------------------------------------------------------------------- image index


@dataclass(frozen=True)
class ImageStatus:
    path: str | None
    status: str
    detail: str | None


def read_image_index(path: str | Path) -> dict[str, ImageStatus]:
    """image_id -> path, status and detail from an ``IMAGE_INDEX_SCHEMA`` table."""
    table = pl.read_parquet(path)
    missing = [c for c in IMAGE_INDEX_SCHEMA if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: image index lacks column(s) {missing}")
    table = table.select([pl.col(c).cast(t) for c, t in IMAGE_INDEX_SCHEMA.items()])
    if table["image_id"].is_duplicated().any():
        raise ValueError(f"{path}: duplicate image_id in the image index")
    bad = table.filter((pl.col("status") == OK) & pl.col("path").is_null())
    if bad.height:
        raise ValueError(f"{path}: image {bad['image_id'][0]!r} is ok but has no path")
    return {
        image_id: ImageStatus(path if status == OK else None, status, detail)
        for image_id, path, status, detail in table.iter_rows()
    }


def lookup_images(
    image_ids: Iterable[str | None], index: Mapping[str, ImageStatus]
) -> tuple[dict[str, str], dict[str | None, tuple[str, str]]]:
    """Usable image_id -> path, and the others -> (status, detail). An id the index lacks is
    ``missing``, as is a null id."""
    usable: dict[str, str] = {}
    problems: dict[str | None, tuple[str, str]] = {}
    for image_id in set(image_ids):
        entry = index.get(image_id) if image_id is not None else None
        if image_id is None:
            problems[None] = (MISSING, "the item has no image")
        elif entry is None:
            problems[image_id] = (MISSING, "not in the image index")
        elif entry.status == OK and entry.path is not None:
            usable[image_id] = entry.path
        else:
            problems[image_id] = (entry.status, entry.detail or "")
    return usable, problems


def excluded_frame(rows: Iterable[tuple[Any, ...]]) -> pl.DataFrame:
    """``EXCLUDED_SCHEMA`` frame from (part, item_id, image_id, status, detail) tuples."""
    frame = pl.DataFrame(list(rows), schema=EXCLUDED_SCHEMA, orient="row")
    return frame.sort("part", "item_id", nulls_last=False)


def log_excluded(excluded: pl.DataFrame, total: int, log: Log) -> None:
    """Say how many of ``total`` items were left out, by status, with an example each."""
    if not excluded.height:
        log(f"all {total} items have a usable image")
        return
    log(f"excluded {excluded.height} of {total} items whose image is not usable:")
    for (status,), group in sorted(excluded.group_by(["status"]), key=lambda g: str(g[0])):
        row = group.row(0, named=True)
        log(
            f"  {status}: {group.height} items, {group['image_id'].n_unique()} images "
            f"(e.g. item {row['item_id']!r}, image {row['image_id']!r}: {row['detail']})"
        )


# --------------------------------------------------------------------------- images and crops


class UnreadableImageError(Exception):
    """An image file that cannot be read or decoded."""


@dataclass(frozen=True)
class ImageRef:
    """An image file and an optional region of it."""

    path: str
    box: Box | None = None


def image_key(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def crop_key(image_sha: str, box: Box | None) -> str:
    """Cache key of an image region: the image's sha256, plus the box when there is one."""
    if box is None:
        return image_sha
    x, y, width, height = box
    return f"{image_sha}@{x},{y},{width},{height}"


def crop(image: Image.Image, box: Box | None) -> Image.Image:
    """Cut ``box`` (x, y, width, height) out of ``image``, clipped to the image."""
    if box is None:
        return image
    x, y, width, height = box
    left, top = max(0, x), max(0, y)
    right, bottom = min(image.width, x + width), min(image.height, y + height)
    if width <= 0 or height <= 0 or right <= left or bottom <= top:
        raise ValueError(f"box {box} is empty or outside the {image.width}x{image.height} image")
    return image.crop((left, top, right, bottom))


def open_rgb(path: str | Path) -> Image.Image:
    """The decoded RGB image; ``UnreadableImageError`` when it cannot be read or decoded."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise UnreadableImageError(f"{type(error).__name__}: {error}") from error


# --------------------------------------------------------------------------- cache


class EmbeddingCache:
    """Append-only Parquet shards: ``<dir>/<modality>-<digest>.parquet`` with key, embedding."""

    def __init__(self, directory: str | Path, modality: str) -> None:
        self.directory = Path(directory)
        self.modality = modality
        self._vectors: dict[str, np.ndarray] = {}
        for shard in sorted(self.directory.glob(f"{modality}-*.parquet")):
            frame = pl.read_parquet(shard)
            for key, vector in zip(frame["key"], frame["embedding"], strict=True):
                self._vectors[key] = np.asarray(vector, dtype=np.float32)

    def __contains__(self, key: str) -> bool:
        return key in self._vectors

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: str) -> np.ndarray:
        return self._vectors[key]

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        for key, vector in zip(keys, vectors, strict=True):
            self._vectors[key] = vector
        digest = hashlib.sha256("".join(sorted(keys)).encode()).hexdigest()[:16]
        write_parquet(
            embedding_frame(list(keys), vectors),
            self.directory / f"{self.modality}-{digest}.parquet",
        )


def embedding_frame(keys: list[str], vectors: np.ndarray) -> pl.DataFrame:
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    return pl.DataFrame(
        {"key": keys, "embedding": vectors.astype(np.float32)},
        schema={"key": pl.String, "embedding": pl.Array(pl.Float32, dim)},
    )
