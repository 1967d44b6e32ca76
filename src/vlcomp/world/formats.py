"""Deterministic, atomic writers for the world's output formats.

Every file is written to a temporary sibling and moved into place with
``os.replace``, so a reader never sees a half-written file. JSON is written with
sorted keys; Parquet row order is the order rows are given in.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.io import atomic_path, write_parquet
from vlcomp.text import collapse_spaces

from .captions import Caption, object_phrase, pair_phrase
from .scenes import Scene

LAION_SCHEMA: dict[str, pl.DataType] = {
    "SAMPLE_ID": pl.Int64,
    "URL": pl.Utf8,
    "TEXT": pl.Utf8,
    "HEIGHT": pl.Int32,
    "WIDTH": pl.Int32,
    "LICENSE": pl.Utf8,
    "NSFW": pl.Utf8,
    "similarity": pl.Float32,
}
LAION_SIMILARITY = 0.3

HOLDOUT_SCHEMA: dict[str, pl.DataType] = {
    "image_id": pl.Int64,
    "corpus": pl.Utf8,
    "kind": pl.Utf8,
    "value": pl.Utf8,
}

SCENE_SCHEMA: dict[str, pl.DataType] = {
    "image_id": pl.Int64,
    "object_idx": pl.Int64,
    "shape": pl.Utf8,
    "colour": pl.Utf8,
    "size": pl.Utf8,
    "x": pl.Int64,
    "y": pl.Int64,
    "w": pl.Int64,
    "h": pl.Int64,
}


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, obj: Any) -> None:
    """Compact JSON with sorted keys, UTF-8, trailing newline."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    write_text_atomic(path, text + "\n")


def write_parquet_atomic(path: Path, df: pl.DataFrame) -> None:
    write_parquet(df, path)


class ImageDir:
    """Writes images into a hidden temporary folder that replaces ``images/`` on commit.

    Old images are removed only after the new folder is complete, so a failed run
    leaves the previous ``images/`` (if any) untouched and no stale files survive.
    """

    def __init__(self, out_dir: Path, name: str = "images") -> None:
        self.final = out_dir / name
        self.tmp = out_dir / f".{name}.tmp-{os.getpid()}"
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)

    def path(self, filename: str) -> Path:
        return self.tmp / filename

    def commit(self) -> None:
        old = self.final.with_name(f".{self.final.name}.old-{os.getpid()}")
        if self.final.exists():
            os.replace(self.final, old)
        os.replace(self.tmp, self.final)
        if old.exists():
            shutil.rmtree(old)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def graph_columns(captions: Sequence[Caption]) -> dict[str, pl.Series]:
    """The ``graphs`` contract columns for a list of captions."""
    graphs = [c.graph() for c in captions]
    return {
        key: pl.Series(key, [g[key] for g in graphs], dtype=dtype)
        for key, dtype in GRAPH_SCHEMA.items()
    }


def truth_frame(leading: dict[str, pl.Series], captions: Sequence[Caption]) -> pl.DataFrame:
    """Leading id columns, then ``text`` and the graph columns."""
    text = pl.Series("text", [c.text for c in captions], dtype=pl.Utf8)
    return pl.DataFrame([*leading.values(), text, *graph_columns(captions).values()])


def scene_frame(image_ids: Sequence[int], scenes: Sequence[Scene]) -> pl.DataFrame:
    """One row per object: what is drawn where (image-level ground truth)."""
    rows: dict[str, list[Any]] = {k: [] for k in SCENE_SCHEMA}
    for image_id, scene in zip(image_ids, scenes, strict=True):
        for k, o in enumerate(scene.objects):
            x, y, w, h = o.bbox
            for key, value in zip(
                SCENE_SCHEMA, (image_id, k, o.shape, o.colour, o.size, x, y, w, h), strict=True
            ):
                rows[key].append(value)
    return pl.DataFrame(rows, schema=SCENE_SCHEMA)


# ----------------------------------------------------------------------- Visual Genome


def _box(scene: Scene, i: int) -> dict[str, int]:
    x, y, w, h = scene.objects[i].bbox
    return {"x": x, "y": y, "w": w, "h": h}


def _clip_box(x0: int, y0: int, x1: int, y1: int, size: int) -> tuple[int, int, int, int]:
    x0, y0 = max(0, x0), max(0, y0)
    x1, y1 = min(size, x1), min(size, y1)
    return x0, y0, x1 - x0, y1 - y0


