"""The world grammar: the graph a caption states, read with the world's own vocabulary.

``read_caption`` reads both caption styles of ``captions``, the productivity template and
region phrases with the world's own vocabulary and caption grammar, never with the project's
parser, so that an oracle's error (``oracles``) is the generator's, never a parser's. A text
the grammar cannot read raises ``Unreadable`` with a reason.

A reading is a set of nodes (an object word with a count, attributes and negated
attributes) and relations between nodes (possibly negated). The definite "the X" after an
"X" and the pronouns "it"/"them" refer back; "another X" and every other noun phrase is a
new node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlcomp.settings import settings_from
from vlcomp.text import plural
from vlcomp.world.captions import ALT_PREFIXES, ALT_SUFFIXES
from vlcomp.world.vocab import NUMBER_WORDS, SURFACE_TO_PREDICATE


class Unreadable(ValueError):
    """A text the world grammar cannot read; ``reason`` is its category."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class NodeReading:
    shape: str
    count: int
    attributes: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelationReading:
    subj: int
    pred: str
    obj: int
    negated: bool = False


@dataclass(frozen=True)
class Reading:
    nodes: tuple[NodeReading, ...]
    relations: tuple[RelationReading, ...]

    def words(self) -> set[str]:
        out = {n.shape for n in self.nodes}
        out |= {a for n in self.nodes for a in (*n.attributes, *n.negated)}
        return out | {r.pred for r in self.relations}


# ------------------------------------------------------------------------------ grammar

# Frames of ``captions`` (listing prefixes and suffixes, alt-text prefixes and suffixes)
# that carry no graph; removed before reading.
_FRAMES: tuple[str, ...] = (
    "on a grey background",
    "in the picture",
    "a picture of",
    "an image of",
    "a drawing of",
    "this image shows",
    *(p.strip(" :") for p in ALT_PREFIXES if p.strip()),
    *(s.strip(" -|") for s in ALT_SUFFIXES),
)
_FILLERS = frozenset({"there", "is", "are", "sit", "sits", "also", "plus", "with", "has", "have"})
_SEPARATORS = {
    ",": "comma",
    ";": "stop",
    ".": "stop",
    "and": "and",
    "&": "and",
    "+": "and",
    "/": "and",
}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_MAX_COUNT_DIGITS = 9  # larger numbers are stock-photo ids of alt texts, not counts


@dataclass(frozen=True)
class WorldVocab:
    shapes: tuple[str, ...]
    colours: tuple[str, ...]
    sizes: tuple[str, ...]

    @staticmethod
    def from_config(world_cfg: Mapping[str, Any]) -> WorldVocab:
        """The vocabulary of a ``world`` block as validated (its other keys are not read)."""
        return settings_from(WorldVocab, world_cfg, "world", shared=True)


class _Grammar:
    def __init__(self, vocab: WorldVocab) -> None:
        self.vocab = vocab
        self.noun: dict[str, tuple[str, bool]] = {s: (s, False) for s in vocab.shapes}
        self.noun.update({plural(s): (s, True) for s in vocab.shapes})
        self.adjectives = frozenset(vocab.colours) | frozenset(vocab.sizes)
        frames = sorted({f for f in _FRAMES if f}, key=len, reverse=True)
        self.frames = re.compile(r"\b(?:" + "|".join(re.escape(f) for f in frames) + r")\b")
        self.surfaces: dict[str, list[tuple[str, ...]]] = {}  # by first word, longest first
        for surface in sorted((tuple(s.split()) for s in SURFACE_TO_PREDICATE), key=len)[::-1]:
            self.surfaces.setdefault(surface[0], []).append(surface)


_GRAMMARS: dict[WorldVocab, _Grammar] = {}


def _tokens(text: str, grammar: _Grammar) -> list[str]:
    lowered = grammar.frames.sub(" ", text.lower())
    return re.findall(r"[a-z]+|\d+|[,;.&+/]", lowered)


def read_caption(text: str, vocab: WorldVocab) -> Reading:
    """The graph a caption states, read with the world grammar (see module docstring)."""
    grammar = _GRAMMARS.setdefault(vocab, _Grammar(vocab))
    return _Reader(_tokens(text, grammar), grammar, text).read()


