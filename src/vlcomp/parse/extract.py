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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vlcomp.text.lemma import ADJ_TAGS, NOUN_TAGS, VERB_TAGS, Lemmatizer

from .lexicon import (
    ANAPHORS,
    BASIC_COLOURS,
    COLOUR_SHADES,
    COLOUR_WORDS_AFTER_SHADE,
    COLOURS,
    CONTAINERS,
    COPULAS,
    DEFAULT_FRAME_OBJECTS,
    DEFAULT_STOP_OBJECTS,
    DESCRIPTIVE_ADJECTIVES,
    FRAMING_VERBS,
    MATERIALS,
    NUMBER_WORDS,
    PARTITIVES,
    RELATIONAL_NOUNS,
    RELATIONAL_PLURALS,
    RELATIVE_PRONOUNS,
)
from .predicates import PredicateMap
from .tokens import LIST_SEPARATORS, Tokens

Object = tuple[int, str, str]  # (idx, name as written, lemma)
Attribute = tuple[int, str]  # (object idx, value)
Relation = tuple[int, str, int]  # (subject idx, predicate, object idx)

_SUBJECT_DEPS = ("nsubj", "nsubjpass")
_INHERIT_SUBJECT_DEPS = ("conj", "xcomp", "advcl", "acomp")
_MODIFIER_CLAUSE_DEPS = ("acl", "relcl")
_CLIMB_TAGS = ADJ_TAGS | {"IN", "TO", "RB", "RP"}
_ANAPHOR_TAGS = frozenset({"PRP", "DT"})
_RELATIVE_TAGS = frozenset({"WDT", "WP"})
_LINKING = frozenset({"with", "have"})
_RELATIONAL = frozenset(RELATIONAL_NOUNS) | frozenset(RELATIONAL_PLURALS)
_FRAMING_PREPS = frozenset({"in", "on", "from"})
_BARE_DEPS = frozenset({"det", "amod", "compound", "punct", "cc", "conj", "nummod", "poss"})
_COMPLEMENT_DEPS = frozenset({"prep", "dobj", "acomp", "attr", "xcomp", "ccomp", "dative"})
_HAS_LETTER = re.compile(r"[^\W\d_]")
_CANDIDATE_TAGS = NOUN_TAGS | ADJ_TAGS | {"VBG", "VB", "VBP"}
_ARGUMENT_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "conj", "appos"})


@dataclass(frozen=True)
class ExtractOptions:
    """Settings of the graph extraction; the defaults are the documented behaviour."""

    predicates: PredicateMap = field(default_factory=PredicateMap.build)
    stop_objects: frozenset[str] = DEFAULT_STOP_OBJECTS
    frame_objects: frozenset[str] = DEFAULT_FRAME_OBJECTS
    numerals: bool = False
    of_as_have: bool = True
    partitives: frozenset[str] = PARTITIVES
    containers: frozenset[str] = CONTAINERS
    attribute_nouns: frozenset[str] = COLOURS | MATERIALS

    def describe(self) -> dict[str, Any]:
        """JSON-able summary for output metadata."""
        return {
            "predicate_map": self.predicates.fingerprint(),
            "strip_verbs": self.predicates.strip_verbs,
            "stop_objects": sorted(self.stop_objects),
            "frame_objects": sorted(self.frame_objects),
            "numerals": self.numerals,
            "of_as_have": self.of_as_have,
        }


