"""transformers dual encoders (``models.<key>.transformers.kind: dual_encoder``): loaded with
``AutoModel`` / ``AutoImageProcessor`` / ``AutoTokenizer`` and wrapped as ``DualEncoder``
(open_clip's ``encode_image`` / ``encode_text``), so that the evaluation treats them like an
open_clip model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# huggingface_hub reads this at import time; without it a missing pretrained weight retries
# for ~47 s before failing. Users who want downloads set HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from vlcomp.models import hf_models  # noqa: E402
from vlcomp.models.catalogue import ModelUnavailableError  # noqa: E402
from vlcomp.models.parts import (  # noqa: E402
    LoadedParts,
    ProcessorTokenizer,
    ProcessorTransform,
    unpack_patches,
)


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
