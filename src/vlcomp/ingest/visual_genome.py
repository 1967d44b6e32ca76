"""Visual Genome's released files, read in one place.

Every stage that reads Visual Genome (evaluation items from regions, productivity walks
on scene graphs, the image index) goes through this module, so that all of them agree on
names, attributes and image sizes. What the release holds (VG v1.2 / v1.4; the VG API's
object model and the ``visual_genome`` loader of the datasets library):

- ``image_data.json``: [{image_id (or id), width, height, url, ...}];
- ``region_descriptions.json``: [{id or image_id, regions: [{region_id, image_id, phrase,
  x, y, width, height}]}];
- ``region_graphs.json``: [{image_id, regions: [{region_id, phrase, x, y, width, height,
  objects: [{object_id, name or names, synsets, x, y, w, h}], relationships: [{subject_id,
  object_id, predicate, synsets}]}]}]: a region's objects and relations, **no attributes**;
- ``scene_graphs.json``: [{image_id, objects: [{object_id, names, synsets, attributes?,
  x, y, w, h}], relationships: [{relationship_id, subject_id, object_id, predicate}]}];
- ``objects.json``: [{image_id, objects: [{object_id, names, synsets, x, y, w, h,
  merged_object_ids (v1.4)}]}];
- ``attributes.json``: [{image_id, attributes: [{object_id, names, synsets, attributes?
  (sometimes absent), x, y, w, h}]}];
- ``relationships.json``: [{image_id, relationships: [{relationship_id, predicate, synsets,
  subject: {object_id, name or names, ...}, object: {...}}]}].

Rules (one each):

- an object's name is ``names[0]`` when ``names`` is a non-empty list, else ``name``;
  ``synsets`` are kept;
- an object id listed in another object's ``merged_object_ids`` (v1.4) stands for that
  object: attributes and relationship ends that name it are moved to it;
- attributes are merged by ``object_id``; an annotation object without a usable id is
  matched by (name, box); a missing ``attributes`` key is no attributes;
- an image's scene graph is ``scene_graphs.json``'s entry, else assembled from
  ``objects.json`` + ``attributes.json`` + ``relationships.json`` (objects named only as a
  relationship's end join the graph);
- ``image_data.json`` is required wherever sizes are needed; a missing file raises
  ``FileNotFoundError`` naming it.

``MergeCounts`` says what was joined and what was left unmatched.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlcomp.text import normalise_or_none, words

from .jsonstream import iter_json_array

BOX_KEYS = ("x", "y", "w", "h")


@dataclass(frozen=True)
class ImageInfo:
    size: tuple[int, int] | None  # (width, height); None unless both are positive integers
    url: str | None


def image_key(entry: Mapping[str, Any]) -> str | None:
    """An entry's image id as text (``image_id``, else ``id``)."""
    value = entry.get("image_id", entry.get("id"))
    if value is None or isinstance(value, bool | dict | list | float):
        return None
    return str(value)


def read_image_data(vg_dir: Path, needed_for: str = "image sizes") -> dict[str, ImageInfo]:
    """Image id -> size and url of ``vg_dir/image_data.json`` (the first entry of an id).
    A missing file raises ``FileNotFoundError``."""
    path = Path(vg_dir) / "image_data.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: Visual Genome image_data.json not found ({needed_for})")
    images: dict[str, ImageInfo] = {}
    for _, _, entry in iter_json_array(path):
        key = image_key(entry) if isinstance(entry, dict) else None
        if key is None or key in images:
            continue
        w, h, url = entry.get("width"), entry.get("height"), entry.get("url")
        sized = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (w, h))
        images[key] = ImageInfo((w, h) if sized else None, url if isinstance(url, str) else None)
    return images


def image_sizes(vg_dir: Path, needed_for: str = "image sizes") -> dict[str, tuple[int, int]]:
    """Image id -> (width, height) of the images of ``image_data.json`` with a size."""
    images = read_image_data(vg_dir, needed_for)
    return {k: v.size for k, v in images.items() if v.size is not None}


def object_name(obj: Mapping[str, Any]) -> str | None:
    """The object's name as written (``names[0]``, else ``name``), whitespace collapsed."""
    names = obj.get("names")
    name = names[0] if isinstance(names, list) and names else obj.get("name")
    if not isinstance(name, str):
        return None
    return " ".join(name.split()) or None


def object_id(obj: Mapping[str, Any]) -> Any:
    oid = obj.get("object_id", obj.get("id"))
    return None if isinstance(oid, bool | dict | list | float) else oid


def endpoint(rel: Mapping[str, Any], role: str) -> Any:
    """Object id of a relationship's subject / object (``subject_id`` or ``subject``)."""
    if f"{role}_id" in rel:
        return rel[f"{role}_id"]
    ref = rel.get(role)
    return object_id(ref) if isinstance(ref, dict) else None


