"""Loading CLIP-style models from a config spec, the same way for every source.

A model is an open_clip architecture name plus *either* a pretrained tag (weights that
open_clip resolves from its cache) *or* a checkpoint path (a state_dict, e.g. the world
model this workflow trains). Both go through ``open_clip.create_model_and_transforms``.

Or a transformers model (``models.<key>.transformers``, see ``hf_models``): a ``dual_encoder``
is loaded with ``AutoModel`` / ``AutoImageProcessor`` / ``AutoTokenizer`` and wrapped as
``DualEncoder`` (open_clip's ``encode_image`` / ``encode_text``), its preprocessing and
tokenizer the processor's; the rest of the evaluation treats it like an open_clip model.
A ``matching_head`` or ``vqascore`` is loaded by ``models.joint`` as a ``PairScorer``
(it scores (image, text) pairs; the evaluation scores it through ``evaluate.scoring``'s
``JointScorer``, an embedding model through its ``EmbeddingScorer``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# huggingface_hub reads this at import time; without it a missing pretrained weight retries
# for ~47 s before failing. Users who want downloads set HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import open_clip  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from vlcomp.models import hf_models  # noqa: E402
from vlcomp.models.catalogue import (  # noqa: E402
    MODEL_CONFIG_DIR,
    ModelSpec,
    ModelUnavailableError,
    model_fingerprint,
)
from vlcomp.models.dual_encoder import load_dual_encoder  # noqa: E402
from vlcomp.models.hf_models import TransformersModelError, TransformersSource  # noqa: E402
from vlcomp.models.joint import LOADERS as JOINT_LOADERS  # noqa: E402
from vlcomp.models.parts import LoadedModel, LoadedParts, resolve_precision  # noqa: E402
from vlcomp.models.towers import GRID_POOL_ARCHITECTURES, with_grid_pool  # noqa: E402

open_clip.add_model_config(MODEL_CONFIG_DIR)


def check_architecture(arch: str) -> None:
    if arch not in open_clip.list_models():
        close = [m for m in open_clip.list_models() if arch.lower() in m.lower()][:5]
        hint = f" Similar names: {', '.join(close)}." if close else ""
        raise ModelUnavailableError(f"open_clip has no architecture named '{arch}'.{hint}")


def create_open_clip(
    arch: str, weights: str | None = None, device: torch.device | str = "cpu"
) -> tuple[Any, Callable[[Image.Image], torch.Tensor]]:
    """``arch`` with ``weights`` (a local file; None: random) and its evaluation transform,
    through ``open_clip.create_model_and_transforms``, with a GridPool where
    ``GRID_POOL_ARCHITECTURES`` says so."""
    if arch not in GRID_POOL_ARCHITECTURES:
        model, _, preprocess = open_clip.create_model_and_transforms(
            arch, pretrained=weights, device=device
        )
        return model, preprocess
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
    with_grid_pool(model)
    if weights is not None:
        open_clip.load_checkpoint(model, weights)
    return model.to(device), preprocess


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
    if spec.transformers is not None:
        transformers_directory(spec)
        return
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


def transformers_directory(spec: ModelSpec) -> Path:
    """The local folder of a transformers spec (``ModelUnavailableError`` saying what to
    download when it is not here)."""
    assert spec.transformers is not None
    try:
        return hf_models.model_directory(spec.key, spec.transformers)
    except TransformersModelError as error:
        raise ModelUnavailableError(str(error)) from error


# One loader per kind of hf_models.IMPLEMENTED_KINDS (the config check's list):
# (key, source, folder, device) -> LoadedParts.
TRANSFORMERS_LOADERS: dict[
    str, Callable[[str, TransformersSource, Path, torch.device], LoadedParts]
] = {
    hf_models.DUAL_ENCODER: lambda key, source, directory, device: load_dual_encoder(
        key, directory, device
    ),
    **JOINT_LOADERS,
}
assert set(TRANSFORMERS_LOADERS) == set(hf_models.IMPLEMENTED_KINDS)


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
    if torch_device.type == "cuda" and resolved == "fp32":
        # fp32 means fp32: no TF32 in matmuls or convolutions (both are allowed by default
        # for cuDNN convolutions, and would make GPU fp32 differ from CPU fp32 by ~1e-3).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if spec.transformers is not None:
        return _load_transformers(spec, torch_device, resolved)
    weights = (
        spec.checkpoint
        if spec.checkpoint
        else resolve_pretrained(spec.arch, spec.pretrained or "", spec.cache_dir)
    )
    try:
        model, preprocess = create_open_clip(spec.arch, weights, torch_device)
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


def _load_transformers(spec: ModelSpec, device: torch.device, precision: str) -> LoadedModel:
    """A transformers spec loaded like an open_clip one: float32 weights, autocast for bf16 /
    fp16; its fingerprint is the weights' sha256, the kind (and a joint kind's
    ``definition``)."""
    assert spec.transformers is not None
    directory = transformers_directory(spec)
    source = spec.transformers
    parts = TRANSFORMERS_LOADERS[source.kind](spec.key, source, directory, device)
    check_tokenizer(spec, parts.tokenizer.tokenizer)
    # the kind and a joint kind's definition change what the weights compute (one folder
    # may be read as several kinds): so they change the caches too
    fingerprint = f"{spec.arch}@sha256:{parts.weights_sha256[:16]}+{source.kind}"
    definition = source.resolved_options().get("definition")
    if definition:
        fingerprint += f"+{definition}"
    return LoadedModel(
        spec=spec,
        model=parts.model,
        preprocess=parts.preprocess,
        tokenizer=parts.tokenizer,
        fingerprint=fingerprint,
        precision=precision,
        details={
            "transformers_kind": spec.transformers.kind,
            "transformers_revision": spec.transformers.revision or "",
            "weights_sha256": parts.weights_sha256,
            **parts.details,
        },
    )


# A plain caption every tokenizer of an English (or multilingual) model tokenises without
# unknown tokens; a tokenizer that maps more than UNKNOWN_LIMIT of it to its unknown token
# reads the wrong vocabulary file, and would evaluate every text as [UNK]s.
PROBE_CAPTION = "a photo of two dogs playing with a red ball on the grass"
UNKNOWN_LIMIT = 0.5


def check_tokenizer(spec: ModelSpec, tokenizer: Any) -> None:
    """``ModelUnavailableError`` when ``tokenizer`` maps most of ``PROBE_CAPTION`` to its
    unknown token (a tokenizer without one, byte-level BPE, never does)."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    if unknown is None:
        return
    ids = tokenizer(PROBE_CAPTION, add_special_tokens=False)["input_ids"]
    fraction = ids.count(unknown) / len(ids) if ids else 1.0
    if fraction > UNKNOWN_LIMIT:
        raise ModelUnavailableError(
            f"models.{spec.key} ({spec.source}): its tokenizer ({type(tokenizer).__name__}) "
            f"maps {ids.count(unknown)} of the {len(ids)} tokens of the probe caption "
            f"{PROBE_CAPTION!r} to its unknown token {tokenizer.unk_token!r} ({fraction:.0%}, "
            f"more than {UNKNOWN_LIMIT:.0%}): its vocabulary file is not this model's (every "
            "text would be scored as unknown tokens); replace the folder's tokenizer files "
            "with the model's own"
        )


def availability_job(model_key: str, model_entry: dict, out: str | Path, log=print) -> None:
    """Job: check that a pretrained model's weights are in the local cache, or a transformers
    model's folder on this machine (fails fast, before any embedding job, naming the key and
    what to download)."""
    from vlcomp.io import write_json

    spec = ModelSpec.from_config(model_key, model_entry)
    check_available(spec)
    if spec.transformers is not None:
        directory = transformers_directory(spec)
        log(f"{model_key}: {spec.transformers.label} ({spec.transformers.kind}) at {directory}")
        write_json(
            {
                "model": model_key,
                "transformers": spec.transformers.id,
                "revision": spec.transformers.revision,
                "kind": spec.transformers.kind,
            },
            out,
        )
        return
    location = resolve_pretrained(spec.arch, spec.pretrained, spec.cache_dir)
    log(f"{model_key}: {spec.arch}/{spec.pretrained} weights at {location}")
    write_json({"model": model_key, "arch": spec.arch, "pretrained": spec.pretrained}, out)
