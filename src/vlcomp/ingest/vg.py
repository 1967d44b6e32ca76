"""Evaluation items from Visual Genome region descriptions, with CREPE's region filters.

Each region (a phrase with a box) becomes an item of the ``EVAL_ITEMS_SCHEMA`` contract
with its scene graph, when it passes, in this order (the first failure is the rejection
reason, see ``REGION_REASONS``):

1. the region has an id, an image id and a valid box (``invalid_box``: missing, not a
   number, negative x/y or non-positive size, or leaving the image; with
   ``clip_to_image`` a box leaving the image is clipped to it and counted in the summary's
   ``clipped_boxes``, and only one wholly outside is invalid); the image's size is
   known from ``image_data.json`` (``unknown_image``); a repeated region id is
   ``duplicate_id``;
2. the phrase passes caption screening (``rules``: empty, too long, non-English, ...);
3. area >= ``min_area`` pixels (``too_small``) and >= ``min_area_fraction`` of the image
   (``too_small_fraction``);
4. ``min_aspect`` <= width / height <= ``max_aspect`` (``aspect_ratio``);
5. the region has a scene graph (``no_graph``) with >= ``min_atoms`` distinct atoms (object
   lemmas, attribute values, predicates; ``too_few_atoms``) and >= ``min_compounds``
   distinct compounds (attribute-object pairs, object-relation-object triples;
   ``too_few_compounds``);
6. de-duplication (``dedupe``: "image" = within an image, "global", "none"): a region whose
   graph equals the graph of an earlier kept region (same multiset of objects with their
   attribute sets, same relations between them; ids and boxes ignored) is
   ``duplicate_graph``; the first one in file order is kept.

The region's graph comes from ``region_graphs.json`` when present (``graphs: auto``): per
image {image_id, regions: [{region_id, phrase, x, y, width, height, objects: [{object_id,
name or names, ...}], relationships: [{subject_id, object_id, predicate}]}]}; Visual
Genome's region graphs carry no attributes, so each object gets those that
``attributes.json`` (else ``scene_graphs.json``) annotates for it (``visual_genome``).
Otherwise (or with ``graphs: scene_graphs``) it is derived from ``region_descriptions.json``
and the image's scene graph (``scene_graphs.json``, else ``attributes.json`` +
``relationships.json``): the objects whose box lies at least ``inside_fraction`` inside the
region box, their attributes, and the relations among them. That fallback over-approximates
what a phrase states (any object in the box counts), so prefer region graphs.

Every file is read through ``visual_genome`` (names, merged ids, attribute joins, image
sizes). Names are kept as written; lemmas, attribute values and predicates are put in the
parser's form by a ``GraphCanon`` (``vlcomp.text.canon``: "Men" -> "man", "wearing" ->
"wear", "parked on" -> "park on"), so that an annotated region and the same words in a
training caption give the same atoms. Relations whose subject or object is not an object
of the region graph are dropped. Files are streamed (``jsonstream``); the scene-graph
file is joined by image id and is held in memory only as far as its image order differs
from the region file's.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from vlcomp.contracts import EVAL_ITEMS_SCHEMA, REJECTED_SCHEMA
from vlcomp.text.canon import GraphCanon

from .json_formats import REGION_BOX_KEYS, parse_box
from .jsonstream import iter_json_array
from .reader_types import Rejected, SeenIds
from .rules import REASONS as SCREEN_REASONS
from .rules import CaptionRules, RulesError, screen, truncate
from .tables import open_tables
from .visual_genome import (
    AttributeIndex,
    Joined,
    MergeCounts,
    attribute_sources,
    endpoint,
    has_scene_graphs,
    image_key,
    image_sizes,
    merge_attributes,
    object_id,
    object_name,
    scene_graphs,
)

log = logging.getLogger(__name__)

FLUSH_ROWS = 100_000

REGION_REASONS: tuple[str, ...] = (
    "malformed_row",
    "missing_field",
    "duplicate_id",
    "invalid_box",
    "unknown_image",
    *[r for r in SCREEN_REASONS if r != "missing_field"],
    "too_small",
    "too_small_fraction",
    "aspect_ratio",
    "no_graph",
    "too_few_atoms",
    "too_few_compounds",
    "duplicate_graph",
)

# (objects (idx, name, lemma), attributes (obj, value), relations (subj, pred, obj))
Graph = tuple[list[tuple[int, str, str]], list[tuple[int, str]], list[tuple[int, str, int]]]


@dataclass(frozen=True)
class RegionFilters:
    """Filter settings (defaults: CREPE's, for full-size Visual Genome images)."""

    min_area: int = 40_000
    min_area_fraction: float = 0.10
    min_aspect: float = 0.5
    max_aspect: float = 2.0
    min_atoms: int = 2
    min_compounds: int = 1
    dedupe: str = "image"
    graphs: str = "auto"
    inside_fraction: float = 0.75
    clip_to_image: bool = False
    source: str = "vg_regions"
    rules: CaptionRules = field(default_factory=CaptionRules)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> RegionFilters:
        """Build from a config mapping (``rules`` nested); unknown keys and bad values raise
        ``RulesError`` naming the key."""
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise RulesError(f"eval items: unknown key(s) {unknown} (known: {sorted(known)})")
        rules = CaptionRules.from_options(options.pop("rules", None))
        numbers = ("min_area", "min_area_fraction", "min_aspect", "max_aspect", "min_atoms")
        for name in (*numbers, "min_compounds", "inside_fraction"):
            value = options.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise RulesError(f"eval items: {name} must be a non-negative number")
        filters = cls(**options, rules=rules)
        if filters.dedupe not in ("image", "global", "none"):
            raise RulesError("eval items: dedupe must be 'image', 'global' or 'none'")
        if filters.graphs not in ("auto", "region_graphs", "scene_graphs"):
            raise RulesError("eval items: graphs must be 'auto', 'region_graphs' or 'scene_graphs'")
        if not 0 < filters.min_aspect <= filters.max_aspect:
            raise RulesError("eval items: need 0 < min_aspect <= max_aspect")
        if not 0 < filters.inside_fraction <= 1:
            raise RulesError("eval items: inside_fraction must lie in (0, 1]")
        return filters


# ------------------------------------------------------------------------------ graphs


def default_canon() -> GraphCanon:
    """Annotations in the form the parser writes with its default settings."""
    from vlcomp.parse.parser import graph_canon

    return graph_canon({})


def build_graph(objects: list[Any], relationships: list[Any], canon: GraphCanon) -> Graph:
    """A graph in the contract's form from Visual Genome objects and relationships: names
    as written, lemmas, attribute values and predicates in the parser's form (``canon``)."""
    idx_of: dict[Any, int] = {}
    objs: list[tuple[int, str, str]] = []
    attrs: list[tuple[int, str]] = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        name, oid = object_name(obj), object_id(obj)
        lemma = canon.object_lemma(name)
        if name is None or lemma is None or oid is None or oid in idx_of:
            continue
        idx = idx_of[oid] = len(objs)
        objs.append((idx, name, lemma))
        values = obj.get("attributes")
        for value in dict.fromkeys(
            map(canon.attribute, values if isinstance(values, list) else [])
        ):
            if value is not None:
                attrs.append((idx, value))
    rels: dict[tuple[int, str, int], None] = {}
    for rel in relationships:
        if not isinstance(rel, dict):
            continue
        subj, obj_ = idx_of.get(endpoint(rel, "subject")), idx_of.get(endpoint(rel, "object"))
        pred = canon.predicate(rel.get("predicate"))
        if subj is not None and obj_ is not None and pred is not None:
            turned, pred = canon.relation(objs[subj][2], pred)
            if turned:
                subj, obj_ = obj_, subj
            rels[(subj, pred, obj_)] = None
    return objs, attrs, list(rels)


def atoms_and_compounds(graph: Graph) -> tuple[int, int]:
    """Distinct atoms (object lemmas, attribute values, predicates) and distinct compounds
    (attribute-object pairs, object-relation-object triples) of a graph."""
    objs, attrs, rels = graph
    lemma = {i: lem for i, _, lem in objs}
    atoms = (
        {("obj", lem) for lem in lemma.values()}
        | {("att", v) for _, v in attrs}
        | {("rel", p) for _, p, _ in rels}
    )
    compounds = {(v, lemma[o]) for o, v in attrs} | {(lemma[s], p, lemma[o]) for s, p, o in rels}
    return len(atoms), len(compounds)


def graph_key(graph: Graph) -> tuple[Any, ...]:
    """Identity of a graph up to object ids and order (for de-duplication)."""
    objs, attrs, rels = graph
    values: dict[int, list[str]] = {}
    for o, v in attrs:
        values.setdefault(o, []).append(v)
    node = {i: (lem, tuple(sorted(values.get(i, [])))) for i, _, lem in objs}
    return (
        tuple(sorted(node.values())),
        tuple(sorted((node[s], p, node[o]) for s, p, o in rels)),
    )


def _inside(obj: Mapping[str, Any], box: tuple[int, int, int, int], fraction: float) -> bool:
    ob = parse_box(obj, ("x", "y", "w", "h"))
    if ob is None:
        return False
    ox, oy, ow, oh = ob
    x, y, w, h = box
    ix = min(ox + ow, x + w) - max(ox, x)
    iy = min(oy + oh, y + h) - max(oy, y)
    return ix > 0 and iy > 0 and ix * iy >= fraction * ow * oh


def restrict(
    image_graph: Mapping[str, Any],
    box: tuple[int, int, int, int],
    fraction: float,
    canon: GraphCanon,
) -> Graph:
    """The part of an image scene graph inside ``box`` (see module docstring)."""
    objects = [
        o
        for o in image_graph.get("objects", [])
        if isinstance(o, dict) and _inside(o, box, fraction)
    ]
    return build_graph(objects, image_graph.get("relationships", []), canon)


# ------------------------------------------------------------------------- file streams


def _regions(
    vg_dir: Path, filters: RegionFilters, canon: GraphCanon, merge: MergeCounts
) -> Iterator[tuple[str, str, Any, Any]]:
    """(source file, location, image id, (region, graph source)) per region in file order;
    the graph source is the region's Graph, or its image's scene graph (a dict), or None
    when the image has none. A malformed entry comes with itself instead of the pair.
    Region-graph objects get the attributes that ``attributes.json`` (else
    ``scene_graphs.json``) annotates for them; ``merge`` counts what was joined."""
    region_graphs = vg_dir / "region_graphs.json"
    use_region_graphs = filters.graphs == "region_graphs" or (
        filters.graphs == "auto" and region_graphs.is_file()
    )
    attributes: Joined | None = None
    scene: Joined | None = None
    if use_region_graphs:
        path = region_graphs
        attributes = attribute_sources(vg_dir)
        if attributes is None:
            log.warning(
                "%s: region graphs carry no attributes and there is no attributes.json or "
                "scene_graphs.json to take them from: items will have no attributes",
                vg_dir,
            )
    else:
        if filters.graphs == "auto":
            log.warning(
                "%s: no region_graphs.json; region graphs are derived from the image scene "
                "graphs (every object inside a region's box counts, which over-approximates "
                "what the phrase states)",
                vg_dir,
            )
        path = vg_dir / "region_descriptions.json"
        if not has_scene_graphs(vg_dir):
            raise FileNotFoundError(
                f"{vg_dir}: no region_graphs.json, scene_graphs.json or "
                "attributes.json + relationships.json to take region graphs from"
            )
        scene = Joined(scene_graphs(vg_dir, merge))
    for i, offset, entry in iter_json_array(path):
        regions = entry.get("regions") if isinstance(entry, dict) else None
        if not isinstance(regions, list):
            yield str(path), f"[{i}] (byte {offset})", None, entry
            continue
        image = image_key(entry)
        image_graph = scene.get(image) if scene is not None and image is not None else None
        index = None
        if attributes is not None and image is not None:
            index = AttributeIndex.of(attributes.get(image) or [])
        in_regions: set[Any] = set()
        for k, region in enumerate(regions):
            loc = f"[{i}].regions[{k}] (byte {offset})"
            if isinstance(region, dict):
                region_image = region.get("image_id")
                region_image = image if region_image is None else str(region_image)
                if use_region_graphs:
                    objects, rels, joined = merge_attributes(
                        region.get("objects") or [],
                        region.get("relationships") or [],
                        index,
                        phrase=region.get("phrase")
                        if isinstance(region.get("phrase"), str)
                        else "",
                    )
                    joined.attributes_unmatched = 0  # counted per image, below
                    merge.add(joined)
                    in_regions.update(object_id(o) for o in objects)
                    graph = build_graph(objects, rels, canon)
                else:
                    graph = image_graph
                yield str(path), loc, region_image, (region, graph)
            else:
                yield str(path), loc, image, region
        if index is not None:
            merge.attributes_unmatched += len({index.resolve(k) for k in index.by_id} - in_regions)


# ------------------------------------------------------------------------------ filters


def _clip(box: tuple[int, ...], size: tuple[int, int]) -> tuple[int, int, int, int] | None:
    x, y, w, h = box
    x1, y1 = min(x + w, size[0]), min(y + h, size[1])
    if x >= size[0] or y >= size[1] or x1 <= x or y1 <= y:
        return None
    return x, y, x1 - x, y1 - y


def _raw_region(region: Mapping[str, Any]) -> dict[str, Any]:
    return {k: region.get(k) for k in ("region_id", "phrase", *REGION_BOX_KEYS)}


@dataclass
class RegionSummary:
    """What reading the regions did: kept and rejected regions, boxes clipped to their
    image, kept items with attributes / relations, and what joining files merged."""

    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    clipped_boxes: int = 0
    items_with_attributes: int = 0
    items_with_relations: int = 0
    merge: MergeCounts = field(default_factory=MergeCounts)

    def describe(self) -> str:
        total = self.kept + sum(self.rejected.values())
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected.items())) or "none"
        return (
            f"{total} regions: {self.kept} kept ({self.items_with_attributes} with attributes, "
            f"{self.items_with_relations} with relations); rejected "
            f"{sum(self.rejected.values())} ({parts}); {self.clipped_boxes} boxes clipped to "
            f"their image; merged: {self.merge.as_dict()}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.kept,
            "rejected": sum(self.rejected.values()),
            "rejected_by_reason": dict(sorted(self.rejected.items())),
            "clipped_boxes": self.clipped_boxes,
            "items_with_attributes": self.items_with_attributes,
            "items_with_relations": self.items_with_relations,
            "merged": self.merge.as_dict(),
        }

    def warnings(self) -> list[str]:
        """Loud messages for an item set that lost a whole kind of annotation."""
        out = []
        if self.kept and not self.items_with_attributes:
            out.append(
                f"none of {self.kept} items has an attribute: CREPE has no attribute "
                "compounds and BindSplit no bindings (are attributes.json or scene graphs "
                "with attributes beside the region files?)"
            )
        if self.kept and not self.items_with_relations:
            out.append(f"none of {self.kept} items has a relation")
        return out


