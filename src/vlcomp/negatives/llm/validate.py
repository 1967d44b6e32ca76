"""Validation of every LLM output: text checks, then a graph check with OUR parser.

Text checks (in this order; the first failing one is the rejection reason):

=========================  ================================================================
reason                     rule
=========================  ================================================================
``text: empty``            nothing but whitespace (or no answer text at all)
``text: equal to the       the negative equals the positive in the text layer's comparison
positive``                 form (``vlcomp.text.normalise``: case, runs of whitespace and
                           apostrophe look-alikes ignored; pairs only)
``text: non-English``      the ingest screening heuristic (``vlcomp.ingest.rules``: script
                           share and foreign function words) says "not English"
``text: too long``         more than ``max_chars`` characters after whitespace normalisation
=========================  ================================================================

Graph check of a SugarCrepe negative: the positive and the negative are parsed with the
same ``CaptionParser`` (``vlcomp.parse``, configured like the eval set's parser) and their
graphs compared as multisets: objects (lemmas), attribute bindings (value, object lemma)
and relation triples (subject lemma, predicate, object lemma). Both sides go through the
same parser, so its conventions ("ride on", "have") cancel out. ``graph: negative has no
objects`` rejects a negative in which the parser finds no object. Then one rule per
(family, target) — ``RULES`` — says what each of the three parts may do:

============  ===============  ====================  ======================================
family/target objects          attributes            relations
============  ===============  ====================  ======================================
replace/obj   one replaced     follow the object     follow the object
replace/att   same             one value replaced    same
                               (same object)
replace/rel   same             same                  predicates replaced between the same
                                                     ends, one consistent word change
swap/obj      same             same (attributes      the two objects' roles exchanged:
                               travel with objects)  every changed triple turns into its
                                                     counterpart with the two exchanged
swap/att      same             two values exchanged  same
                               between two objects
add/obj       one added        same                  only new triples, each involving the
                                                     added object (none is fine)
add/att       same             one binding added     same
============  ===============  ====================  ======================================

"one replaced": exactly one lemma removed and one added; "follow the object": the
attribute bindings / relation triples that change are exactly those of the replaced object,
with its lemma renamed ("a brown horse" -> "a brown camel"); "one consistent word change":
the removed and added triples pair up by (subject, object) and every pair differs by the
same word change once their common leading and trailing words are stripped ("ride" ->
"walk" also turns "ride on" into "walk on", which the parser reports as a second triple);
for swap/obj, triples that keep their roles may stay ("a white bowl of soup next to a blue
cup" -> "a blue cup next to a white bowl of soup": the bowl still "has" the soup).
A part that breaks its rule rejects the negative with ``graph: <part>: <what>``, e.g.
``graph: objects: changed`` (a replace_att negative that also renamed an object: more than
the requested concept, or a concept of the wrong kind).

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

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vlcomp.ingest.rules import CaptionRules, looks_non_english
from vlcomp.negatives.productivity_text import Pattern
from vlcomp.text import collapse_spaces, normalise, words

# ------------------------------------------------------------------ reasons: text
EMPTY = "text: empty"
EQUAL = "text: equal to the positive"
NON_ENGLISH = "text: non-English"
TOO_LONG = "text: too long"
NO_OBJECTS = "graph: negative has no objects"
TEXT_REASONS: tuple[str, ...] = (EMPTY, EQUAL, NON_ENGLISH, TOO_LONG)

# graph reasons are "graph: <part>: <what>"
OBJECTS, ATTRIBUTES, RELATIONS = "objects", "attributes", "relations"

# ------------------------------------------------------------------ policies
SAME = "same"
REPLACE_ONE = "replace one"
ADD_ONE = "add one"
FOLLOW = "follow the object"
EXCHANGE = "exchange two values"
REPLACE_PREDICATE = "replace predicate"
SWAP_ENDS = "swap ends"
ADD_WITH_NEW = "add with the new object"


@dataclass(frozen=True)
class Rule:
    """What each part of the parsed graph may do between positive and negative."""

    objects: str
    attributes: str
    relations: str


RULES: dict[tuple[str, str], Rule] = {
    ("replace", "obj"): Rule(REPLACE_ONE, FOLLOW, FOLLOW),
    ("replace", "att"): Rule(SAME, REPLACE_ONE, SAME),
    ("replace", "rel"): Rule(SAME, SAME, REPLACE_PREDICATE),
    ("swap", "obj"): Rule(SAME, SAME, SWAP_ENDS),
    ("swap", "att"): Rule(SAME, EXCHANGE, SAME),
    ("add", "obj"): Rule(ADD_ONE, SAME, ADD_WITH_NEW),
    ("add", "att"): Rule(SAME, ADD_ONE, SAME),
}

NEGATION_WORDS = frozenset({"not", "no", "never", "without", "nor"})


def same_text(a: str, b: str) -> bool:
    """Equal in the text layer's comparison form (case, whitespace, apostrophes)."""
    return normalise(a) == normalise(b)


