"""Hard negatives for productivity captions, with CREPE appendix A.4 graph checks.

Three families, each an edit of the positive's ``Pattern`` (so the text is re-rendered by
the same template):

- ``atom`` (HN-ATOM): one atom -> a foil of the same kind from a ``FoilProvider``
  (object name, attribute value or predicate; a spatial predicate only its converse, the
  one foil false however the spatial words are read: ``lexicon.false_under_every_reading``);
- ``swap`` (HN-SWAP): two atoms of the same kind exchanged: the attributes of two objects
  (same attribute kind when kinds are known; never giving an object an attribute twice),
  the names of two objects, or the predicates of two relations (spatial ones only when they
  are each other's converse);
- ``neg`` (HN-NEG): one attribute ("a not red circle") or one relation ("a circle that is
  not left of a square") negated. Object names are not negated.

Every edit goes through the graph check: a negative that is still true of the *full*
scene graph (``holds``) is rejected, as is one whose text equals the positive or an
earlier negative, and (with a ``context.ContextCheck``) one that tokenises like the
positive within the text encoders' context. Edits are tried in a seeded random order until
``k`` are kept; for ``atom`` the atoms are visited round-robin (one foil each per round, in
the provider's rank order or, with ``rank_texts``, by the edited caption's plausibility),
so the kept negatives spread over atoms before an atom's second foil is used.

A ``FoilProvider`` is ``provider(kind, value, forbidden) -> ranked foils`` with kind
"obj", "att" or "rel". ``forbidden`` holds values that must not come back: the value
itself, the object's other attributes, and (``foil_forbid="graph"``) every value of that
kind in the image that would make the edited caption true, or (``foil_forbid="image"``)
every value of that kind anywhere in the image. Foils that come back anyway are dropped.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import lexicon
from .context import ContextCheck
from .productivity_graph import SceneGraph
from .productivity_text import Attr, Edge, Node, Pattern, holds, render

FoilProvider = Callable[[str, str, frozenset[str]], Sequence[str]]
AttributeKind = Callable[[str], str | None]
# texts -> their indices, most plausible first (e.g. wordnet_foils.rank with a TextScorer)
TextRanker = Callable[[Sequence[str]], Sequence[int]]

FAMILIES: tuple[str, ...] = ("atom", "swap", "neg")
FOIL_FORBID: tuple[str, ...] = ("graph", "image")

# Item-level reasons (an item of a family without a valid negative, or with too few).
NO_CANDIDATE = "item: no candidate edit"
NO_FOIL = "item: no foil"
GRAPH_CHECK = "item: graph check failed"
DUPLICATE_ONLY = "item: only duplicate texts"
CONTEXT_ONLY = "item: only negatives identical within the context"
TOO_FEW = "item: too few negatives"
# Negative-level reasons (edits tried and rejected).
REJECTED_TRUE = "negative: true of scene graph"
REJECTED_DUPLICATE = "negative: duplicate text"


@dataclass(frozen=True)
class Negative:
    family: str
    target: str  # obj, att or rel
    text: str
    change: Mapping[str, Any]


@dataclass
class FamilyResult:
    family: str
    negatives: list[Negative] = field(default_factory=list)
    positions: int = 0  # places an edit could be made
    tried: int = 0  # edits built (for atom: foils offered)
    true_of_scene: int = 0
    duplicate: int = 0
    context: int = 0  # identical to the positive within the text encoders' context

    def failure(self, min_negatives: int) -> str | None:
        """Why the item has no usable negatives of this family (None when it has)."""
        if len(self.negatives) >= max(1, min_negatives):
            return None
        if self.negatives:
            return TOO_FEW
        if self.positions == 0:
            return NO_CANDIDATE
        if self.tried == 0:
            return NO_FOIL
        if self.true_of_scene:
            return GRAPH_CHECK
        if self.context:
            return CONTEXT_ONLY
        return DUPLICATE_ONLY


_Candidate = tuple[str, Pattern, dict[str, Any]]


def _collect(
    family: str,
    candidates: Iterable[_Candidate],
    positions: int,
    graph: SceneGraph,
    positive: str,
    k: int,
    leading: tuple[str, ...],
    context: ContextCheck | None = None,
) -> FamilyResult:
    result = FamilyResult(family, positions=positions)
    seen = {positive}
    for target, pattern, change in candidates:
        if len(result.negatives) >= k:
            break
        result.tried += 1
        if holds(pattern, graph):
            result.true_of_scene += 1
            continue
        text = render(pattern, leading)
        if text in seen:
            result.duplicate += 1
            continue
        if context is not None and context.identical(positive, text):
            result.context += 1
            continue
        seen.add(text)
        result.negatives.append(Negative(family, target, text, change))
    return result


# ------------------------------------------------------------------------------ atom


def image_values(graph: SceneGraph, kind: str) -> set[str]:
    if kind == "obj":
        return {o.name for o in graph.objects}
    if kind == "att":
        return {a for o in graph.objects for a in o.attributes}
    return {r.predicate for r in graph.relations}


def _substitute(pattern: Pattern, kind: str, where: tuple[int, int], value: str) -> Pattern:
    i, j = where
    if kind == "obj":
        return pattern.with_node(i, Node(value, pattern.nodes[i].attributes))
    if kind == "att":
        attrs = list(pattern.nodes[i].attributes)
        attrs[j] = Attr(value, attrs[j].negated)
        return pattern.with_node(i, Node(pattern.nodes[i].name, tuple(attrs)))
    edge = pattern.edges[i]
    return pattern.with_edge(i, Edge(edge.subject, value, edge.object, edge.negated))


def _could_hold(graph: SceneGraph, pattern: Pattern, kind: str, where: tuple[int, int]) -> set[str]:
    """The values of the image that could make the edited pattern true (a superset of
    those that do): the only ones the exact check in ``foil_forbid="graph"`` must try."""
    objects = graph.objects
    if kind == "rel":
        edge = pattern.edges[where[0]]
        subject, object_ = pattern.nodes[edge.subject].name, pattern.nodes[edge.object].name
        return {
            r.predicate
            for r in graph.relations
            if objects[r.subject].name == subject and objects[r.object].name == object_
        }
    node = pattern.nodes[where[0]]
    if kind == "att":
        return {a for o in objects if o.name == node.name for a in o.attributes}
    want = {a.value for a in node.attributes if not a.negated}
    refuse = {a.value for a in node.attributes if a.negated}
    return {o.name for o in objects if want <= set(o.attributes) and not refuse & set(o.attributes)}


def _atom_positions(pattern: Pattern) -> list[tuple[str, tuple[int, int], str]]:
    out: list[tuple[str, tuple[int, int], str]] = []
    for i, node in enumerate(pattern.nodes):
        out.append(("obj", (i, -1), node.name))
        out.extend(("att", (i, j), a.value) for j, a in enumerate(node.attributes))
    out.extend(("rel", (k, -1), e.predicate) for k, e in enumerate(pattern.edges))
    return out


def atom_negatives(
    graph: SceneGraph,
    pattern: Pattern,
    positive: str,
    foils: FoilProvider | None,
    rng: np.random.Generator,
    k: int,
    foil_forbid: str = "graph",
    leading: tuple[str, ...] = (),
    rank_texts: TextRanker | None = None,
    context: ContextCheck | None = None,
) -> FamilyResult:
    """HN-ATOM: replace one atom with a foil (see the module docstring).

    With ``rank_texts``, an atom's foils are tried in the order of the edited captions'
    plausibility (best first) instead of the provider's order."""
    positions = _atom_positions(pattern)
    if foils is None:
        return FamilyResult("atom", positions=len(positions))
    order = [positions[int(p)] for p in rng.permutation(len(positions))]
    present = {kind: image_values(graph, kind) for kind in ("obj", "att", "rel")}

    def offers(kind: str, where: tuple[int, int], value: str) -> Iterator[_Candidate]:
        forbidden = {value}
        if kind == "att":
            forbidden |= {a.value for a in pattern.nodes[where[0]].attributes}
        if foil_forbid == "image":
            forbidden |= present[kind]
        else:
            forbidden |= {
                v
                for v in sorted(_could_hold(graph, pattern, kind, where))
                if holds(_substitute(pattern, kind, where, v), graph)
            }
        offered = foils(kind, value, frozenset(forbidden))
        kept = list(dict.fromkeys(f for f in offered if f and f not in forbidden))
        if kind == "rel":
            kept = [f for f in kept if lexicon.false_under_every_reading(value, f)]
        edited = [_substitute(pattern, kind, where, foil) for foil in kept]
        order: Sequence[int] = range(len(kept))
        if rank_texts is not None and len(kept) > 1:
            order = rank_texts([render(p, leading) for p in edited])
        for i in order:
            change = {"edit": "replace", "kind": kind, "from": value, "to": kept[i]}
            yield kind, edited[i], change

    return _collect(
        "atom",
        _round_robin([offers(*p) for p in order]),
        len(positions),
        graph,
        positive,
        k,
        leading,
        context,
    )