class _Reader:
    def __init__(self, tokens: list[str], grammar: _Grammar, text: str) -> None:
        self.t, self.g, self.text = tokens, grammar, text
        self.i = 0
        self.nodes: list[NodeReading] = []
        # ("np", node), ("rel", (pred, negated)), ("pron", word), ("sep", kind)
        self.items: list[tuple[str, Any]] = []
        self.existential: set[int] = set()  # items of noun phrases after "there is/are"
        self.there = False

    def fail(self, reason: str, detail: str) -> Unreadable:
        return Unreadable(reason, f"{detail} in {self.text!r}")

    def peek(self, k: int = 0) -> str | None:
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def relation_at(self) -> tuple[str, int] | None:
        for surface in self.g.surfaces.get(self.t[self.i], ()) if self.i < len(self.t) else ():
            if tuple(self.t[self.i : self.i + len(surface)]) == surface:
                return SURFACE_TO_PREDICATE[" ".join(surface)], len(surface)
        return None

    def read(self) -> Reading:
        while self.i < len(self.t):
            word = self.t[self.i]
            if word == "that" and self.t[self.i + 1 : self.i + 3] == ["is", "not"]:
                self.i += 3
                rel = self.relation_at()
                if rel is None:
                    raise self.fail("negation without a relation", "'that is not'")
                self.items.append(("rel", (rel[0], True)))
                self.i += rel[1]
                continue
            rel = self.relation_at()
            if rel is not None:
                self.items.append(("rel", (rel[0], False)))
                self.i += rel[1]
            elif word in _SEPARATORS:
                kind = _SEPARATORS[word]
                if kind == "and" and self.items and self.items[-1] == ("sep", "comma"):
                    self.items[-1] = ("sep", "stop")  # the ", and " joining two sentences
                else:
                    self.items.append(("sep", kind))
                self.i += 1
            elif word in ("it", "them"):
                self.items.append(("pron", word))
                self.i += 1
            elif word == "there" and self.peek(1) in ("is", "are"):
                self.there = True
                self.i += 2
            elif word in _FILLERS or word.isdigit() and int(word) > _MAX_COUNT_DIGITS:
                self.i += 1
            else:
                node = self.noun_phrase()
                self.items.append(("np", node))
                if self.there:
                    self.existential.add(len(self.items) - 1)
                self.there = False
        if not self.nodes:
            raise self.fail("no object word", "nothing to check")
        return Reading(tuple(self.nodes), tuple(self.relations()))

    def noun_phrase(self) -> int:
        det = self.t[self.i]
        count: int | None = None
        definite = ordinal = None
        if det in ("a", "an", "one", "another"):
            count, self.i = 1, self.i + 1
        elif det == "the":
            definite, self.i = True, self.i + 1
            if self.peek() in _ORDINALS:
                ordinal = _ORDINALS.index(str(self.peek())) + 1
                self.i += 1
        word = self.peek()
        if word in NUMBER_WORDS.values():
            count = next(k for k, w in NUMBER_WORDS.items() if w == word)
            self.i += 1
        elif word is not None and word.isdigit():
            count = int(word)
            self.i += 1
        elif word == "several":
            count = 2
            self.i += 1
        attrs: list[str] = []
        negated: list[str] = []
        while True:
            word = self.peek()
            if word is None:
                raise self.fail("noun phrase without an object word", "text ends")
            if word == "not" and self.peek(1) in self.g.adjectives:
                negated.append(str(self.peek(1)))
                self.i += 2
            elif word in self.g.adjectives:
                attrs.append(word)
                self.i += 1
            elif word in self.g.noun:
                self.i += 1
                break
            elif word.isalpha() and word not in _SEPARATORS and self.relation_at() is None:
                raise self.fail("unknown word", repr(word))
            else:
                raise self.fail("noun phrase without an object word", f"before {word!r}")
        shape, is_plural = self.g.noun[word]
        if count is None:
            count = 2 if is_plural else 1
        if (count > 1) != is_plural:
            raise self.fail("count and noun disagree", f"{count} {word}")
        if definite and ordinal is None:
            phrase = (shape, tuple(attrs), tuple(negated))
            exact = [
                k for k, n in enumerate(self.nodes) if (n.shape, n.attributes, n.negated) == phrase
            ]
            named = [k for k, n in enumerate(self.nodes) if n.shape == shape]
            earlier = exact or (named if not attrs and not negated else [])
            if len(earlier) == 1:
                return earlier[0]
            if len(earlier) > 1:
                raise self.fail("ambiguous reference", f"'the {word}'")
        if ordinal is not None:
            same = [
                k
                for k, n in enumerate(self.nodes)
                if (n.shape, n.attributes, n.negated) == (shape, tuple(attrs), tuple(negated))
            ]
            if len(same) < ordinal:
                raise self.fail("unresolved reference", f"'the {_ORDINALS[ordinal - 1]} {word}'")
            return same[ordinal - 1]
        self.nodes.append(NodeReading(shape, count, tuple(attrs), tuple(negated)))
        return len(self.nodes) - 1

    def relations(self) -> list[RelationReading]:
        items = self.items
        out: list[RelationReading] = []
        clause_subject: int | None = None
        for k, (kind, value) in enumerate(items):
            if kind == "sep" and value in ("stop", "comma"):
                clause_subject = None
            if kind != "rel":
                continue
            pred, negated = value
            prev = items[k - 1] if k else None
            nxt = items[k + 1] if k + 1 < len(items) else None
            if nxt is not None and nxt[0] == "pron":
                # "<obj> with <subj> above it", "<obj> has <subj> above it": the clause's
                # first noun phrase is the antecedent
                first = self._clause_start(k)
                if prev is None or prev[0] != "np" or items[first][0] != "np" or first >= k - 1:
                    raise self.fail("pronoun without an antecedent", f"'{pred} {nxt[1]}'")
                subj, obj = prev[1], items[first][1]
            elif prev is not None and prev[0] == "np":
                subj, obj = prev[1], self._np(nxt, pred)
            elif prev is None or prev == ("sep", "stop") or prev == ("sep", "comma"):
                # fronted: "above the square there is a circle"
                obj = self._np(nxt, pred)
                after = min((j for j in self.existential if j > k + 1), default=k + 2)
                subj = self._np(items[after] if after < len(items) else None, pred)
            elif prev == ("sep", "and") and clause_subject is not None:
                # "a circle is above a square and left of a star"
                subj, obj = clause_subject, self._np(nxt, pred)
            else:
                raise self.fail("relation without a subject", repr(pred))
            if subj == obj:
                raise self.fail("relation of a node with itself", repr(pred))
            clause_subject = subj
            out.append(RelationReading(subj, pred, obj, negated))
        return out

    def _clause_start(self, k: int) -> int:
        j = k
        while j > 0 and self.items[j - 1] not in (("sep", "stop"), ("sep", "comma")):
            j -= 1
        return j

    def _np(self, item: tuple[str, Any] | None, pred: str) -> int:
        if item is None or item[0] != "np":
            raise self.fail("relation without an object", repr(pred))
        return int(item[1])
