"""transformers dual encoders next to open_clip: a tiny open_clip CLIP with random weights,
the same weights converted to transformers' ``CLIPModel`` (with a real CLIP tokenizer written
from open_clip's BPE file and a CLIP image processor, saved with ``save_pretrained``), both
loaded by ``load_model`` as any model is, must embed alike.

The conversion follows the key mapping of transformers' former
``convert_clip_original_pytorch_to_hf.py`` (OpenAI CLIP -> CLIPModel; transformers 5 no longer
ships it): open_clip's CLIP has OpenAI's layout.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image

from vlcomp.config import ConfigError, validate_config
from vlcomp.evaluate.embed import embed_image_refs, embed_texts, model_metadata
from vlcomp.evaluate.images import ImageRef
from vlcomp.evaluate.jobs import token_ids
from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError, resolve_context_length
from vlcomp.models.loading import check_available, load_model

ARCH = "vlcomp-test-tiny-clip"
WIDTH, LAYERS, HEADS, EMBED, IMAGE, PATCH = 32, 2, 2, 16, 32, 8
CAPTIONS = [
    "a red circle left of a blue square",
    "a blue circle left of a red square",
    "two small green stars above a large yellow heart",
    "A Photo Of A Cat!",
]


def register_open_clip_config(folder: Path) -> None:
    config = {
        "embed_dim": EMBED,
        "vision_cfg": {
            "image_size": IMAGE,
            "layers": LAYERS,
            "width": WIDTH,
            "head_width": WIDTH // HEADS,
            "mlp_ratio": 2.0,
            "patch_size": PATCH,
        },
        "text_cfg": {
            "context_length": 77,
            "vocab_size": 49408,
            "width": WIDTH,
            "heads": HEADS,
            "layers": LAYERS,
            "mlp_ratio": 2.0,
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{ARCH}.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / f"{ARCH}.json")


def write_clip_tokenizer_files(folder: Path) -> tuple[Path, Path]:
    """vocab.json + merges.txt of CLIP's BPE, built from the file open_clip ships as its
    ``SimpleTokenizer`` builds its vocabulary."""
    from vlcomp.models.tiny_models import clip_bpe

    vocab, merges = clip_bpe()
    folder.mkdir(parents=True, exist_ok=True)
    vocab_file, merges_file = folder / "vocab.json", folder / "merges.txt"
    vocab_file.write_text(json.dumps(vocab))
    merges_file.write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n")
    return vocab_file, merges_file


def _layers(state: dict, source: str, target: str, layers: int) -> dict:
    out = {}
    for i in range(layers):
        s, t = f"{source}.{i}", f"{target}.{i}"
        q, k, v = state[f"{s}.attn.in_proj_weight"].chunk(3)
        qb, kb, vb = state[f"{s}.attn.in_proj_bias"].chunk(3)
        out |= {
            f"{t}.self_attn.q_proj.weight": q,
            f"{t}.self_attn.k_proj.weight": k,
            f"{t}.self_attn.v_proj.weight": v,
            f"{t}.self_attn.q_proj.bias": qb,
            f"{t}.self_attn.k_proj.bias": kb,
            f"{t}.self_attn.v_proj.bias": vb,
        }
        for a, b in [
            ("attn.out_proj", "self_attn.out_proj"),
            ("ln_1", "layer_norm1"),
            ("ln_2", "layer_norm2"),
            ("mlp.c_fc", "mlp.fc1"),
            ("mlp.c_proj", "mlp.fc2"),
        ]:
            for p in ("weight", "bias"):
                out[f"{t}.{b}.{p}"] = state[f"{s}.{a}.{p}"]
    return out


def open_clip_to_hf(state: dict) -> dict:
    """An open_clip (OpenAI-layout) CLIP state_dict as ``CLIPModel`` weights."""
    out = {
        "text_model.embeddings.token_embedding.weight": state["token_embedding.weight"],
        "text_model.embeddings.position_embedding.weight": state["positional_embedding"],
        "text_model.final_layer_norm.weight": state["ln_final.weight"],
        "text_model.final_layer_norm.bias": state["ln_final.bias"],
        "text_projection.weight": state["text_projection"].T,
        "vision_model.embeddings.class_embedding": state["visual.class_embedding"],
        "vision_model.embeddings.patch_embedding.weight": state["visual.conv1.weight"],
        "vision_model.embeddings.position_embedding.weight": state["visual.positional_embedding"],
        "vision_model.pre_layrnorm.weight": state["visual.ln_pre.weight"],
        "vision_model.pre_layrnorm.bias": state["visual.ln_pre.bias"],
        "vision_model.post_layernorm.weight": state["visual.ln_post.weight"],
        "vision_model.post_layernorm.bias": state["visual.ln_post.bias"],
        "visual_projection.weight": state["visual.proj"].T,
        "logit_scale": state["logit_scale"],
    }
    out |= _layers(state, "transformer.resblocks", "text_model.encoder.layers", LAYERS)
    out |= _layers(state, "visual.transformer.resblocks", "vision_model.encoder.layers", LAYERS)
    return {k: v.clone().contiguous() for k, v in out.items()}


def save_hf_clip(state: dict, folder: Path) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    config = CLIPConfig(
        text_config={
            "vocab_size": 49408,
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "max_position_embeddings": 77,
            "hidden_act": "gelu",
            "bos_token_id": 49406,
            "eos_token_id": 49407,
            "pad_token_id": 49407,
        },
        vision_config={
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "image_size": IMAGE,
            "patch_size": PATCH,
            "hidden_act": "gelu",
        },
        projection_dim=EMBED,
    )
    model = CLIPModel(config)
    missing, unexpected = model.load_state_dict(open_clip_to_hf(state), strict=False)
    assert not unexpected, unexpected
    assert all("position_ids" in name for name in missing), missing
    vocab, merges = write_clip_tokenizer_files(folder / "bpe")
    merge_lines = merges.read_text().splitlines()[1:]
    tokenizer = CLIPTokenizer(
        vocab=json.loads(vocab.read_text()), merges=[tuple(m.split()) for m in merge_lines]
    )
    images = CLIPImageProcessor(
        size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
    )
    model.save_pretrained(folder)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(open_clip LoadedModel, transformers LoadedModel, transformers folder): same weights."""
    root = tmp_path_factory.mktemp("hf_clip")
    register_open_clip_config(root / "configs")
    torch.manual_seed(0)
    model = open_clip.create_model(ARCH)
    checkpoint = root / "tiny.pt"
    torch.save(model.state_dict(), checkpoint)
    folder = save_hf_clip(model.state_dict(), root / "hf")
    ours = load_model(ModelSpec(key="oc", arch=ARCH, checkpoint=str(checkpoint)), device="cpu")
    entry = {"transformers": {"id": str(folder), "kind": "dual_encoder"}}
    theirs = load_model(ModelSpec.from_config("hf", entry), device="cpu")
    return ours, theirs, folder