def _round_robin(iterators: list[Iterator[_Candidate]]) -> Iterator[_Candidate]:
    active = list(iterators)
    while active:
        still = []
        for it in active:
            item = next(it, None)
            if item is not None:
                yield item
                still.append(it)
        active = still


# ------------------------------------------------------------------------------ swap


def _swap_attributes(
    pattern: Pattern, a: int, ia: int, b: int, ib: int
) -> tuple[Pattern, dict[str, Any]]:
    na, nb = pattern.nodes[a], pattern.nodes[b]
    va, vb = na.attributes[ia], nb.attributes[ib]
    attrs_a, attrs_b = list(na.attributes), list(nb.attributes)
    attrs_a[ia], attrs_b[ib] = vb, va
    edited = pattern.with_node(a, Node(na.name, tuple(attrs_a)))
    edited = edited.with_node(b, Node(nb.name, tuple(attrs_b)))
    change = {
        "edit": "swap",
        "kind": "att",
        "a": f"{va.value} {na.name}",
        "b": f"{vb.value} {nb.name}",
    }
    return edited, change


def swap_candidates(pattern: Pattern, attribute_kind: AttributeKind) -> list[_Candidate]:
    """Every swap of two same-kind atoms that changes the caption, in a fixed order."""
    out: list[_Candidate] = []
    nodes = pattern.nodes
    for a in range(len(nodes)):
        for b in range(a + 1, len(nodes)):
            values_a = {x.value for x in nodes[a].attributes}
            values_b = {x.value for x in nodes[b].attributes}
            for ia, va in enumerate(nodes[a].attributes):
                for ib, vb in enumerate(nodes[b].attributes):
                    if va.value == vb.value or va.value in values_b or vb.value in values_a:
                        continue
                    ka, kb = attribute_kind(va.value), attribute_kind(vb.value)
                    if ka is not None and kb is not None and ka != kb:
                        continue
                    out.append(("att", *_swap_attributes(pattern, a, ia, b, ib)))
            if nodes[a].name != nodes[b].name:
                edited = pattern.with_node(a, Node(nodes[b].name, nodes[a].attributes))
                edited = edited.with_node(b, Node(nodes[a].name, nodes[b].attributes))
                change = {"edit": "swap", "kind": "obj", "a": nodes[a].name, "b": nodes[b].name}
                out.append(("obj", edited, change))
    edges = pattern.edges
    for k in range(len(edges)):
        for m in range(k + 1, len(edges)):
            ek, em = edges[k], edges[m]
            if ek.predicate == em.predicate or not lexicon.false_under_every_reading(
                ek.predicate, em.predicate
            ):
                continue
            edited = pattern.with_edge(k, Edge(ek.subject, em.predicate, ek.object, ek.negated))
            edited = edited.with_edge(m, Edge(em.subject, ek.predicate, em.object, em.negated))
            change = {"edit": "swap", "kind": "rel", "a": ek.predicate, "b": em.predicate}
            out.append(("rel", edited, change))
    return out


