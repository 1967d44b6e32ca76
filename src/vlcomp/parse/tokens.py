"""A backend-neutral parse of one caption, the lemmatiser, and text preparation.

``Tokens`` carries what the graph extraction reads: per token its lower-cased form,
Penn Treebank tag, dependency label (ClearNLP labels, as spaCy's English models write
them), absolute head index (the root is its own head) and character span in the caption.
Every backend converts its output to this form, so one set of rules serves them all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .lexicon import NOUN_LEMMA_FIXES, PLURAL_ONLY, VERB_LEMMA_FIXES

# Coarse word classes from Penn Treebank tags.
NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
PLURAL_NOUN_TAGS = frozenset({"NNS", "NNPS"})
VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"})
ADJ_TAGS = frozenset({"JJ", "JJR", "JJS"})
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


class Lemmatizer:
    """Rule lemmatiser over spaCy's English lookup tables (exceptions, suffix rules, and
    the index of known lemmas), applied to single words with a Penn tag; memoised.

    Among the suffix rules whose result is a known lemma, nouns and adjectives take the
    most specific (last listed) rule, as spaCy does ("crosses" -> "cross", not "crosse");
    verbs take the first ("riding" -> "ride", not "rid"; "shining" -> "shine"), with a
    few listed fixes ("singing" -> "sing"). Plural-only nouns stay ("glasses", "jeans").
    A singular noun tag (NN/NNP) keeps the word; without a tag a noun is reduced when a
    rule applies ("bushes" -> "bush", "bus" stays), for words without context (gold).
    """

    def __init__(
        self,
        rules: Mapping[str, Sequence[Sequence[str]]],
        exceptions: Mapping[str, Mapping[str, Sequence[str]]],
        index: Mapping[str, frozenset[str]],
    ) -> None:
        self._rules = {k: [(old, new) for old, new in v] for k, v in rules.items()}
        self._exc = exceptions
        self._index = index
        self.noun = lru_cache(maxsize=200_000)(self._noun)
        self.verb = lru_cache(maxsize=50_000)(self._verb)
        self.adj = lru_cache(maxsize=50_000)(self._adj)

    @classmethod
    def from_spacy(cls, nlp: object) -> Lemmatizer:
        """Tables of the ``lemmatizer`` component of a loaded spaCy pipeline (which may be
        disabled)."""
        component = nlp.get_pipe("lemmatizer")  # type: ignore[attr-defined]
        lookups = component.lookups
        rules_t = lookups.get_table("lemma_rules")
        exc_t = lookups.get_table("lemma_exc")
        index_t = lookups.get_table("lemma_index")
        pos = ("noun", "verb", "adj")
        rules = {p: rules_t.get(p, []) for p in pos}
        exceptions = {p: exc_t.get(p, {}) for p in pos}
        index = {p: frozenset(index_t.get(p, [])) for p in pos}
        return cls(rules, exceptions, index)

    def _apply(self, word: str, pos: str, last: bool) -> str:
        exc = self._exc[pos].get(word)
        if exc:
            return exc[0]
        index = self._index[pos]
        found = word
        for old, new in self._rules[pos]:
            if word.endswith(old):
                form = word[: len(word) - len(old)] + new
                if form and form in index:
                    if not last:
                        return form
                    found = form
        return found

    def _noun(self, word: str, plural: bool = True) -> str:
        if not plural or word in PLURAL_ONLY:
            return word
        return NOUN_LEMMA_FIXES.get(word) or self._apply(word, "noun", last=True)

    def _verb(self, word: str, tag: str = "VBZ") -> str:
        if tag in ("VB", "VBP") and word not in self._exc["verb"]:
            return word
        return VERB_LEMMA_FIXES.get(word) or self._apply(word, "verb", last=False)

    def _adj(self, word: str, tag: str = "JJ") -> str:
        return word if tag == "JJ" else self._apply(word, "adj", last=True)

    def is_noun(self, word: str) -> bool:
        """``word`` is a known noun lemma."""
        return word in self._index["noun"]

    def lemma(self, word: str, tag: str) -> str:
        """Lemma of a lower-case ``word`` with Penn tag ``tag``."""
        if tag in NOUN_TAGS:
            return self.noun(word, tag in PLURAL_NOUN_TAGS)
        if tag in VERB_TAGS:
            return self.verb(word, tag)
        if tag in ADJ_TAGS:
            return self.adj(word, tag)
        return word

    def phrase(self, phrase: str) -> str:
        """Noun phrase lemma without context: lower-cased, last word as a noun."""
        words = phrase.lower().split()
        if not words:
            return ""
        words[-1] = self.noun(words[-1])
        return " ".join(words)


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
