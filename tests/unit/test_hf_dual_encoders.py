"""transformers dual encoders beyond CLIP, offline: tiny random models with real tokenizers
trained here on a few hundred words and their own processors, saved with ``save_pretrained``
laid out as the hub's, and loaded through vlcomp's config path (``models.<key>.transformers``)
as a hub model would be:

- ``siglip``: ``SiglipModel`` with ``SiglipTokenizer`` over a real SentencePiece
  ``spiece.model`` (trained here with ``sentencepiece``, as the hub's SigLIP 1 ships it);
- ``siglip2``: ``Siglip2Model`` (NaFlex patches) with Gemma's byte-fallback BPE;
- ``siglip2_fixres``: SigLIP 2 at a fixed resolution, a ``SiglipModel`` with Gemma's BPE;
- ``altclip``: ``AltCLIPModel`` with XLM-R's Unigram.

Each must embed as transformers' own forward pass ``model(**processor(...))`` does, with the
tokenizer settings the hub models ship (SigLIP and SigLIP 2: ``model_input_names=
["input_ids"]``, no attention mask, padded to the 64 tokens they were trained at; SigLIP's pad
is its end token, Gemma's is id 0 after an appended end token; AltCLIP: XLM-R's
``<s> ... </s>`` with its padding masked).

The ``siglip`` folder replaces an earlier stand-in (a Unigram ``tokenizer.json`` with SigLIP's
canonicalisation, from before ``sentencepiece`` was installed): it added no coverage that
``siglip2_fixres`` (``SiglipModel`` with a ``tokenizer.json``) and the real ``spiece.model``
(pad = end token) do not give.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import re
import string
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from vlcomp.evaluate.embed import embed_image_refs, embed_texts, model_metadata
from vlcomp.evaluate.images import ImageRef
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.hf_models import transformers_context_length
from vlcomp.models.loading import load_model
from vlcomp.models.parts import LoadedModel

WIDTH, LAYERS, HEADS, EMBED, IMAGE, PATCH = 32, 2, 2, 16, 32, 8
SIGLIP_CONTEXT = 64
# Siglip2Processor's own defaults (it passes them to its image processor), as the hub's are
NAFLEX_PATCH, NAFLEX_PATCHES = 16, 256
CAPTIONS = [
    "a red circle left of a blue square",
    "a blue circle left of a red square",
    "Two small green stars above a large yellow heart.",
    "the heart is above the stars",
    "A Photo Of A Cat!",
]
# (width, height): NaFlex keeps each aspect ratio (a different patch grid per image)
IMAGE_SIZES = [(32, 32), (48, 32), (24, 40), (64, 64), (40, 24), (33, 57)]

COLOURS = "red blue green yellow purple orange pink brown black white grey cyan".split()
SHAPES = "circle square triangle star heart cross diamond hexagon ring arrow".split()
RELATIONS = ["left of", "right of", "above", "below", "next to", "behind", "in front of"]


def training_sentences() -> list[str]:
    """Captions of coloured shapes and relations, plus prose for a few hundred more words
    (the docstrings of some standard-library modules)."""
    pairs = itertools.product(COLOURS, SHAPES)
    others = zip(itertools.cycle(COLOURS[::-1]), itertools.cycle(SHAPES[3:] + SHAPES[:3]))
    captions = [
        f"a {colour} {shape} {relation} a {other} {other_shape}"
        for (colour, shape), relation, (other, other_shape) in zip(
            pairs, itertools.cycle(RELATIONS), others
        )
    ]
    prose = " ".join(
        inspect.getdoc(member) or ""
        for module in (json, textwrap, string, itertools)
        for _, member in inspect.getmembers(module)
    )
    sentences = [s.strip() for s in re.split(r"[.\n]", prose) if len(s.split()) > 3]
    return captions + sentences


def train_unigram(special: list[str], vocab_size: int, normalizer) -> Tokenizer:
    """A SentencePiece-style Unigram language model (Metaspace ``▁`` word starts)."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=special, unk_token="<unk>"
    )
    tokenizer.train_from_iterator(training_sentences(), trainer)
    return tokenizer


def unigram_pieces(tokenizer: Tokenizer) -> list[tuple[str, float]]:
    return [tuple(piece) for piece in json.loads(tokenizer.to_str())["model"]["vocab"]]


# ------------------------------------------------------------------------- families


