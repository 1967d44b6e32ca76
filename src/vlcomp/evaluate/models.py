"""Loading CLIP-style models from a config spec, the same way for every source.

A model is an open_clip architecture name plus *either* a pretrained tag (weights that
open_clip resolves from its cache) *or* a checkpoint path (a state_dict, e.g. the world
model this workflow trains). Both go through ``open_clip.create_model_and_transforms``.

Or a transformers model (``models.<key>.transformers``, see ``hf_models``): a ``dual_encoder``
is loaded with ``AutoModel`` / ``AutoImageProcessor`` / ``AutoTokenizer`` and wrapped as
``DualEncoder`` (open_clip's ``encode_image`` / ``encode_text``), its preprocessing and
tokenizer the processor's; the rest of the evaluation treats it like an open_clip model.
A ``matching_head`` or ``vqascore`` is loaded by ``joint_scoring`` as a ``PairScorer``
(it scores (image, text) pairs; the evaluation asks ``joint_scoring.is_pair_scorer``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# huggingface_hub reads this at import time; without it a missing pretrained weight retries
# for ~47 s before failing. Users who want downloads set HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import open_clip  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from vlcomp import __version__  # noqa: E402
from vlcomp.evaluate import hf_models  # noqa: E402
from vlcomp.evaluate.hf_models import TransformersModelError, TransformersSource  # noqa: E402
from vlcomp.evaluate.towers import GRID_POOL_ARCHITECTURES, with_grid_pool  # noqa: E402

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
    transformers: TransformersSource | None = None

    @staticmethod
    def from_config(key: str, entry: dict[str, Any], checkpoint: str | None = None) -> ModelSpec:
        """Build a spec from a ``models.<key>`` config entry.

        ``checkpoint`` overrides the entry's own (used for models the workflow trains).
        """
        if "transformers" in entry:
            source = TransformersSource.from_entry(entry["transformers"], entry.get("cache_dir"))
            name = Path(source.id).name if source.local else source.id
            return ModelSpec(
                key=key,
                arch=f"hf:{name}",
                cache_dir=entry.get("cache_dir"),
                transformers=source,
            )
        return ModelSpec(
            key=key,
            arch=entry["open_clip"],
            pretrained=entry.get("pretrained"),
            checkpoint=checkpoint or entry.get("checkpoint"),
            cache_dir=entry.get("cache_dir"),
        )

    @property
    def source(self) -> str:
        if self.transformers is not None:
            return self.transformers.label
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
    details: dict[str, str] = field(default_factory=dict)  # more provenance (transformers)

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


# --------------------------------------------------------------------- transformers


def _features(output: Any) -> torch.Tensor:
    """``get_*_features`` return a tensor (transformers 4) or an output with the projected
    ``pooler_output`` (transformers 5)."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


