"""The scene graph of one caption (the ``graphs`` contract's columns) and the settings of
its extraction (``extract`` has the rules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .lexicon import (
    COLOURS,
    CONTAINERS,
    DEFAULT_FRAME_OBJECTS,
    DEFAULT_STOP_OBJECTS,
    MATERIALS,
    PARTITIVES,
)
from .predicates import PredicateMap

Object = tuple[int, str, str]  # (idx, name as written, lemma)
Attribute = tuple[int, str]  # (object idx, value)
Relation = tuple[int, str, int]  # (subject idx, predicate, object idx)


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
