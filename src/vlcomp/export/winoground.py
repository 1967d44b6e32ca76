"""A two-image benchmark in Winoground's released layout (Thrush et al., 2022).

``examples.jsonl``: one JSON object a line, ``{"id", "caption_0", "caption_1", "image_0",
"image_1", "tag"}``; ``id`` is the line's index (0..n-1), ``image_0`` / ``image_1`` name
``images/<name>.png`` without the suffix (Winoground's ``ex_0_img_0`` style). Caption ``i``
goes with image ``i``. ``tag`` is the target in Winoground's words (obj -> ``Object``, rel ->
``Relation``, both -> ``Both``, any other target as it is, e.g. ``att``), which is what
Winoground readers, ``vlcomp.importers.winoground`` included, turn back into the target.
The layout has no family: readers take every item as a swap (Winoground's construction), so
an item of another family keeps its type only in ``keys.csv``; the manifest counts them.

Input: a table in ``contracts.TWO_IMAGE_SCHEMA`` whose ``image_0`` / ``image_1`` are the eval
set's image ids. Each image is written once, as PNG: a PNG source is hard-linked (or
copied), any other is decoded to RGB and saved as PNG. Items with an image missing or
unreadable, with two equal captions or with one image twice are left out and listed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.evaluate.images import UnreadableImageError, lookup_images
from vlcomp.export.manifest import IMAGE_MISSING, IMAGE_UNREADABLE, KEYS, ImageFiles
from vlcomp.export.sugarcrepe import item_type

EXAMPLES = "examples.jsonl"
IMAGES_FOLDER = "images"
SAME_CAPTIONS = "captions equal"
SAME_IMAGE = "images equal"
KEYS_COLUMNS = ("file", "id", "item_id", "type", "image_id_0", "image_id_1", "image_0", "image_1")
TAGS = {"obj": "Object", "rel": "Relation", "both": "Both"}
SWAP = "swap"
_COLUMNS = ("item_id", "image_0", "image_1", "caption_0", "caption_1", "family", "target")


def write_winoground(
    items: pl.DataFrame,
    index: Mapping[str, Any],
    folder: str | Path,
    *,
    link: bool = True,
) -> dict[str, Any]:
    """Write ``examples.jsonl``, ``images/`` and ``keys.csv`` into ``folder``; return the
    manifest sections (layout, counts, left_out rows)."""
    missing = set(_COLUMNS) - set(items.columns)
    if missing:
        raise ValueError(f"two-image items: missing column(s) {sorted(missing)}")
    rows = items.select(_COLUMNS).to_dicts()
    repeated = items["item_id"].filter(items["item_id"].is_duplicated()).unique().to_list()
    if repeated:
        raise ValueError(f"two-image items: item_id repeats: {sorted(repeated)[:5]}")
    ids = [r["image_0"] for r in rows] + [r["image_1"] for r in rows]
    usable, problems = lookup_images(ids, index)
    folder = Path(folder)
    images = ImageFiles(folder / IMAGES_FOLDER, link=link, png=True)
    lines: list[str] = []
    keys: list[tuple[Any, ...]] = []
    left_out: list[dict[str, Any]] = []
    per_type: dict[str, int] = {}
    not_swap = 0
    for row in rows:
        kind = item_type(row["family"], row["target"])

        def left(reason: str, detail: str, row: dict = row, kind: str = kind) -> None:
            left_out.append(
                {"item_id": row["item_id"], "type": kind, "reason": reason, "detail": detail}
            )

        bad = [(s, row[s]) for s in ("image_0", "image_1") if row[s] not in usable]
        if bad:
            slot, image = bad[0]
            status, detail = problems[image]
            reason = IMAGE_UNREADABLE if status == "unreadable" else IMAGE_MISSING
            left(reason, f"{slot} {image!r}: {detail}")
            continue
        if row["caption_0"] == row["caption_1"]:
            left(SAME_CAPTIONS, "")
            continue
        if row["image_0"] == row["image_1"]:
            left(SAME_IMAGE, f"{row['image_0']!r}")
            continue
        try:
            names = [images.place(row[s], usable[row[s]], None) for s in ("image_0", "image_1")]
        except UnreadableImageError as error:
            left(IMAGE_UNREADABLE, str(error))
            continue
        stems = [name.removesuffix(".png") for name in names]
        example = {
            "id": len(lines),
            "caption_0": row["caption_0"],
            "caption_1": row["caption_1"],
            "image_0": stems[0],
            "image_1": stems[1],
            "tag": TAGS.get(row["target"], row["target"]) if row["target"] else "",
        }
        keys.append(
            (EXAMPLES, len(lines), row["item_id"], kind, row["image_0"], row["image_1"], *stems)
        )
        not_swap += row["family"] != SWAP
        lines.append(json.dumps(example, ensure_ascii=True))
        per_type[kind] = per_type.get(kind, 0) + 1

    (folder / EXAMPLES).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    with (folder / KEYS).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(KEYS_COLUMNS)
        writer.writerows(keys)
    return {
        "layout": {
            "format": "winoground",
            "files": (
                f"{EXAMPLES}: one object a line, {{id, caption_0, caption_1, image_0, image_1, "
                "tag}; caption i describes image i"
            ),
            "images_folder": IMAGES_FOLDER,
            "image_names": "image_0 / image_1 name images/<name>.png",
            "images": dict(sorted(images.how.items())),
            "tag": "the target: Object (obj), Relation (rel), Both (both), else as it is",
            "family": (
                "not in the layout: readers take every item as a swap; "
                f"{not_swap} item(s) of another family keep their type in {KEYS} only"
            ),
            "keys": f"{KEYS}: id -> our item_id, type and the two image ids",
        },
        "counts": {
            "items": len(lines),
            "records": len(lines),
            "items_not_swap": not_swap,
            "image_files": len(images),
            "per_type": {t: {"items": n, "records": n} for t, n in sorted(per_type.items())},
        },
        "left_out": left_out,
    }
