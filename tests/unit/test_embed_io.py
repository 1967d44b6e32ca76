import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from vlcomp.evaluate.embed import embed_images, embed_texts
from vlcomp.evaluate.images import EmbeddingCache
from vlcomp.io import atomic_path, read_parquet_metadata, write_parquet
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model


@pytest.fixture(scope="module")
def world_model(tmp_path_factory):
    import open_clip

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "ckpt.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), path)
    return load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=str(path)), device="cpu")


def test_text_cache_embeds_each_text_once(world_model, tmp_path):
    cache = EmbeddingCache(tmp_path, "text")
    texts = ["a red circle", "a blue square", "a red circle"]
    first, computed = embed_texts(world_model, texts, batch_size=2, cache=cache)
    assert computed == 2
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first[0], first[2])
    again, computed = embed_texts(world_model, texts, cache=EmbeddingCache(tmp_path, "text"))
    assert computed == 0
    assert np.array_equal(first, again)


def test_image_embedding_is_keyed_by_content(world_model, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    Image.new("RGB", (64, 64), (200, 0, 0)).save(a)
    Image.new("RGB", (64, 64), (200, 0, 0)).save(b)
    cache = EmbeddingCache(tmp_path / "cache", "image")
    vectors, computed = embed_images(world_model, [str(a), str(b)], cache=cache)
    assert computed == 1
    assert np.array_equal(vectors[0], vectors[1])


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_parquet_is_byte_identical_and_carries_metadata(tmp_path):
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_parquet(frame, tmp_path / "1.parquet", metadata={"torch": "2"})
    write_parquet(frame, tmp_path / "2.parquet", metadata={"torch": "2"})
    assert (tmp_path / "1.parquet").read_bytes() == (tmp_path / "2.parquet").read_bytes()
    assert read_parquet_metadata(tmp_path / "1.parquet")["torch"] == "2"
