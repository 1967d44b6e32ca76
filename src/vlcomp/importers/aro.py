"""ARO VG-Relation and VG-Attribution JSON (Yuksekgonul et al., 2023) as candidates.

Each file is a JSON list of records with ``image_path, bbox_x, bbox_y, bbox_w, bbox_h,
true_caption, false_caption`` and ``relation_name`` (VG-Relation) or ``attributes`` (a
two-element list, VG-Attribution); other keys (e.g. ``image_id``) are ignored. The item's
image is ``image_path#xywh=x,y,w,h``: ARO crops every image to that box before scoring.

ARO reports VG-Relation accuracy macro-averaged over relations and VG-Attribution over
attribute pairs; the relation / attribute pair is kept in ``provenance`` for that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from vlcomp.importers.common import (
    CandidateRows,
    Imported,
    ImportFormatError,
    OnError,
    RecordError,
    check_on_error,
    raw_json,
    read_text,
    region_image,
    require_text,
    source_label,
)

AroTask = Literal["vg_relation", "vg_attribution"]
GENERATOR = "imported:aro"
# Both tasks swap two words of a template caption: objects around a relation, or the
# attributes of two objects. ``target`` names what the task probes.
_TASKS: dict[str, tuple[str, str, str]] = {
    "vg_relation": ("swap", "rel", "relation_name"),
    "vg_attribution": ("swap", "att", "attributes"),
}


# File names of the published release (``dataset_zoo`` downloads) -> task.
ARO_FILES: dict[str, AroTask] = {
    "visual_genome_relation": "vg_relation",
    "visual_genome_attribution": "vg_attribution",
    "vg_relation": "vg_relation",
    "vg_attribution": "vg_attribution",
}


def aro_file_task(path: str | Path) -> AroTask | None:
    """The task a published ARO file name gives (``visual_genome_relation.json`` ->
    ``vg_relation``), or None for any other name."""
    return ARO_FILES.get(Path(path).stem)


def _box_value(record: dict, name: str, where: str) -> float:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(where, f"{name} must be a number", f", got {value!r}")
    if value < 0 or value != value or value == float("inf"):
        raise RecordError(where, f"{name} is negative or not finite", f" ({value})")
    return float(value)


def _record_item(record: object, task: AroTask, where: str) -> tuple[str, str, str, str]:
    """(image, positive, negative, relation or attribute pair) of one record, or
    ``RecordError``."""
    label_field = _TASKS[task][2]
    if not isinstance(record, dict):
        raise RecordError(where, "expected an object", f", got {type(record).__name__}")
    missing = [
        f
        for f in (
            "image_path",
            "bbox_x",
            "bbox_y",
            "bbox_w",
            "bbox_h",
            "true_caption",
            "false_caption",
            label_field,
        )
        if f not in record
    ]
    if missing:
        raise RecordError(where, f"missing field(s) {missing}")
    image_path = require_text(record["image_path"], "image_path", where)
    x, y, w, h = (_box_value(record, f"bbox_{c}", where) for c in "xywh")
    if w <= 0 or h <= 0:
        raise RecordError(where, "empty box", f" (bbox_w={w}, bbox_h={h})")
    positive = require_text(record["true_caption"], "true_caption", where)
    negative = require_text(record["false_caption"], "false_caption", where)
    if task == "vg_relation":
        detail = require_text(record[label_field], label_field, where)
    else:
        attributes = record[label_field]
        if not (
            isinstance(attributes, list)
            and len(attributes) == 2
            and all(isinstance(a, str) and a.strip() for a in attributes)
        ):
            raise RecordError(
                where, "attributes must be a list of two strings", f", got {attributes!r}"
            )
        detail = "_".join(attributes)
    return region_image(image_path, x, y, w, h), positive, negative, detail


def read_aro_file(
    path: str | Path,
    task: AroTask,
    benchmark: str | None = None,
    on_error: OnError = "raise",
) -> Imported:
    """item_id is ``aro_<task>/<index in the list>``.

    With ``on_error="reject"`` a malformed record becomes a rejected row located by
    ``record=<index>`` instead of raising.
    """
    check_on_error(on_error)
    path = Path(path)
    if task not in _TASKS:
        raise ValueError(f"unknown ARO task {task!r}; expected one of {sorted(_TASKS)}")
    family, target, label_field = _TASKS[task]
    benchmark = benchmark or f"aro_{task}"
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise ImportFormatError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(data, list):
        raise ImportFormatError(
            f"{path}: expected a JSON list of records, got {type(data).__name__}"
        )
    rows = CandidateRows()
    label = source_label(path)
    for index, record in enumerate(data):
        where = f"{path}, record {index}"
        try:
            image, positive, negative, detail = _record_item(record, task, where)
        except RecordError as error:
            if on_error == "raise":
                raise
            rows.reject(label, f"record={index}", error.reason, raw_json(record))
            continue
        if positive == negative:
            rows.reject(label, f"record={index}", "false_caption equals true_caption", positive)
            continue
        rows.add_item(
            benchmark=benchmark,
            item_id=f"aro_{task}/{index}",
            image=image,
            positive=positive,
            negatives=[negative],
            family=family,
            target=target,
            generator=GENERATOR,
            provenance=f"{label}#record={index};{label_field}={detail}",
        )
    return rows.build()