def similarities(loaded, pixels: torch.Tensor, texts: list[str]) -> torch.Tensor:
    with torch.inference_mode():
        image = loaded.model.encode_image(pixels).float()
        text = loaded.model.encode_text(loaded.tokenizer(texts)).float()
    image = image / image.norm(dim=-1, keepdim=True)
    text = text / text.norm(dim=-1, keepdim=True)
    return image @ text.T


def test_converted_clip_matches_open_clip_through_both_loaders(pair):
    ours, theirs, _ = pair
    # the same ids up to the end token; open_clip pads with 0, CLIP's HF tokenizer with the
    # end token (neither reaches the end token's features behind the causal mask)
    a, b = ours.tokenizer(CAPTIONS), theirs.tokenizer(CAPTIONS)
    real = a != 0
    assert torch.equal(a[real], b[real])
    assert bool((b[~real] == 49407).all())
    assert theirs.tokenizer.context_length == 77
    pixels = torch.randn(5, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(1))
    a, b = similarities(ours, pixels, CAPTIONS), similarities(theirs, pixels, CAPTIONS)
    difference = float((a - b).abs().max())
    print(f"max |similarity difference| open_clip vs transformers: {difference:.2e}")
    assert difference < 1e-5
    assert float(a.std()) > 1e-3  # random weights still tell inputs apart


