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
among the text towers of ``evaluate.models``, which the workflow resolves when it parses
(``vlcomp.models.catalogue.resolve_context_length``) and hands to the generating job.

The check itself runs in the generating job, exactly as open_clip's ``SimpleTokenizer``
(CLIP's BPE, which open_clip's CLIP-style towers use) at N tokens would decide it: from the
text alone where it can (``decided_by_text``), else by the tokenizer's own byte-pair merges
without torch (``ClipBpe``; printable ASCII texts), else by the tokenizer. A model with
another tokenizer (SigLIP, a Hugging Face text tower) may split a text differently;
evaluation flags what each model's own tokenizer cannot tell apart (``indistinguishable``
in the predictions), whatever it is, skipping the sets whose text decides it for open_clip's
tokenizer (``text_decides``, ``sets_decided_by_text``).
"""

from __future__ import annotations

import gzip
import importlib.util
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

LOCAL_DIR, HF_HUB = "local-dir:", "hf-hub:"

Tokenizer = Callable[[list[str]], Any]  # texts -> (texts, context) token ids


def context_reason(context_length: int) -> str:
    """The rejection reason of a negative identical to its positive within the context."""
    return f"context: identical within {int(context_length)} tokens"


# ----------------------------------------------------------------------- parse time


# ---------------------------------------------------------------------------- check


# open_clip's SimpleTokenizer splits its cleaned text with this pattern (its special tokens
# first) and byte-pair-encodes each piece; this is the pattern on lower-cased printable
# ASCII, where \p{L} is [a-z], \p{N} is [0-9] and \s is the space.
CLIP_PATTERN = (
    r"<start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"
)
_CLIP_WORDS = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[a-z]+|[0-9]|[^ a-z0-9]+")
_MERGES = 49152 - 256 - 2  # the merges SimpleTokenizer reads from its vocabulary file


def clip_words(text: str) -> tuple[str, ...] | None:
    """The pieces open_clip's ``SimpleTokenizer`` byte-pair-encodes, in order, when the text
    alone tells them (None: ask the tokenizer): for printable ASCII without ``&`` (HTML
    entities) or ``<`` (its special tokens), which its cleaning (ftfy, HTML unescaping)
    leaves as it is. It then collapses whitespace and lower-cases; a space never belongs to
    a piece, so the pieces of the lower-cased text are its pieces."""
    if not (text.isascii() and text.isprintable()) or "&" in text or "<" in text:
        return None
    return tuple(_CLIP_WORDS.findall(text.lower()))


def decided_by_words(a: Sequence[str], b: Sequence[str], context_length: int) -> bool | None:
    """Whether two texts with the pieces ``a`` and ``b`` (``clip_words``) tokenise alike
    within ``context_length`` tokens, when the pieces decide it (None: they do not).

    A piece becomes at least one and at most ``len(piece)`` tokens, the last one marked as
    ending a piece, so equal pieces give equal ids, and different pieces first differ in a
    token of the first differing piece (or where the shorter text ends). The context keeps
    the first ``context_length - 2`` tokens (start and end take two places): pieces shared
    up to there give equal ids however many tokens each takes, and a difference that falls
    there for the longest possible tokens of the shared pieces gives different ids."""
    if a == b:
        return True
    keep = context_length - 2
    shared = min(len(a), len(b))
    k = next((i for i in range(shared) if a[i] != b[i]), shared)
    if k >= keep:
        return True
    last = min(len(a[k]), len(b[k])) - 1 if k < shared else 0
    if sum(map(len, a[:k])) + last < keep:
        return False
    return None


def decided_by_text(positive: str, negative: str, context_length: int) -> bool | None:
    """Whether the two texts tokenise alike within ``context_length`` tokens under open_clip's
    ``SimpleTokenizer``, when the text alone decides it (``clip_words``,
    ``decided_by_words``; None: ask the tokenizer)."""
    a, b = clip_words(positive), clip_words(negative)
    if a is None or b is None:
        return None
    return decided_by_words(a, b, context_length)


def text_decides(tokenizer: Any) -> int | None:
    """The context length of ``tokenizer`` when it is open_clip's ``SimpleTokenizer`` as
    ``clip_words`` reproduces it (lower-case cleaning, truncation, no special tokens but
    start and end, the same pattern), so that the text shortcut holds for it; None for any
    other tokenizer (another cleaning, SigLIP's, a Hugging Face one: ask it)."""
    if type(tokenizer).__module__ != "open_clip.tokenizer":
        return None
    from open_clip import tokenizer as oc

    context = getattr(tokenizer, "context_length", None)
    exact = (
        type(tokenizer) is oc.SimpleTokenizer
        and tokenizer.clean_fn is getattr(oc, "_clean_lower", None)
        and tokenizer.reduction_fn is None
        and tokenizer.pat.pattern == CLIP_PATTERN
        and isinstance(context, int)
        and context >= 3
    )
    return context if exact else None


def sets_decided_by_text(
    rows: Iterable[tuple[str, str, bool]], context_length: int
) -> dict[str, dict[str, tuple[str, ...]]]:
    """The candidate sets that the text alone decides: item_id -> {text: key} for every set
    (``rows``: item_id, text, is_positive) whose texts all have ``clip_words`` and whose every
    negative ``decided_by_words`` tells apart from, or matches to, each positive of the set.
    Within such a set a negative and a positive tokenise alike within ``context_length``
    tokens exactly when their keys (the first ``context_length - 2`` pieces) are equal; keys
    of different sets are not comparable."""
    keep = context_length - 2
    sets: dict[str, tuple[list[tuple[str, ...]], list[tuple[str, ...]], dict]] = {}
    undecided: set[str] = set()
    for item_id, text, is_positive in rows:
        if item_id in undecided:
            continue
        words = clip_words(text)
        if words is None:
            undecided.add(item_id)
            sets.pop(item_id, None)
            continue
        positives, negatives, keys = sets.setdefault(item_id, ([], [], {}))
        (positives if is_positive else negatives).append(words)
        keys[text] = words[:keep]
    decided = {}
    for item_id, (positives, negatives, keys) in sets.items():
        if all(
            decided_by_words(p, n, context_length) is not None
            for p in set(positives)
            for n in set(negatives)
        ):
            decided[item_id] = keys
    return decided


def sets_keyed_by_merges(
    rows: Iterable[tuple[str, str, bool]],
    context_length: int,
    tokens: Callable[[str], Sequence[str]],
) -> dict[str, dict[str, tuple[str, ...]]]:
    """item_id -> {text: key} for every candidate set (``rows``: item_id, text, is_positive)
    whose texts all have ``clip_words``: its texts tokenise alike within
    ``context_length`` tokens exactly when their keys (``tokens_key`` under ``tokens``,
    the tokenizer's merges) are equal."""
    keyed: dict[str, dict[str, tuple[str, ...]]] = {}
    undecided: set[str] = set()
    for item_id, text, _ in rows:
        if item_id in undecided:
            continue
        words = clip_words(text)
        if words is None:
            undecided.add(item_id)
            keyed.pop(item_id, None)
            continue
        keyed.setdefault(item_id, {})[text] = tokens_key(words, context_length, tokens)
    return keyed


class ClipBpe:
    """open_clip's ``SimpleTokenizer`` on texts with ``clip_words``, without torch (its
    module imports torch): the same byte-pair merges, read from the vocabulary file open_clip
    ships (or ``bpe_path``), applied to each piece as ``SimpleTokenizer.bpe`` applies them.
    A printable ASCII character is its own byte symbol, so a piece's symbols start as its
    characters, the last one marked as ending the piece."""

    def __init__(self, bpe_path: str | Path | None = None) -> None:
        path = Path(bpe_path) if bpe_path is not None else _open_clip_vocabulary()
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")[1 : _MERGES + 1]
        self.ranks = {tuple(line.split()): rank for rank, line in enumerate(lines)}
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, piece: str) -> tuple[str, ...]:
        """The piece's tokens (as strings: open_clip maps each to one id)."""
        found = self._cache.get(piece)
        if found is not None:
            return found
        word = (*piece[:-1], piece[-1] + "</w>")
        while len(word) > 1:
            first, second = min(
                zip(word, word[1:], strict=False),
                key=lambda pair: self.ranks.get(pair, float("inf")),
            )
            if (first, second) not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        self._cache[piece] = word
        return word

    def key(self, words: Sequence[str], context_length: int) -> tuple[str, ...]:
        """``tokens_key`` of a text's pieces under these merges."""
        return tokens_key(words, context_length, self.tokens)


