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

ARO's macro accuracy (:func:`aro_macro_accuracy`): VG-Relation's accuracy per relation
(``VG_Relation.evaluate_scores``) averaged over the relations outside the 157 names that the
authors' notebook (``notebooks/Replicate ARO! VG-Relation, VG-Attribution.ipynb``) leaves out
(:data:`ARO_MACRO_EXCLUDED_RELATIONS`); VG-Attribution's accuracy per attribute pair
(``VG_Attribution.evaluate_scores``, pairs with at least 25 items) averaged over the pairs.
An item is right when the true caption scores strictly above the false one (ARO takes
``argmax`` over ``[false, true]``, so a tie picks the false caption).

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
    image_reference,
    raw_json,
    read_text,
    region_image,
    require_text,
    source_label,
)
from vlcomp.text import normalise
from vlcomp.vocabulary import negative_type_name

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
# The relations ARO's notebook leaves out of the VG-Relation macro accuracy (its list named
# ``symmetric``, in its order): the symmetric relations and many others ("of", "with", verbs).
ARO_MACRO_EXCLUDED_RELATIONS: tuple[str, ...] = (
    "adjusting", "attached to", "between", "bigger than", "biting", "boarding", "brushing",
    "chewing", "cleaning", "climbing", "close to", "coming from", "coming out of", "contain",
    "crossing", "dragging", "draped over", "drinking", "drinking from", "driving",
    "driving down", "driving on", "eating from", "eating in", "enclosing", "exiting", "facing",
    "filled with", "floating in", "floating on", "flying", "flying above", "flying in",
    "flying over", "flying through", "full of", "going down", "going into", "going through",
    "grazing in", "growing in", "growing on", "guiding", "hanging from", "hanging in",
    "hanging off", "hanging over", "higher than", "holding onto", "hugging", "in between",
    "jumping off", "jumping on", "jumping over", "kept in", "larger than", "leading",
    "leaning over", "leaving", "licking", "longer than", "looking in", "looking into",
    "looking out", "looking over", "looking through", "lying next to", "lying on top of",
    "making", "mixed with", "mounted on", "moving", "on the back of", "on the edge of",
    "on the front of", "on the other side of", "opening", "painted on", "parked at",
    "parked beside", "parked by", "parked in", "parked in front of", "parked near",
    "parked next to", "perched on", "petting", "piled on", "playing", "playing in",
    "playing on", "playing with", "pouring", "reaching for", "reading", "reflected on",
    "riding on", "running in", "running on", "running through", "seen through",
    "sitting behind", "sitting beside", "sitting by", "sitting in front of", "sitting near",
    "sitting next to", "sitting under", "skiing down", "skiing on", "sleeping in",
    "sleeping on", "smiling at", "sniffing", "splashing", "sprinkled on", "stacked on",
    "standing against", "standing around", "standing behind", "standing beside",
    "standing in front of", "standing near", "standing next to", "staring at", "stuck in",
    "surrounding", "swimming in", "swinging", "talking to", "topped with", "touching",
    "traveling down", "traveling on", "tying", "typing on", "underneath", "wading in",
    "waiting for", "walking across", "walking by", "walking down", "walking next to",
    "walking through", "working in", "working on", "worn on", "wrapped around", "wrapped in",
    "by", "of", "near", "next to", "with", "beside", "on the side of", "around",
)  # fmt: skip
# VG_Attribution.evaluate_scores reports only the attribute pairs with at least this many items.
VG_ATTRIBUTION_MIN_ITEMS = 25
MACRO_METRIC = "accuracy_aro_macro"
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
    image_path = image_reference(record["image_path"], "image_path", where)
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
    image = image_reference(record["image"], "image", where)
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


def _relation_key(relation: str) -> str:
    return normalise(relation)


def symmetric_relation_items(
    candidates: pl.DataFrame, relations: Sequence[str] = SYMMETRIC_RELATIONS
) -> dict[str, list[str]]:
    """VG-Relation items whose relation is symmetric: relation (as the file spells it) ->
    item ids, in the candidates' order. Relations are compared case- and space-insensitively
    with ``relations``; only rows whose provenance carries ``relation_name=`` count."""
    wanted = {_relation_key(r) for r in relations}
    found: dict[str, list[str]] = {}
    relation_items = aro_item_groups(candidates).filter(pl.col("task") == "vg_relation")
    for item_id, relation in relation_items.select("item_id", "group").iter_rows():
        if _relation_key(relation) in wanted:
            found.setdefault(relation, []).append(item_id)
    return dict(sorted(found.items()))


