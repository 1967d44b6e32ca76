"""Negatives the text encoders can read: a negative must differ from its positive within
the first N tokens of the text towers under evaluation.

A CLIP text tower reads a caption's first ``context_length`` tokens, start and end token
included (open_clip truncates a longer text and puts the end token last). A negative that
differs from its positive only after that tokenises to the same ids: every model with that
context embeds both alike, so the item is a tie that tests nothing. The generators drop
such a negative and count it under ``context_reason(N)`` ("context: identical within N
tokens") like their other rejections; where a set has other candidates, the next one takes
its place (CREPE systematicity), and an LLM negative is asked for again.

N is ``negatives.context_length``: an integer, or ``auto``: the smallest context length
among the text towers of ``evaluate.models`` (``resolve_context_length``), read from the
open_clip model configs (JSON: ``text_cfg.context_length``; this package's own configs in
``vlcomp/evaluate/model_configs`` first, then open_clip's) without importing open_clip or
torch, so that the workflow can resolve it when it parses; for a transformers model
(``models.<key>.transformers``), its config.json's ``text_config.max_position_embeddings``.
A config that gives none, or a model whose config is not on this machine, counts as CLIP's
77.

The check itself runs in the generating job with the real tokenizer: open_clip's
``SimpleTokenizer`` (CLIP's BPE, which open_clip's CLIP-style towers use) at N tokens. A
model with another tokenizer (SigLIP, a Hugging Face text tower) may split a text
differently; evaluation flags what each model's own tokenizer cannot tell apart
(``indistinguishable`` in the predictions), whatever it is.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.evaluate.hf_models import transformers_context_length

AUTO = "auto"
DEFAULT_CONTEXT_LENGTH = 77  # CLIP's (open_clip's default when a config gives none)
PROJECT_MODEL_CONFIGS = Path(__file__).resolve().parents[1] / "evaluate" / "model_configs"
LOCAL_DIR, HF_HUB = "local-dir:", "hf-hub:"

Tokenizer = Callable[[list[str]], Any]  # texts -> (texts, context) token ids


def context_reason(context_length: int) -> str:
    """The rejection reason of a negative identical to its positive within the context."""
    return f"context: identical within {int(context_length)} tokens"


# ----------------------------------------------------------------------- parse time


def _config_dirs() -> list[Path]:
    """Where model configs are looked up: ours first (open_clip lets a registered config
    replace its own of the same name), then open_clip's; find_spec does not import it."""
    dirs = [PROJECT_MODEL_CONFIGS]
    spec = importlib.util.find_spec("open_clip")
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(p) / "model_configs" for p in spec.submodule_search_locations]
    return dirs


def model_config(arch: str, cache_dir: str | None = None) -> dict[str, Any] | None:
    """The open_clip model config of ``arch`` (a built-in or registered name,
    ``local-dir:<folder>`` or ``hf-hub:<repo>`` with its config in the local cache), or
    None when this machine has none."""
    if arch.startswith(LOCAL_DIR):
        path = Path(arch[len(LOCAL_DIR) :]) / "open_clip_config.json"
        if not path.is_file():
            return None
        config = json.loads(path.read_text(encoding="utf-8"))
        return config.get("model_cfg", config)
    if arch.startswith(HF_HUB):
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(
            arch[len(HF_HUB) :], "open_clip_config.json", cache_dir=cache_dir
        )
        if not isinstance(found, str):
            return None
        config = json.loads(Path(found).read_text(encoding="utf-8"))
        return config.get("model_cfg", config)
    for folder in _config_dirs():
        path = folder / f"{arch}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return None


def context_length_of(arch: str, cache_dir: str | None = None) -> int:
    """The text tower's context length of an open_clip architecture (77 when unknown)."""
    config = model_config(arch, cache_dir) or {}
    return int((config.get("text_cfg") or {}).get("context_length", DEFAULT_CONTEXT_LENGTH))


