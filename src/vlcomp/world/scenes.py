"""Scenes: objects with attributes and boxes, their relations, sampling, hold-out checks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import Holdout, WorldSpec
from .vocab import CONVERSE

# Placement constraints, as fractions of the image side (with pixel floors).
EDGE_MARGIN = 1  # pixels kept free at the image border
GAP_FRACTION = 0.03  # minimum free space between two boxes
DOMINANCE_RATIO = 1.5  # dominant axis displacement >= ratio * other axis + margin
DOMINANCE_MARGIN_FRACTION = 0.04
DUPLICATE_PROB = 0.12  # chance to repeat an earlier (shape, colour), so plurals occur
POSITION_TRIES = 40
MAX_SCENE_TRIES = 2000


@dataclass(frozen=True)
class SceneObject:
    """One drawn object; its box is the square [x, x + side) x [y, y + side)."""

    shape: str
    colour: str
    size: str
    x: int
    y: int
    side: int

    @property
    def bbox(self) -> tuple[int, int, int, int]:
        """(x, y, w, h) in pixels, image y growing downward."""
        return (self.x, self.y, self.side, self.side)

    @property
    def centre2(self) -> tuple[int, int]:
        """Twice the centre coordinates (kept integral)."""
        return (2 * self.x + self.side, 2 * self.y + self.side)


@dataclass(frozen=True)
class Scene:
    """Objects of one image, in drawing order; ``objects[i]`` has index ``i``."""

    objects: tuple[SceneObject, ...]

    def relation(self, i: int, j: int) -> str:
        """Canonical relation of object ``i`` with respect to object ``j``."""
        return relation_between(self.objects[i], self.objects[j])

    def relations(self) -> list[tuple[int, str, int]]:
        """(subject, predicate, object) for every ordered pair, row-major."""
        n = len(self.objects)
        return [(i, self.relation(i, j), j) for i in range(n) for j in range(n) if i != j]


def relation_between(a: SceneObject, b: SceneObject) -> str:
    """Relation of ``a`` with respect to ``b`` by the dominant axis of the centre offset."""
    (ax, ay), (bx, by) = a.centre2, b.centre2
    dx, dy = ax - bx, ay - by
    if abs(dx) > abs(dy):
        return "left of" if dx < 0 else "right of"
    return "above" if dy < 0 else "below"


def relations_apart(a: SceneObject, b: SceneObject) -> frozenset[str]:
    """The relations of ``a`` with respect to ``b`` under the second reading of the spatial
    words: a relation holds when the two boxes are apart along its axis ("left of": ``a``
    ends before ``b`` begins), so a pair may have two (left of and above) or none
    (overlapping extents on both axes)."""
    out = set()
    if a.x + a.side <= b.x:
        out.add("left of")
    if b.x + b.side <= a.x:
        out.add("right of")
    if a.y + a.side <= b.y:
        out.add("above")
    if b.y + b.side <= a.y:
        out.add("below")
    return frozenset(out)


def _clear_relation(a: SceneObject, b: SceneObject, margin2: int) -> bool:
    (ax, ay), (bx, by) = a.centre2, b.centre2
    big, small = sorted((abs(ax - bx), abs(ay - by)), reverse=True)
    return big >= DOMINANCE_RATIO * small + margin2


def _apart(a: SceneObject, b: SceneObject, gap: int) -> bool:
    gap_x = max(a.x, b.x) - min(a.x + a.side, b.x + b.side)
    gap_y = max(a.y, b.y) - min(a.y + a.side, b.y + b.side)
    return gap_x >= gap or gap_y >= gap


class SceneSampler:
    """Samples scenes of a world, optionally avoiding a training corpus's hold-out.

    Object types (shape, colour, size) are drawn uniformly from those the hold-out
    allows; positions are drawn one object at a time and rejected when boxes touch,
    when a pair's dominant axis is not clear, or when a pair would form a held-out
    triple (either direction). A scene that cannot be completed is started over.
    """

    def __init__(self, spec: WorldSpec, holdout: Holdout | None = None) -> None:
        self.spec = spec
        self.holdout = holdout or Holdout(corpus="")
        atoms = set(self.holdout.atoms)
        bindings = set(self.holdout.bindings)
        self.types: list[tuple[str, str, str]] = [
            (shape, colour, size)
            for shape in spec.shapes
            for colour in spec.colours
            for size in spec.sizes
            if not ({shape, colour, size} & atoms)
            and (colour, shape) not in bindings
            and (size, shape) not in bindings
        ]
        if not self.types:
            raise ValueError(f"world.corpora.{self.holdout.corpus}.holdout: no object type left")
        self.sizes_for: dict[tuple[str, str], list[str]] = {}
        for shape, colour, size in self.types:
            self.sizes_for.setdefault((shape, colour), []).append(size)
        self.triples = set(self.holdout.triples_with_converses)
        self.side = {size: spec.size_pixels(size) for size in spec.sizes}
        s = spec.image_size
        self.gap = max(2, round(GAP_FRACTION * s))
        self.margin2 = 2 * max(2, round(DOMINANCE_MARGIN_FRACTION * s))

    def _pick_type(self, rng: np.random.Generator, placed: list[SceneObject]) -> tuple[str, ...]:
        if placed and rng.random() < DUPLICATE_PROB:
            src = placed[int(rng.integers(len(placed)))]
            sizes = self.sizes_for[(src.shape, src.colour)]
            return (src.shape, src.colour, sizes[int(rng.integers(len(sizes)))])
        return self.types[int(rng.integers(len(self.types)))]

    def _fits(self, obj: SceneObject, placed: list[SceneObject]) -> bool:
        for other in placed:
            if not _apart(obj, other, self.gap) or not _clear_relation(obj, other, self.margin2):
                return False
            if self.triples and (
                (obj.shape, relation_between(obj, other), other.shape) in self.triples
            ):
                return False
        return True

    def _try_scene(self, rng: np.random.Generator, n: int) -> Scene | None:
        s = self.spec.image_size
        placed: list[SceneObject] = []
        for _ in range(n):
            shape, colour, size = self._pick_type(rng, placed)
            side = self.side[size]
            hi = s - EDGE_MARGIN - side
            xs = rng.integers(EDGE_MARGIN, hi + 1, size=POSITION_TRIES)
            ys = rng.integers(EDGE_MARGIN, hi + 1, size=POSITION_TRIES)
            for x, y in zip(xs.tolist(), ys.tolist(), strict=True):
                obj = SceneObject(shape, colour, size, x, y, side)
                if self._fits(obj, placed):
                    placed.append(obj)
                    break
            else:
                return None
        return Scene(tuple(placed))

    def sample(self, rng: np.random.Generator) -> Scene:
        """One scene with a uniformly drawn number of objects."""
        n = int(rng.integers(self.spec.min_objects, self.spec.max_objects + 1))
        for _ in range(MAX_SCENE_TRIES):
            scene = self._try_scene(rng, n)
            if scene is not None:
                return scene
        raise RuntimeError(
            f"could not place {n} objects in a {self.spec.image_size} px image "
            f"after {MAX_SCENE_TRIES} tries; lower world.objects_per_scene or the hold-out"
        )


def scene_holdout_items(scene: Scene, holdout: Holdout) -> list[tuple[str, str]]:
    """Held-out items of ``holdout`` that ``scene`` contains, as (kind, value).

    kind is "binding" (value "red circle"), "triple" (value "circle above square",
    matched at geometry level in either direction) or "atom" (value "hexagon";
    a relation atom counts when any ordered pair has that relation). Order
    follows the config: bindings, triples, atoms.
    """
    objs = scene.objects
    attrs = {(o.colour, o.shape) for o in objs} | {(o.size, o.shape) for o in objs}
    rels = scene.relations()
    facts = {(objs[i].shape, pred, objs[j].shape) for i, pred, j in rels}
    words = {w for o in objs for w in (o.shape, o.colour, o.size)} | {p for _, p, _ in rels}
    items: list[tuple[str, str]] = []
    items += [("binding", f"{a} {s}") for a, s in holdout.bindings if (a, s) in attrs]
    for a, rel, b in holdout.triples:
        if (a, rel, b) in facts or (b, CONVERSE[rel], a) in facts:
            items.append(("triple", f"{a} {rel} {b}"))
    items += [("atom", atom) for atom in holdout.atoms if atom in words]
    return items
