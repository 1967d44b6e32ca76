"""Train a tiny GPT-2 on training captions: the offline default for the causal-LM scorer.

The tokenizer is a byte-level BPE (no unknown tokens) trained on the same captions with
``tokenizers``; the model is a ``GPT2LMHeadModel`` with a small ``GPT2Config``. Both are
written with ``save_pretrained`` so ``CausalLMScorer(<dir>)`` loads them exactly as it
loads ``gpt2``. Each training sequence is ``<|endoftext|> caption <|endoftext|>``; seeded
shuffling, no dropout, CPU, so one seed and one thread count give the same weights.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlcomp.io import atomic_dir
from vlcomp.scorers.corpus import read_texts, texts_digest

SPECIAL = "<|endoftext|>"
PAD = "<pad>"
TRAIN_RECORD = "vlcomp_train.json"

DEFAULT_SETTINGS: dict[str, Any] = {
    "vocab_size": 4096,  # BPE merges + 256 bytes + 2 special tokens, at most
    "min_frequency": 2,  # a BPE merge needs a pair seen this often
    "lowercase": True,
    "n_layer": 2,
    "n_embd": 128,
    "n_head": 4,
    "max_length": 48,  # tokens per caption, start and end tokens included
    "epochs": 2,
    "batch_size": 64,
    "lr": 1e-3,
    "weight_decay": 0.01,
    "warmup": 0.05,  # fraction of steps with a linear warm-up; then linear decay to 0
    "threads": None,  # torch CPU threads (None: leave torch's default)
    "max_captions": None,  # train on a seeded sample of this many captions (None: all)
}


def _settings(overrides: dict[str, Any] | None) -> dict[str, Any]:
    unknown = sorted(set(overrides or {}) - set(DEFAULT_SETTINGS))
    if unknown:
        raise ValueError(
            f"unknown tiny GPT-2 setting(s) {unknown}; known: {sorted(DEFAULT_SETTINGS)}"
        )
    return {**DEFAULT_SETTINGS, **(overrides or {})}


def _train_tokenizer(texts: Sequence[str], settings: dict[str, Any]):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if settings["lowercase"] else [])
    tokenizer.normalizer = normalizers.Sequence(steps)
    # A space before every caption, so the first word is split like every other word.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=settings["vocab_size"],
        min_frequency=settings["min_frequency"],
        special_tokens=[SPECIAL, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=SPECIAL, eos_token=SPECIAL, pad_token=PAD
    )


def _batches(sequences: list[list[int]], order: torch.Tensor, batch_size: int, pad: int):
    for start in range(0, len(order), batch_size):
        rows = [sequences[i] for i in order[start : start + batch_size].tolist()]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for k, row in enumerate(rows):
            ids[k, : len(row)] = torch.tensor(row)
            mask[k, : len(row)] = 1
        yield ids, mask, ids.masked_fill(mask == 0, -100)


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Set torch's CPU threads for a block (more threads than free cores is far slower)."""
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _train(model, sequences: list[list[int]], pad: int, settings: dict[str, Any], seed: int):
    """AdamW with linear warm-up and decay; returns the mean loss of each epoch."""
    from tqdm import tqdm

    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings["lr"], weight_decay=settings["weight_decay"]
    )
    steps_per_epoch = -(-len(sequences) // settings["batch_size"])
    total_steps = steps_per_epoch * settings["epochs"]
    warmup = max(1, int(settings["warmup"] * total_steps))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    epoch_losses: list[float] = []
    for epoch in range(settings["epochs"]):
        order = torch.randperm(len(sequences), generator=generator)
        losses = []
        batches = _batches(sequences, order, settings["batch_size"], pad)
        for ids, mask, labels in tqdm(
            batches, total=steps_per_epoch, desc=f"tiny-gpt2 epoch {epoch + 1}", file=sys.stderr
        ):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        epoch_losses.append(round(sum(losses) / len(losses), 6))
    model.eval()
    return epoch_losses


def fit_tiny_gpt2(
    texts: Sequence[str], out_dir: str | Path, settings: dict[str, Any] | None = None, seed: int = 0
) -> dict[str, Any]:
    """Train on ``texts`` and write model + tokenizer to ``out_dir`` (replaced atomically).

    Returns the training record that is also written to ``out_dir/vlcomp_train.json``.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    settings = _settings(settings)
    texts = list(texts)
    if not texts:
        raise ValueError("no training captions")
    data_sha256 = texts_digest(texts)
    if settings["max_captions"] and len(texts) > settings["max_captions"]:
        rng = np.random.default_rng(seed)
        chosen = np.sort(rng.choice(len(texts), size=settings["max_captions"], replace=False))
        texts = [texts[i] for i in chosen]
    tokenizer = _train_tokenizer(texts, settings)
    special = tokenizer.convert_tokens_to_ids(SPECIAL)
    pad = tokenizer.convert_tokens_to_ids(PAD)
    body = settings["max_length"] - 2
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    sequences = [[special, *ids[:body], special] for ids in encoded]
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=settings["max_length"],
        n_embd=settings["n_embd"],
        n_layer=settings["n_layer"],
        n_head=settings["n_head"],
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=special,
        eos_token_id=special,
        pad_token_id=pad,
    )
    with _torch_threads(settings["threads"]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
        epoch_losses = _train(model, sequences, pad, settings, seed)
    record = {
        "settings": settings,
        "seed": seed,
        "n_captions_used": len(texts),
        "data_sha256": data_sha256,
        "epoch_mean_loss": epoch_losses,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    _save_atomically(model, tokenizer, record, Path(out_dir))
    return record


def _save_atomically(model, tokenizer, record: dict[str, Any], out_dir: Path) -> None:
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / TRAIN_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def train_tiny_gpt2(
    captions: Sequence[str | Path],
    out_dir: str | Path,
    settings: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Job entry point: caption Parquet files (a ``text`` column) in, model directory out."""
    return fit_tiny_gpt2(read_texts(captions).to_list(), out_dir, settings, seed)