def _regions(
    scene: Scene, image_id: int, image_size: int, phrase: str, first_id: int
) -> list[dict[str, Any]]:
    """Region descriptions: one per object, one per unordered pair, one whole image."""
    boxes: list[tuple[str, tuple[int, int, int, int]]] = []
    objs = scene.objects
    for k, o in enumerate(objs):
        boxes.append((object_phrase(scene, k), (o.x, o.y, o.x + o.side, o.y + o.side)))
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            a, b = objs[i], objs[j]
            union = (
                min(a.x, b.x),
                min(a.y, b.y),
                max(a.x + a.side, b.x + b.side),
                max(a.y + a.side, b.y + b.side),
            )
            boxes.append((pair_phrase(scene, i, j), union))
    boxes.append((phrase, (0, 0, image_size, image_size)))
    regions = []
    for k, (text, (x0, y0, x1, y1)) in enumerate(boxes):
        x, y, w, h = _clip_box(x0, y0, x1, y1, image_size)
        regions.append(
            {
                "region_id": first_id + k,
                "image_id": image_id,
                "phrase": text,
                "x": x,
                "y": y,
                "width": w,
                "height": h,
            }
        )
    return regions


def visual_genome(
    image_ids: Sequence[int],
    scenes: Sequence[Scene],
    image_size: int,
    image_urls: Sequence[str],
    whole_image_phrases: Sequence[str],
) -> dict[str, list[dict[str, Any]]]:
    """Visual Genome JSON documents (file stem -> content) for the given scenes.

    Object, relationship and region ids are unique across the whole set.
    """
    docs: dict[str, list[dict[str, Any]]] = {
        k: []
        for k in (
            "image_data",
            "objects",
            "attributes",
            "relationships",
            "region_descriptions",
            "scene_graphs",
        )
    }
    next_obj, next_rel, next_region = 1, 1, 1
    rows = zip(image_ids, scenes, image_urls, whole_image_phrases, strict=True)
    for image_id, scene, url, phrase in rows:
        docs["image_data"].append(
            {
                "image_id": image_id,
                "width": image_size,
                "height": image_size,
                "url": url,
                "coco_id": image_id,
                "flickr_id": None,
            }
        )
        ids = list(range(next_obj, next_obj + len(scene.objects)))
        next_obj += len(scene.objects)
        objects, attributed = [], []
        for k, o in enumerate(scene.objects):
            base = {"object_id": ids[k], **_box(scene, k), "names": [o.shape], "synsets": []}
            objects.append(base)
            attributed.append({**base, "attributes": [o.colour, o.size]})
        docs["objects"].append({"image_id": image_id, "objects": objects})
        docs["attributes"].append({"image_id": image_id, "attributes": attributed})

        rels, sg_rels = [], []
        for i, pred, j in scene.relations():
            ref = {
                "subject": {"object_id": ids[i], **_box(scene, i), "name": scene.objects[i].shape},
                "object": {"object_id": ids[j], **_box(scene, j), "name": scene.objects[j].shape},
            }
            rels.append({"relationship_id": next_rel, "predicate": pred, "synsets": [], **ref})
            sg_rels.append(
                {
                    "relationship_id": next_rel,
                    "predicate": pred,
                    "synsets": [],
                    "subject_id": ids[i],
                    "object_id": ids[j],
                }
            )
            next_rel += 1
        docs["relationships"].append({"image_id": image_id, "relationships": rels})
        docs["scene_graphs"].append(
            {
                "image_id": image_id,
                "width": image_size,
                "height": image_size,
                "objects": attributed,
                "relationships": sg_rels,
            }
        )

        regions = _regions(scene, image_id, image_size, phrase, next_region)
        next_region += len(regions)
        docs["region_descriptions"].append({"id": image_id, "regions": regions})
    return docs


def _region_object(
    scene: Scene, i: int, object_id: int, attributes: Sequence[str]
) -> dict[str, Any]:
    return {
        "object_id": object_id,
        "name": scene.objects[i].shape,
        **_box(scene, i),
        "attributes": list(attributes),
        "synsets": [],
    }


def _caption_members(scene: Scene, caption: Caption) -> dict[int, list[int]]:
    """Scene objects of each node of a caption that mentions every object.

    A node is a mention of all objects sharing its shape and stated attributes (see
    ``captions``), so the node's lemma and attribute values identify its members.
    """
    said: dict[int, set[str]] = {}
    for node, value in caption.attributes:
        said.setdefault(node, set()).add(value)
    members = {
        node: [
            i
            for i, o in enumerate(scene.objects)
            if o.shape == lemma and said.get(node, set()) <= {o.colour, o.size}
        ]
        for node, _, lemma in caption.objects
    }
    covered = sorted(i for group in members.values() for i in group)
    if covered != list(range(len(scene.objects))):
        raise ValueError(f"caption {caption.text!r}: nodes do not partition the scene's objects")
    return members


