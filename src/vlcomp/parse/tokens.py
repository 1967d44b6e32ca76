"""A backend-neutral parse of one caption, and text preparation.

``Tokens`` carries what the graph extraction reads: per token its lower-cased form,
Penn Treebank tag, dependency label (ClearNLP labels, as spaCy's English models write
them), absolute head index (the root is its own head) and character span in the caption.
Every backend converts its output to this form, so one set of rules serves them all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PRONOUN_TAGS = frozenset({"PRP", "WP", "WDT", "DT", "EX"})
NUM_TAGS = frozenset({"CD"})


@dataclass(frozen=True, slots=True)
class Tokens:
    """One parsed caption (see module docstring). ``lemmas`` is None when the backend
    leaves lemmatisation to ``Lemmatizer`` (spaCy backend: only the tokens the graph needs
    are lemmatised, which is cheaper than running the model's lemmatiser)."""

    text: str
    lower: Sequence[str]
    tags: Sequence[str]
    deps: Sequence[str]
    heads: Sequence[int]
    starts: Sequence[int]
    ends: Sequence[int]
    lemmas: Sequence[str] | None = None

    def __len__(self) -> int:
        return len(self.lower)

    def span_text(self, first: int, last: int) -> str:
        """Caption text from token ``first`` to token ``last`` inclusive, as written."""
        return " ".join(self.text[self.starts[first] : self.ends[last]].split())


# ----------------------------------------------------------------------- text preparation

_WORD = re.compile(r"[^\W\d_]{2,}")
# A list separator or dash between spaces ("red circle | free vector", "a - b"); it becomes
# a comma of the same length, so that character offsets stay valid.
_SEPARATOR = re.compile(r"(?<=\s)[|\-\u2013\u2014/+\u2022~](?=\s)")
# Symbols that separate the items of a list (alt text: "star left of hexagon & cross |
# clip art"); a relation does not reach across them. Dashes are left out: they also join
# the words of a value ("dark-green").
LIST_SEPARATORS = frozenset({"/", "|", "&", "+", "\u2022", "~"})


def is_headline_case(text: str) -> bool:
    """True for Title Case Or ALL CAPS text (alt text), which taggers read as proper nouns."""
    words = _WORD.findall(text)
    if len(words) < 3:
        return bool(words) and text.isupper()
    upper = sum(w[0].isupper() for w in words)
    return upper >= 0.6 * len(words)


def truncate(text: str | None, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at a space where there is one."""
    if not text:
        return ""
    if len(text) <= max_chars:
        return text
    cut = text.rfind(" ", 0, max_chars)
    return text[: cut if cut > 0 else max_chars]


def prepare(text: str) -> str:
    """The string the model parses: headline case lower-cased, spaced separators turned
    into commas. Same length as ``text`` (offsets map back), unless lower-casing changes
    the length, in which case the case is kept."""
    if is_headline_case(text):
        lowered = text.lower()
        if len(lowered) == len(text):
            text = lowered
    return _SEPARATOR.sub(",", text)