@dataclass(frozen=True, slots=True)
class SceneGraph:
    """Graph of one caption in the ``graphs`` contract; ``ok`` is False when no object
    could be found (empty, garbage or unparsable text)."""

    objects: tuple[Object, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    relations: tuple[Relation, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.objects)

    def row(self) -> dict[str, Any]:
        """The graph columns of the contract as Python values."""
        return {
            "objects": [{"idx": i, "name": n, "lemma": lem} for i, n, lem in self.objects],
            "attributes": [{"obj": o, "value": v} for o, v in self.attributes],
            "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in self.relations],
        }


EMPTY_GRAPH = SceneGraph()


def extract_graph(
    tokens: Tokens, lemmatizer: Lemmatizer | None, options: ExtractOptions
) -> SceneGraph:
    """The scene graph of one parsed caption (see the module docstring for the rules)."""
    if len(tokens) == 0:
        return EMPTY_GRAPH
    if tokens.lemmas is None and lemmatizer is None:
        raise ValueError("tokens without lemmas need a Lemmatizer")
    return _Extraction(tokens, lemmatizer, options).run()


class _Extraction:
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

    # ------------------------------------------------------------------------- driver

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

    def _is_prep(self, i: int) -> bool:
        """A preposition, or one conjoined to another ("above X and above Y")."""
        dep = self.deps[i]
        if dep == "prep":
            return True
        return dep == "conj" and self.tags[i] in ("IN", "TO") and self.deps[self.heads[i]] == "prep"

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

    # ------------------------------------------------------------------- spans, objects

    def _find_spans(self) -> None:
        match = self.opts.predicates.match
        i = 0
        while i < self.n - 1:
            hit = match(self.lower, i)
            if hit is None:
                i += 1
                continue
            end, canonical = hit
            if end >= self.n:
                break
            self.span_of[i] = (end, canonical)
            for k in range(i, end):
                self.in_span[k] = True
            i = end

    def _joined(self, left: int, right: int) -> bool:
        """Tokens ``left`` < ``right`` belong to one compound word run."""
        starts, ends = self.tok.starts, self.tok.ends
        for k in range(left + 1, right):
            if self.in_span[k]:
                return False
            if self.lower[k] == "-":
                if ends[k - 1] != starts[k] or ends[k] != starts[k + 1]:
                    return False
            elif self.deps[k] != "compound":
                return False
        return True

    def _absorbed(self, i: int) -> bool:
        h = self.heads[i]
        return (
            self.deps[i] == "compound"
            and h > i
            and self.tags[h] in NOUN_TAGS
            and not self.in_span[h]
            and self._joined(i, h)
        )

    def _run(self, head: int) -> list[int]:
        """The compound run ending at ``head``: its tokens in text order (no hyphens)."""
        start = head
        while start > 0:
            k = start - 1
            if self.lower[k] == "-" and k > 0 and self._absorbed(k - 1):
                start = k - 1
            elif self._absorbed(k) and self._reaches(k, head):
                start = k
            else:
                break
        return [k for k in range(start, head + 1) if self.lower[k] != "-"]

    def _reaches(self, k: int, head: int) -> bool:
        for _ in range(8):
            if k == head:
                return True
            if self.deps[k] != "compound":
                return False
            k = self.heads[k]
        return False

    def _noun_lemma(self, i: int) -> str:
        lemma = self._noun_lemmas[i]
        if lemma is None:
            lemma = self._lemma(i) if self.tags[i] in NOUN_TAGS else self.lower[i]
            self._noun_lemmas[i] = lemma
        return lemma

    def _partitive_target(self, i: int) -> int | None:
        for c in self.children[i]:
            if self.deps[c] == "prep" and self.lower[c] == "of":
                if self._noun_lemma(i) not in self.opts.partitives:
                    return None
                for g in self.children[c]:
                    if self.deps[g] == "pobj":
                        return g
        return None

    def _is_noun(self, i: int) -> bool:
        if _HAS_LETTER.search(self.lower[i]) is None:
            return False  # numbers, symbols, control characters
        tag = self.tags[i]
        if tag in NOUN_TAGS:
            # A noun parsed as a modifier is one all the same where a list item ends
            # ("blue square / large purple circle").
            return self.deps[i] not in ("amod", "nummod") or self._ends_item(i)
        dep = self.deps[i]
        if tag in ("VB", "VBP"):
            # "purple cross to the left of ...": a noun the tagger took for a verb, known
            # from the colour or size word it carries.
            return (
                self.lemmatizer is not None
                and self.lemmatizer.is_noun(self.lower[i])
                and any(
                    self.deps[c] in ("amod", "compound", "nmod") and c < i
                    and self._starts_phrase(c) for c in self.children[i]
                )
            )  # fmt: skip
        # A gerund that ends a prepositional phrase is a noun the tagger missed ("on
        # building"); so is an "adjective" with a determiner in an argument slot ("left
        # of a pink cross" with "cross" tagged JJ).
        if tag == "VBG":
            return dep == "pobj" and not self.children[i]
        if tag in ADJ_TAGS and (dep in _ARGUMENT_DEPS or dep in ("ROOT", "appos", "npadvmod")):
            return any(self.deps[c] in ("det", "amod", "nummod") for c in self.children[i])
        # "yellow square and purple star", "blue square small red star", "yellow square &
        # red triangle": a noun tagged as an adjective, after a colour or size word, where
        # a list item ends.
        return (
            tag in ADJ_TAGS
            and dep in ("amod", "nmod")
            and i > 0
            and self._is_attribute_word(i - 1)
            and not self._is_attribute_word(i)
            and (self._ends_item(i) or self._starts_phrase(i + 1))
            and self.lemmatizer is not None
            and self.lemmatizer.is_noun(self.lower[i])
        )

    def _is_framing(self, i: int) -> bool:
        """A frame noun in a framing position ("a picture of", "in the image", "this
        photo shows", or standing alone)."""
        kids = self.children[i]
        if any(self.deps[c] == "prep" and self.lower[c] == "of" for c in kids):
            return True
        dep, head = self.deps[i], self.heads[i]
        if dep == "pobj" and self.lower[head] in _FRAMING_PREPS:
            return True
        if dep == "nsubj" and self._lemma(head) in FRAMING_VERBS:
            return True
        if not all(self.deps[c] in _BARE_DEPS for c in kids):
            return False
        # Standing alone ("red circle, illustration") or closing the caption ("... flat
        # design 1234").
        return dep not in _ARGUMENT_DEPS or all(
            self.deps[k] in ("punct", "nummod") or self.tags[k] == "CD"
            for k in range(i + 1, self.n)
        )

    def _is_bare_relational(self, i: int) -> bool:
        """ "top" in "speakers on top": a relational noun with no "of" after it."""
        if self.lower[i] not in _RELATIONAL or self.deps[i] != "pobj":
            return False
        return not any(self.deps[c] == "prep" for c in self.children[i])

    def _find_objects(self) -> None:
        stop = self.opts.stop_objects
        frame = self.opts.frame_objects
        boilerplate = stop | frame
        attr_nouns = self.opts.attribute_nouns | DESCRIPTIVE_ADJECTIVES
        pending: list[tuple[int, int]] = []  # (colour token, the noun it describes)
        lower, deps, heads, tags = self.lower, self.deps, self.heads, self.tags
        of_heads = {heads[k] for k in range(self.n) if lower[k] == "of" and deps[k] == "prep"}
        # Two-word boilerplate ("flat design", "clip art", "stock photo"), however parsed.
        boilerplate_pairs = {
            k + d for k in range(self.n - 1) if f"{lower[k]} {lower[k + 1]}" in stop for d in (0, 1)
        }
        for i in range(self.n):
            if self.in_span[i]:
                continue
            if i in of_heads:
                target = self._partitive_target(i)
                if target is not None:
                    self.redirect[i] = target
                    continue
            if tags[i] not in _CANDIDATE_TAGS:
                continue
            if not self._is_noun(i) or self._absorbed(i) or self._is_bare_relational(i):
                continue
            if self._is_colour_before_noun(i):
                colored = self.lower[i + 1] in ("colored", "coloured")
                pending.append((i, i + 2 if colored else i + 1))
                continue
            run = self._run(i)
            run = self._split_sequence(run, stop, frame)
            lead: list[int] = []
            while len(run) > 1 and (
                self.lower[run[0]] in attr_nouns or self.tags[run[0]] in ADJ_TAGS
            ):
                lead.append(run.pop(0))
            if all(k in boilerplate_pairs for k in run):
                continue
            while len(run) > 1 and run[-1] in boilerplate_pairs:
                run = run[:-1]  # "hexagon clip art": "clip" ends the run, "art" follows
            run = self._strip_boilerplate(run, boilerplate)
            if self._noun_lemma(run[-1]) in stop:
                self._promote_modifier(i)
                continue
            if len(run) == 1 and self._noun_lemma(run[0]) in frame and self._is_framing(i):
                continue
            words = [self.lower[k] for k in run[:-1]] + [self._noun_lemma(run[-1])]
            lemma = " ".join(words)
            if lemma in stop or words[0] in stop:
                continue
            number = len(self.objects)
            self.objects.append((i, self.tok.span_text(run[0], run[-1]), lemma))
            for k in run:
                self.obj_of[k] = number
            self.obj_of[i] = number
            self.attributes += [(k, number, self.lower[k]) for k in lead]
            self._modifier_attributes(i, run, number)
        for colour, noun in pending:
            if noun in self.obj_of:
                self.attributes.append((colour, self.obj_of[noun], self.lower[colour]))

    def _promote_modifier(self, stop: int) -> None:
        """ "small square png": the word before a dropped boilerplate noun, parsed as its
        adjective, is the object when it is a known noun (not a colour or size word)."""
        k = stop - 1
        if (
            self.lemmatizer is None
            or k < 0
            or self.heads[k] != stop
            or self.deps[k] != "amod"
            or self.lower[k] in self.opts.attribute_nouns
            or self.lower[k] in DESCRIPTIVE_ADJECTIVES
            or self.lower[k] in self.opts.stop_objects
            or not self.lemmatizer.is_noun(self.lower[k])
        ):
            return
        number = len(self.objects)
        self.objects.append((k, self.tok.span_text(k, k), self.lower[k]))
        self.obj_of[k] = number
        for c in self.children[stop]:
            if c < k and self.deps[c] == "amod":
                self.attributes.append((c, number, self.lower[c]))

    def _split_sequence(
        self, run: list[int], stop: frozenset[str], frame: frozenset[str]
    ) -> list[int]:
        """Alt-text runs several noun phrases together ("large cross orange star"): a
        colour, material or size word after a noun of the run starts a new object. The
        objects before it are added here; the rest of the run is returned."""
        cut = next(
            (j for j in range(len(run) - 1, 0, -1)
             if self._starts_phrase(run[j]) and not self._is_attribute_word(run[j - 1])
             and self.tags[run[j - 1]] in NOUN_TAGS),
            None,
        )  # fmt: skip
        if cut is None:
            return run
        head = run[cut - 1]
        before = self._split_sequence(run[:cut], stop, frame)
        while len(before) > 1 and self._is_attribute_word(before[0]):
            before = before[1:]
        lemma = " ".join([self.lower[k] for k in before[:-1]] + [self._noun_lemma(head)])
        if lemma not in stop and lemma not in frame and before[0] not in self.obj_of:
            number = len(self.objects)
            self.objects.append((head, self.tok.span_text(before[0], head), lemma))
            for k in before:
                self.obj_of[k] = number
            for k in self._left_attributes(before[0]):
                self.claimed[k] = number
                self.attributes.append((k, number, self.lower[k]))
        return run[cut:]

    def _strip_boilerplate(self, run: list[int], boilerplate: frozenset[str]) -> list[int]:
        """Drop trailing boilerplate words of a compound ("circle clip art" -> "circle")."""
        while len(run) > 1:
            if self._noun_lemma(run[-1]) in boilerplate:
                run = run[:-1]
            elif len(run) > 2 and f"{self.lower[run[-2]]} {self._noun_lemma(run[-1])}" in (
                self.opts.stop_objects
            ):
                run = run[:-2]
            else:
                break
        return run

    def _is_colour_before_noun(self, i: int) -> bool:
        """A colour word tagged as a noun right before another noun, which it describes
        ("orange heart" parsed as two nouns)."""
        if self.lower[i] not in COLOURS or i + 1 >= self.n:
            return False
        if self.tags[i + 1] not in NOUN_TAGS and self.lower[i + 1] not in ("colored", "coloured"):
            return False
        if self.tok.ends[i] == self.tok.starts[i + 1]:
            return False
        return all(self.deps[c] in _BARE_DEPS for c in self.children[i])

    # ----------------------------------------------------------------------- attributes

    def _modifier_attributes(self, head: int, run: list[int], obj: int) -> None:
        owners = {head, *run}
        mods = [
            c
            for k in owners
            for c in self.children[k]
            if self.deps[c] == "amod"
            and self.lower[c] != "-"
            and c not in owners
            and c not in self.obj_of
            and not self.in_span[c]
            and not self._punct_between(c, k)
        ]
        for c in list(mods):
            mods += [g for g in self.children[c] if self.deps[g] == "conj" and self._is_adj(g)]
        spans = self._value_spans(sorted(mods))
        for first, last in spans:
            self.attributes.append((first, obj, self._value(first, last)))
        covered = {k for first, last in spans for k in range(first, last + 1)}
        for k in self._left_attributes(min(run)):
            self.claimed[k] = obj
            if k not in covered:
                self.attributes.append((k, obj, self.lower[k]))
        if self.opts.numerals:
            for c in self.children[head]:
                if self.deps[c] == "nummod":
                    value = NUMBER_WORDS.get(self.lower[c], self.lower[c])
                    if value.isdigit():
                        self.attributes.append((c, obj, value))

    def _ends_item(self, i: int) -> bool:
        return i + 1 >= self.n or self.tags[i + 1] in (",", ":", "CC", ".")

    def _starts_phrase(self, k: int) -> bool:
        if k >= self.n:
            return False
        return self.lower[k] in BASIC_COLOURS or self.lower[k] in DESCRIPTIVE_ADJECTIVES

    def _is_attribute_word(self, k: int) -> bool:
        return self.lower[k] in self.opts.attribute_nouns or self.lower[k] in DESCRIPTIVE_ADJECTIVES

    def _left_attributes(self, start: int) -> list[int]:
        """Colour, material and size words right before an object's first word: they
        describe it, whatever the parser attached them to ("Brown triangle & ...",
        "small brown square and purple cross")."""
        out: list[int] = []
        k = start - 1
        while k >= 0 and not self.in_span[k] and k not in self.obj_of:
            if not self._is_attribute_word(k) or self.tags[k] in NOUN_TAGS - {"NNP"}:
                break
            head = self.heads[k]
            if (
                head > start
                and self.tags[head] in NOUN_TAGS
                and self._noun_lemma(head) not in self.opts.stop_objects
                and not self._separated(start, head)
                and not any(self._starts_phrase(m) for m in range(start + 1, head))
            ):
                break  # it modifies a later noun of the same phrase ("large metal spoon")
            out.append(k)
            k -= 1
        return out

    def _separated(self, a: int, b: int) -> bool:
        """A separator (punctuation, conjunction, preposition) lies between tokens a < b."""
        return any(self.tags[k] in (",", ":", "CC", "IN", "HYPH", ".") for k in range(a + 1, b))

    def _punct_between(self, a: int, b: int) -> bool:
        lo, hi = min(a, b), max(a, b)
        return any(self.deps[k] == "punct" and self.lower[k] != "-" for k in range(lo + 1, hi))

    def _is_adj(self, i: int) -> bool:
        return self.tags[i] in ADJ_TAGS or self.tags[i] in ("VBN", "VBG")

    def _value_spans(self, mods: list[int]) -> list[tuple[int, int]]:
        """Group adjacent modifiers into values (hyphen-joined words, shade + colour)."""
        spans: list[tuple[int, int]] = []
        for c in mods:
            if spans and self._continues(spans[-1][1], c):
                spans[-1] = (spans[-1][0], c)
                continue
            first = c
            for g in self.children[c]:
                if g < c and self.lower[g] in COLOUR_SHADES and self._continues(g, c):
                    first = g
            spans.append((first, c))
        return spans

    def _continues(self, left: int, right: int) -> bool:
        between = self.tok.text[self.tok.ends[left] : self.tok.starts[right]]
        if between == "-":
            return True
        shade = self.lower[left] in COLOUR_SHADES
        return (
            shade and self.lower[right] in COLOUR_WORDS_AFTER_SHADE and between.strip() in ("", "-")
        )

    def _value(self, first: int, last: int) -> str:
        if first == last:
            colour = self._colour_of_colored(first)
            return colour if colour is not None else self.lower[first]
        words = [self.lower[k] for k in range(first, last + 1) if self.lower[k] != "-"]
        if words[0] in COLOUR_SHADES and words[-1] in COLOUR_WORDS_AFTER_SHADE:
            return " ".join(words)
        return self.tok.span_text(first, last).lower()

    def _colour_of_colored(self, i: int) -> str | None:
        """ "tan colored" -> "tan": the colour written right before "colored"."""
        if self.lower[i] not in ("colored", "coloured") or i == 0:
            return None
        return self.lower[i - 1] if self.lower[i - 1] in COLOURS else None

    # ------------------------------------------------------------------------ resolution

    def _resolve(self, t: int, avoid: frozenset[int] = frozenset()) -> tuple[int | None, bool]:
        """The object a token stands for, and whether a pronoun was resolved to get it."""
        for _ in range(8):
            if t in self.obj_of:
                return self.obj_of[t], False
            if t in self.redirect:
                t = self.redirect[t]
                continue
            word, tag = self.lower[t], self.tags[t]
            if word in ANAPHORS and tag in _ANAPHOR_TAGS:
                return self._antecedent(t, avoid), True
            if word in RELATIVE_PRONOUNS and tag in _RELATIVE_TAGS:
                clause = self._clause_of(t)
                if clause is None:
                    return None, False
                t = self.heads[clause]
                continue
            return None, False
        return None, False

    def _antecedent(self, t: int, avoid: frozenset[int]) -> int | None:
        best: int | None = None
        for number, (head, _, _) in enumerate(self.objects):
            if head < t and number not in avoid and (best is None or head > self.objects[best][0]):
                best = number
        return best

    def _clause_of(self, t: int) -> int | None:
        for _ in range(6):
            if self.deps[t] == "relcl":
                return t
            if self.heads[t] == t:
                return None
            t = self.heads[t]
        return None

    def _expand(self, t: int, avoid: frozenset[int] = frozenset()) -> list[tuple[int, bool]]:
        """Objects for token ``t`` and the nouns conjoined with it, up to a list separator:
        "star left of hexagon & cross" relates the star to the hexagon only, since a symbol
        ("&", "/", "|", "+", ...) separates the items of an alt-text list."""
        out: list[tuple[int, bool]] = []
        stack = [t]
        while stack:
            k = stack.pop()
            obj, via = self._resolve(k, avoid)
            if obj is not None:
                out.append((obj, via))
            stack += [
                c for c in self.children[k] if self.deps[c] == "conj" and not self._listed(k, c)
            ]
        return out

    def _listed(self, a: int, b: int) -> bool:
        """Whether a list separator symbol, as written in the caption, stands between
        tokens ``a`` and ``b``."""
        tok = self.tok
        return any(
            tok.text[tok.starts[j] : tok.ends[j]] in LIST_SEPARATORS
            for j in range(min(a, b) + 1, max(a, b))
        )

    def _subjects(self, v: int) -> list[int]:
        """Tokens that are the subject of verb ``v`` (climbing through conjoined,
        complement and adverbial clauses, and the adjective of "about to ...")."""
        for _ in range(5):
            kids = self.children[v]
            subjects = [c for c in kids if self.deps[c] in _SUBJECT_DEPS]
            if subjects:
                # The nearest subject that stands for an object ("a drawing of a cat, and
                # the dog is ...": two subjects, the frame noun is none).
                subjects.sort(key=lambda c: abs(v - c))
                for c in subjects:
                    if self._resolve(c)[0] is not None:
                        return [c]
                return subjects[:1]
            if any(self.deps[c] == "expl" for c in kids):
                return [c for c in kids if self.deps[c] == "attr"][:1]
            dep, head = self.deps[v], self.heads[v]
            if head == v:
                return []
            if dep in _MODIFIER_CLAUSE_DEPS or self.tags[head] in NOUN_TAGS:
                return [head]
            if dep not in _INHERIT_SUBJECT_DEPS and self.tags[v] in VERB_TAGS:
                return []
            v = head
        return []

    def _verb_prefix(self, v: int) -> str:
        """The verb's lemma; empty for the copula. Particles are left out ("sit down in"
        -> "sit in", "hold up" -> "hold")."""
        lemma = self._lemma(v)
        return "" if lemma in COPULAS else lemma

    def _governor(self, g: int) -> tuple[list[int], str] | None:
        """(subject tokens, predicate prefix) for a connector attached to token ``g``."""
        for _ in range(4):
            if g in self.obj_of or g in self.redirect or self.lower[g] in ANAPHORS:
                return [g], ""
            tag = self.tags[g]
            if tag in VERB_TAGS:
                return self._subjects(g), self._verb_prefix(g)
            if tag in _CLIMB_TAGS and self.heads[g] != g:
                g = self.heads[g]
                continue
            return None
        return None

    # ------------------------------------------------------------------------ relations

    def _emit(self, subjects: list[int], pred: str, objects_: list[int]) -> None:
        pred = self.opts.predicates(pred)
        if not pred:
            return
        for s_tok in subjects:
            subj = self._expand(s_tok)
            for s, s_via in subj:
                for o, o_via in self._expand_objects(objects_, s):
                    self.relations.append((s, pred, o, s_via or o_via))

    def _expand_objects(self, objects_: list[int], subject: int) -> list[tuple[int, bool]]:
        out: list[tuple[int, bool]] = []
        for t in objects_:
            out += self._expand(t, frozenset({subject}))
        return out

    def _connector(self, first: int, prep: str, object_tokens: list[int]) -> None:
        gov = self._governor(self.heads[first]) if self.heads[first] != first else None
        if gov is None or not object_tokens:
            return
        subjects, prefix = gov
        self._emit(subjects, f"{prefix} {prep}", object_tokens)

    def _span_relation(self, start: int) -> None:
        end, canonical = self.span_of[start]
        span = range(start, end)
        first = start
        for k in span:
            if self.heads[k] not in span:
                first = k
                break
        objs = sorted(c for k in span for c in self.children[k] if c >= end)
        objs = [c for c in objs if self.deps[c] in ("pobj", "dobj", "npadvmod", "conj")][:1]
        if not objs:
            objs = [k for k in range(end, self.n) if k in self.obj_of][:1]
        before = [h for h, _, _ in self.objects if h < start]
        if self.heads[first] == first or self.heads[first] in span:
            # The parser made the span the root: the subject is the nearest earlier object.
            if before and objs:
                self._emit([before[-1]], canonical, objs)
            return
        gov = self._governor(self.heads[first])
        if gov is None or not objs:
            return
        subjects, prefix = gov
        if before and subjects and all(s >= end and self._listed(first, s) for s in subjects):
            # "hexagon right of star / cross isolated": the verb's subject is another item
            # of the list; the relation belongs to the object written before it.
            subjects, prefix = [before[-1]], ""
        self._emit(subjects, f"{prefix} {canonical}", objs)

    def _prep_relation(self, p: int) -> None:
        objs = [c for c in self.children[p] if self.deps[c] == "pobj"][:1]
        word = self.lower[p]
        head = self.heads[p]
        if not objs:
            # Stranded in a relative clause: "the fence the players are leaning on".
            if self.deps[head] == "relcl" and self.heads[head] != head:
                self._connector(p, word, [self.heads[head]])
            return
        if word == "of" and (head in self.obj_of or head in self.redirect):
            if head in self.redirect:
                return
            if self.opts.of_as_have:
                if self._noun_lemma(head) in self.opts.containers:
                    self._emit([head], "have", objs)
                else:
                    self._emit(objs, "have", [head])
                return
        self._connector(p, word, objs)

    def _verb_relations(self, v: int) -> None:
        kids = self.children[v]
        for c in kids:
            if self.deps[c] in ("acomp", "attr") and self._is_adj(c) and not self.in_span[c]:
                self._predicative(v, c)
        prefix = self._verb_prefix(v)
        if not prefix:
            return
        dobj = [c for c in kids if self.deps[c] == "dobj"]
        if dobj:
            self._emit(self._subjects(v), prefix, dobj)
        elif self._object_gap(v):
            # "the jeans the man is wearing": the clause's noun is the verb's object; a
            # particle at the end is a stranded preposition ("the fence they lean on").
            particles = [self.lower[c] for c in kids if self.deps[c] == "prt"]
            self._emit(self._subjects(v), " ".join([prefix, *particles]), [self.heads[v]])
        for c in kids:
            if self.deps[c] == "agent":
                agents = [g for g in self.children[c] if self.deps[g] == "pobj"]
                patients = [g for g in kids if self.deps[g] == "nsubjpass"]
                if not patients and self.deps[v] in _MODIFIER_CLAUSE_DEPS:
                    patients = [self.heads[v]]
                if agents and patients:
                    self._emit(agents, prefix, patients)

    def _object_gap(self, v: int) -> bool:
        if self.deps[v] != "relcl" or self.tags[v] == "VBN":
            return False
        kids = self.children[v]
        subject = [c for c in kids if self.deps[c] == "nsubj"]
        if not subject or self.lower[subject[0]] in RELATIVE_PRONOUNS:
            return False
        return not any(self.deps[c] in _COMPLEMENT_DEPS for c in kids)

    def _predicative(self, v: int, adj: int) -> None:
        values = [adj] + [g for g in self.children[adj] if self.deps[g] == "conj"]
        for s_tok in self._subjects(v):
            for obj, _ in self._expand(s_tok):
                for first, last in self._value_spans(sorted(values)):
                    self.attributes.append((first, obj, self._value(first, last)))
