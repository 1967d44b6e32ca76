"""Hugging Face model resolution for the transformer scorers: local first, fail fast."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch


class ModelNotAvailableError(RuntimeError):
    """A scorer's model is neither a local directory nor in the local Hugging Face cache."""


@dataclass(frozen=True)
class ResolvedModel:
    directory: Path
    label: str  # the hub id, or the directory's name
    revision: str  # the hub commit, or sha256 of the directory's files

    def tag(self) -> str:
        return f"{self.label}@{self.revision[:12]}"


def directory_sha256(directory: Path) -> str:
    """sha256 over the relative names and bytes of every file below ``directory``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or model.count("/") > 1


def resolve_model(model: str) -> ResolvedModel:
    """A local directory (``save_pretrained`` output) or a hub id already in the local cache.

    Never downloads: a missing model raises at once with what to do, instead of the retries
    ``from_pretrained`` makes when the hub cannot be reached.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return ResolvedModel(path, path.resolve().name, directory_sha256(path))
    if _looks_like_path(model):
        raise ModelNotAvailableError(f"model directory '{model}' does not exist")
    from huggingface_hub import constants, snapshot_download

    try:
        local = Path(snapshot_download(repo_id=model, local_files_only=True))
    except Exception as error:  # LocalEntryNotFoundError, HFValidationError, ...
        raise ModelNotAvailableError(
            f"model '{model}' is not a local directory and is not in the local Hugging Face "
            f"cache ({constants.HF_HUB_CACHE}). On a machine with network access run "
            f"`hf download {model}` and copy the cache here (or point HF_HUB_CACHE at it), "
            "or set the scorer's `model` to a directory written by save_pretrained. "
            f"({type(error).__name__}: {error})"
        ) from error
    return ResolvedModel(local, model, local.name)


def torch_dtype(name: str) -> torch.dtype:
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in dtypes:
        raise ValueError(f"dtype must be one of {sorted(dtypes)}, got '{name}'")
    return dtypes[name]


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def length_sorted_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (less padding), longest first."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