def swap_negatives(
    graph: SceneGraph,
    pattern: Pattern,
    positive: str,
    rng: np.random.Generator,
    k: int,
    attribute_kind: AttributeKind = lambda _: None,
    leading: tuple[str, ...] = (),
    context: ContextCheck | None = None,
) -> FamilyResult:
    """HN-SWAP: exchange two atoms of the same kind (see the module docstring)."""
    candidates = swap_candidates(pattern, attribute_kind)
    order = [candidates[int(p)] for p in rng.permutation(len(candidates))]
    return _collect("swap", order, len(candidates), graph, positive, k, leading, context)


# ------------------------------------------------------------------------------- neg


def negation_candidates(pattern: Pattern) -> list[_Candidate]:
    """Every single negation of an attribute or a relation, in a fixed order."""
    out: list[_Candidate] = []
    for i, node in enumerate(pattern.nodes):
        for j, a in enumerate(node.attributes):
            attrs = list(node.attributes)
            attrs[j] = Attr(a.value, negated=True)
            edited = pattern.with_node(i, Node(node.name, tuple(attrs)))
            change = {"edit": "negate", "kind": "att", "atom": f"{a.value} {node.name}"}
            out.append(("att", edited, change))
    for k, e in enumerate(pattern.edges):
        edited = pattern.with_edge(k, Edge(e.subject, e.predicate, e.object, negated=True))
        atom = f"{pattern.nodes[e.subject].name} {e.predicate} {pattern.nodes[e.object].name}"
        out.append(("rel", edited, {"edit": "negate", "kind": "rel", "atom": atom}))
    return out


