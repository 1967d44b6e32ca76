"""Batched image and text embedding with a content-hash cache.

Embeddings are keyed by (model fingerprint, sha256 of the image bytes or of the UTF-8
text). The cache is a folder of Parquet shards per model; a rerun, or a text shared by
several candidate sets, is embedded once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl
import torch
from PIL import Image

from vlcomp.io import write_parquet
from vlcomp.evaluate.models import LoadedModel

EMBEDDING_COLUMNS = ("key", "embedding")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def image_key(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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


@torch.no_grad()
def _encode_batches(
    items: Sequence[object],
    encode: Callable[[Sequence[object]], torch.Tensor],
    batch_size: int,
    progress: Callable[[int, int], None] | None,
) -> np.ndarray:
    chunks = []
    for start in range(0, len(items), batch_size):
        features = encode(items[start : start + batch_size])
        features = features / features.norm(dim=-1, keepdim=True)
        chunks.append(features.float().cpu().numpy())
        if progress:
            progress(min(start + batch_size, len(items)), len(items))
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)


def cached_embed(
    keys: list[str],
    items: Sequence[object],
    encode: Callable[[Sequence[object]], torch.Tensor],
    cache: EmbeddingCache | None,
    batch_size: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[np.ndarray, int]:
    """Embed the items whose keys the cache lacks; return all vectors and the count computed."""
    unique: dict[str, object] = {}
    for key, item in zip(keys, items, strict=True):
        if (cache is None or key not in cache) and key not in unique:
            unique[key] = item
    new_keys = sorted(unique)
    vectors = _encode_batches([unique[k] for k in new_keys], encode, batch_size, progress)
    fresh = dict(zip(new_keys, vectors, strict=True))
    if cache is not None:
        cache.add(new_keys, vectors)
    out = np.stack([fresh[k] if k in fresh else cache.get(k) for k in keys]) if keys else vectors
    return out.astype(np.float32), len(new_keys)


def embed_texts(
    loaded: LoadedModel,
    texts: Sequence[str],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, int]:
    device = next(loaded.model.parameters()).device

    def encode(batch: Sequence[object]) -> torch.Tensor:
        return loaded.model.encode_text(loaded.tokenizer(list(batch)).to(device))

    return cached_embed([text_key(t) for t in texts], texts, encode, cache, batch_size, progress)


def embed_images(
    loaded: LoadedModel,
    paths: Sequence[str],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, int]:
    device = next(loaded.model.parameters()).device

    def encode(batch: Sequence[object]) -> torch.Tensor:
        tensors = []
        for path in batch:
            with Image.open(str(path)) as image:
                tensors.append(loaded.preprocess(image.convert("RGB")))
        return loaded.model.encode_image(torch.stack(tensors).to(device))

    keys = [image_key(p) for p in paths]
    return cached_embed(keys, list(paths), encode, cache, batch_size, progress)
