"""The layout-keeping image pool (``towers.GridPool``) of ``vlcomp-world-rn-grid``."""

import numpy as np
import pytest
import torch

from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError
from vlcomp.models.loading import create_open_clip, load_model
from vlcomp.models.towers import GRID_POOL_ARCHITECTURES, GridPool

ARCH = "vlcomp-world-rn-grid"


def test_grid_architecture_has_a_grid_pool_and_embeds():
    assert ARCH in GRID_POOL_ARCHITECTURES
    torch.manual_seed(0)
    model, preprocess = create_open_clip(ARCH)
    assert isinstance(model.visual.attnpool, GridPool)
    size = model.visual.image_size
    pixels = torch.rand(3, 3, size, size)
    with torch.no_grad():
        features = model.encode_image(pixels)
    assert features.shape == (3, model.visual.output_dim)
    # The other architectures keep open_clip's attention pool.
    plain, _ = create_open_clip("vlcomp-world-rn")
    assert not isinstance(plain.visual.attnpool, GridPool)


def test_grid_pool_keeps_where_a_feature_is_and_a_mean_pool_does_not():
    """Two one-hot "objects" A and B in a 2 x 2 map, in different columns: from a random
    GridPool's output a least-squares readout tells "A left of B" on held-out maps; from the
    mean over cells (what an average keeps) it cannot, the two layouts having equal means."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    pool = GridPool(channels=8, cells=4, output_dim=16)
    background = torch.randn(8, 1, 1)  # what an empty cell's features look like
    maps, labels = [], []
    for _ in range(200):
        row_a, row_b = rng.integers(2), rng.integers(2)
        left = bool(rng.integers(2))
        grid = background + torch.randn(8, 2, 2) * 0.05
        grid[0, row_a, 0 if left else 1] += 1.0  # A
        grid[1, row_b, 1 if left else 0] += 1.0  # B
        maps.append(grid)
        labels.append(1.0 if left else -1.0)
    x = torch.stack(maps)
    y = np.array(labels)
    with torch.no_grad():
        pooled = pool(x).numpy()
    mean = x.mean(dim=(2, 3)).numpy()

    def held_out_accuracy(features):
        design = np.hstack([features, np.ones((len(features), 1))])
        weights, *_ = np.linalg.lstsq(design[:150], y[:150], rcond=None)
        return float(np.mean(np.sign(design[150:] @ weights) == y[150:]))

    assert held_out_accuracy(pooled) == 1.0
    assert held_out_accuracy(mean) < 0.75


def test_grid_checkpoint_round_trips_through_the_common_loader(tmp_path):
    torch.manual_seed(0)
    model, _ = create_open_clip(ARCH)
    path = tmp_path / "grid.pt"
    torch.save(model.state_dict(), path)
    loaded = load_model(ModelSpec("g", ARCH, checkpoint=str(path)), device="cpu")
    assert isinstance(loaded.model.visual.attnpool, GridPool)
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name
    pixels = torch.rand(2, 3, model.visual.image_size, model.visual.image_size)
    with torch.no_grad():
        assert torch.equal(loaded.model.encode_image(pixels), model.eval().encode_image(pixels))


def test_an_attention_pool_checkpoint_is_not_a_grid_checkpoint(tmp_path):
    torch.manual_seed(0)
    plain, _ = create_open_clip("vlcomp-world-rn")
    path = tmp_path / "rn.pt"
    torch.save(plain.state_dict(), path)
    with pytest.raises(ModelUnavailableError, match=f"models.g: could not load {ARCH}"):
        load_model(ModelSpec("g", ARCH, checkpoint=str(path)), device="cpu")
