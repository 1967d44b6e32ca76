"""Tiny transformers models with random weights, saved with ``save_pretrained`` the way a hub
model ships (config, weights, processor and tokenizer files), for throughput benchmarks and
tests: they load through the same ``models.<key>.transformers`` path as a real model.

Tokenizers are real ones built here: a WordPiece vocabulary (BERT's format) of common words
plus single characters for BLIP, a byte-level BPE trained with the ``tokenizers`` library
for LLaVA, CLIP's own BPE (the file open_clip ships) for CLIP. Nothing is downloaded.
"""

from __future__ import annotations

import gzip
import string
from pathlib import Path

import torch

WORDS = (
    "a an the of and is are on in to with two three small large "
    "red green blue yellow purple orange pink brown white black "
    "circle square triangle star heart shape left right above below near behind "
    "photo picture figure does this show please answer yes no user assistant"
).split()
WIDTH, LAYERS, HEADS, IMAGE, PATCH = 32, 2, 2, 32, 8


def wordpiece_vocab(words: tuple[str, ...] | list[str] = WORDS) -> dict[str, int]:
    """BERT-style vocabulary: special tokens, every printable ASCII character alone and as a
    continuation (##c), then ``words``: any lowercase ASCII text tokenises."""
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars)]
    tokens += [w for w in words if w not in tokens]
    return {token: i for i, token in enumerate(tokens)}


def save_tiny_blip_itm(folder: str | Path, seed: int = 0, blip_tokens: bool = False) -> Path:
    """A ``BlipForImageTextRetrieval`` (ViT 32 px, patches 8, width 32, 2 layers) with a
    BERT WordPiece tokenizer and BLIP's image processor. The text vocabulary has BLIP's
    layout (``init_tokenizer``): the WordPiece vocabulary, then [DEC] (``bos_token_id``),
    then [ENC]; ``blip_tokens``: the tokenizer knows both (as BLIP's own does), else only the
    WordPiece vocabulary."""
    from transformers import (
        BertTokenizer,
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        BlipProcessor,
    )

    vocab = wordpiece_vocab()
    config = BlipConfig(
        text_config={
            "vocab_size": len(vocab) + 2, "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "max_position_embeddings": 64, "encoder_hidden_size": WIDTH,
            "pad_token_id": vocab["[PAD]"], "bos_token_id": len(vocab),
            "sep_token_id": vocab["[SEP]"], "initializer_range": 0.2,
        },
        vision_config={
            "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "image_size": IMAGE, "patch_size": PATCH,
            "initializer_range": 0.2,  # BLIP's default (1e-10) makes every image look alike
        },
        image_text_hidden_size=16,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = BlipForImageTextRetrieval(config)
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=64)
    if blip_tokens:
        tokenizer.add_special_tokens({"bos_token": "[DEC]"})
        tokenizer.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
    images = BlipImageProcessor(size={"height": IMAGE, "width": IMAGE})
    BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def bpe_tokenizer(words: tuple[str, ...] | list[str] = WORDS, vocab_size: int = 1000):
    """A byte-level BPE (Llama's special tokens and an ``<image>`` token) trained with the
    ``tokenizers`` library on sentences of ``words``; deterministic."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    corpus = [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    corpus += [" ".join(w.capitalize() for w in words)] * 4  # " Yes" one token
    tokenizer.train_from_iterator(corpus, trainer)
    bos = tokenizer.token_to_id("<s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return tokenizer


def save_tiny_llava(folder: str | Path, seed: int = 0) -> Path:
    """A ``LlavaForConditionalGeneration`` (CLIP vision tower 32 px, patches 8; a 2-layer
    Llama of width 32) with a byte-level BPE tokenizer and CLIP's image processor."""
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    backend = bpe_tokenizer()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>", model_max_length=256,
    )  # fmt: skip
    image_token = backend.token_to_id("<image>")
    config = LlavaConfig(
        vision_config={
            "model_type": "clip_vision_model", "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "image_size": IMAGE, "patch_size": PATCH,
        },
        text_config={
            "model_type": "llama", "vocab_size": backend.get_vocab_size(), "hidden_size": WIDTH,
            "intermediate_size": 2 * WIDTH, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
            "max_position_embeddings": 256, "pad_token_id": backend.token_to_id("<pad>"),
            "bos_token_id": backend.token_to_id("<s>"), "eos_token_id": backend.token_to_id("</s>"),
        },
        image_token_index=image_token,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    folder = Path(folder)
    model.save_pretrained(folder)
    images = CLIPImageProcessor(
        size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
    )
    LlavaProcessor(
        image_processor=images, tokenizer=tokenizer, patch_size=PATCH,
        vision_feature_select_strategy="default", num_additional_image_tokens=1,
    ).save_pretrained(folder)  # fmt: skip
    return folder


def clip_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """CLIP's BPE vocabulary and merges, built from the file open_clip ships as its
    ``SimpleTokenizer`` builds them."""
    from open_clip.tokenizer import bytes_to_unicode, default_bpe

    with gzip.open(default_bpe(), "rt", encoding="utf-8") as handle:
        merges = handle.read().split("\n")[1 : 49152 - 256 - 2 + 1]
    pairs = [tuple(m.split()) for m in merges]
    vocab = list(bytes_to_unicode().values())
    vocab += [v + "</w>" for v in vocab]
    vocab += ["".join(pair) for pair in pairs]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    return {token: i for i, token in enumerate(vocab)}, [(a, b) for a, b in pairs]


def save_tiny_clip(folder: str | Path, seed: int = 0) -> Path:
    """A ``CLIPModel`` (ViT 32 px, patches 8, width 32, 2 layers each side) with CLIP's
    tokenizer and image processor."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    vocab, merges = clip_bpe()
    config = CLIPConfig(
        text_config={
            "vocab_size": len(vocab), "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH,
            "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "max_position_embeddings": 77, "bos_token_id": vocab["<|startoftext|>"],
            "eos_token_id": vocab["<|endoftext|>"], "pad_token_id": vocab["<|endoftext|>"],
        },
        vision_config={
            "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "image_size": IMAGE, "patch_size": PATCH,
        },
        projection_dim=16,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = CLIPModel(config)
    folder = Path(folder)
    model.save_pretrained(folder)
    images = CLIPImageProcessor(
        size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
    )
    CLIPProcessor(
        image_processor=images, tokenizer=CLIPTokenizer(vocab=vocab, merges=merges)
    ).save_pretrained(folder)
    return folder
