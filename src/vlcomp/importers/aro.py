"""ARO (Yuksekgonul et al., ICLR 2023) JSON files as candidates.

VG-Relation and VG-Attribution: each file is a JSON list of records with ``image_path,
bbox_x, bbox_y, bbox_w, bbox_h, true_caption, false_caption`` and ``relation_name``
(VG-Relation) or ``attributes`` (a two-element list, VG-Attribution); other keys (e.g.
``image_id``) are ignored. The item's image is ``image_path#xywh=x,y,w,h``: ARO crops every
image to that box before scoring. ARO reports VG-Relation accuracy macro-averaged over
relations and VG-Attribution over attribute pairs; the relation / attribute pair is kept in
``provenance`` for that.

COCO-Order and Flickr30k-Order: ARO's loader (``dataset_zoo/aro_datasets.py``) builds its
test cases at load time from the Karpathy test captions, one per caption: ``{"image": file
name, "caption_options": [caption, shuffle_nouns_and_adj, shuffle_allbut_nouns_and_adj,
shuffle_within_trigrams, shuffle_trigrams]}`` (the true caption first). A JSON list of such
test cases, as saved from that loader, is what is read here; the negatives' provenance names
their perturbation when there are exactly four. The shuffles draw from the global ``random``
and ``numpy.random`` state and the dataset sets no seed of its own (``main_aro.py`` seeds
everything with ``--seed``, default 1, before building it), and they depend on the spaCy
tagger and NLTK tokenizer versions: two generations rarely agree, so the file given here,
not ARO's code, defines the benchmark.

Known defect, reported rather than fixed: VG-Relation swaps the subject and object around
relations that are symmetric ("near", "next to", "beside", "by", ...), where the swapped
caption is still true. :func:`symmetric_relation_items` lists those items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

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
from vlcomp.text import normalise

AroTask = Literal["vg_relation", "vg_attribution", "coco_order", "flickr30k_order"]
GENERATOR = "imported:aro"
ORDER_TASKS = ("coco_order", "flickr30k_order")
# ARO's perturb_functions, in the order of caption_options[1:].
ORDER_PERTURBATIONS = (
    "shuffle_nouns_and_adj",
    "shuffle_allbut_nouns_and_adj",
    "shuffle_within_trigrams",
    "shuffle_trigrams",
)
ORDER_GENERATION_NOTE = (
    "ARO builds COCO-Order / Flickr30k-Order at load time with unseeded shuffles: its "
    "dataset code sets no seed (random / numpy.random global state; main_aro.py seeds it with "
    "--seed, default 1, only when run as that script) and the result also depends on the "
    "spaCy tagger and NLTK tokenizer versions, so regenerating gives different negatives; "
    "these items are the given file's, which should be kept with the results"
)
# Relations for which "A <rel> B" implies "B <rel> A": VG-Relation's swapped caption is then
# not false. Matched case-insensitively on the whole relation name.
SYMMETRIC_RELATIONS: tuple[str, ...] = (
    "adjacent to",
    "alongside",
    "beside",
    "by",
    "close to",
    "near",
    "next to",
    "touching",
)
# Both tasks swap two words of a template caption: objects around a relation, or the
# attributes of two objects. ``target`` names what the task probes.
_TASKS: dict[str, tuple[str, str | None, str]] = {
    "vg_relation": ("swap", "rel", "relation_name"),
    "vg_attribution": ("swap", "att", "attributes"),
    # word-order perturbations of a whole caption: no single target
    "coco_order": ("order", None, "caption_options"),
    "flickr30k_order": ("order", None, "caption_options"),
}


# File names of the published release (``dataset_zoo`` downloads) -> task.
ARO_FILES: dict[str, AroTask] = {
    "visual_genome_relation": "vg_relation",
    "visual_genome_attribution": "vg_attribution",
    "vg_relation": "vg_relation",
    "vg_attribution": "vg_attribution",
    "coco_order": "coco_order",
    "coco-order": "coco_order",
    "flickr30k_order": "flickr30k_order",
    "flickr30k-order": "flickr30k_order",
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
    ``record=<index>`` instead of raising. Order tasks: a caption option equal to the true
    caption (a shuffle that changed nothing) or to an earlier option is dropped as a
    rejected row located by ``record=<index>;option=<k>``; an item left without a negative
    is rejected.
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
    if task in ORDER_TASKS:
        for index, record in enumerate(data):
            _add_order_item(rows, record, index, path, task, benchmark, on_error)
        return rows.build()
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


def _order_options(record: object, where: str) -> tuple[str, list[str]]:
    if not isinstance(record, dict):
        raise RecordError(where, "expected an object", f", got {type(record).__name__}")
    missing = [f for f in ("image", "caption_options") if f not in record]
    if missing:
        raise RecordError(where, f"missing field(s) {missing}")
    image = require_text(record["image"], "image", where)
    options = record["caption_options"]
    if not isinstance(options, list) or len(options) < 2:
        raise RecordError(
            where, "caption_options must be a list of at least two captions", f", got {options!r}"
        )
    return image, [require_text(o, f"caption_options[{k}]", where) for k, o in enumerate(options)]


def _add_order_item(
    rows: CandidateRows,
    record: object,
    index: int,
    path: Path,
    task: str,
    benchmark: str,
    on_error: OnError,
) -> None:
    label = source_label(path)
    where = f"{path}, record {index}"
    try:
        image, options = _order_options(record, where)
    except RecordError as error:
        if on_error == "raise":
            raise
        rows.reject(label, f"record={index}", error.reason, raw_json(record))
        return
    named = len(options) == len(ORDER_PERTURBATIONS) + 1
    positive, negatives, notes = options[0], [], ["field=caption"]
    for k, option in enumerate(options[1:], start=1):
        if option == positive:
            reason = "caption option equals the true caption"
        elif option in negatives:
            reason = "repeated caption option"
        else:
            negatives.append(option)
            notes.append(f"perturbation={ORDER_PERTURBATIONS[k - 1] if named else k}")
            continue
        rows.reject(label, f"record={index};option={k}", reason, option)
    if not negatives:
        rows.reject(
            label, f"record={index}", "no caption option differs from the true caption", positive
        )
        return
    rows.add_item(
        benchmark=benchmark,
        item_id=f"aro_{task}/{index}",
        image=image,
        positive=positive,
        negatives=negatives,
        family=_TASKS[task][0],
        target=_TASKS[task][1],
        generator=GENERATOR,
        provenance=f"{label}#record={index}",
        notes=notes,
    )


_RELATION = re.compile(r";relation_name=(?P<relation>[^;]*)")


def _relation_key(relation: str) -> str:
    return normalise(relation)


def symmetric_relation_items(
    candidates: pl.DataFrame, relations: Sequence[str] = SYMMETRIC_RELATIONS
) -> dict[str, list[str]]:
    """VG-Relation items whose relation is symmetric: relation (as the file spells it) ->
    item ids, in the candidates' order. Relations are compared case- and space-insensitively
    with ``relations``; only rows whose provenance carries ``relation_name=`` count."""
    wanted = {_relation_key(r) for r in relations}
    items = candidates.select("item_id", "provenance").unique(
        subset="item_id", keep="first", maintain_order=True
    )
    found: dict[str, list[str]] = {}
    for item_id, provenance in items.iter_rows():
        match = _RELATION.search(provenance or "")
        if match and _relation_key(match.group("relation")) in wanted:
            found.setdefault(match.group("relation"), []).append(item_id)
    return dict(sorted(found.items()))
