"""Loading CLIP-style models from a config spec, the same way for every source.

A model is an open_clip architecture name plus *either* a pretrained tag (weights that
open_clip resolves from its cache) *or* a checkpoint path (a state_dict, e.g. the world
model this workflow trains). Both go through ``open_clip.create_model_and_transforms``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# huggingface_hub reads this at import time; without it a missing pretrained weight retries
# for ~47 s before failing. Users who want downloads set HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import open_clip  # noqa: E402
import torch  # noqa: E402

from vlcomp import __version__  # noqa: E402

MODEL_CONFIG_DIR = Path(__file__).parent / "model_configs"
open_clip.add_model_config(MODEL_CONFIG_DIR)


class ModelUnavailableError(RuntimeError):
    """A model spec that cannot be loaded on this machine (offline), with what to do about it."""


@dataclass(frozen=True)
class ModelSpec:
    key: str
    arch: str
    pretrained: str | None = None
    checkpoint: str | None = None
    cache_dir: str | None = None

    @staticmethod
    def from_config(key: str, entry: dict[str, Any], checkpoint: str | None = None) -> ModelSpec:
        """Build a spec from a ``models.<key>`` config entry.

        ``checkpoint`` overrides the entry's own (used for models the workflow trains).
        """
        return ModelSpec(
            key=key,
            arch=entry["open_clip"],
            pretrained=entry.get("pretrained"),
            checkpoint=checkpoint or entry.get("checkpoint"),
            cache_dir=entry.get("cache_dir"),
        )

    @property
    def source(self) -> str:
        return self.checkpoint if self.checkpoint else f"{self.pretrained}"


PRECISIONS = ("auto", "fp32", "bf16", "fp16")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class PrecisionError(ValueError):
    """A precision the device cannot run (e.g. fp16 on a CPU)."""


def resolve_precision(requested: str, device: torch.device) -> str:
    """The precision embeddings are computed in: ``fp32``, ``bf16`` or ``fp16``.

    ``auto``: bf16 on a CUDA device that supports it, else fp16 on CUDA; fp32 on a CPU.
    Mixed precision is only used on CUDA: asking for bf16 / fp16 on a CPU (or bf16 on a GPU
    without it) raises ``PrecisionError`` rather than silently computing something else.
    fp32 on CUDA disables TF32, so that it is float32 arithmetic throughout."""
    if requested not in PRECISIONS:
        raise PrecisionError(
            f"precision {requested!r} is not one of {', '.join(PRECISIONS)} (evaluate.precision)"
        )
    if device.type != "cuda":
        if requested in ("auto", "fp32"):
            return "fp32"
        raise PrecisionError(
            f"evaluate.precision {requested!r} needs a CUDA device, but embeddings run on "
            f"{device}; mixed precision is only used on GPUs. Set evaluate.precision to auto "
            "(fp32 on a CPU, bf16 or fp16 on a GPU) or fp32."
        )
    bf16 = torch.cuda.is_bf16_supported()
    if requested == "auto":
        return "bf16" if bf16 else "fp16"
    if requested == "bf16" and not bf16:
        raise PrecisionError(
            f"evaluate.precision 'bf16': {torch.cuda.get_device_name(device)} does not support "
            "bfloat16; use fp16, fp32 or auto."
        )
    return requested


@dataclass
class LoadedModel:
    """A model ready to embed. ``precision`` (fp32, bf16, fp16: resolved, never auto) is the
    arithmetic of its forward passes; ``workers`` the image-decoding worker processes of
    ``embed.embed_image_refs`` (0: decode in this process)."""

    spec: ModelSpec
    model: torch.nn.Module
    preprocess: Any
    tokenizer: Any
    fingerprint: str
    precision: str = "fp32"
    workers: int = 0

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The context forward passes run in: CUDA autocast for bf16 / fp16, else nothing."""
        if self.precision in AUTOCAST_DTYPES:
            return torch.autocast("cuda", dtype=AUTOCAST_DTYPES[self.precision])
        return contextlib.nullcontext()


def known_architectures() -> list[str]:
    return list(open_clip.list_models())


def check_architecture(arch: str) -> None:
    if arch not in open_clip.list_models():
        close = [m for m in open_clip.list_models() if arch.lower() in m.lower()][:5]
        hint = f" Similar names: {', '.join(close)}." if close else ""
        raise ModelUnavailableError(f"open_clip has no architecture named '{arch}'.{hint}")


