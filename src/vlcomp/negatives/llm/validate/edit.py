"""Edit checks of a SugarCrepe negative: the words-level view of a pair (``EditView``),
the clean edit that overrules a graph rejection (``clean_edit``) and the checks after the
graph check (``validate.pairs.PairValidator.edit_reason``).

Our parser attaches a prepositional phrase differently in near-identical sentences ("a cat
sleeping next to a laptop on a desk": the desk is the cat's, with "keyboard" it is the
keyboard's) and sometimes misreads a word ("zebra standing" as one noun). So a graph
rejection is overruled when the WORDS show a clean edit of the requested kind: positive and
negative are compared as word sequences (``EditView``: punctuation, articles and "and"
left out; is/are, was/were, has/have and third-person pronouns each compared as one form)
and the one changed span — one phrase on each side: nothing but articles between its
words, so "a tractor and a dog" is two — is, by its Penn tags, nouns for replace_obj,
attribute words for replace_att, verbs, prepositions or particles for replace_rel, an
inserted noun (with its preposition or numeral) for add_obj and inserted attribute words
for add_att; a swap is clean when exchanging two noun phrases (with their modifiers, and
optionally their "of" phrase) or two modifiers (attribute words or noun modifiers: "plaid
blanket") of the positive gives the negative's words. A clean edit still goes through
the edit checks below.

Edit checks, after the graph check, on the parses of both texts (the first failing one is
the reason; a count is a rejection only when the negative has more than the positive, so
the parser's own slips on both sides cancel out):

===============================  ==========================================================
reason                           rule
===============================  ==========================================================
``grammar: number                a determiner or numeral disagrees with its noun's number
disagreement``                   ("a dogs", "two dog"; invariant plurals such as "sheep"
                                 never count)
``grammar: a/an before the       "a" or "an" before a word of the other sound ("an pink",
wrong sound``                    "a orange", "a X-ray"; ``grammar.article_for``)
``grammar: subject-verb          a finite verb disagrees with its subject's number ("a man
agreement``                      are", "two women is"; coordinated subjects are plural, a
                                 relative pronoun has its noun's number)
``edit: clause added``           more verbs than the edit allows: none new for every family
                                 but replace_rel, which may add one non-finite verb ("next
                                 to" -> "holding")
``edit: verb changed``           a verb changed where the edit changes none (tense: "walking"
                                 -> "walked"), or a replace_rel verb replaced by one of
                                 another kind (non-finite, present, past)
``edit: synonym``                the replaced concept means the same (WordNet through
                                 ``wordnet_foils.FoilFinder``: objects sharing a synset, or
                                 whose first senses are hypernym/hyponym, "man" -> "guy";
                                 attributes synonym, similar, hypernym or hyponym, "large" ->
                                 "big"; relations sharing a verb synset or a spatial class,
                                 "next to" -> "beside"): the negative is still true
``edit: not one change``         replace and add: not exactly one changed span, or an add
                                 that also removes words
``edit: words changed``          swap: the negative's words are not the positive's
===============================  ==========================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

from vlcomp.parse import Tokens
from vlcomp.parse.lexicon import COLOURS, MATERIALS, RELATIONAL_NOUNS
from vlcomp.text.lemma import ADJ_TAGS, NOUN_TAGS, VERB_TAGS
from vlcomp.text.lexicon import ARTICLES

from .grammar import AGREEMENT, ARTICLE, NUMBER

CLAUSE = "edit: clause added"
VERB_CHANGED = "edit: verb changed"
SYNONYM = "edit: synonym"
NOT_ONE_CHANGE = "edit: not one change"
SWAP_WORDS = "edit: words changed"
EDIT_REASONS: tuple[str, ...] = (
    NUMBER,
    ARTICLE,
    AGREEMENT,
    CLAUSE,
    VERB_CHANGED,
    SYNONYM,
    NOT_ONE_CHANGE,
    SWAP_WORDS,
)

# Compared as one form: these change with agreement, not with the edit.
_ONE_FORM: dict[str, str] = {
    **dict.fromkeys(("is", "are", "am"), "<be>"),
    **dict.fromkeys(("was", "were"), "<was>"),
    **dict.fromkeys(("has", "have"), "<have>"),
    **dict.fromkeys(("does", "do"), "<do>"),
    **dict.fromkeys("he she it they him her his hers its their theirs them".split(), "<3p>"),
}
FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
# Words of multi-word prepositions ("next to", "in front of", "on top of").
RELATION_WORDS = frozenset(RELATIONAL_NOUNS) | {"next", "close", "near", "far", "ahead"}
RELATION_TAGS = VERB_TAGS | {"IN", "RP", "TO", "RB", "RBR"}
NOMINAL_TAGS = NOUN_TAGS | ADJ_TAGS | {"CD"}
ATTRIBUTE_WORDS = COLOURS | MATERIALS  # the parser reads these as attributes before a noun


@dataclass(frozen=True)
class EditView:
    """One parsed text as the edit checks compare it: the positions (``keep``) of its
    words but punctuation, articles and "and", and their comparison ``forms``;
    ``known_noun`` tells a tagger's "compound noun" that is no noun ("an unmade bed")."""

    tokens: Tokens
    keep: tuple[int, ...]
    forms: tuple[str, ...]
    known_noun: Callable[[str], bool]

    @classmethod
    def of(cls, tokens: Tokens, known_noun: Callable[[str], bool]) -> EditView:
        keep = tuple(
            k
            for k, w in enumerate(tokens.lower)
            if any(c.isalnum() for c in w) and w not in ARTICLES and w != "and"
        )
        forms = tuple(_ONE_FORM.get(tokens.lower[k], tokens.lower[k]) for k in keep)
        return cls(tokens, keep, forms, known_noun)

    def tag(self, p: int) -> str:
        return self.tokens.tags[self.keep[p]]

    def word(self, p: int) -> str:
        return self.tokens.lower[self.keep[p]]

    def is_noun(self, p: int) -> bool:
        return self.tag(p) in NOUN_TAGS and self.word(p) not in RELATION_WORDS

    def is_attribute(self, p: int) -> bool:
        k = self.keep[p]
        word, tag, dep = self.tokens.lower[k], self.tokens.tags[k], self.tokens.deps[k]
        if word in RELATION_WORDS:
            return False
        if tag in NOUN_TAGS and dep == "compound" and not self.known_noun(word):
            return True
        return tag in ADJ_TAGS or dep in ("amod", "acomp") or word in ATTRIBUTE_WORDS

    def is_relation(self, p: int) -> bool:
        return self.tag(p) in RELATION_TAGS or self.word(p) in RELATION_WORDS

    def verbs(self) -> list[int]:
        """Positions of the verbs (participles used as attributes left out)."""
        return [
            p
            for p, k in enumerate(self.keep)
            if self.tokens.tags[k] in VERB_TAGS and self.tokens.deps[k] not in ("amod", "compound")
        ]

    def _nominal(self, k: int) -> bool:
        t = self.tokens
        if t.lower[k] in RELATION_WORDS:
            return False
        return t.tags[k] in NOMINAL_TAGS or (t.tags[k] in VERB_TAGS and t.deps[k] == "amod")

    def noun_phrases(self) -> list[tuple[int, int]]:
        """(first, last) positions of each noun phrase: a run of nouns, adjectives and
        numerals up to its last noun ("red fire hydrant", whatever the parser attached
        to what), and again with an "of" phrase after it ("white bowl of soup")."""
        t, n = self.tokens, len(self.tokens)
        runs: list[tuple[int, int]] = []
        k = 0
        while k < n:
            if not self._nominal(k):
                k += 1
                continue
            end = k
            while end + 1 < n and self._nominal(end + 1):
                end += 1
            nouns = [x for x in range(k, end + 1) if t.tags[x] in NOUN_TAGS]
            if nouns:
                runs.append((k, nouns[-1]))
            k = end + 1
        at = {k: p for p, k in enumerate(self.keep)}
        starts = {first: last for first, last in runs}
        spans = []
        for first, last in runs:
            spans.append((at[first], at[last]))
            after = last + 1
            if after < n and t.lower[after] == "of":
                after += 1
                while after < n and t.lower[after] in ARTICLES:
                    after += 1
                if after in starts:
                    spans.append((at[first], at[starts[after]]))
        return spans

    def contiguous(self, positions: Sequence[int]) -> bool:
        """Nothing but articles between the words: one phrase ("next to a dog"), not a
        list ("a tractor and a dog")."""
        return all(
            all(self.tokens.lower[k] in ARTICLES for k in range(self.keep[a] + 1, self.keep[b]))
            for a, b in pairwise(positions)
        )

    def modifier_spans(self) -> list[tuple[int, int]]:
        """(first, last) positions of every part of every run of attribute words and
        noun modifiers ("plaid blanket", "red fire hydrant": red, red fire, fire)."""
        runs: list[tuple[int, int]] = []
        for p, k in enumerate(self.keep):
            if not (self.is_attribute(p) or self.tokens.deps[k] == "compound"):
                continue
            if runs and runs[-1][1] == p - 1 and k == self.keep[p - 1] + 1:
                runs[-1] = (runs[-1][0], p)
            else:
                runs.append((p, p))
        return [
            (a, b)
            for first, last in runs
            for a in range(first, last + 1)
            for b in range(a, last + 1)
        ]