def negation_negatives(
    graph: SceneGraph,
    pattern: Pattern,
    positive: str,
    rng: np.random.Generator,
    k: int,
    leading: tuple[str, ...] = (),
    context: ContextCheck | None = None,
) -> FamilyResult:
    """HN-NEG: negate one attribute or relation (see the module docstring)."""
    candidates = negation_candidates(pattern)
    order = [candidates[int(p)] for p in rng.permutation(len(candidates))]
    return _collect("neg", order, len(candidates), graph, positive, k, leading, context)


# ------------------------------------------------------------------- foil providers


def _rank(value: str, options: Iterable[str]) -> list[str]:
    """A fixed pseudo-random order per value (stable across runs and machines)."""
    return sorted(options, key=lambda o: (zlib.crc32(f"{value}\x00{o}".encode()), o))


def vocabulary_foils(
    objects: Sequence[str],
    attributes: Mapping[str, Sequence[str]],
    predicates: Sequence[str],
) -> FoilProvider:
    """A closed-vocabulary provider (a fixed word list, or tests): foils are the other
    values of the same kind (for attributes, of the same attribute kind when the value's
    kind is known), in a fixed pseudo-random order per value."""
    kind_of = attribute_kinds(attributes)
    all_attributes = list(dict.fromkeys(v for vs in attributes.values() for v in vs))

    def provider(kind: str, value: str, forbidden: frozenset[str]) -> list[str]:
        if kind == "obj":
            pool: Sequence[str] = objects
        elif kind == "att":
            k = kind_of(value)
            pool = attributes[k] if k is not None else all_attributes
        elif kind == "rel":
            pool = predicates
        else:
            raise ValueError(f"unknown atom kind {kind!r}")
        return _rank(value, [v for v in pool if v != value and v not in forbidden])

    return provider


