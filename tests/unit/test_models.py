import pytest
import torch

from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError
from vlcomp.models.loading import check_available, load_model


def test_pretrained_weights_missing_offline_fail_fast_with_advice(network_attempts):
    spec = ModelSpec("vitb", "ViT-B-32-quickgelu", pretrained="openai")
    with pytest.raises(ModelUnavailableError, match="not in the local Hugging Face cache"):
        check_available(spec)
    # Fast because nothing is tried over the network (a hub retry takes ~47 s).
    assert network_attempts == []


def test_unknown_architecture_and_tag():
    with pytest.raises(ModelUnavailableError, match="no architecture named"):
        check_available(ModelSpec("x", "ViT-Nope", pretrained="openai"))
    with pytest.raises(ModelUnavailableError, match="no pretrained tag 'nope'"):
        check_available(ModelSpec("x", "ViT-B-32", pretrained="nope"))


def test_missing_checkpoint():
    with pytest.raises(ModelUnavailableError, match="file not found"):
        check_available(ModelSpec("x", "vlcomp-world-vit", checkpoint="/no/such/file.pt"))


def test_checkpoint_round_trip_through_the_common_loader(tmp_path):
    import open_clip

    torch.manual_seed(0)
    model = open_clip.create_model("vlcomp-world-vit")
    path = tmp_path / "ckpt.pt"
    torch.save(model.state_dict(), path)
    loaded = load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=str(path)), device="cpu")
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor)
    assert loaded.fingerprint.startswith("vlcomp-world-vit@sha256:")