class _Checker:
    """Applies the filters to one region at a time (holds the de-duplication state)."""

    def __init__(
        self, filters: RegionFilters, sizes: Mapping[str, tuple[int, int]], canon: GraphCanon
    ) -> None:
        self.filters, self.sizes, self.canon = filters, sizes, canon
        self.seen_ids = SeenIds()
        self.seen_graphs: set[Any] = set()
        self.graphs_image: str | None = None
        self.clipped = 0

    def box(self, region: Mapping[str, Any], image: str) -> tuple[str | None, Any]:
        """(None, (box, image size)) or (reason, None) for the id and box checks."""
        rid = region.get("region_id")
        if rid is None or isinstance(rid, dict | list):
            return "missing_field", None
        if not self.seen_ids.add(rid):
            return "duplicate_id", None
        box = parse_box(region, REGION_BOX_KEYS)
        if box is None:
            return "invalid_box", None
        size = self.sizes.get(image)
        if size is None:
            return "unknown_image", None
        if box[0] + box[2] > size[0] or box[1] + box[3] > size[1]:
            if not self.filters.clip_to_image:
                return "invalid_box", None
            box = _clip(box, size)
            if box is not None:
                self.clipped += 1
        return ("invalid_box", None) if box is None else (None, (box, size))

    def check(self, region: Mapping[str, Any], image: str, source: Any) -> tuple[str, Any]:
        """("item", row) when the region passes, else (reason, None)."""
        f = self.filters
        reason, found = self.box(region, image)
        if reason is not None:
            return reason, None
        (x, y, w, h), (width, height) = found
        text, reason = screen(region.get("phrase"), f.rules)
        if reason is not None:
            return reason, None
        if w * h < f.min_area:
            return "too_small", None
        if w * h < f.min_area_fraction * width * height:
            return "too_small_fraction", None
        if not f.min_aspect <= w / h <= f.max_aspect:
            return "aspect_ratio", None
        if source is None:
            return "no_graph", None
        graph = (
            source
            if isinstance(source, tuple)
            else restrict(source, (x, y, w, h), f.inside_fraction, self.canon)
        )
        n_atoms, n_compounds = atoms_and_compounds(graph)
        if n_atoms < f.min_atoms:
            return "too_few_atoms", None
        if n_compounds < f.min_compounds:
            return "too_few_compounds", None
        if f.dedupe != "none":
            if f.dedupe == "image" and image != self.graphs_image:
                self.seen_graphs, self.graphs_image = set(), image
            key = graph_key(graph)
            if key in self.seen_graphs:
                return "duplicate_graph", None
            self.seen_graphs.add(key)
        objs, attrs, rels = graph
        rid = region["region_id"]
        return "item", {
            "item_id": f"{f.source}/{rid}",
            "source": f.source,
            "image_id": image,
            "region_id": str(rid),
            "text": text,
            "x": x,
            "y": y,
            "width": w,
            "height": h,
            "objects": [{"idx": i, "name": n, "lemma": lem} for i, n, lem in objs],
            "attributes": [{"obj": o, "value": v} for o, v in attrs],
            "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in rels],
        }


