"""Image-tower changes that an open_clip model config cannot express. Only torch here, so
that tools without the workflow's dependencies (tools/world_control_sweep) can build them."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class GridPool(nn.Module):
    """An image pool that keeps the layout: each cell of the last feature map is normalised,
    then the flattened C x H x W map goes through one linear map, so every (cell, channel)
    has its own weights. CLIP's attention pool averages the cells into one vector, which
    keeps what is in the image but not where (``vlcomp.world.checks.probes``); through this pool a
    relation ("A left of B") is a linear function of the map, which a dot product with a
    text embedding can score."""

    def __init__(self, channels: int, cells: int, output_dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.proj = nn.Linear(channels * cells, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, C, H, W) -> (N, output_dim)
        cells = self.norm(x.flatten(2).transpose(1, 2))
        return self.proj(cells.flatten(1))


# Architectures in model_configs/ whose ModifiedResNet attention pool is a GridPool (an
# open_clip config has no key for the pool; the rest of the tower is the config's).
GRID_POOL_ARCHITECTURES = frozenset({"vlcomp-world-rn-grid"})


def with_grid_pool(model: Any) -> Any:
    """Replace an open_clip ModifiedResNet's attention pool by a GridPool over the same map
    (in place; returns the model)."""
    attention_pool = model.visual.attnpool
    model.visual.attnpool = GridPool(
        channels=attention_pool.k_proj.in_features,
        cells=attention_pool.positional_embedding.shape[0] - 1,
        output_dim=model.visual.output_dim,
    )
    return model
