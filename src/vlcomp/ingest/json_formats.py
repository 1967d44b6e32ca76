"""Readers of caption corpora in JSON annotation files: COCO captions and Visual Genome
region descriptions, streamed with ``jsonstream``; caption ids are the dataset's own
(annotation id, region id), checked for duplicates."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .jsonstream import iter_json_array
from .reader_types import Candidate, Item, Rejected, Shared


def parse_box(region: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[int, ...] | None:
    """(x, y, width, height) as integers, or None when a value is missing, not a finite
    number, negative (x, y) or not positive (width, height). Floats are rounded."""
    out = []
    for k in keys:
        v = region.get(k)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        out.append(round(v))
    x, y, w, h = out
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        return None
    return tuple(out)


def read_coco_json(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """COCO captions JSON: ``annotations`` of {id, image_id, caption}; caption_id is
    ``<corpus>/<annotation id>``, image_id the COCO image id."""
    seen = (shared or Shared()).seen
    for i, offset, ann in iter_json_array(path, "annotations"):
        loc = f"annotations[{i}] (byte {offset})"
        if not isinstance(ann, dict):
            yield Rejected(loc, "malformed_row", ann)
            continue
        own, image = ann.get("id"), ann.get("image_id")
        if own is None or image is None or isinstance(own, dict | list):
            yield Rejected(loc, "missing_field", ann)
            continue
        if not seen.add(own):
            yield Rejected(loc, "duplicate_id", ann)
            continue
        yield Candidate(f"{corpus}/{own}", str(image), ann.get("caption"), loc)


REGION_BOX_KEYS = ("x", "y", "width", "height")


def read_vg_regions(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """Visual Genome ``region_descriptions.json``: per image {id, regions: [{region_id,
    image_id, phrase, x, y, width, height}]}; one caption per region (caption_id
    ``<corpus>/<region_id>``). A region without a valid box is rejected (``invalid_box``)."""
    seen = (shared or Shared()).seen
    for i, offset, entry in iter_json_array(path):
        regions = entry.get("regions") if isinstance(entry, dict) else None
        if not isinstance(regions, list):
            yield Rejected(f"[{i}] (byte {offset})", "malformed_row", entry)
            continue
        image_of_entry = entry.get("id", entry.get("image_id"))
        for k, region in enumerate(regions):
            loc = f"[{i}].regions[{k}] (byte {offset})"
            if not isinstance(region, dict):
                yield Rejected(loc, "malformed_row", region)
                continue
            own = region.get("region_id")
            image = region.get("image_id", image_of_entry)
            if own is None or image is None or isinstance(own, dict | list):
                yield Rejected(loc, "missing_field", region)
                continue
            if not seen.add(own):
                yield Rejected(loc, "duplicate_id", region)
                continue
            if parse_box(region, REGION_BOX_KEYS) is None:
                yield Rejected(loc, "invalid_box", region)
                continue
            yield Candidate(f"{corpus}/{own}", str(image), region.get("phrase"), loc)