class DualEncoder(torch.nn.Module):
    """A transformers dual encoder with open_clip's ``encode_image`` / ``encode_text``
    (unnormalised features; the embedding code normalises)."""

    def __init__(
        self,
        model: torch.nn.Module,
        attention_pad_id: int | None,
        end_id: int | None = None,
        patches: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        # SigLIP 2 NaFlex: images come as ``pack_patches`` tensors (patches, mask, grid).
        self.patches = patches
        # None: no attention mask. CLIP pads with its end token behind a causal mask and
        # pools at the first end token, so padding cannot reach it; SigLIP and SigLIP 2
        # were trained without a mask (their tokenizers return none). Otherwise (AltCLIP's
        # XLM-R) padding is masked out.
        self.attention_pad_id = attention_pad_id
        # CLIP only (causal, pooled at the first end token ``end_id``): the columns after
        # the batch's last end token change nothing and are cut (as open_clip's short
        # contexts do; captions are ~10 of 77 tokens).
        self.end_id = end_id

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        if self.patches:
            patches, mask, grid = unpack_patches(pixels)
            return _features(
                self.model.get_image_features(
                    pixel_values=patches, pixel_attention_mask=mask, spatial_shapes=grid
                )
            )
        return _features(self.model.get_image_features(pixel_values=pixels))

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        if self.end_id is not None and ids.numel():
            ends = (ids == self.end_id).int().argmax(dim=-1)
            ids = ids[:, : int(ends.max()) + 1]
        mask = None
        if self.attention_pad_id is not None:
            # masked padding changes nothing either: columns no text uses are cut (AltCLIP
            # pads to XLM-R's 512 tokens)
            used = (ids != self.attention_pad_id).any(dim=0).nonzero()
            if used.numel():
                ids = ids[:, : int(used.max()) + 1]
            mask = (ids != self.attention_pad_id).long()
        return _features(self.model.get_text_features(input_ids=ids, attention_mask=mask))


def pack_patches(patches: torch.Tensor, mask: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """A NaFlex image processor's output for one image (SigLIP 2: ``patches`` (P, D) padded
    to its ``max_num_patches``, ``mask`` (P,) 1 for a real patch, ``grid`` (2,) the patch
    rows and columns) as one (P + 1, D + 1) tensor, so that a batch stacks as images do:
    row 0 holds the grid, each later row a patch with its mask bit last (small integers,
    exact in float32)."""
    head = patches.new_zeros(1, patches.shape[1] + 1)
    head[0, :2] = grid
    return torch.cat([head, torch.cat([patches, mask[:, None].to(patches.dtype)], dim=1)])


def unpack_patches(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of ``pack_patches`` tensors -> (patches, mask (int32), grid (int64))."""
    body = packed[:, 1:]
    return body[..., :-1], body[..., -1].to(torch.int32), packed[:, 0, :2].long()


class ProcessorTransform:
    """PIL image -> the processor's pixel tensor (C, H, W), or for a NaFlex processor its
    patches, patch mask and grid packed into one tensor (``pack_patches``)."""

    def __init__(self, image_processor: Any) -> None:
        self.image_processor = image_processor

    def __call__(self, image: Image.Image) -> torch.Tensor:
        out = self.image_processor(images=image, return_tensors="pt")
        if "spatial_shapes" in out:
            grid = out["spatial_shapes"][0]
            return pack_patches(out["pixel_values"][0], out["pixel_attention_mask"][0], grid)
        return out["pixel_values"][0]


class ProcessorTokenizer:
    """Texts -> token ids (texts, ``context_length``), padded and truncated to the text
    tower's context like open_clip's tokenizers."""

    def __init__(self, tokenizer: Any, context_length: int) -> None:
        self.tokenizer = tokenizer
        self.context_length = int(context_length)

    def __call__(self, texts: str | Sequence[str]) -> torch.Tensor:
        texts = [texts] if isinstance(texts, str) else list(texts)
        return self.tokenizer(
            texts,
            padding="max_length",
            truncation=True,
            max_length=self.context_length,
            return_tensors="pt",
        )["input_ids"]


@dataclass
class LoadedParts:
    model: torch.nn.Module
    preprocess: Callable[[Image.Image], torch.Tensor]
    tokenizer: ProcessorTokenizer
    weights_sha256: str
    details: dict[str, str] = field(default_factory=dict)  # more provenance (the kind's)


def load_dual_encoder(key: str, directory: Path, device: torch.device) -> LoadedParts:
    """A ``dual_encoder`` folder loaded with ``AutoModel`` / ``AutoProcessor`` (float32)."""
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    try:
        model = AutoModel.from_pretrained(directory, dtype=torch.float32, local_files_only=True)
        image_processor = AutoImageProcessor.from_pretrained(directory, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except Exception as error:  # transformers raises many types; name the entry in every case
        tokenizer_class, missing = hf_models.missing_tokenizer_files(directory)
        hint = (
            f" (its tokenizer ({tokenizer_class}) reads {', '.join(missing)}, not in the folder: "
            "download it with the model)"
            if missing
            else ""
        )
        raise ModelUnavailableError(
            f"models.{key}: could not load {directory}: {error}{hint}"
        ) from error
    if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
        raise ModelUnavailableError(
            f"models.{key}: {type(model).__name__} is not a dual encoder (it has no "
            "get_image_features / get_text_features); kind dual_encoder needs e.g. CLIPModel, "
            "SiglipModel or AltCLIPModel"
        )
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    masked = "attention_mask" in tokenizer.model_input_names and pad is not None and pad != eos
    context = hf_models.transformers_context_length(str(directory))
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < context:
        context = limit
    model.to(device).eval()
    return LoadedParts(
        model=DualEncoder(
            model,
            pad if masked else None,
            eos if getattr(model.config, "model_type", None) == "clip" else None,
            patches="spatial_shapes" in getattr(image_processor, "model_input_names", ()),
        ).eval(),
        preprocess=ProcessorTransform(image_processor),
        tokenizer=ProcessorTokenizer(tokenizer, context),
        weights_sha256=hf_models.weights_sha256(hf_models.weight_files(key, directory)),
    )


def _load_joint(key: str, source: TransformersSource, directory: Path, device: torch.device):
    from vlcomp.evaluate import joint_scoring  # it imports this module

    return joint_scoring.LOADERS[source.kind](key, source, directory, device)


# One loader per kind of hf_models.IMPLEMENTED_KINDS (the config check's list):
# (key, source, folder, device) -> LoadedParts.
TRANSFORMERS_LOADERS: dict[
    str, Callable[[str, TransformersSource, Path, torch.device], LoadedParts]
] = {
    hf_models.DUAL_ENCODER: lambda key, source, directory, device: load_dual_encoder(
        key, directory, device
    ),
    **{kind: _load_joint for kind in hf_models.JOINT_KINDS},
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
    fp16; its fingerprint is the weights' sha256."""
    import transformers

    assert spec.transformers is not None
    directory = transformers_directory(spec)
    source = spec.transformers
    parts = TRANSFORMERS_LOADERS[source.kind](spec.key, source, directory, device)
    return LoadedModel(
        spec=spec,
        model=parts.model,
        preprocess=parts.preprocess,
        tokenizer=parts.tokenizer,
        fingerprint=f"{spec.arch}@sha256:{parts.weights_sha256[:16]}",
        precision=precision,
        details={
            "transformers": transformers.__version__,
            "transformers_kind": spec.transformers.kind,
            "transformers_revision": spec.transformers.revision or "",
            "weights_sha256": parts.weights_sha256,
            **parts.details,
        },
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
