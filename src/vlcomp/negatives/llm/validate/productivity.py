"""Validation of productivity captions (``ProductivityValidator``): the text checks
(``validate.text``), then "a"/"an" before the wrong sound (``validate.grammar``:
``article_errors``, any), then the graph check below.

Graph check of a productivity caption (CREPE, n >= 5 atoms): the caption's graph against
the walk's ``Pattern``, compared as SETS because our parser has no coreference ("the dog"
re-mentioning "a dog" is a second object to it) — so repeated objects (dog_1, dog_2) are not
counted, only named. The walk's atoms are first read by the same parser in minimal phrases
("a dog", "a brown dog", "the dog chasing the frisbee") so that names, attribute values and
predicates are compared in the parser's own conventions (lemmas, "ride", "have"); an atom
the parser cannot read even there is *unchecked* (counted, never a rejection) and the
caption's relations between that pair of objects are tolerated. A caption relation matches
a walk relation with the same ends when the predicates are equal, the caption's ends
with the walk's after a verb ("sit on" states "on") or starts with it before a particle
the minimal phrase dropped ("ride down" states "ride"). Reasons: ``productivity: omits
object|attribute|relation``, ``productivity: adds object|attribute|relation``, and for
polarity, which the parser ignores, a count of negation words ("not", "no", "never",
"without", "nor", "...n't"): ``productivity: omits negation`` (fewer than the negated atoms)
and ``productivity: adds negation`` (any in a pattern without negated atoms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vlcomp.ingest.rules import CaptionRules
from vlcomp.negatives.productivity_text import Pattern
from vlcomp.text import collapse_spaces, words

from .grammar import ARTICLE, article_errors
from .graph import NO_OBJECTS, Graph, GraphReader
from .text import english_rules, text_reason

NEGATION_WORDS = frozenset({"not", "no", "never", "without", "nor"})


OMITS = "productivity: omits {}"
ADDS = "productivity: adds {}"
OMITS_NEGATION = "productivity: omits negation"
ADDS_NEGATION = "productivity: adds negation"


@dataclass(frozen=True)
class Reference:
    """A walk's atoms in the parser's conventions (sets; see the module docstring)."""

    objects: frozenset[str]
    bindings: frozenset[tuple[str, str]]
    relations: frozenset[tuple[str, str, str]]
    tolerated_pairs: frozenset[frozenset[str]]  # ends of relations the parser cannot read
    negated: int  # negated atoms
    unchecked: int  # atoms the parser cannot read in a minimal phrase


def negation_count(text: str) -> int:
    return sum(w in NEGATION_WORDS or w.endswith("n't") for w in words(text))


def _predicate_matches(caption: str, walk: str) -> bool:
    """Equal, a verb before the walk's preposition ("sit on" states "on"), or a particle
    the minimal phrase lost ("ride down" states "ride")."""
    return caption == walk or caption.endswith(" " + walk) or caption.startswith(walk + " ")


class ProductivityValidator:
    """Checks captions against the ``Pattern`` they must state (see the module docstring)."""

    def __init__(self, reader: GraphReader, max_chars: int, rules: CaptionRules | None = None):
        self.reader = reader
        self.max_chars = max_chars
        self.rules = rules or english_rules()

    # minimal phrases --------------------------------------------------------------
    @staticmethod
    def _phrases(pattern: Pattern) -> list[str]:
        out = []
        for node in pattern.nodes:
            out.append(f"a {node.name}")
            out.extend(f"a {a.value} {node.name}" for a in node.attributes)
        for e in pattern.edges:
            out.append(
                f"the {pattern.nodes[e.subject].name} {e.predicate} the "
                f"{pattern.nodes[e.object].name}"
            )
        return out

    def references(self, patterns: Sequence[Pattern]) -> list[Reference]:
        phrases = [p for pattern in patterns for p in self._phrases(pattern)]
        self.reader.parsed(phrases)  # one batch for all
        return [self._reference(p) for p in patterns]

    def _reference(self, pattern: Pattern) -> Reference:
        unchecked = 0

        def lemma(name: str) -> str | None:
            (g,) = self.reader.parsed([f"a {name}"])
            return g.objects[0][2] if len(g.objects) == 1 else None

        objects: set[str] = set()
        bindings: set[tuple[str, str]] = set()
        relations: set[tuple[str, str, str]] = set()
        tolerated: set[frozenset[str]] = set()
        names = [lemma(n.name) for n in pattern.nodes]
        negated = 0
        for node, name in zip(pattern.nodes, names, strict=True):
            if name is None:
                unchecked += 1 + len(node.attributes)
                continue
            objects.add(name)
            for a in node.attributes:
                negated += a.negated
                (g,) = self.reader.parsed([f"a {a.value} {node.name}"])
                values = [v for _, v in g.attributes]
                if len(g.objects) == 1 and g.objects[0][2] == name and len(values) == 1:
                    bindings.add((values[0], name))
                else:
                    unchecked += 1
        for e in pattern.edges:
            negated += e.negated
            s, o = names[e.subject], names[e.object]
            subject, object_ = pattern.nodes[e.subject].name, pattern.nodes[e.object].name
            (g,) = self.reader.parsed([f"the {subject} {e.predicate} the {object_}"])
            if s is None or o is None:
                unchecked += 1
                continue
            ends = g.relations[0][::2] if len(g.relations) == 1 else None
            if len(g.objects) == 2 and ends == (0, 1):
                relations.add((s, g.relations[0][1], o))
            elif len(g.objects) == 2 and ends == (1, 0):  # "the tail of the plane": have
                relations.add((o, g.relations[0][1], s))
            else:
                unchecked += 1
                tolerated.add(frozenset((s, o)))
        return Reference(
            frozenset(objects),
            frozenset(bindings),
            frozenset(relations),
            frozenset(tolerated),
            negated,
            unchecked,
        )

    # checks -----------------------------------------------------------------------
    def graph_reason(self, caption: str, ref: Reference) -> str | None:
        (parsed,) = self.reader.parsed([caption])
        graph = Graph.of(parsed)
        if not graph.objects:
            return NO_OBJECTS
        objects = set(graph.objects)
        if ref.objects - objects:
            return OMITS.format("object")
        if objects - ref.objects:
            return ADDS.format("object")
        bindings = set(graph.bindings)
        if ref.bindings - bindings:
            return OMITS.format("attribute")
        if bindings - ref.bindings:
            return ADDS.format("attribute")
        stated = set(graph.relations)
        for s, p, o in ref.relations:
            if not any((s2, o2) == (s, o) and _predicate_matches(p2, p) for s2, p2, o2 in stated):
                return OMITS.format("relation")
        for s2, p2, o2 in stated:
            if frozenset((s2, o2)) in ref.tolerated_pairs:
                continue
            if not any(
                (s2, o2) == (s, o) and _predicate_matches(p2, p) for s, p, o in ref.relations
            ):
                return ADDS.format("relation")
        cues = negation_count(caption)
        if ref.negated and cues < ref.negated:
            return OMITS_NEGATION
        if not ref.negated and cues:
            return ADDS_NEGATION
        return None

    def check(
        self, captions: Sequence[str | None], patterns: Sequence[Pattern]
    ) -> tuple[list[str | None], list[Reference]]:
        """(reason or None per caption, the references) of captions against patterns."""
        refs = self.references(patterns)
        reasons = [text_reason(c, self.max_chars, self.rules) for c in captions]
        todo = [i for i, r in enumerate(reasons) if r is None]
        texts = [collapse_spaces(captions[i] or "") for i in todo]
        for i, text, tokens in zip(todo, texts, self.reader.tokens(texts), strict=True):
            reasons[i] = ARTICLE if article_errors(tokens) else self.graph_reason(text, refs[i])
        return reasons, refs