def _box(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(obj.get(k) for k in BOX_KEYS)


def _values(obj: Mapping[str, Any]) -> list[str]:
    values = obj.get("attributes")
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


@dataclass
class MergeCounts:
    """What joining annotation files did (summed over images)."""

    objects: int = 0
    objects_with_attributes: int = 0
    attributes_joined: int = 0  # attribute values moved onto an object from another file
    attributes_not_stated: int = 0  # annotated values a region's phrase does not state
    attributes_unmatched: int = 0  # annotated objects whose attributes found no object
    relations: int = 0
    relations_unmatched: int = 0  # relationships with an end that is not an object
    merged_ids: int = 0  # object ids resolved through merged_object_ids

    def add(self, other: MergeCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class AttributeIndex:
    """One image's attributes by object id (and by (name, box) for objects without one);
    ``aliases`` maps a merged object id to the id that absorbed it."""

    by_id: dict[Any, list[str]] = field(default_factory=dict)
    by_name_box: dict[tuple[Any, ...], list[str]] = field(default_factory=dict)
    aliases: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: list[Any]) -> AttributeIndex:
        index = cls()
        objects = [o for o in objects if isinstance(o, dict)]
        for obj in objects:
            oid = object_id(obj)
            for merged in obj.get("merged_object_ids") or []:
                if oid is not None and not isinstance(merged, dict | list):
                    index.aliases.setdefault(merged, oid)
        for obj in objects:
            oid = index.resolve(object_id(obj))
            values = _values(obj)
            if not values:
                continue
            if oid is not None:
                index.by_id.setdefault(oid, []).extend(values)
            name = normalise_or_none(object_name(obj))
            if name is not None:
                index.by_name_box.setdefault((name, *_box(obj)), []).extend(values)
        return index

    def resolve(self, oid: Any) -> Any:
        return self.aliases.get(oid, oid)

    def values_for(self, obj: Mapping[str, Any]) -> list[str] | None:
        """Attribute values annotated for ``obj``; None when no annotation names it."""
        oid = object_id(obj)
        if oid is not None:
            found = self.by_id.get(self.resolve(oid))
            if found is not None:
                return found
        name = normalise_or_none(object_name(obj))
        return self.by_name_box.get((name, *_box(obj))) if name is not None else None


def _stated(value: str, phrase_words: list[str]) -> bool:
    """The words of ``value`` occur, in order and adjacent, among ``phrase_words``."""
    value_words = words(value)
    n = len(value_words)
    return n > 0 and any(
        phrase_words[i : i + n] == value_words for i in range(len(phrase_words) - n + 1)
    )


def merge_attributes(
    objects: list[Any],
    relationships: list[Any],
    index: AttributeIndex | None,
    phrase: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], MergeCounts]:
    """Objects with their attributes merged from ``index`` (by id, else name and box) and
    relationships with merged ids resolved; what was joined in ``MergeCounts``.

    With ``phrase`` (a region's), an object that carries no attributes of its own gets
    only the annotated values that the phrase states (their words occur in it): the
    annotation holds every attribute of the object, the region only what its phrase says
    ("a brown horse" gets "brown", not also "standing")."""
    counts = MergeCounts()
    phrase_words = words(phrase) if phrase is not None else None
    out_objects: list[dict[str, Any]] = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        values = _values(obj)
        extra = index.values_for(obj) if index is not None else None
        if extra and phrase_words is not None:
            extra = [] if values else [v for v in extra if _stated(v, phrase_words)]
            counts.attributes_not_stated += len(set(index.values_for(obj) or []) - set(extra))
        if extra:
            new = [v for v in dict.fromkeys(extra) if v not in values]
            counts.attributes_joined += len(new)
            values = values + new
        obj = {**obj, "attributes": values}
        if index is not None and object_id(obj) is not None:
            resolved = index.resolve(object_id(obj))
            if resolved != object_id(obj):
                counts.merged_ids += 1
                obj["object_id"] = resolved
        counts.objects += 1
        counts.objects_with_attributes += bool(values)
        out_objects.append(obj)
    known = {object_id(o) for o in out_objects}
    if index is not None:
        counts.attributes_unmatched = len({index.resolve(k) for k in index.by_id} - known)
    out_rels: list[dict[str, Any]] = []
    for rel in relationships:
        if not isinstance(rel, dict):
            continue
        rel = dict(rel)
        for role in ("subject", "object"):
            end = endpoint(rel, role)
            if index is not None and index.resolve(end) != end:
                counts.merged_ids += 1
                end = index.resolve(end)
            rel[f"{role}_id"] = end
        counts.relations += 1
        if rel["subject_id"] not in known or rel["object_id"] not in known:
            counts.relations_unmatched += 1
        out_rels.append(rel)
    return out_objects, out_rels, counts


