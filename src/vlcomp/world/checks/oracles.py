"""Ground-truth oracles: score a caption's reading (``grammar.read_caption``) against the
scene alone.

The world knows every scene, so a benchmark's candidates can be checked exactly. A reading
*holds* in a scene when its nodes can be mapped to disjoint sets of visible objects
(``count`` objects each, at least: "two red circles" needs two) with the node's shape and
attributes and none of its negated attributes, such that every member pair of each relation
has the predicate (a negated one: none has it).

Oracles (``ORACLES``):

- ``truth``: 1 when the reading holds; otherwise half the share of its facts (each node,
  each relation with its two nodes) that hold one at a time: a perfect binder.
- ``bag_of_words``: the share of the caption's shape, attribute and relation words that
  the scene holds anywhere (a relation word when some ordered pair has it), regardless of
  binding, counts and negation.
- ``objects_only``: the share of the caption's shape words the scene holds.

A crop's scene is the objects whose box overlaps the crop (relations come from the whole
boxes).

The spatial words have two readings (``READINGS``). The world's own, ``dominant_axis``
(``scenes.relation_between``), is the one its captions are written with and the oracles
score with: a pair has exactly one relation, that of the dominant axis of its centres'
offset. The second, ``apart`` (``scenes.relations_apart``), is how a reader may take the
words: a relation holds when the boxes are apart along its axis, so a pair may have two
relations or none.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import polars as pl

from vlcomp.world.checks.grammar import NodeReading, Reading, RelationReading
from vlcomp.world.scenes import SceneObject, relation_between, relations_apart

ORACLES: tuple[str, ...] = ("truth", "bag_of_words", "objects_only")
DOMINANT_AXIS, APART = "dominant_axis", "apart"
READINGS: tuple[str, ...] = (DOMINANT_AXIS, APART)  # of the spatial words; see the docstring


# ------------------------------------------------------------------------------ scenes


@dataclass(frozen=True)
class OracleScene:
    """The visible objects of an image or crop; ``relations(i, j)`` from whole boxes, under
    one reading of the spatial words (``READINGS``)."""

    objects: tuple[SceneObject, ...]
    reading: str = DOMINANT_AXIS

    def relations(self, i: int, j: int) -> frozenset[str]:
        a, b = self.objects[i], self.objects[j]
        if self.reading == APART:
            return relations_apart(a, b)
        return frozenset({relation_between(a, b)})

    def words(self) -> set[str]:
        n = len(self.objects)
        out = {w for o in self.objects for w in (o.shape, o.colour, o.size)}
        return out.union(*(self.relations(i, j) for i in range(n) for j in range(n) if i != j))


def _overlaps(o: SceneObject, box: tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return o.x < x + w and x < o.x + o.side and o.y < y + h and y < o.y + o.side


def visible(
    objects: Sequence[SceneObject],
    box: tuple[int, int, int, int] | None,
    reading: str = DOMINANT_AXIS,
) -> OracleScene:
    if box is None:
        return OracleScene(tuple(objects), reading)
    return OracleScene(tuple(o for o in objects if _overlaps(o, box)), reading)


def scenes_from_table(table: pl.DataFrame) -> dict[str, list[SceneObject]]:
    """image_id (as text) -> objects, from the world's ``scenes.parquet``."""
    missing = [
        c
        for c in ("image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h")
        if c not in table.columns
    ]
    if missing:
        raise ValueError(f"scenes: missing column(s) {missing}")
    out: dict[str, list[SceneObject]] = {}
    for image, _, shape, colour, size, x, y, w, h in (
        table.sort("image_id", "object_idx")
        .select("image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h")
        .iter_rows()
    ):
        if w != h:
            raise ValueError(f"scenes: image {image} has a non-square box ({w} x {h})")
        out.setdefault(str(image), []).append(
            SceneObject(shape, colour, size, int(x), int(y), int(w))
        )
    return out


# ------------------------------------------------------------------------------ oracles


def _candidates(node: NodeReading, scene: OracleScene) -> list[int]:
    out = []
    for i, o in enumerate(scene.objects):
        have = {o.colour, o.size}
        if o.shape == node.shape and set(node.attributes) <= have and not set(node.negated) & have:
            out.append(i)
    return out


def _relation_ok(
    rel: RelationReading, subj: Sequence[int], obj: Sequence[int], scene: OracleScene
) -> bool:
    same = [rel.pred in scene.relations(a, b) for a in subj for b in obj]
    return not any(same) if rel.negated else all(same)


def _assignments(
    nodes: Sequence[int], reading: Reading, scene: OracleScene, cands: Sequence[list[int]]
) -> Iterable[dict[int, tuple[int, ...]]]:
    """Disjoint assignments of ``nodes`` (count objects each) that pass the relations
    among them, depth first."""
    relations = [r for r in reading.relations if r.subj in nodes and r.obj in nodes]

    def extend(k: int, taken: frozenset[int], chosen: dict[int, tuple[int, ...]]):
        if k == len(nodes):
            yield dict(chosen)
            return
        node = nodes[k]
        free = [i for i in cands[node] if i not in taken]
        for members in itertools.combinations(free, reading.nodes[node].count):
            chosen[node] = members
            if all(
                _relation_ok(r, chosen[r.subj], chosen[r.obj], scene)
                for r in relations
                if r.subj in chosen and r.obj in chosen and node in (r.subj, r.obj)
            ):
                yield from extend(k + 1, taken | set(members), chosen)
            del chosen[node]

    return extend(0, frozenset(), {})


def holds(reading: Reading, scene: OracleScene) -> bool:
    """Whether the whole reading is true of the scene (see module docstring)."""
    cands = [_candidates(n, scene) for n in reading.nodes]
    order = sorted(range(len(reading.nodes)), key=lambda k: len(cands[k]))
    return next(iter(_assignments(order, reading, scene, cands)), None) is not None


def truth_score(reading: Reading, scene: OracleScene) -> float:
    if holds(reading, scene):
        return 1.0
    cands = [_candidates(n, scene) for n in reading.nodes]
    facts = [[k] for k in range(len(reading.nodes))]
    facts += [[r.subj, r.obj] for r in reading.relations]
    true = 0
    for nodes in facts:
        sub = Reading(
            reading.nodes, tuple(r for r in reading.relations if {r.subj, r.obj} <= set(nodes))
        )
        true += next(iter(_assignments(nodes, sub, scene, cands)), None) is not None
    return 0.5 * true / len(facts)


def bag_of_words_score(reading: Reading, scene: OracleScene) -> float:
    words = reading.words()
    return len(words & scene.words()) / len(words)


def objects_only_score(reading: Reading, scene: OracleScene) -> float:
    shapes = {n.shape for n in reading.nodes}
    return len(shapes & {o.shape for o in scene.objects}) / len(shapes)


SCORERS: dict[str, Callable[[Reading, OracleScene], float]] = {
    "truth": truth_score,
    "bag_of_words": bag_of_words_score,
    "objects_only": objects_only_score,
}
