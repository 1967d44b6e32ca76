"""The scene graph of an evaluation item as the systematicity negatives read it: object
nodes, distinct compounds and atoms (``parse_graph``), what is true of an image
(``SceneFacts``) and what a caption claims once one atom of a compound is foiled
(``foiled_claim``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vlcomp.negatives.wordnet_foils import DEFAULT_RELATIONS
from vlcomp.text import normalise_or_none, plural
from vlcomp.text.lemma import load_lemmatizer

CompoundKey = tuple[str, tuple[str, ...]]  # (compound kind, parts)


@dataclass(frozen=True)
class ObjectNode:
    idx: int
    atom: str  # normalized lemma (or normalized name)
    surfaces: tuple[str, ...]  # how the caption may write it, longest first
    attributes: tuple[str, ...]  # normalized attribute values on this node


@dataclass(frozen=True)
class Compound:
    kind: str  # attr_obj | obj_rel_obj
    parts: tuple[str, ...]  # (attr, obj) | (subj, pred, obj), normalized atoms
    nodes: tuple[int, ...]  # attr_obj: (obj,), obj_rel_obj: (subj, obj)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, self.parts


@dataclass(frozen=True)
class Graph:
    objects: dict[int, ObjectNode]
    compounds: tuple[Compound, ...]  # distinct, in graph order
    atoms: dict[str, frozenset[str]]  # kind -> atoms of the graph


def parse_graph(
    objects: Sequence[Mapping], attributes: Sequence[Mapping], relations: Sequence[Mapping]
) -> Graph:
    """Nodes, distinct compounds and atoms of one graph (the units' normalization: an
    object's atom is its normalised lemma, else its normalised name)."""
    lemmatizer = load_lemmatizer()
    nodes: dict[int, ObjectNode] = {}
    attrs: dict[int, list[str]] = {}
    for a in attributes or []:
        value = normalise_or_none(a.get("value"))
        if value is not None and isinstance(a.get("obj"), int):
            attrs.setdefault(a["obj"], [])
            if value not in attrs[a["obj"]]:
                attrs[a["obj"]].append(value)
    atoms: dict[str, set[str]] = {"object": set(), "attribute": set(), "relation": set()}
    for o in objects or []:
        idx = o.get("idx")
        name, lemma = normalise_or_none(o.get("name")), normalise_or_none(o.get("lemma"))
        atom = lemma or name
        if atom is None or not isinstance(idx, int) or idx in nodes:
            continue
        singular = lemmatizer.phrase(name) if name else None
        surfaces = {s for s in (name, atom, plural(atom), singular) if s}
        ordered = tuple(sorted(surfaces, key=lambda s: (-len(s.split()), -len(s), s)))
        nodes[idx] = ObjectNode(idx, atom, ordered, tuple(attrs.get(idx, ())))
        atoms["object"].add(atom)
    compounds: list[Compound] = []
    for a in attributes or []:
        value, obj = normalise_or_none(a.get("value")), a.get("obj")
        if value is not None:
            atoms["attribute"].add(value)
            if obj in nodes:
                compounds.append(Compound("attr_obj", (value, nodes[obj].atom), (obj,)))
    for r in relations or []:
        pred, subj, obj = normalise_or_none(r.get("pred")), r.get("subj"), r.get("obj")
        if pred is None:
            continue
        atoms["relation"].add(pred)
        if subj in nodes and obj in nodes and subj != obj:
            parts = (nodes[subj].atom, pred, nodes[obj].atom)
            compounds.append(Compound("obj_rel_obj", parts, (subj, obj)))
    distinct: dict[tuple, Compound] = {}
    for compound in compounds:
        distinct.setdefault(compound.key, compound)
    return Graph(nodes, tuple(distinct.values()), {k: frozenset(v) for k, v in atoms.items()})


@dataclass(frozen=True)
class Described:
    """An object as a caption describes it: its atom and the attributes it is given."""

    atom: str
    attributes: frozenset[str]

    def within(self, other: Described) -> bool:
        """``other`` fits this description (same atom, at least these attributes)."""
        return self.atom == other.atom and self.attributes <= other.attributes


def _described(graph: Graph, idx: int) -> Described:
    node = graph.objects[idx]
    return Described(node.atom, frozenset(node.attributes))


@dataclass
class SceneFacts:
    """What is true of an image (or item): described objects and relations between them,
    relations by lexicon class with their converse/symmetric reading."""

    objects: list[Described] = field(default_factory=list)
    relations: list[tuple[Described, str, Described]] = field(default_factory=list)

    def add(self, graph: Graph) -> None:
        for idx in graph.objects:
            self.objects.append(_described(graph, idx))
        for compound in graph.compounds:
            if compound.kind != "obj_rel_obj":
                continue
            ends = {
                "S": _described(graph, compound.nodes[0]),
                "O": _described(graph, compound.nodes[1]),
            }
            for a, rel, b in DEFAULT_RELATIONS.facts("S", compound.parts[1], "O"):
                self.relations.append((ends[a], rel, ends[b]))

    def holds(self, claim: Described | tuple[Described, str, Described]) -> bool:
        """Whether a described object exists, or a relation holds between described
        objects (in any phrasing of its class, or conversely)."""
        if isinstance(claim, Described):
            return any(claim.within(o) for o in self.objects)
        subj, pred, obj = claim
        rel = DEFAULT_RELATIONS.canonical(pred)
        return any(rel == r and subj.within(a) and obj.within(b) for a, r, b in self.relations)


def foiled_claim(
    graph: Graph, compound: Compound, index: int, foil: str
) -> Described | tuple[Described, str, Described]:
    """What the caption claims after the compound's part ``index`` is replaced: the
    described object (attr_obj) or relation (obj_rel_obj), other attributes kept."""
    if compound.kind == "attr_obj":
        node = _described(graph, compound.nodes[0])
        if index == 0:
            attrs = (node.attributes - {compound.parts[0]}) | {foil}
            return Described(node.atom, frozenset(attrs))
        return Described(foil, node.attributes)
    subj, obj = (_described(graph, i) for i in compound.nodes)
    pred = compound.parts[1]
    if index == 0:
        subj = Described(foil, subj.attributes)
    elif index == 1:
        pred = foil
    else:
        obj = Described(foil, obj.attributes)
    return subj, pred, obj
