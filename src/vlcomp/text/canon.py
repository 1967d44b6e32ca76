"""Annotated scene graphs in the parser's canonical form.

A Visual Genome annotation writes "wearing", "has", "parked on", "ON", "Men", "White ";
the parser, reading the same words in a caption, writes the predicates "wear", "have",
"park on", "on", the object lemma "man" and the attribute "white". ``GraphCanon`` maps
annotations to that form with the parser's own lemmatiser and predicate map, so that the
same phrase as an annotation and as a caption yields the same atoms:

- object: ``Lemmatizer.phrase`` (last word as a noun: "tennis rackets" -> "tennis racket",
  "glasses" stays); an object whose lemma is one of the parser's stop objects (caption
  boilerplate such as "background") is not an object, as in a parsed caption;
- attribute: ``normalise``;
- predicate: ``normalise``; articles dropped ("on a" -> "on"); copula forms dropped
  when other words remain ("is on" -> "on"); the first word lemmatised as a verb unless it
  is a preposition ("sitting on" -> "sit on", "has" -> "have", "left of" stays); then the
  predicate map (the parse settings' ``predicate_map``, e.g. "to the left of" ->
  "left of");
- relation: with ``of_as_have`` (the parser's default) "X of Y" becomes (Y, have, X), or
  (X, have, Y) when X is a container ("wheel of motorcycle" -> (motorcycle, have, wheel),
  "plate of food" -> (plate, have, food)), as the parser reads those words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import normalise_or_none
from .lemma import Lemmatizer
from .lexicon import ARTICLES, COPULA_FORMS, PREPOSITIONS


@dataclass(frozen=True)
class GraphCanon:
    lemmatizer: Lemmatizer
    predicate_map: Callable[[str], str] = field(default=lambda p: p)
    of_as_have: bool = False
    containers: frozenset[str] = frozenset()
    stop_objects: frozenset[str] = frozenset()

    def object_lemma(self, name: object) -> str | None:
        """The object's lemma; None for a blank name or a stop object."""
        text = normalise_or_none(name)
        if text is None:
            return None
        lemma = self.lemmatizer.phrase(text)
        return None if lemma in self.stop_objects else lemma

    def attribute(self, value: object) -> str | None:
        return normalise_or_none(value)

    def predicate(self, predicate: object) -> str | None:
        text = normalise_or_none(predicate)
        if text is None:
            return None
        words = [w for w in text.split() if w not in ARTICLES] or text.split()
        rest = [w for w in words if w not in COPULA_FORMS]
        words = rest or words
        first = words[0]
        if first not in PREPOSITIONS and first not in COPULA_FORMS:
            words[0] = self.lemmatizer.verb(first, "VBZ")
        return self.predicate_map(" ".join(words))

    def relation(self, subject: str, predicate: str) -> tuple[bool, str]:
        """(turned round, predicate) of a relation from an object with lemma ``subject``
        and a canonical ``predicate`` (see module docstring for "of")."""
        if predicate == "of" and self.of_as_have:
            return subject not in self.containers, "have"
        return False, predicate
