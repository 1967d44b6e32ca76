"""Contrastive losses: CLIP's (open_clip's ``ClipLoss``) and NegCLIP's, with hard negative
texts and, optionally, hard negative images. Features are L2-normalised; all tensors on one
device."""

from __future__ import annotations

import open_clip
import torch

_CLIP_LOSS = open_clip.ClipLoss()  # single process: no gathering, no cached labels


def clip_loss(
    image_features: torch.Tensor, text_features: torch.Tensor, logit_scale: torch.Tensor
) -> torch.Tensor:
    """CLIP's contrastive loss (open_clip's ``ClipLoss``): the mean of the image -> text and
    text -> image cross-entropies over the batch (B x B logits)."""
    return _CLIP_LOSS(image_features, text_features, logit_scale)


def negclip_loss(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    negative_features: torch.Tensor,
    logit_scale: torch.Tensor,
    negative_image_features: torch.Tensor | None = None,
) -> torch.Tensor:
    """NegCLIP's contrastive loss: image -> text over the batch's captions *and* its hard
    negative texts (B x (B + m) logits), text -> image over the batch's images as in CLIP
    and, when given, its hard negative images (B x (B + k)); the mean of the two
    cross-entropies. With no negatives (m = k = 0) it is ``clip_loss``."""
    labels = torch.arange(image_features.shape[0], device=image_features.device)
    texts = torch.cat([text_features, negative_features])
    images = image_features
    if negative_image_features is not None:
        images = torch.cat([image_features, negative_image_features])
    per_image = logit_scale * image_features @ texts.T
    per_text = logit_scale * text_features @ images.T
    return (
        torch.nn.functional.cross_entropy(per_image, labels)
        + torch.nn.functional.cross_entropy(per_text, labels)
    ) / 2