Hunk = tuple[str, int, int, int, int]  # difflib opcode: tag, i1, i2, j1, j2


def hunks(pos: EditView, neg: EditView) -> list[Hunk]:
    """The changed spans between the two word sequences."""
    matcher = SequenceMatcher(None, pos.forms, neg.forms, autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def _exchanges(forms: tuple[str, ...], spans: list[tuple[int, int]]) -> Iterable[tuple]:
    for a0, a1 in spans:
        for b0, b1 in spans:
            if a1 < b0:
                yield (
                    forms[:a0]
                    + forms[b0 : b1 + 1]
                    + forms[a1 + 1 : b0]
                    + forms[a0 : a1 + 1]
                    + forms[b1 + 1 :]
                )


def clean_edit(pos: EditView, neg: EditView, family: str, target: str) -> bool:
    """The words show an edit of exactly the requested kind (see the module docstring)."""
    if family == "swap":
        spans = pos.noun_phrases() if target == "obj" else pos.modifier_spans()
        return any(seq == neg.forms for seq in _exchanges(pos.forms, spans))
    changes = hunks(pos, neg)
    if len(changes) != 1:
        return False
    op, i1, i2, j1, j2 = changes[0]
    old, new = range(i1, i2), range(j1, j2)
    if not (pos.contiguous(old) and neg.contiguous(new)):
        return False
    if family == "add":
        if op != "insert":
            return False
        if target == "att":
            return all(neg.is_attribute(p) for p in new)
        nouns = [p for p in new if neg.is_noun(p)]
        return (
            bool(nouns)
            and all(neg.keep[b] == neg.keep[a] + 1 for a, b in pairwise(nouns))
            and all(neg.is_noun(p) or neg.is_relation(p) or neg.tag(p) == "CD" for p in new)
            and not any(neg.tag(p) in VERB_TAGS for p in new)
        )
    if op != "replace":
        return False
    if target == "obj":
        return all(pos.is_noun(p) for p in old) and all(neg.is_noun(p) for p in new)
    if target == "att":
        return all(pos.is_attribute(p) for p in old) and all(neg.is_attribute(p) for p in new)
    return all(pos.is_relation(p) for p in old) and all(neg.is_relation(p) for p in new)


def _changed_verbs(pos: EditView, neg: EditView) -> tuple[list[int], list[int]]:
    """(positions of positive verbs whose word the negative lacks, and the reverse);
    words are compared whatever their tags, so a tagger slip on one side is no change."""
    in_neg, in_pos = Counter(neg.forms), Counter(pos.forms)
    removed, added = [], []
    for p in pos.verbs():
        if in_neg[pos.forms[p]] > 0:
            in_neg[pos.forms[p]] -= 1
        else:
            removed.append(p)
    for p in neg.verbs():
        if in_pos[neg.forms[p]] > 0:
            in_pos[neg.forms[p]] -= 1
        else:
            added.append(p)
    return removed, added


def _verb_kind(tag: str) -> str:
    if tag == "VBD":
        return "past"
    return "present" if tag in FINITE_TAGS else "non-finite"


def verb_reason(pos: EditView, neg: EditView, family: str, target: str) -> str | None:
    """``edit: clause added`` / ``edit: verb changed`` (see the module docstring)."""
    removed, added = _changed_verbs(pos, neg)
    if (family, target) != ("replace", "rel"):
        if len(added) > len(removed):
            return CLAUSE
        return VERB_CHANGED if added or removed else None
    finite = [p for p in added if neg.tag(p) in FINITE_TAGS]
    if len(added) > len(removed) + 1 or (len(added) > len(removed) and finite):
        return CLAUSE
    kinds_old = {_verb_kind(pos.tag(p)) for p in removed}
    if removed and any(_verb_kind(neg.tag(p)) not in kinds_old for p in added):
        return VERB_CHANGED  # "walking" -> "carried"
    return None


def replaced_concept(
    pos: EditView, neg: EditView, target: str, lemma: Callable[[Tokens, int], str]
) -> tuple[str, str] | None:
    """(old, new) of a replace edit's one changed span: the noun phrase's lemma, the
    attribute words, or the relation words (a dropped or added word together with the
    word before it: "on top of" -> "on"); None unless exactly one span changed."""
    changes = hunks(pos, neg)
    if len(changes) != 1:
        return None
    op, i1, i2, j1, j2 = changes[0]
    if op != "replace":
        if target != "rel" or i1 == 0 or j1 == 0:
            return None
        i1, j1 = i1 - 1, j1 - 1

    def phrase(view: EditView, first: int, last: int) -> str:
        words_ = [view.word(p) for p in range(first, last)]
        if target == "obj":
            words_[-1] = lemma(view.tokens, view.keep[last - 1])
        return " ".join(words_)

    return phrase(pos, i1, i2), phrase(neg, j1, j2)


class SynonymCheck:
    """Whether a replacement means the same as what it replaces (WordNet, read through
    ``wordnet_foils``; loaded on first use)."""

    def __init__(self, finder: Any = None) -> None:
        self._finder = finder

    @property
    def finder(self) -> Any:
        if self._finder is None:
            from vlcomp.negatives.wordnet_foils import FoilFinder

            self._finder = FoilFinder({})
        return self._finder

    def _first_senses_nested(self, old: str, new: str) -> bool:
        so, sf = self.finder.synsets(old, "n")[:1], self.finder.synsets(new, "n")[:1]
        if not so or not sf:
            return False

        def up(synset: Any) -> set[Any]:
            return set(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))

        return sf[0] in up(so[0]) or so[0] in up(sf[0])

    def same(self, target: str, old: str, new: str) -> bool:
        if target == "obj":
            if not self.finder.synsets(old, "n") or not self.finder.synsets(new, "n"):
                old, new = old.split()[-1], new.split()[-1]  # the head: "kitchen counter"
            if old == new:
                return False
            return self.finder.relation(
                "object", old, new
            ) == "synonym" or self._first_senses_nested(old, new)
        if target == "att":
            return self.finder.relation("attribute", old, new) in (
                "synonym",
                "similar",
                "hypernym",
                "hyponym",
            )
        return self.finder.relation("relation", old, new) in ("synonym", "same_class")
