"""Scene graph of one parsed caption: objects, attributes, relations (DESIGN §2 ``graphs``).

Rules, on the dependency tree (ClearNLP labels) and Penn tags of ``Tokens``:

Objects
    Every noun that is not absorbed into a following noun as a ``compound`` is the head of
    one object. Its name is the contiguous compound run ending at it ("tennis racket",
    "fire hydrant"; a hyphen without spaces joins, any other punctuation splits); its lemma
    is the name with the last word lemmatised ("tennis rackets" -> "tennis racket").
    Leading colour, material and common size words of the run are attributes instead
    ("metal poles", "Small Red Hexagons"). Not objects: nouns inside a multi-word
    preposition ("top" in "on top of"; "on top" without "of"), boilerplate
    (``stop_objects``, always: "icon", "stock", "background", ...; a compound ending in it
    keeps its other words, "circle clip art" -> "circle"), frame nouns (``frame_objects``:
    "picture", "image", ...) in framing positions only ("a picture of", "in the image",
    "this photo shows", standing alone) — "framed pictures on the wall" keeps them —,
    quantity nouns followed by "of" ("a group of people": the object is "people"), and
    tokens without a letter. Pronouns are no objects; as a relation argument
    "it"/"them"/... means the nearest earlier object, and a relative pronoun ("that",
    "which") the noun its clause modifies. Common tagger slips are repaired: a gerund
    ending a prepositional phrase ("on building") and an "adjective" with a determiner or
    modifier in an argument slot ("a pink cross" tagged JJ) are nouns; a colour noun
    right before a noun is an attribute of it.
Attributes
    ``amod`` modifiers of the head and its compound words (with their ``conj``
    adjectives; not across a comma), predicative adjectives ("the car is red": ``acomp``
    of a verb whose subject is the object), and the leading words above. A colour shade
    and a colour term make one value ("light blue", "dark-green" -> "dark green", "light
    colored"; "tan colored" -> "tan"); hyphenated adjectives stay one value
    ("multi-colored"). Numerals ("two dogs" -> "2") only with ``numerals=True``: counts
    are not visual attributes of one object, and the world's ground truth has none.
Relations (subject, predicate, object)
    - preposition attached to a noun: (noun, prep, pobj) — "a cat on a mat";
    - multi-word prepositions of the ``PredicateMap`` ("on top of", "in front of",
      "next to", "to the left of", ...) are recognised in the text and used as one
      predicate, whatever attachment the parser chose;
    - verb with a direct object: (subject, verb lemma, object) — "man riding a horse" ->
      (man, ride, horse). A preposition attached to a verb gives (subject, "verb prep",
      pobj) — "sitting on a bench" -> "sit on" (particles are left out: "sit down in" ->
      "sit in"); after the copula only the preposition — "the cup is in front of the
      laptop" -> "in front of". This is the convention of Visual Genome / FACTUAL
      ("sit on", "wear", "hold"). The subject of a verb is its nearest ``nsubj`` /
      ``nsubjpass`` that is an object, the noun a participle or relative clause modifies,
      the ``attr`` of "there is", or the subject of the verb it is conjoined with or
      complements ("a man trying to catch a frisbee");
    - relative clauses with a gap: "the fence the players lean on" -> (player, lean on,
      fence), "the jeans the man is wearing" -> (man, wear, jeans);
    - passive with "by": (agent, verb lemma, patient);
    - "X with Y" -> (X, with, Y); "X's Y" -> (X, have, Y); "the tail of a plane" ->
      (plane, have, tail), except for containers ("a plate of food" -> (plate, have,
      food)); with ``of_as_have=False``: (tail, of, plane);
    - "a square with a circle above it" -> (circle, above, square) only: a "with"/"have"
      relation is dropped when the inverse relation was stated through a pronoun, and a
      pronoun relation that would point from X to its own "with"-object is turned round
      ("a plate with food on it" -> (food, on, plate)).
    Conjoined subjects and objects each get the relation. Predicates go through the
    ``PredicateMap`` (see ``predicates``).

The rules live in ``object_rules``, ``attribute_rules`` and ``relation_rules``, on the
state and token helpers of ``extraction_state``; the graph type and the settings are in
``scene_graph``.
"""

from __future__ import annotations

from vlcomp.text.lemma import VERB_TAGS, Lemmatizer

from .object_rules import ObjectRules
from .relation_rules import RelationRules
from .scene_graph import EMPTY_GRAPH, Attribute, ExtractOptions, Relation, SceneGraph
from .tokens import Tokens

_LINKING = frozenset({"with", "have"})


def extract_graph(
    tokens: Tokens, lemmatizer: Lemmatizer | None, options: ExtractOptions
) -> SceneGraph:
    """The scene graph of one parsed caption (see the module docstring for the rules)."""
    if len(tokens) == 0:
        return EMPTY_GRAPH
    if tokens.lemmas is None and lemmatizer is None:
        raise ValueError("tokens without lemmas need a Lemmatizer")
    return _Extraction(tokens, lemmatizer, options).run()


class _Extraction(RelationRules, ObjectRules):
    """One extraction: finds the objects, then walks the tokens for relations."""

    def run(self) -> SceneGraph:
        self._find_spans()
        self._find_objects()
        if not self.objects:
            return EMPTY_GRAPH
        deps, tags, in_span, span_of = self.deps, self.tags, self.in_span, self.span_of
        for i in range(self.n):
            if in_span[i]:
                if i in span_of:
                    self._span_relation(i)
                continue
            dep = deps[i]
            if dep == "prep" or dep == "conj" and self._is_prep(i):
                self._prep_relation(i)
            elif dep == "poss" and i in self.obj_of and self.heads[i] in self.obj_of:
                self._emit([i], "have", [self.heads[i]])
            if tags[i] in VERB_TAGS and i not in self.redirect:
                self._verb_relations(i)
        return self._finish()

    def _finish(self) -> SceneGraph:
        # Objects are numbered in text order of their heads.
        order = sorted(range(len(self.objects)), key=lambda k: self.objects[k][0])
        new = {old: idx for idx, old in enumerate(order)}
        objects = tuple((new[k], self.objects[k][1], self.objects[k][2]) for k in order)
        seen_attr: set[tuple[int, str]] = set()
        attributes: list[Attribute] = []
        for position, obj, value in sorted(self.attributes, key=lambda a: (new[a[1]], a[0])):
            if self.claimed.get(position, obj) != obj:
                continue
            key = (new[obj], value)
            if key not in seen_attr:
                seen_attr.add(key)
                attributes.append(key)
        # "a plate with food on it": the pronoun cannot be the plate's own food, so a
        # relation (plate, on, food) found through it is (food, on, plate).
        linked = {(s, o) for s, pred, o, _ in self.relations if pred in _LINKING}
        raw = [
            (o, pred, s, via) if via and pred not in _LINKING and (s, o) in linked else r
            for r in self.relations
            for s, pred, o, via in (r,)
        ]
        via_pronoun = {(s, o) for s, _, o, p in raw if p}
        seen_rel: set[Relation] = set()
        relations: list[Relation] = []
        for s, pred, o, _ in raw:
            if s == o or (pred in _LINKING and (o, s) in via_pronoun):
                continue
            rel = (new[s], pred, new[o])
            if rel not in seen_rel:
                seen_rel.add(rel)
                relations.append(rel)
        return SceneGraph(objects, tuple(attributes), tuple(relations))
