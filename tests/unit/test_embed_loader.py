"""Image decoding in DataLoader workers, mixed precision settings and the cache per precision."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vlcomp.config import ConfigError, validate_config
from vlcomp.evaluate.embed import (
    cache_folder,
    embed_image_refs,
    embed_texts,
    model_metadata,
    open_model,
)
from vlcomp.evaluate.images import EmbeddingCache, ImageRef, UnreadableImageError
from vlcomp.models.catalogue import ModelSpec, PrecisionError
from vlcomp.models.loading import load_model
from vlcomp.models.parts import LoadedModel, resolve_precision

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    import open_clip

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "ckpt.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), path)
    return path


@pytest.fixture(scope="module")
def world_model(checkpoint) -> LoadedModel:
    return load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=str(checkpoint)), "cpu")


@pytest.fixture(scope="module")
def refs(tmp_path_factory) -> list[ImageRef]:
    """JPEG photos and crops of them, with an undecodable file and a missing one inside."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(1)
    refs = []
    for i in range(9):
        path = folder / f"{i}.jpg"
        pixels = rng.integers(0, 256, (48 + i, 80, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path, quality=90)
        refs.append(ImageRef(str(path), (i, 2, 40, 30) if i % 3 else None))
    (folder / "bad.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    refs.insert(4, ImageRef(str(folder / "bad.jpg")))
    refs.insert(7, ImageRef(str(folder / "bad.jpg"), (0, 0, 5, 5)))
    refs.append(ImageRef(str(folder / "absent.jpg")))
    refs.append(refs[1])  # a duplicate
    return refs


def test_workers_give_byte_identical_vectors_in_order(world_model, refs):
    results = {}
    for workers in (0, 2):
        failed: dict[ImageRef, str] = {}
        vectors, computed = embed_image_refs(
            world_model, refs, batch_size=4, failed=failed, workers=workers
        )
        results[workers] = (vectors, computed, failed)
    (v0, n0, f0), (v2, n2, f2) = results[0], results[2]
    assert v0.dtype == np.float32 and v0.tobytes() == v2.tobytes()
    assert n0 == n2 == 9
    assert f0 == f2
    # Order: each row is that ref's vector, as when embedded alone.
    for k in (0, 5, 8):
        alone, _ = embed_image_refs(world_model, [refs[k]], batch_size=4, workers=2)
        assert np.allclose(alone[0], v0[k], atol=1e-6)
    assert np.array_equal(v0[1], v0[-1])


def test_a_vector_does_not_depend_on_its_batch_or_the_cache(world_model, refs, tmp_path):
    """Each item's vector is the same bytes whichever items share its batch and whichever
    a shared cache already held (so a job's vectors do not depend on the jobs before it)."""
    good = [ref for ref in refs if "bad" not in ref.path and "absent" not in ref.path][:9]
    texts = [f"{n} red circles left of a blue square {'and more ' * n}" for n in range(13)]
    alone = {k: embed_image_refs(world_model, [good[k]], 16, workers=0)[0][0] for k in (0, 4)}
    text_alone = {k: embed_texts(world_model, [texts[k]], 16)[0][0] for k in (0, 5, 12)}
    for batch_size in (3, 5, 16):
        vectors, _ = embed_image_refs(world_model, good, batch_size, workers=0)
        assert all(vectors[k].tobytes() == alone[k].tobytes() for k in alone), batch_size
        vectors, _ = embed_texts(world_model, texts, batch_size)
        assert all(vectors[k].tobytes() == text_alone[k].tobytes() for k in text_alone)
    cache = EmbeddingCache(tmp_path, "text")
    embed_texts(world_model, texts[1:12:2], 16, cache)  # another job filled part of it
    vectors, computed = embed_texts(world_model, texts, 16, cache)
    assert computed == 7
    assert all(vectors[k].tobytes() == text_alone[k].tobytes() for k in text_alone)


def test_unreadable_images_are_recorded_not_fatal(world_model, refs):
    failed: dict[ImageRef, str] = {}
    vectors, _ = embed_image_refs(world_model, refs, batch_size=3, failed=failed, workers=2)
    bad = {ref for ref in refs if Path(ref.path).name in ("bad.jpg", "absent.jpg")}
    assert set(failed) == bad
    assert all("Error" in message for message in failed.values())
    rows = [i for i, ref in enumerate(refs) if ref in bad]
    assert np.isnan(vectors[rows]).all()
    good = [i for i in range(len(refs)) if i not in rows]
    assert np.allclose(np.linalg.norm(vectors[good], axis=1), 1.0, atol=1e-5)


def test_without_failed_an_unreadable_image_raises(world_model, refs):
    bad = [ref for ref in refs if ref.path.endswith("bad.jpg")]
    with pytest.raises(UnreadableImageError):
        embed_image_refs(world_model, bad[:1], workers=2)


def test_worker_results_fill_and_reuse_the_cache(world_model, refs, tmp_path):
    good = [ref for ref in refs if "bad" not in ref.path and "absent" not in ref.path]
    first, computed = embed_image_refs(
        world_model, good, 4, EmbeddingCache(tmp_path, "image"), workers=2
    )
    assert computed == 9
    again, computed = embed_image_refs(
        world_model, good, 4, EmbeddingCache(tmp_path, "image"), workers=2
    )
    assert computed == 0 and first.tobytes() == again.tobytes()


def test_precision_is_resolved_and_checked(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_precision("auto", cpu) == "fp32"
    assert resolve_precision("fp32", cpu) == "fp32"
    for precision in ("fp16", "bf16"):
        with pytest.raises(PrecisionError, match="needs a CUDA device"):
            resolve_precision(precision, cpu)
    with pytest.raises(PrecisionError, match="not one of"):
        resolve_precision("fp8", cpu)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", cuda) == "bf16"
    assert resolve_precision("fp16", cuda) == "fp16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Old GPU")
    assert resolve_precision("auto", cuda) == "fp16"
    with pytest.raises(PrecisionError, match="Old GPU does not support bfloat16"):
        resolve_precision("bf16", cuda)


def test_open_model_records_precision_and_keeps_caches_apart(checkpoint, tmp_path):
    settings = {"device": "cpu", "threads": torch.get_num_threads(), "workers": 2}
    entry = {"open_clip": "vlcomp-world-vit", "checkpoint": str(checkpoint)}
    loaded, image_cache, text_cache = open_model("w", entry, None, settings, tmp_path, print)
    assert (loaded.precision, loaded.workers) == ("fp32", 2)
    meta = model_metadata("w", loaded)
    assert (meta["precision"], meta["device"]) == ("fp32", "cpu")
    assert image_cache.directory == tmp_path / cache_folder(loaded)
    assert image_cache.directory.name == "cpu-fp32" == text_cache.directory.name
    half = dataclasses.replace(loaded, precision="fp16")
    assert cache_folder(half) != cache_folder(loaded)
    assert model_metadata("w", half)["precision"] == "fp16"
    with pytest.raises(PrecisionError, match="needs a CUDA device"):
        open_model("w", entry, None, {**settings, "precision": "fp16"}, tmp_path, print)
    with pytest.raises(ValueError, match="workers"):
        open_model("w", entry, None, {**settings, "workers": -1}, tmp_path, print)


def _config(evaluate: dict) -> dict:
    import yaml

    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config["evaluate"].update(evaluate)
    return config


@pytest.mark.parametrize(
    ("evaluate", "problem"),
    [
        ({"device": "cpu", "precision": "fp16"}, "evaluate.precision': fp16 needs a CUDA"),
        ({"precision": "fp64"}, "evaluate.precision"),
        ({"workers": -1}, "evaluate.workers"),
    ],
)
def test_config_rejects_bad_precision_and_workers(evaluate, problem, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError, match=problem):
        validate_config(_config(evaluate))


def test_config_defaults_and_accepted_precisions(monkeypatch):
    monkeypatch.chdir(ROOT)
    evaluate = _config({})["evaluate"]
    del evaluate["workers"]  # the world's config sets 0 (tiny images); the default is 2
    config = validate_config({**_config({}), "evaluate": evaluate})
    assert (config["evaluate"]["workers"], config["evaluate"]["precision"]) == (2, "auto")
    for device, precision in (("cuda", "fp16"), ("cuda:1", "bf16"), ("auto", "bf16")):
        validate_config(_config({"device": device, "precision": precision}))


SNAKEFILE = """
rule embed:
    output: "vectors.json"
    params: checkpoint={checkpoint!r}, refs={refs!r}, src={src!r}
    threads: 1
    script: "embed.py"
"""

SCRIPT = """
import json, sys
sys.path.insert(0, snakemake.params.src)
from vlcomp.evaluate.embed import embed_image_refs
from vlcomp.evaluate.images import ImageRef
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model

spec = ModelSpec("w", "vlcomp-world-vit", checkpoint=snakemake.params.checkpoint)
loaded = load_model(spec, "cpu")
refs = [ImageRef(path, tuple(box) if box else None) for path, box in snakemake.params.refs]
out = {}
for workers in (0, 2):
    failed = {}
    vectors, _ = embed_image_refs(loaded, refs, 4, failed=failed, workers=workers)
    out[workers] = {"vectors": vectors.tobytes().hex(), "failed": sorted(failed.values())}
json.dump(out, open(snakemake.output[0], "w"))
"""


def test_workers_run_inside_a_snakemake_script_job(checkpoint, refs, tmp_path):
    """In a ``script:`` job ``__main__`` is Snakemake's script file: workers must not need to
    re-import it (the "spawn" start method fails there)."""
    pairs = [(ref.path, list(ref.box) if ref.box else None) for ref in refs]
    snakefile = SNAKEFILE.format(checkpoint=str(checkpoint), refs=pairs, src=str(ROOT / "src"))
    (tmp_path / "Snakefile").write_text(textwrap.dedent(snakefile))
    (tmp_path / "embed.py").write_text(SCRIPT)
    snakemake = Path(sys.executable).parent / "snakemake"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [str(snakemake), "--cores", "1", "--directory", str(tmp_path), "--snakefile",
         str(tmp_path / "Snakefile")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads((tmp_path / "vectors.json").read_text())
    assert out["0"] == out["2"]
    assert len(out["2"]["failed"]) == 3


def test_short_contexts_give_the_full_context_vectors() -> None:
    """Each text runs at the shortest context that holds it; causal attention makes that the
    same computation as the full context, up to float rounding."""
    import open_clip

    from vlcomp.evaluate.embed import TEXT_CONTEXTS, short_context_encoder

    torch.manual_seed(0)
    model = open_clip.create_model("ViT-B-32", pretrained=None).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    texts = ["a red circle!", "", "two dogs on a bench " * 6, "a cat " * 20, "a dog " * 40] * 3
    tokens = tokenizer(texts)
    lengths = (tokens.argmax(dim=-1) + 1).tolist()
    assert {next((c for c in TEXT_CONTEXTS if c >= n), 77) for n in lengths} == {8, 32, 48, 77}
    encode = short_context_encoder(model)
    assert encode is not None
    with torch.inference_mode():
        full = torch.nn.functional.normalize(model.encode_text(tokens), dim=-1)
        short = torch.nn.functional.normalize(encode(tokens), dim=-1)
        alone = torch.nn.functional.normalize(encode(tokens[:1]), dim=-1)
    assert (full - short).abs().max().item() < 1e-5
    assert (short[:1] - alone).abs().max().item() < 1e-5  # a text's batch peers do not matter