def test_processor_preprocessing_and_the_embedding_pipeline_agree(pair, tmp_path):
    """Images at the model's size: both preprocessors give the same pixels, and the whole
    pipeline (decode, preprocess, cache, normalise) the same similarities."""
    ours, theirs, _ = pair
    rng = np.random.default_rng(0)
    refs = []
    for i in range(3):
        path = tmp_path / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (IMAGE, IMAGE, 3), dtype=np.uint8)).save(path)
        refs.append(ImageRef(str(path)))
    image = Image.open(refs[0].path).convert("RGB")
    pixel_difference = float((ours.preprocess(image) - theirs.preprocess(image)).abs().max())
    print(f"max |pixel difference| of the two preprocessors: {pixel_difference:.2e}")
    assert pixel_difference < 1e-5
    sims = []
    for loaded in (ours, theirs):
        images, _ = embed_image_refs(loaded, refs, batch_size=2)
        texts, _ = embed_texts(loaded, CAPTIONS, batch_size=2)
        assert np.allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-5)
        sims.append(images @ texts.T)
    difference = float(np.abs(sims[0] - sims[1]).max())
    print(f"max |similarity difference| through the embedding pipeline: {difference:.2e}")
    assert difference < 1e-5


def test_transformers_model_provenance_and_tokens(pair):
    ours, theirs, folder = pair
    meta = model_metadata("hf", theirs)
    import transformers

    assert meta["transformers"] == transformers.__version__
    assert meta["torch"] == torch.__version__
    assert meta["precision"] == "fp32"
    assert meta["source"] == str(folder)
    assert len(meta["weights_sha256"]) == 64
    sha = meta["weights_sha256"][:16]
    assert theirs.fingerprint == f"hf:{folder.name}@sha256:{sha}+dual_encoder"
    # the library versions are the same in every model's provenance; the rest is the model's
    open_clip_meta = model_metadata("oc", ours)
    assert open_clip_meta["transformers"] == transformers.__version__
    assert "transformers_kind" not in open_clip_meta and "weights_sha256" not in open_clip_meta
    # the indistinguishable flag's tokenizer contract: texts -> (texts, context) ids
    ids = token_ids(theirs.tokenizer, [CAPTIONS[0], CAPTIONS[0] + " " + "x " * 100])
    assert all(len(row) == 77 * 8 for row in ids.values())


def test_auto_context_length_reads_the_transformers_config(pair):
    _, _, folder = pair
    models = {
        "hf": {"transformers": {"id": str(folder), "kind": "dual_encoder"}},
        "oc": {"open_clip": "ViT-B-32", "pretrained": "openai"},
    }
    assert resolve_context_length("auto", models, ["hf", "oc"]) == 77
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["max_position_embeddings"] = 64
    short = folder.parent / "short"
    short.mkdir()
    (short / "config.json").write_text(json.dumps(config))
    models["short"] = {"transformers": {"id": str(short), "kind": "dual_encoder"}}
    assert resolve_context_length("auto", models, ["hf", "short"]) == 64


