"""Graph checks with OUR parser: ``GraphReader`` (parses, shared by every graph check) and
``graph_reason`` (a SugarCrepe negative against its positive).

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vlcomp.parse import Tokens
from vlcomp.text.lemma import Lemmatizer, load_lemmatizer

NO_OBJECTS = "graph: negative has no objects"


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
    """Parses texts with our parser (a ``vlcomp.parse.CaptionParser``), each distinct text
    once, and keeps both the parse (``Tokens``) and the graph."""

    def __init__(self, parser: Any, batch_size: int = 64) -> None:
        self.parser = parser
        self.batch_size = batch_size
        self._graphs: dict[str, Any] = {}
        self._tokens: dict[str, Tokens] = {}

    def _read(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._graphs))
        if not todo:
            return
        parsed = self.parser.parse_with_tokens(todo, batch_size=self.batch_size)
        for text, (tokens, graph) in zip(todo, parsed, strict=True):
            self._tokens[text] = tokens
            self._graphs[text] = graph

    def parsed(self, texts: Iterable[str]) -> list[Any]:
        texts = list(texts)
        self._read(texts)
        return [self._graphs[t] for t in texts]

    def graphs(self, texts: Iterable[str]) -> list[Graph]:
        return [Graph.of(g) for g in self.parsed(texts)]

    def tokens(self, texts: Iterable[str]) -> list[Tokens]:
        texts = list(texts)
        self._read(texts)
        return [self._tokens[t] for t in texts]

    @property
    def lemmatizer(self) -> Lemmatizer:
        return self.parser.backend.lemmatizer or load_lemmatizer()

    def lemma(self, tokens: Tokens, k: int) -> str:
        """The lemma of token ``k`` (the backend's own, or our lemmatiser's)."""
        if tokens.lemmas is not None:
            return tokens.lemmas[k]
        return self.lemmatizer.lemma(tokens.lower[k], tokens.tags[k])

    def known_noun(self, word: str) -> bool:
        """``word`` (or its singular) is a noun the lemmatiser knows."""
        return self.lemmatizer.is_noun(self.lemmatizer.noun(word))