def tokens_key(
    words: Sequence[str], context_length: int, tokens: Callable[[str], Sequence[str]]
) -> tuple[str, ...]:
    """A text's tokens within the context (the first ``context_length - 2``), from its
    pieces (``clip_words``) and a piece's tokens under the merges (``tokens``): two such
    texts tokenise to the same ids exactly when their keys are equal (a token is one id, and
    no piece is a special token)."""
    out: list[str] = []
    keep = context_length - 2
    for piece in words:
        out.extend(tokens(piece))
        if len(out) >= keep:
            break
    return tuple(out[:keep])


def tokenizer_merges(tokenizer: Any) -> Callable[[str], Sequence[str]]:
    """A piece's tokens under the byte-pair merges of a tokenizer ``text_decides`` accepts
    (its own ``bpe``, cached; a printable ASCII character is its own byte symbol)."""
    return lambda piece: tokenizer.bpe(piece).split(" ")


def _open_clip_vocabulary() -> Path:
    """The BPE vocabulary file of open_clip's ``SimpleTokenizer`` (found without importing
    open_clip, which imports torch)."""
    spec = importlib.util.find_spec("open_clip")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "bpe_simple_vocab_16e6.txt.gz"
        if path.is_file():
            return path
    raise FileNotFoundError("open_clip's bpe_simple_vocab_16e6.txt.gz is not installed")


class ContextCheck:
    """Whether two texts tokenise to the same ids within ``context_length`` tokens.

    ``tokenizer``: texts -> token ids of shape (texts, context_length); default open_clip's
    ``SimpleTokenizer`` at ``context_length``. The text decides first
    (``decided_by_text``); with the default tokenizer, texts with ``clip_words`` are then
    compared by its byte-pair merges (``ClipBpe``, loaded at the first such pair), and only
    other texts go to the tokenizer itself, made at the first of them (it imports torch).
    Token ids are cached per text (a positive is compared with each of its negatives)."""

    def __init__(self, context_length: int, tokenizer: Tokenizer | None = None) -> None:
        self.context_length = int(context_length)
        self.reason = context_reason(self.context_length)
        self._tokenizer = tokenizer
        self._own_bpe = tokenizer is None
        self._bpe: ClipBpe | None = None
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
        a, b = clip_words(positive), clip_words(negative)
        if a is not None and b is not None:
            decided = decided_by_words(a, b, self.context_length)
            if decided is not None:
                return decided
            if self._own_bpe:
                if self._bpe is None:
                    self._bpe = ClipBpe()
                return self._bpe.key(a, self.context_length) == self._bpe.key(
                    b, self.context_length
                )
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