def set_sigmoid_logits(model) -> None:
    """SigLIP's initial temperature and bias (log 10, -10), which a random init leaves at
    0 and 0: the logits compared below then carry both."""
    with torch.no_grad():
        model.logit_scale.fill_(float(np.log(10.0)))
        model.logit_bias.fill_(-10.0)


def save_siglip_model(folder: Path, tokenizer, vocab_size: int, pad: int, eos: int) -> None:
    """A tiny ``SiglipModel`` (fixed-resolution images) with ``tokenizer``."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    config = SiglipConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "max_position_embeddings": SIGLIP_CONTEXT,
            "pad_token_id": pad,
            "eos_token_id": eos,
            "bos_token_id": None,
        },
        vision_config={
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "image_size": IMAGE,
            "patch_size": PATCH,
        },
    )
    images = SiglipImageProcessor(size={"height": IMAGE, "width": IMAGE})
    model = SiglipModel(config)
    set_sigmoid_logits(model)
    model.save_pretrained(folder)
    SiglipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)


SIGLIP_SPECIAL = {"<pad>": 0, "</s>": 1, "<unk>": 2}  # T5's layout, as SigLIP's spiece.model


def train_sentencepiece(folder: Path, vocab_size: int = 400) -> Path:
    """A real SentencePiece Unigram model (``spiece.model``) trained on ``training_sentences``
    with SigLIP's special ids (no start token); one thread, input kept in order: the same
    pieces and scores on every run (the file also records the corpus path)."""
    import sentencepiece

    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(training_sentences()) + "\n", encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "spiece"),
        model_type="unigram",
        vocab_size=vocab_size,
        character_coverage=1.0,
        pad_id=SIGLIP_SPECIAL["<pad>"],
        eos_id=SIGLIP_SPECIAL["</s>"],
        unk_id=SIGLIP_SPECIAL["<unk>"],
        bos_id=-1,
        num_threads=1,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    return folder / "spiece.model"


def save_siglip(folder: Path) -> None:
    """SigLIP (1) as the hub ships it: ``SiglipTokenizer`` over a SentencePiece
    ``spiece.model`` (no ``tokenizer.json``), pad = end token ``</s>``, 64 tokens, no
    attention mask (``model_input_names=["input_ids"]``)."""
    from transformers import SiglipTokenizer

    spiece = train_sentencepiece(folder.parent / "sentencepiece")
    tokenizer = SiglipTokenizer(
        vocab_file=str(spiece),
        model_max_length=SIGLIP_CONTEXT,
        model_input_names=["input_ids"],
    )
    save_siglip_model(folder, tokenizer, tokenizer.vocab_size, pad=1, eos=1)


def gemma_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Gemma's layout: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, ``<mask>`` 4,
    the 256 byte-fallback tokens, then BPE merges over ``▁``-joined lowercase text."""
    special = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    special += [f"<0x{i:02X}>" for i in range(256)]
    bpe = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    bpe.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(" ", "▁")])
    trainer = trainers.BpeTrainer(vocab_size=len(special) + 400, special_tokens=special)
    bpe.train_from_iterator(training_sentences(), trainer)
    model = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def save_siglip2(folder: Path) -> None:
    """SigLIP 2 (NaFlex): the Gemma tokenizer as SigLIP 2 ships it (lowercase, no start
    token, end token appended, right padding, ``input_ids`` only) and NaFlex patches."""
    from transformers import (
        Siglip2Config,
        Siglip2ImageProcessor,
        Siglip2Model,
        Siglip2Processor,
        Siglip2Tokenizer,
    )

    vocab, merges = gemma_bpe()
    tokenizer = Siglip2Tokenizer(
        vocab=vocab,
        merges=merges,
        add_bos_token=False,
        add_eos_token=True,
        padding_side="right",
        model_input_names=["input_ids"],
        model_max_length=SIGLIP_CONTEXT,
    )
    config = Siglip2Config(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "max_position_embeddings": SIGLIP_CONTEXT,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "bos_token_id": 2,
        },
        vision_config={
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "patch_size": NAFLEX_PATCH,
            "num_patches": NAFLEX_PATCHES,
        },
    )
    images = Siglip2ImageProcessor(patch_size=NAFLEX_PATCH, max_num_patches=NAFLEX_PATCHES)
    model = Siglip2Model(config)
    set_sigmoid_logits(model)
    model.save_pretrained(folder)
    Siglip2Processor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)