def iter_eval_items(
    vg_dir: Path,
    filters: RegionFilters,
    sizes: Mapping[str, tuple[int, int]] | None = None,
    canon: GraphCanon | None = None,
    summary: RegionSummary | None = None,
) -> Iterator[tuple[str, dict[str, Any] | Rejected]]:
    """("item", row) for each kept region and (source file, Rejected) for each other one,
    in file order. ``sizes`` (image id -> (width, height)) defaults to image_data.json;
    ``canon`` (annotations in the parser's form) to ``default_canon()``. ``summary``
    collects clipped boxes and merge counts."""
    vg_dir = Path(vg_dir)
    canon = canon or default_canon()
    summary = summary if summary is not None else RegionSummary()
    if sizes is None:
        sizes = image_sizes(vg_dir, "region areas and boxes")
    checker = _Checker(filters, sizes, canon)
    limit = filters.rules.raw_chars
    for path, loc, image, payload in _regions(vg_dir, filters, canon, summary.merge):
        if not isinstance(payload, tuple):
            yield path, Rejected(loc, "malformed_row", truncate(payload, limit))
            continue
        region, source = payload
        if image is None:
            tag, value = "missing_field", None
        else:
            tag, value = checker.check(region, image, source)
        summary.clipped_boxes = checker.clipped
        if tag == "item":
            yield tag, value
        else:
            yield path, Rejected(loc, tag, truncate(_raw_region(region), limit))


