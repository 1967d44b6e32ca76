"""Bag-of-words identity between a positive and its negative.

Tokenisation: the text layer's words (``vlcomp.text.words``): lower-case; a word is a
maximal run of letters and digits, joined across an inner apostrophe or hyphen ("woman's"
is one word, distinct from "woman"; so is "four-wheelers"); every other character,
punctuation and spaced dashes included, separates words ("board.Cabbage" is two words).
With this rule the published SugarCrepe refined files have 164 of 245 swap_obj and 407 of
666 swap_att pairs whose two captions are the same multiset of words (408 when hyphens
split words: "two men on four-wheelers" / "four men on two-wheelers").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import polars as pl

from vlcomp.refine.candidates import GROUP_COLUMNS, as_pairs
from vlcomp.text import words as text_words


def words(text: str) -> Counter[str]:
    """The multiset of ``text``'s words."""
    return Counter(text_words(text))


def same_words(a: str, b: str) -> bool:
    return words(a) == words(b)


def same_word_share(candidates: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, family, target): n pairs, how many have identical word multisets."""
    pairs = as_pairs(candidates, multi="split")
    flags = [same_words(p, n) for p, n in zip(pairs["positive"], pairs["negative"], strict=True)]
    return (
        pairs.with_columns(same=pl.Series(flags, dtype=pl.Boolean))
        .group_by(list(GROUP_COLUMNS))
        .agg(n=pl.len().cast(pl.Int64), same_words=pl.col("same").sum().cast(pl.Int64))
        .with_columns(share=pl.col("same_words") / pl.col("n"))
        .sort(list(GROUP_COLUMNS), nulls_last=True)
    )


def changed_words(positive: str, negative: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the words only ``positive`` has, the words only ``negative`` has), each sorted: what
    the negative changes ("a circle above a square" / "a circle below a square":
    (("above",), ("below",)))."""
    p, n = words(positive), words(negative)
    return tuple(sorted((p - n).elements())), tuple(sorted((n - p).elements()))


def word_prior_accuracy(pairs: Sequence[tuple[str, str, int]]) -> float | None:
    """How well the words a negative changes predict which text is the positive, without
    the image: (positive, negative, fold) pairs, fold 0 or 1. For each change seen in one
    fold the rule picks the direction seen more often there ("above" -> "below" more often
    than "below" -> "above": prefer "above"), and is scored on the other fold; a change it
    has not seen, or seen equally often both ways, or whose two texts are the same words,
    scores 1/2 (a guess). 0.5: the changes carry no prior; 1.0: they give the answer away.
    A text-only model trained on the generator's negatives (NegCLIP-style) can learn such
    a prior; one trained on captions alone cannot."""
    if not pairs:
        return None
    counts: list[Counter[tuple[tuple[str, ...], tuple[str, ...]]]] = [Counter(), Counter()]
    changes = []
    for positive, negative, fold in pairs:
        change = changed_words(positive, negative)
        counts[fold][change] += 1
        changes.append((change, fold))
    score = 0.0
    for (removed, added), fold in changes:
        other = counts[1 - fold]
        right, wrong = other[(removed, added)], other[(added, removed)]
        score += 1.0 if right > wrong else 0.0 if right < wrong else 0.5
    return score / len(changes)