def resolve_pretrained(arch: str, tag: str, cache_dir: str | None = None) -> str:
    """Return the local path of the weights for ``arch``/``tag`` without downloading.

    Raises ModelUnavailableError, quickly, when the weights are not in the local cache.
    """
    check_architecture(arch)
    cfg = open_clip.get_pretrained_cfg(arch, tag)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise ModelUnavailableError(
            f"open_clip has no pretrained tag '{tag}' for '{arch}' (known tags: {', '.join(tags)})."
        )
    if "file" in cfg:
        return str(cfg["file"])
    hub = cfg.get("hf_hub", "")
    if hub and os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "false", "False"):
        from huggingface_hub import try_to_load_from_cache

        parts = hub.rstrip("/").split("/")
        repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
        names = [filename] if filename else []
        names += ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        for name in names:
            found = try_to_load_from_cache(repo_id, name, cache_dir=cache_dir)
            if isinstance(found, str):
                return found
        raise ModelUnavailableError(
            f"pretrained weights for {arch}/{tag} are not in the local Hugging Face cache "
            f"(HF_HUB_OFFLINE=1, nothing is downloaded). On a machine with internet run "
            f"`huggingface-cli download {repo_id}` and copy the cache "
            f"(~/.cache/huggingface/hub) here, or set models.<key>.checkpoint to a local "
            f"state_dict file instead of a pretrained tag."
        )
    url = cfg.get("url", "")
    if url:
        target = Path(cache_dir or Path.home() / ".cache" / "clip") / os.path.basename(url)
        if target.is_file():
            return str(target)
        raise ModelUnavailableError(
            f"pretrained weights for {arch}/{tag} are not at {target}; download {url} there "
            "on a machine with internet, or set models.<key>.checkpoint to a local file."
        )
    raise ModelUnavailableError(f"no download location is known for {arch}/{tag}.")


def check_available(spec: ModelSpec, produced_by_workflow: bool = False) -> None:
    """Fail fast (before any job runs) when a spec cannot be loaded offline."""
    check_architecture(spec.arch)
    if (spec.pretrained is None) == (spec.checkpoint is None):
        raise ModelUnavailableError(
            f"models.{spec.key}: give exactly one of 'pretrained' (an open_clip tag) or "
            "'checkpoint' (a path)."
        )
    if spec.pretrained is not None:
        resolve_pretrained(spec.arch, spec.pretrained, spec.cache_dir)
    elif not produced_by_workflow and not Path(spec.checkpoint or "").is_file():
        raise ModelUnavailableError(
            f"models.{spec.key}.checkpoint: file not found: {spec.checkpoint}"
        )


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


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def load_model(spec: ModelSpec, device: str = "auto", precision: str = "fp32") -> LoadedModel:
    """Load ``spec`` on ``device`` (auto: CUDA if available) to embed in ``precision``
    (see ``resolve_precision``; fp32 by default). Weights stay float32; bf16 / fp16 run
    through autocast."""
    check_available(spec)
    torch_device = pick_device(device)
    resolved = resolve_precision(precision, torch_device)
    weights = (
        spec.checkpoint
        if spec.checkpoint
        else resolve_pretrained(spec.arch, spec.pretrained or "", spec.cache_dir)
    )
    if torch_device.type == "cuda" and resolved == "fp32":
        # fp32 means fp32: no TF32 in matmuls or convolutions (both are allowed by default
        # for cuDNN convolutions, and would make GPU fp32 differ from CPU fp32 by ~1e-3).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            spec.arch, pretrained=weights, device=torch_device
        )
    except Exception as error:  # open_clip raises many types; name the spec in every case
        raise ModelUnavailableError(
            f"models.{spec.key}: could not load {spec.arch} from {weights}: {error}"
        ) from error
    model.eval()
    return LoadedModel(
        spec=spec,
        model=model,
        preprocess=preprocess,
        tokenizer=open_clip.get_tokenizer(spec.arch),
        fingerprint=model_fingerprint(spec),
        precision=resolved,
    )


def library_versions() -> dict[str, str]:
    import torchvision

    return {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "open_clip": open_clip.__version__,
    }


def provenance(**extra: str) -> dict[str, str]:
    """Key-value metadata written into every Parquet file a model stage produces."""
    return {"vlcomp": __version__, **library_versions(), **extra}


def availability_job(model_key: str, model_entry: dict, out: str | Path, log=print) -> None:
    """Job: check that a pretrained model's weights are in the local cache (fails fast,
    before any embedding job, naming the key and what to download)."""
    from vlcomp.io import write_json

    spec = ModelSpec.from_config(model_key, model_entry)
    check_available(spec)
    location = resolve_pretrained(spec.arch, spec.pretrained, spec.cache_dir)
    log(f"{model_key}: {spec.arch}/{spec.pretrained} weights at {location}")
    write_json({"model": model_key, "arch": spec.arch, "pretrained": spec.pretrained}, out)