def save_siglip2_fixres(folder: Path) -> None:
    """SigLIP 2 at a fixed resolution: a ``SiglipModel`` with Gemma's tokenizer as those
    checkpoints ship it (``GemmaTokenizer``: no start token, end token appended, right
    padding, ``input_ids`` only)."""
    from transformers import GemmaTokenizer

    vocab, merges = gemma_bpe()
    tokenizer = GemmaTokenizer(
        vocab=vocab,
        merges=merges,
        add_bos_token=False,
        add_eos_token=True,
        padding_side="right",
        model_input_names=["input_ids"],
        model_max_length=SIGLIP_CONTEXT,
    )
    save_siglip_model(folder, tokenizer, len(vocab), pad=0, eos=1)


def save_altclip(folder: Path) -> None:
    """AltCLIP: XLM-R's Unigram (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, ``<mask>``
    last), ``<s> ... </s>``, padding masked; 514 positions, 512 tokens (RoBERTa's offset)."""
    from transformers import (
        AltCLIPConfig,
        AltCLIPModel,
        AltCLIPProcessor,
        CLIPImageProcessor,
        XLMRobertaTokenizer,
    )

    unigram = train_unigram(["<s>", "<pad>", "</s>", "<unk>"], 400, normalizers.Lowercase())
    pieces = unigram_pieces(unigram) + [("<mask>", 0.0)]
    tokenizer = XLMRobertaTokenizer(vocab=pieces, model_max_length=512)
    config = AltCLIPConfig(
        text_config={
            "vocab_size": len(pieces),
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "max_position_embeddings": 514,
            "project_dim": EMBED,
        },
        vision_config={
            "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "image_size": IMAGE,
            "patch_size": PATCH,
        },
        projection_dim=EMBED,
    )
    images = CLIPImageProcessor(
        size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
    )
    AltCLIPModel(config).save_pretrained(folder)
    AltCLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)


SAVERS = {
    "siglip": save_siglip,
    "siglip2": save_siglip2,
    "siglip2_fixres": save_siglip2_fixres,
    "altclip": save_altclip,
}
# How a transformers user pads for each family (SigLIP's docs: "max_length", 64, as trained).
REFERENCE_PADDING = {
    "siglip": {"padding": "max_length", "max_length": SIGLIP_CONTEXT},
    "siglip2": {"padding": "max_length", "max_length": SIGLIP_CONTEXT},
    "siglip2_fixres": {"padding": "max_length", "max_length": SIGLIP_CONTEXT},
    "altclip": {"padding": True},
}


@dataclass
class Family:
    name: str
    folder: Path
    loaded: LoadedModel
    refs: list[ImageRef]


def write_images(folder: Path, count: int = len(IMAGE_SIZES)) -> list[ImageRef]:
    """``count`` distinct images, of the sizes of ``IMAGE_SIZES`` in turn."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    refs = []
    for i, (width, height) in zip(range(count), itertools.cycle(IMAGE_SIZES)):
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        pixels[: height // 2, :, i % 3] = 255  # some structure, not only noise
        path = folder / f"{i}.png"
        Image.fromarray(pixels).save(path)
        refs.append(ImageRef(str(path)))
    return refs


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[ImageRef]:
    return write_images(tmp_path_factory.mktemp("images"))


@pytest.fixture(scope="module", params=sorted(SAVERS))
def family(request, tmp_path_factory, images) -> Family:
    name = request.param
    folder = tmp_path_factory.mktemp(name) / f"tiny-{name}"
    torch.manual_seed(0)
    SAVERS[name](folder)
    entry = {"transformers": {"id": str(folder), "kind": "dual_encoder"}}
    loaded = load_model(ModelSpec.from_config(name, entry), device="cpu")
    return Family(name, folder, loaded, images)


def reference(family: Family, **padding) -> tuple[dict, object]:
    """transformers' own forward pass on the same files: ``model(**processor(...))``."""
    from transformers import AutoModel, AutoProcessor

    processor = AutoProcessor.from_pretrained(family.folder, local_files_only=True)
    model = AutoModel.from_pretrained(family.folder, dtype=torch.float32, local_files_only=True)
    model.eval()
    pictures = [Image.open(ref.path).convert("RGB") for ref in family.refs]
    inputs = processor(
        text=CAPTIONS,
        images=pictures,
        truncation=True,
        return_tensors="pt",
        **(padding or REFERENCE_PADDING[family.name]),
    )
    with torch.inference_mode():
        return inputs, model(**inputs)


