"""Scene graphs and CREPE-style random walks for the productivity benchmark.

A scene graph (Visual Genome ``scene_graphs.json`` layout) holds objects, each with a name,
a set of attributes and a box, and directed relationships between objects. Its *atoms*
are counted per instance: every object, every (object, attribute) and every relationship
is one atom, so a caption of complexity n states exactly n of them.

``random_walk`` samples a subgraph of exactly n atoms (CREPE appendix A.3, as described in
the issue; the appendix text itself could not be retrieved here):

1. start at an object drawn uniformly (1 atom);
2. at each step, draw uniformly one *compound* at the current object that adds at least
   one new atom and fits the remaining budget: an attribute of the current object not yet
   taken (attribute-object, +1 atom) or a relationship incident to it in either direction
   (object-relation-object, +1 atom, or +2 when the other object is new); after a
   relationship the walk continues from its other object;
3. when the current object has no such compound, the walk moves to a random object
   already in the walk, in the same connected component, that has one (backtracking);
4. when no object of the component has one, the component is *exhausted* and the walk
   jumps to a random object of a connected component it has not touched (+1 atom);
5. when there is none, the walk ends short of n and is discarded.

With ``one_relation_per_pair`` (default) a walk states at most one relationship per
unordered object pair: a converse ("square right of circle" after "circle left of
square") adds no information even though it is a separate edge of the graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlcomp.ingest.json_formats import parse_box
from vlcomp.ingest.visual_genome import endpoint, object_id, object_name
from vlcomp.text import normalise_or_none

_BOX_KEYS = ("x", "y", "w", "h")


@dataclass(frozen=True)
class SceneObject:
    object_id: int
    name: str
    attributes: tuple[str, ...]  # normalised, de-duplicated, in file order
    box: tuple[int, int, int, int]  # x, y, width, height (pixels)


@dataclass(frozen=True)
class Relation:
    relationship_id: int
    subject: int  # index into SceneGraph.objects
    predicate: str
    object: int


@dataclass(frozen=True)
class SceneGraph:
    image_id: str
    width: int
    height: int
    objects: tuple[SceneObject, ...]
    relations: tuple[Relation, ...]

    def facts(self) -> frozenset[tuple[int, str, int]]:
        """(subject index, predicate, object index) of every relationship."""
        return frozenset((r.subject, r.predicate, r.object) for r in self.relations)

    def components(self) -> tuple[int, ...]:
        """Connected component (smallest object index in it) of every object."""
        parent = list(range(len(self.objects)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for r in self.relations:
            a, b = find(r.subject), find(r.object)
            if a != b:
                parent[max(a, b)] = min(a, b)
        return tuple(find(i) for i in range(len(self.objects)))

    def max_atoms(self, one_relation_per_pair: bool = True) -> int:
        """The largest complexity a walk on this graph can reach."""
        pairs = {frozenset((r.subject, r.object)) for r in self.relations}
        rels = len(pairs) if one_relation_per_pair else len(self.relations)
        return len(self.objects) + sum(len(o.attributes) for o in self.objects) + rels


def scene_graph_from_vg(
    entry: Mapping[str, Any], width: int, height: int
) -> tuple[SceneGraph, list[str]]:
    """A scene graph from one image's Visual Genome graph (``ingest.visual_genome``), and
    what was dropped (reasons).

    Dropped: objects without a usable id, name or box (``bad object``), repeated object
    ids; relationships whose ends are not kept objects or coincide (``bad relationship``);
    repeated (subject, predicate, object) triples. Attributes are normalised and
    de-duplicated; an object's box is clipped to the image.
    """
    dropped: list[str] = []
    index: dict[Any, int] = {}
    objects: list[SceneObject] = []
    for obj in entry.get("objects") or []:
        if not isinstance(obj, dict):
            dropped.append("bad object")
            continue
        oid, name = object_id(obj), normalise_or_none(object_name(obj))
        box = parse_box(obj, _BOX_KEYS)
        if not isinstance(oid, int) or isinstance(oid, bool) or name is None or box is None:
            dropped.append("bad object")
            continue
        if oid in index:
            dropped.append("bad object")
            continue
        x, y, w, h = box
        x1, y1 = min(x + w, width), min(y + h, height)
        if x >= width or y >= height:
            dropped.append("bad object")
            continue
        values = obj.get("attributes")
        attrs = dict.fromkeys(
            v for v in map(normalise_or_none, values if isinstance(values, list) else []) if v
        )
        index[oid] = len(objects)
        objects.append(SceneObject(oid, name, tuple(attrs), (x, y, x1 - x, y1 - y)))
    relations: list[Relation] = []
    seen: set[tuple[int, str, int]] = set()
    for rel in entry.get("relationships") or []:
        if not isinstance(rel, dict):
            dropped.append("bad relationship")
            continue
        subj = index.get(endpoint(rel, "subject"))
        obj_ = index.get(endpoint(rel, "object"))
        pred = normalise_or_none(rel.get("predicate"))
        rid = rel.get("relationship_id")
        if subj is None or obj_ is None or subj == obj_ or pred is None:
            dropped.append("bad relationship")
            continue
        if (subj, pred, obj_) in seen:
            continue
        seen.add((subj, pred, obj_))
        relations.append(Relation(rid if isinstance(rid, int) else -1, subj, pred, obj_))
    graph = SceneGraph(str(entry.get("image_id")), width, height, tuple(objects), tuple(relations))
    return graph, dropped


# ----------------------------------------------------------------------------- walks


@dataclass(frozen=True)
class Walk:
    """A subgraph in the order the walk added it (indices into the scene graph)."""

    objects: tuple[int, ...]
    attributes: tuple[tuple[int, str], ...]  # (object index, value)
    relations: tuple[int, ...]  # indices into SceneGraph.relations
    jumps: int  # connected components entered after the first

    @property
    def n_atoms(self) -> int:
        return len(self.objects) + len(self.attributes) + len(self.relations)

    def key(self) -> tuple[frozenset, frozenset, frozenset]:
        """The subgraph as sets, for spotting the same subgraph reached in another order."""
        return frozenset(self.objects), frozenset(self.attributes), frozenset(self.relations)


@dataclass(frozen=True)
class _Step:
    kind: str  # "att" or "rel"
    obj: int  # the object the walk stands on after the step
    value: str | None = None  # attribute value
    relation: int | None = None
    gain: int = 1


class _WalkState:
    def __init__(self, graph: SceneGraph, one_relation_per_pair: bool) -> None:
        self.graph = graph
        self.one_per_pair = one_relation_per_pair
        self.incident: list[list[int]] = [[] for _ in graph.objects]
        for k, r in enumerate(graph.relations):
            self.incident[r.subject].append(k)
            self.incident[r.object].append(k)
        self.component = graph.components()
        self.objects: list[int] = []
        self.attributes: list[tuple[int, str]] = []
        self.relations: list[int] = []
        self.pairs: set[frozenset[int]] = set()
        self.jumps = 0

    @property
    def atoms(self) -> int:
        return len(self.objects) + len(self.attributes) + len(self.relations)

    def steps(self, at: int, budget: int) -> list[_Step]:
        taken = set(self.attributes)
        out = [
            _Step("att", at, value=v)
            for v in self.graph.objects[at].attributes
            if (at, v) not in taken
        ]
        in_walk = set(self.objects)
        for k in self.incident[at]:
            r = self.graph.relations[k]
            other = r.object if r.subject == at else r.subject
            pair = frozenset((r.subject, r.object))
            if k in self.relations or (self.one_per_pair and pair in self.pairs):
                continue
            gain = 1 if other in in_walk else 2
            out.append(_Step("rel", other, relation=k, gain=gain))
        return [s for s in out if s.gain <= budget]

    def take(self, step: _Step) -> None:
        if step.kind == "att":
            self.attributes.append((step.obj, step.value or ""))
            return
        assert step.relation is not None
        r = self.graph.relations[step.relation]
        self.relations.append(step.relation)
        self.pairs.add(frozenset((r.subject, r.object)))
        if step.obj not in self.objects:
            self.objects.append(step.obj)

    def walk(self) -> Walk:
        return Walk(tuple(self.objects), tuple(self.attributes), tuple(self.relations), self.jumps)


def random_walk(
    graph: SceneGraph, n: int, rng: np.random.Generator, one_relation_per_pair: bool = True
) -> Walk | None:
    """A subgraph of exactly ``n`` atoms (see the module docstring), or None if the walk
    could not reach ``n``."""
    if n < 1 or not graph.objects:
        return None
    state = _WalkState(graph, one_relation_per_pair)
    current = int(rng.integers(len(graph.objects)))
    state.objects.append(current)
    while state.atoms < n:
        budget = n - state.atoms
        steps = state.steps(current, budget)
        if steps:
            step = steps[int(rng.integers(len(steps)))]
            state.take(step)
            current = step.obj
            continue
        here = state.component[current]
        movable = [
            o for o in state.objects if state.component[o] == here and state.steps(o, budget)
        ]
        if movable:
            current = movable[int(rng.integers(len(movable)))]
            continue
        touched = {state.component[o] for o in state.objects}
        targets = [o for o in range(len(graph.objects)) if state.component[o] not in touched]
        if not targets:
            return None
        current = targets[int(rng.integers(len(targets)))]
        state.objects.append(current)
        state.jumps += 1
    return state.walk()


def walk_crop(graph: SceneGraph, objects: Iterable[int]) -> tuple[int, int, int, int]:
    """Union of the objects' boxes (x, y, width, height), clipped to the image."""
    boxes = [graph.objects[i].box for i in objects]
    if not boxes:
        raise ValueError("a crop needs at least one object")
    x0 = max(0, min(b[0] for b in boxes))
    y0 = max(0, min(b[1] for b in boxes))
    x1 = min(graph.width, max(b[0] + b[2] for b in boxes))
    y1 = min(graph.height, max(b[1] + b[3] for b in boxes))
    return x0, y0, x1 - x0, y1 - y0