def text_reason(
    text: str | None, max_chars: int, rules: CaptionRules, positive: str | None = None
) -> str | None:
    """The first text check ``text`` fails (see the module docstring), or None."""
    if text is None or not text.strip():
        return EMPTY
    clean = collapse_spaces(text)
    if positive is not None and same_text(clean, positive):
        return EQUAL
    if looks_non_english(clean, rules):
        return NON_ENGLISH
    if len(clean) > max_chars:
        return TOO_LONG
    return None


def english_rules() -> CaptionRules:
    """The ingest screening's language rule, length limits off (checked separately)."""
    return CaptionRules(max_chars=None, max_tokens=None, english=True)


# ------------------------------------------------------------------ graphs


@dataclass(frozen=True)
class Graph:
    """A parsed caption as multisets of lemmas, bindings and triples."""

    objects: Counter[str]
    bindings: Counter[tuple[str, str]]  # (value, object lemma)
    relations: Counter[tuple[str, str, str]]  # (subject lemma, predicate, object lemma)

    @classmethod
    def of(cls, parsed: Any) -> Graph:
        """From a ``vlcomp.parse`` SceneGraph (objects (idx, name, lemma), ...)."""
        lemma = {idx: lem for idx, _, lem in parsed.objects}
        return cls(
            Counter(lem for _, _, lem in parsed.objects),
            Counter((value, lemma[o]) for o, value in parsed.attributes),
            Counter((lemma[s], p, lemma[o]) for s, p, o in parsed.relations),
        )


def _diff(a: Counter, b: Counter) -> tuple[Counter, Counter]:
    """(removed, added) going from ``a`` to ``b``."""
    return a - b, b - a


def _problem(part: str, what: str) -> str:
    return f"graph: {part}: {what}"


def _rename(triples: Iterable[tuple], old: str, new: str, positions: tuple[int, ...]) -> Counter:
    out: Counter = Counter()
    for t in triples:
        out[tuple(new if (k in positions and x == old) else x for k, x in enumerate(t))] += 1
    return out