def vlcomp_embeddings(family: Family) -> tuple[np.ndarray, np.ndarray]:
    images, _ = embed_image_refs(family.loaded, family.refs, batch_size=4)
    texts, _ = embed_texts(family.loaded, CAPTIONS, batch_size=3)
    return images, texts


def test_embeddings_and_similarities_equal_transformers_forward_pass(family):
    inputs, out = reference(family)
    images, texts = vlcomp_embeddings(family)
    image_diff = float(np.abs(images - out.image_embeds.numpy()).max())
    text_diff = float(np.abs(texts - out.text_embeds.numpy()).max())
    model = family.loaded.model.model
    with torch.no_grad():
        scale = float(model.logit_scale.exp())
        bias = float(model.logit_bias) if hasattr(model, "logit_bias") else 0.0
    logits = images @ texts.T * scale + bias
    logit_diff = float(np.abs(logits - out.logits_per_image.numpy()).max())
    print(
        f"\n{family.name}: max |difference| vs model(**processor(...)): image embeddings "
        f"{image_diff:.2e}, text embeddings {text_diff:.2e}, logits_per_image {logit_diff:.2e} "
        f"(scale {scale:.3g}, bias {bias:.3g})"
    )
    assert image_diff < 1e-5 and text_diff < 1e-5
    assert logit_diff < 1e-5 * max(1.0, scale)
    reference_logits = out.logits_per_image.numpy()
    assert float(reference_logits.std()) > 1e-4  # random weights still tell inputs apart
    assert (logits.argmax(axis=1) == reference_logits.argmax(axis=1)).all()
    assert (logits.argmax(axis=0) == reference_logits.argmax(axis=0)).all()