_MACRO_GROUP = re.compile(r";(?P<field>relation_name|attributes)=(?P<group>[^;]*)")
_MACRO_TASK = {"relation_name": "vg_relation", "attributes": "vg_attribution"}
# the task's negative type as the metric tables name it (family_target: swap_rel, swap_att)
_MACRO_FAMILY = {
    task: negative_type_name(*_TASKS[task][:2]) for task in ("vg_relation", "vg_attribution")
}
ARO_GROUP_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "task": pl.String,  # vg_relation or vg_attribution
    "group": pl.String,  # the relation name, or the attribute pair "<a0>_<a1>"
}


def aro_item_groups(candidates: pl.DataFrame) -> pl.DataFrame:
    """``ARO_GROUP_SCHEMA``: the VG-Relation and VG-Attribution items of ``candidates`` (an
    imported ARO benchmark's table) with the relation or attribute pair their provenance
    carries; items of other tasks are left out."""
    items = candidates.select("item_id", "provenance").unique(
        subset="item_id", keep="first", maintain_order=True
    )
    rows: dict[str, list[str]] = {name: [] for name in ARO_GROUP_SCHEMA}
    for item_id, provenance in items.iter_rows():
        match = _MACRO_GROUP.search(provenance or "")
        if match:
            for name, value in zip(
                ARO_GROUP_SCHEMA,
                (item_id, _MACRO_TASK[match.group("field")], match.group("group")),
                strict=True,
            ):
                rows[name].append(value)
    return pl.DataFrame(rows, schema=ARO_GROUP_SCHEMA)


def _counted(task: pl.Expr, group: pl.Expr, items: pl.Expr) -> pl.Expr:
    """Whether ARO's macro accuracy counts a group of ``items`` items."""
    return (
        pl.when(task == "vg_relation")
        .then(~group.is_in(list(ARO_MACRO_EXCLUDED_RELATIONS)))
        .otherwise(items >= VG_ATTRIBUTION_MIN_ITEMS)
    )


def aro_group_counts(groups: pl.DataFrame) -> pl.DataFrame:
    """Per task and group of :func:`aro_item_groups`: ``n`` items and ``counted`` (whether
    ARO's macro accuracy counts the group), sorted."""
    return (
        groups.group_by("task", "group")
        .agg(n=pl.len())
        .with_columns(counted=_counted(pl.col("task"), pl.col("group"), pl.col("n")))
        .sort("task", "group")
    )


def aro_macro_accuracy(
    predictions: pl.DataFrame, candidates: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """ARO's macro accuracy of VG-Relation and VG-Attribution (module docstring).

    ``predictions``: one row per scored item with ``model``, ``benchmark``, ``item_id`` and
    ``correct`` (true caption strictly above the false one), optionally ``part`` (the
    evaluation's set predictions); ``candidates``: the imported benchmark's candidates (their
    provenance names each item's relation / attribute pair). Items without a group (the order
    tasks, or not in ``candidates``) are left out; the 25-item rule counts the scored items.

    Returns ``(per_group, macro)``. ``per_group``: model, benchmark, part, task, group, n,
    accuracy, counted (as ``VG_*.evaluate_scores`` report them, with whether the macro
    average counts the group). ``macro``: model, benchmark, part, task, family (the negative
    type: ``swap_rel``, ``swap_att``), metric (``accuracy_aro_macro``), value (the mean of the
    counted groups' accuracies; null when none is counted), n (items in the counted groups),
    groups (counted), groups_left_out.
    """
    keys = ["model", "benchmark", "part"]
    scored = (
        predictions
        if "part" in predictions.columns
        else predictions.with_columns(part=pl.lit(None, pl.String))
    )
    scored = scored.select(*keys, "item_id", "correct")
    repeated = scored.group_by(*keys, "item_id").len().filter(pl.col("len") > 1)
    if repeated.height:
        raise ValueError(
            f"aro_macro_accuracy: {repeated.height} items with several prediction rows, e.g. "
            f"{repeated['item_id'][0]!r} (one row per item and model expected)"
        )
    per_group = (
        scored.join(aro_item_groups(candidates), on="item_id", how="inner")
        .group_by(*keys, "task", "group")
        .agg(n=pl.len(), accuracy=pl.col("correct").cast(pl.Float64).mean())
        .with_columns(counted=_counted(pl.col("task"), pl.col("group"), pl.col("n")))
        .sort(*keys, "task", "group", nulls_last=True)
    )
    macro = (
        per_group.group_by(*keys, "task")
        .agg(
            value=pl.col("accuracy").filter(pl.col("counted")).mean(),
            n=pl.col("n").filter(pl.col("counted")).sum(),
            groups=pl.col("counted").sum().cast(pl.Int64),
            groups_left_out=(~pl.col("counted")).sum().cast(pl.Int64),
        )
        .with_columns(
            family=pl.col("task").replace_strict(_MACRO_FAMILY, return_dtype=pl.String),
            metric=pl.lit(MACRO_METRIC),
        )
        .select(*keys, "task", "family", "metric", "value", "n", "groups", "groups_left_out")
        .sort(*keys, "task", nulls_last=True)
    )
    return per_group, macro
