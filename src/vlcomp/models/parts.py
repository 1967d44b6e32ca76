"""A loaded model and the pieces every loader returns: ``LoadedModel`` (what embedding and
scoring use), ``LoadedParts`` (a transformers loader's model, preprocessing and tokenizer),
the processor wrappers, and the precision forward passes run in."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# huggingface_hub reads this at import time; without it a missing pretrained weight retries
# for ~47 s before failing. Users who want downloads set HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from vlcomp.models.catalogue import (  # noqa: E402
    PRECISIONS,
    ModelSpec,
    PrecisionError,
)

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


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