def resolve_context_length(
    setting: int | str, models: Mapping[str, Mapping[str, Any]], evaluated: Sequence[str]
) -> int:
    """``negatives.context_length``: an integer as it is; ``auto``: the smallest context
    length among the evaluated models' text towers (``models``: the ``models`` config,
    ``evaluated``: ``evaluate.models``), 77 without any."""
    if setting != AUTO:
        if isinstance(setting, bool) or not isinstance(setting, int) or setting < 3:
            raise ValueError(
                f"negatives.context_length must be 'auto' or an integer >= 3 (start, one "
                f"token, end), got {setting!r}"
            )
        return setting
    lengths = []
    for key in evaluated:
        if key not in models:
            raise ValueError(f"evaluate.models names {key!r}, which is not under models")
        entry = models[key]
        if "transformers" in entry:
            hf = entry["transformers"]
            lengths.append(
                transformers_context_length(hf["id"], hf.get("revision"), entry.get("cache_dir"))
            )
        else:
            lengths.append(context_length_of(entry["open_clip"], entry.get("cache_dir")))
    return min(lengths, default=DEFAULT_CONTEXT_LENGTH)


# ---------------------------------------------------------------------------- check


def decided_by_text(positive: str, negative: str, context_length: int) -> bool | None:
    """Whether the two texts tokenise alike within ``context_length`` tokens, when the text
    alone decides it (None: ask the tokenizer).

    For printable ASCII without ``&`` the tokenizer's cleaning (ftfy, HTML unescaping) leaves
    the text as it is, then collapses whitespace and lower-cases it: equal cleaned texts give
    equal ids. Otherwise every token before the first differing one covers at least one of
    the non-space characters before the first differing character, so when there are fewer
    than ``context_length - 2`` of those (start and end tokens take two places) the ids
    differ within the context."""
    if not all(t.isascii() and t.isprintable() and "&" not in t for t in (positive, negative)):
        return None
    a, b = " ".join(positive.lower().split()), " ".join(negative.lower().split())
    if a == b:
        return True
    first = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    if len(a[:first].replace(" ", "")) < context_length - 2:
        return False
    return None


class ContextCheck:
    """Whether two texts tokenise to the same ids within ``context_length`` tokens.

    ``tokenizer``: texts -> token ids of shape (texts, context_length); default open_clip's
    ``SimpleTokenizer`` at ``context_length``, made at the first text the check cannot decide
    from the text alone (``decided_by_text``; it imports torch). Token ids are cached per
    text (a positive is compared with each of its negatives)."""

    def __init__(self, context_length: int, tokenizer: Tokenizer | None = None) -> None:
        self.context_length = int(context_length)
        self.reason = context_reason(self.context_length)
        self._tokenizer = tokenizer
        self._ids: dict[str, bytes] = {}

    def ids(self, text: str) -> bytes:
        """The text's token ids (as bytes: comparable and hashable)."""
        found = self._ids.get(text)
        if found is None:
            if self._tokenizer is None:
                from open_clip.tokenizer import SimpleTokenizer

                self._tokenizer = SimpleTokenizer(context_length=self.context_length)
            tokens = np.asarray(self._tokenizer([text]), dtype=np.int64)
            if tokens.shape != (1, self.context_length):
                raise ValueError(
                    f"the tokenizer gave shape {tokens.shape} for one text, not "
                    f"(1, {self.context_length}): its context is not {self.context_length}"
                )
            found = self._ids[text] = tokens[0].tobytes()
        return found

    def identical(self, positive: str, negative: str) -> bool:
        """The negative reads the same as the positive to a tower of this context."""
        decided = decided_by_text(positive, negative, self.context_length)
        if decided is not None:
            return decided
        return self.ids(positive) == self.ids(negative)


def make_check(context_length: int | None) -> ContextCheck | None:
    """A ``ContextCheck`` at ``context_length`` (None: no check)."""
    return None if context_length is None else ContextCheck(int(context_length))


def identical_negatives(candidates: pl.DataFrame, check: ContextCheck) -> pl.DataFrame:
    """The negative rows of a candidates table (``CANDIDATES_SCHEMA``) that tokenise like a
    positive of the same item within the check's context, with the candidates' columns."""
    positives: dict[str, set[bytes]] = {}
    for item_id, text in candidates.filter(pl.col("is_positive")).select("item_id", "text").rows():
        positives.setdefault(item_id, set()).add(check.ids(text))
    negatives = candidates.filter(~pl.col("is_positive"))
    same = [
        check.ids(text) in positives.get(item_id, set())
        for item_id, text in negatives.select("item_id", "text").rows()
    ]
    return negatives.filter(pl.Series(same, dtype=pl.Boolean))
