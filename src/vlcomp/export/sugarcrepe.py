"""A pair benchmark in SugarCrepe's JSON layout (Hsieh et al., 2023), as CLIP_benchmark reads it.

One file per type, ``<family>_<target>.json`` (``replace_att.json``, ...; ``<family>.json``
for a family without a target), each a JSON object keyed by a string index ``"0"`` ..
``"n-1"`` with values ``{"filename", "caption", "negative_caption"}``; ``filename`` is
relative to the image folder beside the files. That folder is called ``val2017`` by default
because CLIP_benchmark (1.6.2, ``build_dataset("sugar_crepe/<type>", root)``) reads
``<root>/<type>.json`` and opens ``os.path.join(<root>/val2017, filename)`` (and downloads
COCO val2017 into ``<root>`` when that folder does not exist), so an export folder is a
CLIP_benchmark ``--dataset_root`` as it stands; SugarCrepe's own evaluation script takes the
image folder as ``--coco_image_root``. The manifest's ``layout.clip_benchmark`` gives the
command that returns vlcomp's numbers (``vlcomp.export.clip_benchmark``: our architectures
registered, ``--no_amp``) and how ties make the two differ.

Images come from the eval set's image index: a whole image is hard-linked (or copied) under
its own file name, an item with a box gets its region cut out as evaluation cuts it and
saved as PNG. Items whose image is missing or unreadable, or whose box lies outside the
image, are left out and listed. An item with several negatives becomes one record per
(positive, negative) pair, in the candidates' order. Only the seven SugarCrepe types
(add_att, add_obj, replace_att, replace_obj, replace_rel, swap_att, swap_obj) are read by
CLIP_benchmark's loader and by ``vlcomp.importers.read_sugarcrepe_file``; other types are
written in the same layout and named in the manifest.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.evaluate.images import UnreadableImageError, lookup_images
from vlcomp.export.manifest import (
    BOX_OUTSIDE,
    IMAGE_MISSING,
    IMAGE_UNREADABLE,
    KEYS,
    NO_NEGATIVE,
    SAME_TEXT,
    Box,
    ImageFiles,
    safe_stem,
)
from vlcomp.importers.sugarcrepe import SUGARCREPE_TYPES

IMAGES_FOLDER = "val2017"
KEYS_COLUMNS = (
    "file",
    "key",
    "item_id",
    "negative",
    "image_id",
    "x",
    "y",
    "width",
    "height",
    "filename",
)


@dataclass(frozen=True)
class PairItem:
    """One item of a pair benchmark: its type, image (and box), positive and negatives."""

    item_id: str
    type: str
    image: str | None
    box: Box | None
    positive: str
    negatives: tuple[str, ...]


def item_type(family: str | None, target: str | None) -> str:
    """``<family>_<target>`` (``<family>`` without a target), safe as a file name."""
    if family is None:
        raise ValueError("candidates: an item without a family")
    return safe_stem(f"{family}_{target}" if target else family)


def box_lookup(boxes: pl.DataFrame | None) -> dict[str, Box | None]:
    """item_id -> box (None: the whole image) from a boxes table (item_id, x, y, width,
    height). An item the table lacks is a whole image."""
    if boxes is None:
        return {}
    missing = {"item_id", "x", "y", "width", "height"} - set(boxes.columns)
    if missing:
        raise ValueError(f"boxes: missing column(s) {sorted(missing)}")
    out: dict[str, Box | None] = {}
    for item_id, *values in boxes.select("item_id", "x", "y", "width", "height").iter_rows():
        if item_id in out:
            raise ValueError(f"boxes: item {item_id!r} has more than one row")
        if all(v is None for v in values):
            out[item_id] = None
        elif any(v is None for v in values):
            raise ValueError(f"boxes: item {item_id!r} has a partly null box {values}")
        else:
            out[item_id] = tuple(int(round(float(v))) for v in values)  # type: ignore[assignment]
    return out


def pair_items(candidates: pl.DataFrame, boxes: pl.DataFrame | None = None) -> list[PairItem]:
    """The items of a candidates table (``CANDIDATES_SCHEMA``) in order of first appearance;
    raise ``ValueError`` for an item without exactly one positive or with mixed type or
    image."""
    missing = {"item_id", "image", "text", "is_positive", "family", "target"} - set(
        candidates.columns
    )
    if missing:
        raise ValueError(f"candidates: missing column(s) {sorted(missing)}")
    box_of = box_lookup(boxes)
    grouped: dict[str, dict[str, Any]] = {}
    for item_id, image, text, positive, family, target in candidates.select(
        "item_id", "image", "text", "is_positive", "family", "target"
    ).iter_rows():
        entry = grouped.setdefault(
            item_id,
            {"image": image, "type": item_type(family, target), "pos": [], "neg": []},
        )
        if entry["image"] != image or entry["type"] != item_type(family, target):
            raise ValueError(f"candidates: item {item_id!r} has rows of different images/types")
        entry["pos" if positive else "neg"].append(text)
    items = []
    for item_id, entry in grouped.items():
        if len(entry["pos"]) != 1:
            raise ValueError(f"candidates: item {item_id!r} has {len(entry['pos'])} positives")
        items.append(
            PairItem(
                item_id,
                entry["type"],
                entry["image"],
                box_of.get(item_id),
                entry["pos"][0],
                tuple(entry["neg"]),
            )
        )
    return items


def write_sugarcrepe(
    candidates: pl.DataFrame,
    boxes: pl.DataFrame | None,
    index: Mapping[str, Any],
    folder: str | Path,
    *,
    images_folder: str = IMAGES_FOLDER,
    link: bool = True,
) -> dict[str, Any]:
    """Write the SugarCrepe files, their images and ``keys.csv`` into ``folder`` (which
    should be empty; see ``export.jobs`` for the atomic job). ``index``: image_id ->
    ``ImageStatus`` (``vlcomp.evaluate.images.read_image_index``). Returns the manifest
    sections: layout, counts and left_out rows (item_id, reason, detail)."""
    folder = Path(folder)
    items = pair_items(candidates, boxes)
    usable, problems = lookup_images([i.image for i in items], index)
    images = ImageFiles(folder / images_folder, link=link)
    records: dict[str, dict[str, dict[str, str]]] = {}
    keys: list[tuple[Any, ...]] = []
    left_out: list[dict[str, Any]] = []
    items_per_type: dict[str, int] = {}
    several = 0
    for item in items:
        if item.image not in usable:
            status, detail = problems[item.image]
            reason = IMAGE_UNREADABLE if status == "unreadable" else IMAGE_MISSING
            left_out.append(_left(item, reason, f"image {item.image!r}: {detail}"))
            continue
        pairs = []
        for n, negative in enumerate(item.negatives):
            if negative == item.positive:
                left_out.append(_left(item, SAME_TEXT, f"negative {n}"))
            else:
                pairs.append((n, negative))
        if not pairs:
            if not item.negatives:
                left_out.append(_left(item, NO_NEGATIVE, ""))
            continue
        try:
            filename = images.place(item.image, usable[item.image], item.box)  # type: ignore[index]
        except UnreadableImageError as error:
            left_out.append(_left(item, IMAGE_UNREADABLE, f"image {item.image!r}: {error}"))
            continue
        except ValueError as error:
            left_out.append(_left(item, BOX_OUTSIDE, f"image {item.image!r}: {error}"))
            continue
        table = records.setdefault(item.type, {})
        file = f"{item.type}.json"
        for n, negative in pairs:
            key = str(len(table))
            table[key] = {
                "filename": filename,
                "caption": item.positive,
                "negative_caption": negative,
            }
            keys.append(
                (file, key, item.item_id, n, item.image, *(item.box or (None,) * 4), filename)
            )
        items_per_type[item.type] = items_per_type.get(item.type, 0) + 1
        several += len(pairs) > 1

    for type_name, table in sorted(records.items()):
        text = json.dumps(table, ensure_ascii=True, indent=1) + "\n"
        (folder / f"{type_name}.json").write_text(text, encoding="utf-8")
    _write_keys(folder / KEYS, keys)
    per_type = {
        t: {"items": items_per_type[t], "records": len(records[t])} for t in sorted(records)
    }
    return {
        "layout": {
            "format": "sugarcrepe",
            "files": '<type>.json per type: {"<index>": {filename, caption, negative_caption}}',
            "images_folder": images_folder,
            "filename_relative_to": images_folder,
            "images": dict(sorted(images.how.items())),
            "several_negatives": (
                "one record per (positive, negative) pair of an item, keys consecutive; "
                f"{several} item(s) have several"
            ),
            "keys": f"{KEYS}: file, key -> our item_id, negative index, image_id and box",
            "types_not_read_by_sugarcrepe_loaders": sorted(
                t for t in records if t not in SUGARCREPE_TYPES
            ),
            "clip_benchmark": clip_benchmark_section(sorted(records)),
        },
        "counts": {
            "items": sum(items_per_type.values()),
            "records": sum(len(t) for t in records.values()),
            "items_with_several_negatives": several,
            "image_files": len(images),
            "per_type": per_type,
        },
        "left_out": left_out,
    }


# --------------------------------------------------------------------------- CLIP_benchmark

# Here, not in export.clip_benchmark: the export job reaches this module, and the workflow's
# environment has no CLIP_benchmark.
CLIP_BENCHMARK_VERSION = "1.6.2"
COMMAND = "python -m vlcomp.export.clip_benchmark"
MODEL_ARGS = "--model <architecture> --pretrained <weights>"
PLACEHOLDERS = {
    "<this_folder>": "this export folder (CLIP_benchmark's --dataset_root)",
    "<architecture>": "the model's open_clip architecture (models.<key>.open_clip)",
    "<weights>": (
        "its checkpoint file (results/models/<key>/checkpoint.pt for a model the workflow "
        "trains) or open_clip pretrained tag"
    ),
}
TIES_COMMAND = f"{COMMAND} ties <this_folder> <metrics>/<model>/<benchmark>_predictions.parquet"
PRECISION_NOTE = (
    "--no_amp: float32, as vlcomp evaluates on a CPU (and on a GPU with evaluate.precision: "
    "fp32). CLIP_benchmark's default autocasts (bf16 on a CPU, fp16 on CUDA), which turns "
    "close pairs into ties that it counts right; vlcomp's GPU default (auto: bf16) has no "
    "CLIP_benchmark equivalent."
)
TIES_NOTE = (
    "A tie (positive and negative equally similar, or indistinguishable to the model's "
    "tokenizer) is wrong in vlcomp; CLIP_benchmark's argmax counts it right only when its two "
    "float32 scores come out bit-equal, which its image @ texts.T product does not guarantee "
    "(one or two ulps either way), so each tie goes either way there. Every other record "
    "scores the same: CLIP_benchmark's acc (= text_acc) lies between decided / records and "
    "(decided + ties) / records of the type (decided: vlcomp's correct untied records), and "
    "equals vlcomp's accuracy without ties. The ties depend on the model: its predictions "
    "(<metrics>/<model>/<benchmark>_predictions.parquet: pos_score == neg_score, or "
    f"indistinguishable) hold them; `{TIES_COMMAND}` lists them per type with their keys and "
    "the range."
)


def eval_command(types: Sequence[str]) -> str:
    """The command that scores an export's SugarCrepe ``types`` with CLIP_benchmark as
    vlcomp does (``PLACEHOLDERS``: the export folder, the model's architecture and weights)."""
    datasets = " ".join(f"sugar_crepe/{t}" for t in types)
    return f"{COMMAND} eval --dataset {datasets} --dataset_root <this_folder> {MODEL_ARGS} --no_amp"


def clip_benchmark_section(types: Sequence[str]) -> dict[str, object]:
    """How to score an export with CLIP_benchmark, for its manifest: the command for the
    ``types`` its loader reads, precision, metric and tie policy (``export.clip_benchmark``
    runs the command and lists the ties)."""
    readable = sorted(t for t in types if t in SUGARCREPE_TYPES)
    return {
        "version": CLIP_BENCHMARK_VERSION,
        "command": eval_command(readable) if readable else None,
        "placeholders": PLACEHOLDERS,
        "datasets": [f"sugar_crepe/{t}" for t in readable],
        "registers": (
            f"`{COMMAND} eval` registers vlcomp's open_clip architectures, then runs "
            "`clip_benchmark eval` with the same arguments; for open_clip's own architectures "
            "`clip_benchmark eval` with the same arguments does the same"
        ),
        "reads": (
            "<root>/<type>.json, images from <root>/val2017 (where val2017 is missing it "
            "downloads COCO val2017)"
        ),
        "precision": PRECISION_NOTE,
        "metric": "acc (= text_acc; image_acc is 1: a record has one image)",
        "ties": TIES_NOTE,
    }


def _left(item: PairItem, reason: str, detail: str) -> dict[str, Any]:
    return {"item_id": item.item_id, "type": item.type, "reason": reason, "detail": detail}


def _write_keys(path: Path, rows: list[tuple[Any, ...]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(KEYS_COLUMNS)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