def _core(old: str, new: str) -> tuple[str, str]:
    """The words that differ between two predicates, common leading/trailing words cut."""
    a, b = old.split(), new.split()
    while a and b and a[0] == b[0]:
        a, b = a[1:], b[1:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    return " ".join(a), " ".join(b)


def _check_objects(policy: str, pos: Graph, neg: Graph) -> tuple[str | None, dict[str, str]]:
    removed, added = _diff(pos.objects, neg.objects)
    info: dict[str, str] = {}
    if policy == SAME:
        return (_problem(OBJECTS, "changed") if removed or added else None), info
    if policy == REPLACE_ONE:
        if not removed and not added:
            return _problem(OBJECTS, "none replaced"), info
        if sum(removed.values()) != 1 or sum(added.values()) != 1:
            return _problem(OBJECTS, "more than one replaced"), info
        info["old"], info["new"] = next(iter(removed)), next(iter(added))
        return None, info
    if policy == ADD_ONE:
        if removed:
            return _problem(OBJECTS, "removed"), info
        if not added:
            return _problem(OBJECTS, "none added"), info
        if sum(added.values()) != 1:
            return _problem(OBJECTS, "more than one added"), info
        info["new"] = next(iter(added))
        return None, info
    raise ValueError(f"unknown objects policy {policy!r}")


def _check_attributes(policy: str, pos: Graph, neg: Graph, info: dict[str, str]) -> str | None:
    removed, added = _diff(pos.bindings, neg.bindings)
    if policy == SAME:
        return _problem(ATTRIBUTES, "changed") if removed or added else None
    if policy == FOLLOW:
        old, new = info["old"], info["new"]
        if any(o != old for _, o in removed) or _rename(removed, old, new, (1,)) != added:
            return _problem(ATTRIBUTES, "changed")
        return None
    if policy == REPLACE_ONE:
        if not removed and not added:
            return _problem(ATTRIBUTES, "none replaced")
        if sum(removed.values()) != 1 or sum(added.values()) != 1:
            return _problem(ATTRIBUTES, "more than one replaced")
        (_, o_old), (_, o_new) = next(iter(removed)), next(iter(added))
        if o_old != o_new:
            return _problem(ATTRIBUTES, "moved to another object")
        return None
    if policy == ADD_ONE:
        if removed:
            return _problem(ATTRIBUTES, "removed")
        if not added:
            return _problem(ATTRIBUTES, "none added")
        return _problem(ATTRIBUTES, "more than one added") if sum(added.values()) != 1 else None
    if policy == EXCHANGE:
        if not removed and not added:
            return _problem(ATTRIBUTES, "none swapped")
        values_pos = Counter(v for v, _ in pos.bindings.elements())
        values_neg = Counter(v for v, _ in neg.bindings.elements())
        if values_pos != values_neg:
            return _problem(ATTRIBUTES, "values changed")
        if sum(removed.values()) != 2 or sum(added.values()) != 2:
            return _problem(ATTRIBUTES, "more than one swap")
        (v1, a), (v2, b) = sorted(removed.elements())
        if a == b or Counter([(v2, a), (v1, b)]) != added:
            return _problem(ATTRIBUTES, "not an exchange between two objects")
        return None
    raise ValueError(f"unknown attributes policy {policy!r}")


def _check_relations(policy: str, pos: Graph, neg: Graph, info: dict[str, str]) -> str | None:
    removed, added = _diff(pos.relations, neg.relations)
    if policy == SAME:
        return _problem(RELATIONS, "changed") if removed or added else None
    if policy == FOLLOW:
        old, new = info["old"], info["new"]
        if (
            any(old not in (s, o) for s, _, o in removed)
            or _rename(removed, old, new, (0, 2)) != added
        ):
            return _problem(RELATIONS, "changed")
        return None
    if policy == REPLACE_PREDICATE:
        if not removed and not added:
            return _problem(RELATIONS, "none replaced")
        ends_removed = Counter((s, o) for s, _, o in removed.elements())
        ends_added = Counter((s, o) for s, _, o in added.elements())
        if ends_removed != ends_added:
            return _problem(RELATIONS, "ends changed")
        cores = set()
        for ends in ends_removed:
            olds = sorted(p for s, p, o in removed.elements() if (s, o) == ends)
            news = sorted(p for s, p, o in added.elements() if (s, o) == ends)
            cores.update(_core(a, b) for a, b in zip(olds, news, strict=True))
        return _problem(RELATIONS, "more than one replaced") if len(cores) != 1 else None
    if policy == SWAP_ENDS:
        if not removed and not added:
            return _problem(RELATIONS, "none swapped")
        lemmas = sorted({x for s, _, o in removed for x in (s, o)})
        for i, a in enumerate(lemmas):
            for b in lemmas[i + 1 :]:
                swap = {a: b, b: a}
                swapped: Counter = Counter()
                for (s, p, o), n in removed.items():
                    swapped[(swap.get(s, s), p, swap.get(o, o))] += n
                if swapped == added:
                    return None
        return _problem(RELATIONS, "not a swap of two objects")
    if policy == ADD_WITH_NEW:
        if removed:
            return _problem(RELATIONS, "removed")
        new = info["new"]
        if any(new not in (s, o) for s, _, o in added):
            return _problem(RELATIONS, "added without the new object")
        return None
    raise ValueError(f"unknown relations policy {policy!r}")


def graph_reason(pos: Graph, neg: Graph, family: str, target: str) -> str | None:
    """Why ``neg`` is not a one-concept ``family``/``target`` edit of ``pos`` (or None)."""
    rule = RULES.get((family, target))
    if rule is None:
        raise ValueError(f"no validation rule for {family}/{target}")
    if not neg.objects:
        return NO_OBJECTS
    reason, info = _check_objects(rule.objects, pos, neg)
    if reason is None:
        reason = _check_attributes(rule.attributes, pos, neg, info)
    if reason is None:
        reason = _check_relations(rule.relations, pos, neg, info)
    return reason


class GraphReader:
    """Parses texts with our parser, each distinct text once."""

    def __init__(self, parser: Any, batch_size: int = 64) -> None:
        self.parser = parser
        self.batch_size = batch_size
        self._graphs: dict[str, Any] = {}

    def parsed(self, texts: Iterable[str]) -> list[Any]:
        texts = list(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self._graphs))
        if todo:
            for text, graph in zip(
                todo, self.parser.parse(todo, batch_size=self.batch_size), strict=True
            ):
                self._graphs[text] = graph
        return [self._graphs[t] for t in texts]

    def graphs(self, texts: Iterable[str]) -> list[Graph]:
        return [Graph.of(g) for g in self.parsed(texts)]


@dataclass(frozen=True)
class PairCheck:
    positive: str
    negative: str | None
    family: str
    target: str


class PairValidator:
    """Text checks, then ``graph_reason``, for many (positive, negative) pairs at once."""

    def __init__(self, reader: GraphReader, max_chars: int, rules: CaptionRules | None = None):
        self.reader = reader
        self.max_chars = max_chars
        self.rules = rules or english_rules()

    def check(self, pairs: Sequence[PairCheck]) -> list[str | None]:
        reasons: list[str | None] = [
            text_reason(p.negative, self.max_chars, self.rules, p.positive) for p in pairs
        ]
        todo = [i for i, r in enumerate(reasons) if r is None]
        texts = [pairs[i].positive for i in todo] + [
            collapse_spaces(pairs[i].negative) for i in todo
        ]
        graphs = self.reader.graphs(texts)
        for k, i in enumerate(todo):
            pos, neg = graphs[k], graphs[len(todo) + k]
            reasons[i] = graph_reason(pos, neg, pairs[i].family, pairs[i].target)
        return reasons


# ------------------------------------------------------------------ productivity

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
        self.reader.parsed(collapse_spaces(captions[i] or "") for i in todo)
        for i in todo:
            reasons[i] = self.graph_reason(collapse_spaces(captions[i] or ""), refs[i])
        return reasons, refs