def test_unknown_kind_and_missing_folder_fail_clearly(tmp_path, network_attempts):
    def spec(**transformers):
        return ModelSpec.from_config("m", {"transformers": transformers})

    with pytest.raises(ModelUnavailableError, match="'siamese' is not a known kind"):
        check_available(spec(id=str(tmp_path), kind="siamese"))
    with pytest.raises(ModelUnavailableError, match="folder not found: /no/such/model"):
        check_available(spec(id="/no/such/model", kind="dual_encoder"))
    with pytest.raises(ModelUnavailableError, match=f"{tmp_path} has no config.json"):
        check_available(spec(id=str(tmp_path), kind="dual_encoder"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailableError, match="has no weights"):
        check_available(spec(id=str(tmp_path), kind="dual_encoder"))
    with pytest.raises(ModelUnavailableError, match="needs a pinned revision"):
        check_available(spec(id="openai/clip-vit-base-patch32", kind="dual_encoder"))
    with pytest.raises(
        ModelUnavailableError,
        match="huggingface-cli download openai/clip-vit-base-patch32 --revision 3d74acf",
    ):
        check_available(
            spec(id="openai/clip-vit-base-patch32", kind="dual_encoder", revision="3d74acf")
        )
    assert network_attempts == []


def _config(models: dict) -> dict:
    return {"models": models, "benchmarks": {}, "evaluate": {"models": sorted(models)}}


def test_config_accepts_one_source_and_names_the_key(tmp_path):
    config = validate_config(
        _config({"m": {"transformers": {"id": str(tmp_path), "kind": "dual_encoder"}}})
    )
    assert config["models"]["m"]["transformers"]["kind"] == "dual_encoder"
    cases = [
        (
            {"transformers": {"id": str(tmp_path), "kind": "matching"}},
            "models.m.transformers.kind': 'matching' is not a known kind",
        ),
        (
            {"transformers": {"id": str(tmp_path / "nope"), "kind": "dual_encoder"}},
            "models.m.transformers.id': folder not found",
        ),
        (
            {"transformers": {"id": "google/siglip-base-patch16-224", "kind": "dual_encoder"}},
            "models.m.transformers.revision': a hub id",
        ),
        (
            {
                "open_clip": "ViT-B-32",
                "transformers": {"id": str(tmp_path), "kind": "dual_encoder"},
            },
            "give either open_clip or transformers, not both",
        ),
        ({"transformers": {"id": str(tmp_path)}}, "'kind' is a required property"),
        ({"pretrained": "openai"}, "'open_clip' is a dependency of 'pretrained'"),
    ]
    for entry, message in cases:
        with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
            validate_config(_config({"m": entry}))


def test_items_per_second_on_cpu(pair, tmp_path, capsys):
    """Throughput of the two loaders on the same tiny weights (printed, not asserted)."""
    ours, theirs, _ = pair
    rng = np.random.default_rng(0)
    refs = []
    for i in range(64):
        path = tmp_path / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (IMAGE, IMAGE, 3), dtype=np.uint8)).save(path)
        refs.append(ImageRef(str(path)))
    texts = [f"{c} number {i}" for i in range(64) for c in CAPTIONS[:2]]
    lines = []
    for name, loaded in (("open_clip", ours), ("transformers", theirs)):
        embed_image_refs(loaded, refs[:8], batch_size=8)  # warm-up
        embed_texts(loaded, texts[:8], batch_size=8)
        images = text = float("inf")  # best of 3: the CPUs are shared
        for _ in range(3):
            start = time.perf_counter()
            embed_image_refs(loaded, refs, batch_size=32)
            images = min(images, time.perf_counter() - start)
            start = time.perf_counter()
            embed_texts(loaded, texts, batch_size=64)
            text = min(text, time.perf_counter() - start)
        lines.append(
            f"{name:>12}: {len(refs) / images:8.0f} images/s, {len(texts) / text:8.0f} texts/s "
            f"(CPU, {torch.get_num_threads()} threads, tiny ViT {WIDTH}x{LAYERS})"
        )
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_an_unknown_kind_is_named_not_a_key_error():
    """An option asked of a source whose kind is unknown (before the config check ran) says
    which kind and which ones exist."""
    from vlcomp.models.hf_models import TransformersModelError, TransformersSource

    with pytest.raises(TransformersModelError, match="'nope' is not a known kind"):
        TransformersSource(id="x", kind="nope").option("definition")