def _image_region_graphs(
    described: dict[str, Any], graph: dict[str, Any], scene: Scene, caption: Caption
) -> dict[str, Any]:
    """The region_graphs entry of one image (see ``region_graphs``)."""
    objs = scene.objects
    ids = [o["object_id"] for o in graph["objects"]]
    rel_id = {
        (r["subject_id"], r["object_id"]): r["relationship_id"] for r in graph["relationships"]
    }

    def relationship(i: int, pred: str, j: int) -> dict[str, Any]:
        if scene.relation(i, j) != pred:
            raise ValueError(f"image {described['id']}: {pred!r} does not hold for {i}, {j}")
        subj, obj = ids[i], ids[j]
        return {
            "relationship_id": rel_id[(subj, obj)],
            "subject_id": subj,
            "object_id": obj,
            "predicate": pred,
            "synsets": [],
        }

    contents: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    for k, o in enumerate(objs):
        contents.append(([_region_object(scene, k, ids[k], [o.size, o.colour])], []))
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            a, b = objs[i], objs[j]
            same = (a.shape, a.colour) == (b.shape, b.colour)
            pair = [
                _region_object(scene, k, ids[k], [o.size, o.colour] if same else [o.colour])
                for k, o in ((i, a), (j, b))
            ]
            contents.append((pair, [relationship(i, scene.relation(i, j), j)]))
    members = _caption_members(scene, caption)
    said: dict[int, list[str]] = {}
    for node, value in caption.attributes:
        said.setdefault(node, []).append(value)
    whole = [
        _region_object(scene, i, ids[i], said.get(node, []))
        for node, _, _ in caption.objects
        for i in members[node]
    ]
    whole_rels = [
        relationship(i, pred, j)
        for s, pred, o in caption.relations
        for i in members[s]
        for j in members[o]
    ]
    contents.append((whole, whole_rels))

    regions = described["regions"]
    if len(regions) != len(contents):
        raise ValueError(f"image {described['id']}: regions and graphs do not line up")
    return {
        "image_id": described["id"],
        "regions": [
            {**region, "objects": o, "relationships": r, "synsets": []}
            for region, (o, r) in zip(regions, contents, strict=True)
        ],
    }


def region_graphs(
    docs: Mapping[str, list[dict[str, Any]]],
    scenes: Sequence[Scene],
    whole_image_captions: Sequence[Caption],
) -> list[dict[str, Any]]:
    """Visual Genome ``region_graphs`` for the regions ``visual_genome`` wrote.

    One entry per region of ``region_descriptions`` (same region ids, phrases and boxes)
    with exactly what its phrase states: an object region its object with size and
    colour; a pair region both objects with their colours (and sizes where the phrase
    gives them) and the relation; the whole-image region every object with the attributes
    its mention states and each stated relation between every member pair. Object and
    relationship ids are those of ``scene_graphs``.
    """
    rows = zip(
        docs["region_descriptions"], docs["scene_graphs"], scenes, whole_image_captions, strict=True
    )
    return [_image_region_graphs(*row) for row in rows]


# ------------------------------------------------------------------------ COCO, TSV, LAION


def coco_captions(
    image_ids: Sequence[int],
    file_names: Sequence[str],
    image_size: int,
    captions: Iterable[tuple[int, int, str]],
) -> dict[str, Any]:
    """COCO captions document; ``captions`` are (annotation id, image id, text)."""
    return {
        "info": {
            "description": "vlcomp synthetic world: eval captions",
            "version": "1.0",
            "contributor": "vlcomp",
        },
        "licenses": [],
        "images": [
            {"id": i, "file_name": f, "width": image_size, "height": image_size}
            for i, f in zip(image_ids, file_names, strict=True)
        ],
        "annotations": [{"id": a, "image_id": i, "caption": t} for a, i, t in captions],
    }


def tsv_line(url: str, caption: str) -> str:
    """One CC12M line: ``<url>\\t<caption>\\n`` (whitespace controls in the caption flattened)."""
    clean = collapse_spaces(caption)
    if "\t" in url or "\n" in url:
        raise ValueError(f"url {url!r} contains a tab or newline")
    return f"{url}\t{clean}\n"


def laion_frame(
    sample_ids: Sequence[int], urls: Sequence[str], texts: Sequence[str], image_size: int
) -> pl.DataFrame:
    """LAION-400M metadata columns for the given samples."""
    n = len(sample_ids)
    return pl.DataFrame(
        {
            "SAMPLE_ID": list(sample_ids),
            "URL": list(urls),
            "TEXT": list(texts),
            "HEIGHT": [image_size] * n,
            "WIDTH": [image_size] * n,
            "LICENSE": ["?"] * n,
            "NSFW": ["UNLIKELY"] * n,
            "similarity": [LAION_SIMILARITY] * n,
        },
        schema=LAION_SCHEMA,
    )
