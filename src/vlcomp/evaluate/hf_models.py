"""Hugging Face transformers models next to open_clip ones (``models.<key>.transformers``):
the part that needs no torch (the config check and the workflow import it when they parse).

An entry names a model folder (a local directory, or a hub id at a pinned revision whose
snapshot is in the local Hugging Face cache; nothing is downloaded) and a ``kind``. A
``dual_encoder`` (CLIPModel, SiglipModel, AltCLIPModel, ...: anything ``AutoModel`` loads
that has ``get_image_features`` / ``get_text_features``) is loaded by
``models.load_dual_encoder`` and wrapped as ``models.DualEncoder``, a module with open_clip's
``encode_image`` / ``encode_text``, so that embedding, caches, rankers and metrics use it
unchanged. ``IMPLEMENTED_KINDS`` lists the kinds ``models.TRANSFORMERS_LOADERS`` loads:
models that score an (image, text) pair jointly (matching heads, VQAScore) get an entry in
both; until then a config naming them fails saying they are not implemented yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DUAL_ENCODER = "dual_encoder"
IMPLEMENTED_KINDS = (DUAL_ENCODER,)
# Kinds a config may be tempted to name, which score pairs rather than embed each side.
NOT_YET_IMPLEMENTED = ("matching_head", "vqascore")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


DEFAULT_CONTEXT_LENGTH = 77  # CLIP's


class TransformersModelError(RuntimeError):
    """A transformers model entry that cannot be loaded; models.py re-raises it as
    ``ModelUnavailableError``."""


def is_local_model_id(model_id: str) -> bool:
    """A folder path (absolute, ./, ../, ~, or an existing folder) rather than a hub id."""
    return model_id.startswith(("/", "./", "../", "~")) or Path(model_id).expanduser().is_dir()


def transformers_config_file(
    model_id: str, revision: str | None = None, cache_dir: str | None = None
) -> Path | None:
    """The model's config.json on this machine: in the folder, or in the local HF cache's
    snapshot of ``revision``; None when it is not here."""
    if is_local_model_id(model_id):
        path = Path(model_id).expanduser() / "config.json"
        return path if path.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, "config.json", cache_dir=cache_dir, revision=revision)
    return Path(found) if isinstance(found, str) else None


def transformers_context_length(
    model_id: str, revision: str | None = None, cache_dir: str | None = None
) -> int:
    """The text tower's context: ``text_config.max_position_embeddings`` of config.json
    (77, CLIP's, when the config is not here or gives none). No torch."""
    path = transformers_config_file(model_id, revision, cache_dir)
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path else {}
    text = config.get("text_config") or {}
    return int(text.get("max_position_embeddings", DEFAULT_CONTEXT_LENGTH))


@dataclass(frozen=True)
class TransformersSource:
    """``models.<key>.transformers``: ``id`` a local folder or a hub id, ``revision`` the
    pinned hub revision (required for a hub id), ``cache_dir`` the HF cache to look in."""

    id: str
    kind: str
    revision: str | None = None
    cache_dir: str | None = None

    @staticmethod
    def from_entry(entry: dict[str, Any], cache_dir: str | None = None) -> TransformersSource:
        """From a ``models.<key>.transformers`` block (``cache_dir``: the model's)."""
        return TransformersSource(
            id=str(entry["id"]),
            kind=str(entry["kind"]),
            revision=entry.get("revision"),
            cache_dir=cache_dir,
        )

    @property
    def local(self) -> bool:
        return is_local_model_id(self.id)

    @property
    def label(self) -> str:
        return self.id if self.local or not self.revision else f"{self.id}@{self.revision}"


def kind_problem(kind: str) -> str | None:
    """Why a ``transformers.kind`` cannot be used (None: it can)."""
    if kind in IMPLEMENTED_KINDS:
        return None
    known = ", ".join(IMPLEMENTED_KINDS)
    if kind in NOT_YET_IMPLEMENTED:
        return f"kind '{kind}' is not implemented yet (implemented: {known})"
    return f"'{kind}' is not a known kind (implemented: {known})"


def source_problem(key: str, source: TransformersSource) -> tuple[str, str] | None:
    """(config key, reason) of a problem of the entry the config check sees: an unknown or
    unimplemented kind, a missing folder, an unpinned hub id. None: none."""
    where = f"models.{key}.transformers"
    problem = kind_problem(source.kind)
    if problem:
        return f"{where}.kind", problem
    if source.local:
        if not Path(source.id).expanduser().is_dir():
            return f"{where}.id", f"folder not found: {source.id}"
    elif not source.revision:
        return (
            f"{where}.revision",
            f"a hub id ({source.id}) needs a pinned revision (a commit hash), so that a rerun "
            "evaluates the same weights",
        )
    return None


def model_directory(key: str, source: TransformersSource) -> Path:
    """The folder the model loads from: the local one, or the hub snapshot of the pinned
    revision in the local cache. ``TransformersModelError`` saying what to download when
    its config or weights are not on this machine."""
    problem = source_problem(key, source)
    if problem:
        raise TransformersModelError(f"{problem[0]}: {problem[1]}")
    config = transformers_config_file(source.id, source.revision, source.cache_dir)
    if config is None:
        if source.local:
            raise TransformersModelError(
                f"models.{key}.transformers.id: {source.id} has no config.json (save the "
                "model there with save_pretrained, or download it with its processor files)"
            )
        raise TransformersModelError(
            f"models.{key}: {source.id} at revision {source.revision} is not in the local "
            "Hugging Face cache (HF_HUB_OFFLINE=1, nothing is downloaded). On a machine with "
            f"internet run `huggingface-cli download {source.id} --revision {source.revision}` "
            "and copy the cache (~/.cache/huggingface/hub) here, or set "
            "models.<key>.transformers.id to a local folder."
        )
    directory = config.parent
    weight_files(key, directory)
    return directory


def weight_files(key: str, directory: Path) -> list[Path]:
    """The weight files of a model folder (one file, or the shards an index names)."""
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return [directory / name]
    for name in WEIGHT_INDEXES:
        index = directory / name
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            missing = [s for s in shards if not (directory / s).is_file()]
            if missing:
                raise TransformersModelError(
                    f"models.{key}: {directory} lacks weight shard(s) {', '.join(missing)} "
                    f"named in {name}"
                )
            return [directory / s for s in shards]
    raise TransformersModelError(
        f"models.{key}: {directory} has no weights ({' or '.join(WEIGHT_FILES + WEIGHT_INDEXES)})"
    )


def weights_sha256(files: Sequence[Path], chunk: int = 1 << 20) -> str:
    """sha256 of the weights: of the one file, or of the shards' names and digests."""
    digests = []
    for path in files:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(chunk):
                digest.update(block)
        digests.append(digest.hexdigest())
    if len(digests) == 1:
        return digests[0]
    combined = hashlib.sha256()
    for path, digest in zip(files, digests, strict=True):
        combined.update(f"{path.name}:{digest}\n".encode())
    return combined.hexdigest()