# ------------------------------------------------------------------------- file streams


def by_image(path: Path) -> Iterator[tuple[str | None, Any]]:
    """(image id, entry) of each element of a per-image VG file, streamed."""
    for _, _, entry in iter_json_array(path):
        if isinstance(entry, dict):
            yield image_key(entry), entry


class Joined:
    """Per-image entries of a second file, fetched by image id while both files are
    streamed; entries read ahead of need wait in ``pending`` (little when orders agree)."""

    def __init__(self, items: Iterator[tuple[str | None, Any]]) -> None:
        self.items = items
        self.pending: dict[str | None, Any] = {}

    def get(self, key: str) -> Any:
        if key in self.pending:
            return self.pending.pop(key)
        for k, value in self.items:
            if k == key:
                return value
            self.pending[k] = value
        return None


def _entry_list(entry: Any, key: str) -> list[Any]:
    values = entry.get(key) if isinstance(entry, dict) else None
    return values if isinstance(values, list) else []


def attribute_sources(vg_dir: Path) -> Joined | None:
    """Per-image annotated objects that carry attributes (``attributes.json``, else
    ``scene_graphs.json``), or None when the folder has neither."""
    vg_dir = Path(vg_dir)
    if (vg_dir / "attributes.json").is_file():
        return Joined(
            (k, _entry_list(e, "attributes")) for k, e in by_image(vg_dir / "attributes.json")
        )
    if (vg_dir / "scene_graphs.json").is_file():
        return Joined(
            (k, _entry_list(e, "objects")) for k, e in by_image(vg_dir / "scene_graphs.json")
        )
    return None


def has_scene_graphs(vg_dir: Path) -> bool:
    vg_dir = Path(vg_dir)
    return (vg_dir / "scene_graphs.json").is_file() or all(
        (vg_dir / f).is_file() for f in ("attributes.json", "relationships.json")
    )


def scene_graphs(
    vg_dir: Path, counts: MergeCounts | None = None
) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(image id, {objects, relationships}) per image, in file order, attributes merged
    (see module docstring). ``counts`` collects ``MergeCounts``."""
    vg_dir = Path(vg_dir)
    if (vg_dir / "scene_graphs.json").is_file():
        objects_of = (
            Joined((k, _entry_list(e, "objects")) for k, e in by_image(vg_dir / "objects.json"))
            if (vg_dir / "objects.json").is_file()
            else None
        )
        for key, entry in by_image(vg_dir / "scene_graphs.json"):
            objects = _entry_list(entry, "objects")
            extra = objects_of.get(key) if objects_of is not None and key is not None else None
            index = AttributeIndex.of(objects + (extra or []))
            yield key, _merged(entry, objects, _entry_list(entry, "relationships"), index, counts)
        return
    if not has_scene_graphs(vg_dir):
        raise FileNotFoundError(
            f"{vg_dir}: no scene_graphs.json, nor attributes.json + relationships.json "
            "(Visual Genome scene graphs)"
        )
    relationships = Joined(by_image(vg_dir / "relationships.json"))
    objects_of = (
        Joined((k, _entry_list(e, "objects")) for k, e in by_image(vg_dir / "objects.json"))
        if (vg_dir / "objects.json").is_file()
        else None
    )
    for key, entry in by_image(vg_dir / "attributes.json"):
        annotated = [o for o in _entry_list(entry, "attributes") if isinstance(o, dict)]
        listed = (objects_of.get(key) if objects_of is not None and key is not None else None) or []
        rels = _entry_list(relationships.get(key) if key is not None else None, "relationships")
        index = AttributeIndex.of(annotated + [o for o in listed if isinstance(o, dict)])
        objects: list[Any] = []
        seen: set[Any] = set()
        ends = [
            rel.get(role) for rel in rels if isinstance(rel, dict) for role in ("subject", "object")
        ]
        for obj in [*listed, *annotated, *ends]:
            if not isinstance(obj, dict):
                continue
            oid = index.resolve(object_id(obj))
            if oid is None or oid not in seen:
                seen.add(oid)
                objects.append(obj)
        yield key, _merged(entry, objects, rels, index, counts)


def _merged(
    entry: Mapping[str, Any],
    objects: list[Any],
    relationships: list[Any],
    index: AttributeIndex,
    counts: MergeCounts | None,
) -> dict[str, Any]:
    objs, rels, merge = merge_attributes(objects, relationships, index)
    if counts is not None:
        counts.add(merge)
    out = {k: v for k, v in entry.items() if k not in ("objects", "attributes", "relationships")}
    return {**out, "objects": objs, "relationships": rels}