def eval_items_from_vg(
    vg_dir: Path,
    out: Path,
    rejected_out: Path,
    filters: Mapping[str, Any] | None = None,
    canon: GraphCanon | None = None,
) -> RegionSummary:
    """Write the evaluation items (``EVAL_ITEMS_SCHEMA``) of the Visual Genome files in
    ``vg_dir`` to ``out`` and the rejected regions (``REJECTED_SCHEMA``) to
    ``rejected_out``; ``filters`` as for ``RegionFilters.from_options``, ``canon`` as for
    ``iter_eval_items``. Both files are streamed and appear only when the job succeeds.
    Returns the counts (also logged); an item set that lost a whole kind of annotation is
    logged as a warning; no item at all, or annotated attributes that all failed to join,
    raise (and nothing is written)."""
    settings = RegionFilters.from_options(filters)
    meta = {
        "vlcomp.stage": "eval_items",
        "vlcomp.filters": json.dumps(asdict(settings), sort_keys=True),
    }
    summary = RegionSummary()
    paths = [Path(out), Path(rejected_out)]
    with open_tables(paths, [EVAL_ITEMS_SCHEMA, REJECTED_SCHEMA], [meta, meta]) as writers:
        items, rejected = writers
        for tag, value in iter_eval_items(Path(vg_dir), settings, canon=canon, summary=summary):
            if isinstance(value, Rejected):
                rejected.add((tag, *value))
                summary.rejected[value.reason] += 1
            else:
                items.add([value[k] for k in EVAL_ITEMS_SCHEMA])
                summary.kept += 1
                summary.items_with_attributes += bool(value["attributes"])
                summary.items_with_relations += bool(value["relations"])
            if items.buffered + rejected.buffered >= FLUSH_ROWS:
                items.flush()
                rejected.flush()
        if not summary.kept:
            raise ValueError(
                f"{vg_dir}: no region became an evaluation item ({summary.describe()}); the "
                "rejected regions' reasons say which filter (eval_sets.<name>.regions) or "
                "file to look at"
            )
        if (
            summary.kept
            and not summary.items_with_attributes
            and summary.merge.attributes_unmatched
        ):
            raise ValueError(
                f"{vg_dir}: {summary.merge.attributes_unmatched} annotated objects carry "
                "attributes, but none matched an object of the regions (by object_id, or by "
                "name and box): the files do not belong together"
            )
    log.info("eval items from %s: %s", vg_dir, summary.describe())
    for warning in summary.warnings():
        log.warning("eval items from %s: %s", vg_dir, warning)
    return summary
