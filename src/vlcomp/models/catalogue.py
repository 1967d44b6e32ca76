"""The model catalogue, without torch: what a ``models.<key>`` entry names (``ModelSpec``),
where the project's open_clip architectures live, the weights' identity, and every text
tower's context length, read from the model configs without importing open_clip or torch
(the workflow resolves ``negatives.context_length: auto`` while it parses).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlcomp.models.hf_models import TransformersSource, transformers_context_length

MODEL_CONFIG_DIR = Path(__file__).parent / "model_configs"
AUTO = "auto"
DEFAULT_CONTEXT_LENGTH = 77  # CLIP's (open_clip's default when a config gives none)
LOCAL_DIR, HF_HUB = "local-dir:", "hf-hub:"
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class ModelUnavailableError(RuntimeError):
    """A model spec that cannot be loaded on this machine (offline), with what to do about it."""


@dataclass(frozen=True)
class ModelSpec:
    key: str
    arch: str
    pretrained: str | None = None
    checkpoint: str | None = None
    cache_dir: str | None = None
    transformers: TransformersSource | None = None

    @staticmethod
    def from_config(key: str, entry: dict[str, Any], checkpoint: str | None = None) -> ModelSpec:
        """Build a spec from a ``models.<key>`` config entry (its train block and
        training_corpora are not read).

        ``checkpoint`` overrides the entry's own (used for models the workflow trains).
        """
        from vlcomp.settings import settings_from

        where, cache_dir = f"models.{key}", entry.get("cache_dir")
        if "transformers" in entry:
            source = TransformersSource.from_entry(
                entry["transformers"], cache_dir, f"{where}.transformers"
            )
            name = Path(source.id).name if source.local else source.id
            spec = {"arch": f"hf:{name}", "transformers": source}
        else:
            spec = {
                "arch": entry["open_clip"],
                "pretrained": entry.get("pretrained"),
                "checkpoint": checkpoint or entry.get("checkpoint"),
            }
        return settings_from(ModelSpec, {"key": key, "cache_dir": cache_dir, **spec}, where)

    @property
    def source(self) -> str:
        if self.transformers is not None:
            return self.transformers.label
        return self.checkpoint if self.checkpoint else f"{self.pretrained}"


class PrecisionError(ValueError):
    """A precision the device cannot run (e.g. fp16 on a CPU)."""


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def model_fingerprint(spec: ModelSpec) -> str:
    """Identity of the weights, used to key embedding caches."""
    if spec.checkpoint:
        return f"{spec.arch}@sha256:{file_sha256(spec.checkpoint)[:16]}"
    return f"{spec.arch}@{spec.pretrained}"


def _config_dirs() -> list[Path]:
    """Where model configs are looked up: ours first (open_clip lets a registered config
    replace its own of the same name), then open_clip's; find_spec does not import it."""
    dirs = [MODEL_CONFIG_DIR]
    spec = importlib.util.find_spec("open_clip")
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(p) / "model_configs" for p in spec.submodule_search_locations]
    return dirs


def model_config(arch: str, cache_dir: str | None = None) -> dict[str, Any] | None:
    """The open_clip model config of ``arch`` (a built-in or registered name,
    ``local-dir:<folder>`` or ``hf-hub:<repo>`` with its config in the local cache), or
    None when this machine has none."""
    if arch.startswith(LOCAL_DIR):
        path = Path(arch[len(LOCAL_DIR) :]) / "open_clip_config.json"
        if not path.is_file():
            return None
        config = json.loads(path.read_text(encoding="utf-8"))
        return config.get("model_cfg", config)
    if arch.startswith(HF_HUB):
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(
            arch[len(HF_HUB) :], "open_clip_config.json", cache_dir=cache_dir
        )
        if not isinstance(found, str):
            return None
        config = json.loads(Path(found).read_text(encoding="utf-8"))
        return config.get("model_cfg", config)
    for folder in _config_dirs():
        path = folder / f"{arch}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return None


def context_length_of(arch: str, cache_dir: str | None = None) -> int:
    """The text tower's context length of an open_clip architecture (77 when unknown)."""
    config = model_config(arch, cache_dir) or {}
    return int((config.get("text_cfg") or {}).get("context_length", DEFAULT_CONTEXT_LENGTH))


def resolve_context_length(
    setting: int | str, models: Mapping[str, Mapping[str, Any]], evaluated: Sequence[str]
) -> int:
    """``negatives.context_length``: an integer as it is; ``auto``: the smallest context
    length among the evaluated models' text towers (``models``: the ``models`` config,
    ``evaluated``: ``evaluate.models``), 77 without any."""
    if setting != AUTO:
        if isinstance(setting, bool) or not isinstance(setting, int) or setting < 3:
            raise ValueError(
                f"negatives.context_length must be 'auto' or an integer >= 3 (start, one "
                f"token, end), got {setting!r}"
            )
        return setting
    lengths = []
    for key in evaluated:
        if key not in models:
            raise ValueError(f"evaluate.models names {key!r}, which is not under models")
        entry = models[key]
        if "transformers" in entry:
            hf = entry["transformers"]
            lengths.append(
                transformers_context_length(hf["id"], hf.get("revision"), entry.get("cache_dir"))
            )
        else:
            lengths.append(context_length_of(entry["open_clip"], entry.get("cache_dir")))
    return min(lengths, default=DEFAULT_CONTEXT_LENGTH)
