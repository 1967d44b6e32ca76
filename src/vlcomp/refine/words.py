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