def attribute_kinds(attributes: Mapping[str, Sequence[str]]) -> AttributeKind:
    """value -> kind lookup from {kind: values} (None for a value of no listed kind)."""
    table = {v: kind for kind, values in attributes.items() for v in values}
    return table.get


WORDNET_KINDS: dict[str, str] = {"obj": "object", "att": "attribute", "rel": "relation"}


def finder_foils(finder: Any) -> FoilProvider:
    """A ``vlcomp.negatives.wordnet_foils.FoilFinder`` as a provider: its
    ``candidates(kind, value, forbidden)`` (kinds object / attribute / relation), with a
    ``Rejection`` (no foil) read as no foils. The finder counts rejections in its
    ``stats``."""

    def provider(kind: str, value: str, forbidden: frozenset[str]) -> list[str]:
        found = finder.candidates(WORDNET_KINDS[kind], value, forbidden)
        return list(found) if isinstance(found, list) else []

    return provider


def lexicon_attribute_kinds(values: Iterable[str]) -> dict[str, list[str]]:
    """The values grouped by their kind in the generic lexicon (``negatives.lexicon``),
    sorted; values of no known kind are left out (setting ``attribute_kinds``)."""
    kinds: dict[str, set[str]] = {}
    for value in values:
        kind = lexicon.attribute_kind(value)
        if kind is not None:
            kinds.setdefault(kind, set()).add(value)
    return {kind: sorted(vs) for kind, vs in sorted(kinds.items())}


@dataclass(frozen=True)
class GraphVocabulary:
    """The atoms some scene graphs state: object names, attribute values, predicates."""

    objects: tuple[str, ...]
    attributes: tuple[str, ...]
    predicates: tuple[str, ...]

    @classmethod
    def from_graphs(cls, graphs: Iterable[SceneGraph]) -> GraphVocabulary:
        objects: set[str] = set()
        attributes: set[str] = set()
        predicates: set[str] = set()
        for graph in graphs:
            for obj in graph.objects:
                objects.add(obj.name)
                attributes.update(obj.attributes)
            predicates.update(r.predicate for r in graph.relations)
        return cls(tuple(sorted(objects)), tuple(sorted(attributes)), tuple(sorted(predicates)))


def lexicon_foils(vocabulary: GraphVocabulary) -> FoilProvider:
    """A provider from the data's own vocabulary (e.g. every scene graph of the
    evaluation folder) and the generic lexicon, in a fixed pseudo-random order per value:

    - an object name -> the other object names;
    - an attribute -> the values of its lexicon kind (none for a value of no known kind);
    - a spatial predicate of the lexicon ("left of", "behind", ...) -> the other spatial
      predicates; any other predicate -> the other non-spatial predicates.

    A foil that is a synonym of the value or of a forbidden value ("big" for "large") is
    dropped too."""
    kinds = lexicon_attribute_kinds(vocabulary.attributes)
    spatial = [p for p in vocabulary.predicates if lexicon.predicate_of(p) is not None]
    other = [p for p in vocabulary.predicates if lexicon.predicate_of(p) is None]

    def provider(kind: str, value: str, forbidden: frozenset[str]) -> list[str]:
        if kind == "obj":
            pool: Sequence[str] = vocabulary.objects
        elif kind == "att":
            attribute_kind = lexicon.attribute_kind(value)
            pool = kinds.get(attribute_kind, []) if attribute_kind is not None else []
        elif kind == "rel":
            pool = spatial if lexicon.predicate_of(value) is not None else other
        else:
            raise ValueError(f"unknown atom kind {kind!r}")
        if kind == "att":
            taken = {lexicon.synonym_key(v) for v in (value, *forbidden)}
            pool = [v for v in pool if lexicon.synonym_key(v) not in taken]
        return _rank(value, [v for v in pool if v != value and v not in forbidden])

    return provider
