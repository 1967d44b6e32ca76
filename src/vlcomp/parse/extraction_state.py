"""The state of one graph extraction and the questions about tokens every rule asks.

``ExtractionState`` holds the parse (``Tokens``) as arrays with each token's children, the
objects, attributes and relations found so far, and answers questions about tokens (a
noun's lemma, separators between two tokens, colour and size words). The rules build on
it: ``AttributeRules``, ``ObjectRules``, ``RelationRules``; ``extract`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable

from vlcomp.text.lemma import ADJ_TAGS, NOUN_TAGS, Lemmatizer

from .lexicon import BASIC_COLOURS, DESCRIPTIVE_ADJECTIVES
from .scene_graph import ExtractOptions
from .tokens import LIST_SEPARATORS, Tokens


class ExtractionState:
    """State of one extraction: token arrays, objects found, relations emitted."""

    def __init__(self, tok: Tokens, lemmatizer: Lemmatizer | None, opts: ExtractOptions):
        self.tok, self.opts = tok, opts
        self.lower, self.tags, self.deps, self.heads = tok.lower, tok.tags, tok.deps, tok.heads
        self.n = len(tok)
        self.children: list[list[int]] = [[] for _ in range(self.n)]
        for i, h in enumerate(self.heads):
            if h != i:
                self.children[h].append(i)
        self._lemma: Callable[[int], str]
        self.lemmatizer = lemmatizer
        if tok.lemmas is not None:
            lemmas = tok.lemmas
            self._lemma = lambda i: lemmas[i].lower()
        else:
            assert lemmatizer is not None
            lem = lemmatizer
            self._lemma = lambda i: lem.lemma(self.lower[i], self.tags[i])
        self._noun_lemmas: list[str | None] = [None] * self.n
        self.span_of: dict[int, tuple[int, str]] = {}  # span start -> (end, canonical)
        self.in_span = [False] * self.n
        self.obj_of: dict[int, int] = {}  # token -> provisional object number
        self.objects: list[tuple[int, str, str]] = []  # (head token, name, lemma)
        self.attributes: list[tuple[int, int, str]] = []  # (token position, obj, value)
        self.redirect: dict[int, int] = {}
        # Attribute words claimed by the object right after them (see _left_attributes):
        # a dependency edge that gives one of them to another object is a misparse.
        self.claimed: dict[int, int] = {}
        self.relations: list[tuple[int, str, int, bool]] = []  # (+ via a pronoun)

    # ---------------------------------------------------------------------- token helpers

    def _noun_lemma(self, i: int) -> str:
        lemma = self._noun_lemmas[i]
        if lemma is None:
            lemma = self._lemma(i) if self.tags[i] in NOUN_TAGS else self.lower[i]
            self._noun_lemmas[i] = lemma
        return lemma

    def _ends_item(self, i: int) -> bool:
        return i + 1 >= self.n or self.tags[i + 1] in (",", ":", "CC", ".")

    def _starts_phrase(self, k: int) -> bool:
        if k >= self.n:
            return False
        return self.lower[k] in BASIC_COLOURS or self.lower[k] in DESCRIPTIVE_ADJECTIVES

    def _is_attribute_word(self, k: int) -> bool:
        return self.lower[k] in self.opts.attribute_nouns or self.lower[k] in DESCRIPTIVE_ADJECTIVES

    def _separated(self, a: int, b: int) -> bool:
        """A separator (punctuation, conjunction, preposition) lies between tokens a < b."""
        return any(self.tags[k] in (",", ":", "CC", "IN", "HYPH", ".") for k in range(a + 1, b))

    def _punct_between(self, a: int, b: int) -> bool:
        lo, hi = min(a, b), max(a, b)
        return any(self.deps[k] == "punct" and self.lower[k] != "-" for k in range(lo + 1, hi))

    def _is_adj(self, i: int) -> bool:
        return self.tags[i] in ADJ_TAGS or self.tags[i] in ("VBN", "VBG")

    def _listed(self, a: int, b: int) -> bool:
        """Whether a list separator symbol, as written in the caption, stands between
        tokens ``a`` and ``b``."""
        tok = self.tok
        return any(
            tok.text[tok.starts[j] : tok.ends[j]] in LIST_SEPARATORS
            for j in range(min(a, b) + 1, max(a, b))
        )