def test_text_padding_convention(family):
    """SigLIP pools the last position (a pad token after a short text), so its embedding
    depends on padding to the 64 tokens it was trained at: vlcomp's ids are the processor's
    ``padding="max_length"`` ids, run without an attention mask, as the hub tokenizer's
    ``model_input_names=["input_ids"]`` says. AltCLIP masks its padding instead."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(family.folder, local_files_only=True)
    tokenizer = processor.tokenizer
    context = family.loaded.tokenizer.context_length
    ours = family.loaded.tokenizer(CAPTIONS)
    theirs = tokenizer(
        CAPTIONS, padding="max_length", max_length=context, truncation=True, return_tensors="pt"
    )
    assert torch.equal(ours, theirs["input_ids"])
    encoder = family.loaded.model
    if family.name == "altclip":
        assert context == 512 and encoder.attention_pad_id == tokenizer.pad_token_id == 1
        assert bool((ours[:, 0] == tokenizer.cls_token_id).all())
        # masked padding changes nothing: vlcomp runs only the columns some text uses
        mask = (ours != 1).long()
        with torch.inference_mode():
            full = encoder.model.get_text_features(input_ids=ours, attention_mask=mask)
            cut = encoder.encode_text(ours)
        assert float((full.pooler_output - cut).abs().max()) < 1e-5
        return
    assert context == SIGLIP_CONTEXT and "attention_mask" not in theirs
    assert encoder.attention_pad_id is None
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    assert (pad, eos) == ((1, 1) if family.name == "siglip" else (0, 1))
    lengths = (ours != pad).sum(dim=1) + (1 if pad == eos else 0)  # the end token
    for row, length in zip(ours.tolist(), lengths.tolist(), strict=True):
        assert row[length - 1] == eos and set(row[length:]) <= {pad}
        assert length < context  # the captions are short: the last position is padding
    # the convention matters: padded only to the batch's longest text, the embeddings move
    short = tokenizer(CAPTIONS, padding="longest", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        at_64 = torch.nn.functional.normalize(encoder.encode_text(ours), dim=-1)
        at_longest = torch.nn.functional.normalize(encoder.encode_text(short), dim=-1)
    moved = float((at_64 - at_longest).abs().max())
    print(f"\n{family.name}: text embeddings padded to the longest text move by {moved:.2e}")
    assert moved > 1e-3


def test_context_length_resolved_without_torch_is_the_models(family):
    """The workflow resolves the context at parse time from the folder's files (no torch);
    it must be the one the loaded tokenizer pads and truncates to."""
    config = json.loads((family.folder / "config.json").read_text())
    positions = config["text_config"]["max_position_embeddings"]
    resolved = transformers_context_length(str(family.folder))
    expected = 512 if family.name == "altclip" else SIGLIP_CONTEXT
    print(f"\n{family.name}: context {resolved} ({positions} text positions)")
    assert resolved == family.loaded.tokenizer.context_length == expected
    long_text = " ".join(["red circle"] * 600)
    assert family.loaded.tokenizer([long_text]).shape == (1, expected)


def test_fingerprint_is_the_weights_sha256(family):
    digest = hashlib.sha256((family.folder / "model.safetensors").read_bytes()).hexdigest()
    meta = model_metadata(family.name, family.loaded)
    print(f"\n{family.name}: fingerprint {family.loaded.fingerprint}")
    assert family.loaded.fingerprint == f"hf:tiny-{family.name}@sha256:{digest[:16]}+dual_encoder"
    assert meta["weights_sha256"] == digest
    assert meta["transformers"] == transformers.__version__
    assert meta["transformers_kind"] == "dual_encoder"
    assert meta["source"] == str(family.folder)


@pytest.mark.parametrize("family", ["siglip2"], indirect=True)
def test_naflex_images_keep_their_aspect_ratio(family):
    """SigLIP 2's NaFlex patches travel through vlcomp's image pipeline packed
    (``pack_patches``): each image keeps its own patch grid and mask."""
    from transformers import AutoImageProcessor

    from vlcomp.models.dual_encoder import unpack_patches

    processor = AutoImageProcessor.from_pretrained(family.folder, local_files_only=True)
    grids = []
    for ref in family.refs:
        image = Image.open(ref.path).convert("RGB")
        patches, mask, grid = unpack_patches(family.loaded.preprocess(image)[None])
        expected = processor(images=image, return_tensors="pt")
        assert torch.equal(patches, expected["pixel_values"])
        assert torch.equal(mask, expected["pixel_attention_mask"])
        assert torch.equal(grid, expected["spatial_shapes"])
        assert int(mask.sum()) == int(grid.prod()) <= NAFLEX_PATCHES
        grids.append(tuple(grid[0].tolist()))
    assert len(set(grids)) > 1


@pytest.mark.parametrize("family", ["siglip2"], indirect=True)
def test_naflex_embeddings_through_workers_and_the_cache(family, tmp_path):
    """Decoded in a DataLoader worker and stored in the embedding cache, NaFlex images embed
    as in this process; a second pass computes nothing."""
    from vlcomp.evaluate.images import EmbeddingCache

    direct, _ = embed_image_refs(family.loaded, family.refs, batch_size=4)
    cache = EmbeddingCache(tmp_path, "image")
    in_worker, computed = embed_image_refs(
        family.loaded, family.refs, batch_size=4, cache=cache, workers=1
    )
    assert computed == len(family.refs)
    assert float(np.abs(in_worker - direct).max()) < 1e-6
    again, computed = embed_image_refs(
        family.loaded, family.refs, batch_size=4, cache=EmbeddingCache(tmp_path, "image")
    )
    assert computed == 0 and np.array_equal(again, in_worker)


def test_items_per_second_on_cpu(family, tmp_path, capsys):
    """Throughput of each tiny family through vlcomp's pipeline, decoding and preprocessing
    included (printed, not asserted)."""
    refs = write_images(tmp_path, 24)  # distinct: the pipeline embeds a duplicate once
    texts = [f"{caption} number {i}" for i in range(24) for caption in CAPTIONS[:2]]
    embed_image_refs(family.loaded, refs[:6], batch_size=6)  # warm-up
    embed_texts(family.loaded, texts[:6], batch_size=6)
    images = text = float("inf")  # best of 3: the CPUs are shared
    for _ in range(3):
        start = time.perf_counter()
        embed_image_refs(family.loaded, refs, batch_size=24)
        images = min(images, time.perf_counter() - start)
        start = time.perf_counter()
        embed_texts(family.loaded, texts, batch_size=48)
        text = min(text, time.perf_counter() - start)
    with capsys.disabled():
        print(
            f"\n{family.name:>8}: {len(refs) / images:8.0f} images/s, "
            f"{len(texts) / text:8.0f} texts/s (CPU, {torch.get_num_threads()} threads, "
            f"tiny ViT {WIDTH}x{LAYERS}, context {family.loaded.tokenizer.context_length})"
        )


TRICKY_TEXTS = [
    '  Mixed   CASE,\tpunctuation; (and) "spaces"...  ',
    "a zebra-striped ümlaut ☃ next to a circle",  # characters the model never saw: <unk>
    " ".join(["red circle"] * 40),  # truncated to 64 tokens, the last one the end token
]


def sentencepiece_ids(spiece: Path, texts: list[str], context: int) -> list[list[int]]:
    """SiglipTokenizer's ids computed with ``sentencepiece`` alone: its canonicalisation
    (big_vision's: lowercase, ASCII punctuation removed, whitespace collapsed), the pieces,
    the end token, padding with the end token."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(spiece))
    eos = processor.piece_to_id("</s>")
    rows = []
    for text in texts:
        canonical = re.sub(
            r"\s+", " ", text.lower().translate({ord(c): None for c in string.punctuation})
        )
        ids = processor.encode(canonical.strip())[: context - 1] + [eos]
        rows.append(ids + [eos] * (context - len(ids)))
    return rows


@pytest.mark.parametrize("family", ["siglip"], indirect=True)
def test_siglip_ids_are_the_sentencepiece_tokenizers(family):
    """The hub layout (``spiece.model``, no ``tokenizer.json``) loads as the slow
    ``SiglipTokenizer``, and vlcomp's ids are its ids and ``sentencepiece``'s own."""
    from transformers import SiglipTokenizer

    trained = family.folder.parent / "sentencepiece" / "spiece.model"
    assert (family.folder / "spiece.model").read_bytes() == trained.read_bytes()
    assert not (family.folder / "tokenizer.json").exists()
    config = json.loads((family.folder / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "SiglipTokenizer"
    assert config["model_input_names"] == ["input_ids"]
    assert type(family.loaded.tokenizer.tokenizer) is SiglipTokenizer
    texts = CAPTIONS + TRICKY_TEXTS
    ours = family.loaded.tokenizer(texts)
    slow = SiglipTokenizer.from_pretrained(family.folder, local_files_only=True)
    theirs = slow(texts, padding="max_length", max_length=SIGLIP_CONTEXT, truncation=True)
    assert ours.tolist() == theirs["input_ids"]
    assert ours.tolist() == sentencepiece_ids(trained, texts, SIGLIP_CONTEXT)
    unk = SIGLIP_SPECIAL["<unk>"]
    assert unk in ours[len(CAPTIONS) + 1] and unk not in ours[: len(CAPTIONS)]
    assert int((ours[-1] != SIGLIP_SPECIAL["</s>"]).sum()) == SIGLIP_CONTEXT - 1
    tricky = theirs["input_ids"][len(CAPTIONS)]
    print(f"\nsiglip: {TRICKY_TEXTS[0]!r} -> {slow.convert_ids_to_tokens(tricky[:12])}")


@pytest.mark.parametrize("family", ["siglip"], indirect=True)
@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("corrupt", r"could not parse ModelProto from .*spiece\.model"),
        ("empty", r"unk is not defined"),
        ("missing", r"its tokenizer \(SiglipTokenizer\) reads spiece\.model, not in the folder"),
    ],
)
def test_hub_siglip_with_a_bad_spiece_model_fails_naming_the_entry(
    family, tmp_path, damage, reason
):
    """A hub-layout SigLIP folder whose ``spiece.model`` is corrupt, empty or missing (a
    partial download) fails in the load, naming the model entry, the folder and why."""
    import shutil

    from vlcomp.models.catalogue import ModelUnavailableError

    folder = tmp_path / f"{damage}-siglip"
    shutil.copytree(family.folder, folder)
    spiece = folder / "spiece.model"
    if damage == "missing":
        spiece.unlink()
    else:
        spiece.write_bytes(b"" if damage == "empty" else b"<html>rate limited</html>")
    entry = {"transformers": {"id": str(folder), "kind": "dual_encoder"}}
    with pytest.raises(ModelUnavailableError) as caught:
        load_model(ModelSpec.from_config("hub", entry), device="cpu")
    message = str(caught.value)
    print(f"\n{damage}: {message}")
    assert message.startswith(f"models.hub: could not load {folder}: ")
    assert re.search(reason, message)
