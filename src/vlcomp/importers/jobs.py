"""Jobs: an imported benchmark (published SugarCrepe / SugarCrepe++ / ARO / CREPE / VALSE /
VL-CheckList files) as a candidate set, and a two-image benchmark (Winoground / BiVLC /
VisMin / COLA / ColorSwap / MMVP-VLM / EqBen) as a two-image set. The formats, their
readers, options, shapes and metrics are listed in ``importers.registry``; which files
of a folder a format reads, in ``importers.source_files``; the summary both jobs return and
log is ``importers.summary``'s.

``import_benchmark_job`` reads the files a benchmark's config names and writes three tables
that the common evaluation path reads like any other candidate set:

- candidates (``CANDIDATES_SCHEMA``): ``benchmark`` is the configured name for every row; the
  published sub-benchmark stays in ``item_id`` (``sugarcrepe/<variant>/<type>/<key>``,
  ``sugarcrepe_pp/<subset>/<key>``, ``aro_<task>/<index>``, ``crepe/<file stem>/<row>/<kind>``,
  ``valse/<file stem>/<sample id>``, ``vl_checklist/<family>/<target>/<corpus>/<index>``),
  ``family`` / ``target`` and ``provenance`` (file and key). Every item has exactly one
  positive, except SugarCrepe++ items, which have TWO (``caption`` and its paraphrase
  ``caption2``) and one negative. ``image`` is the image reference as the published file
  gives it (a file name or relative path, a Visual Genome id for CREPE), without any region:
  the eval set's image index resolves it against the images folder.
- boxes: one row per item, ``item_id, x, y, width, height`` (Int64 pixels; all null for a
  whole image) and ``complexity`` (Int64; CREPE productivity files only). A float box (ARO)
  is rounded the way the published evaluations crop it, ``PIL.Image.crop`` on
  (x, y, x + w, y + h), which rounds each corner to the nearest pixel.
- rejected (``REJECTED_SCHEMA``): every record that could not become an item, with its file,
  key (``key=``, ``record=``, ``row=``) and reason. A malformed record never stops the
  import; a file that cannot be read at all (not JSON / CSV, wrong layout) does, naming it.

Known defects of published files are reported, not fixed: a repeated JSON key keeps its first
occurrence and rejects the others (``duplicate key``); items of one type with the same
image, region and texts (e.g. the unrefined SugarCrepe swap_obj keys 0 and 1413) are all kept
and listed under ``duplicate_content`` in the summary; integer keys missing from a file
(SugarCrepe's keys are "0", "1", ...) are listed under ``key_gaps`` (information, not an
error); ARO VG-Relation items whose relation is symmetric ("near", "next to", ...: the
swapped caption is still true) are counted per relation and listed under
``symmetric_relations``, and kept unless the source says ``drop_symmetric: true`` (then they
are rejected rows).

``import_two_image_job`` writes the items (``contracts.TWO_IMAGE_SCHEMA``: image_0, image_1,
caption_0, caption_1, caption_i describing image_i) and the rejected table, with the same
reporting (duplicate ids rejected, key gaps, duplicate content).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import (
    CANDIDATES_SCHEMA,
    IMAGE_SELECTION_SCHEMA,
    REJECTED_SCHEMA,
    TWO_IMAGE_SCHEMA,
)
from vlcomp.importers.aro import (
    ARO_FILES,
    ORDER_GENERATION_NOTE,
    ORDER_TASKS,
    SYMMETRIC_RELATIONS,
    read_aro_file,
    symmetric_relation_items,
)
from vlcomp.importers.common import (
    Imported,
    ImportFormatError,
    TwoImageImported,
    split_region,
)
from vlcomp.importers.crepe import productivity_complexity, read_crepe_csv
from vlcomp.importers.registry import (
    CANDIDATES,
    IMAGE_SELECTION,
    TWO_IMAGES,
    TWO_POSITIVES,
    formats_of,
    options_of,
)
from vlcomp.importers.registry import FORMATS as REGISTRY
from vlcomp.importers.source_files import aro_task, expand_entries, source_entries
from vlcomp.importers.sugarcrepe import read_sugarcrepe_file, sugarcrepe_file_type
from vlcomp.importers.sugarcrepe_pp import read_sugarcrepe_pp_file, sugarcrepe_pp_file_type
from vlcomp.importers.summary import (
    aro_macro_groups,
    candidate_summary,
    check_not_empty,
    log_candidate_summary,
    log_two_image_summary,
    two_image_summary,
)
from vlcomp.importers.vl_checklist import protocol_notes as vl_checklist_notes
from vlcomp.io import write_parquet

Log = Callable[[str], None]
FORMATS = formats_of(CANDIDATES, TWO_POSITIVES)
TWO_IMAGE_FORMATS = formats_of(TWO_IMAGES)
IMAGE_SELECTION_FORMATS = formats_of(IMAGE_SELECTION)  # imported by import_two_image_job
# positives per item, by format (SugarCrepe++: caption and caption2)
POSITIVES = {name: spec.positives for name, spec in REGISTRY.items() if spec.positives != 1}
BOXES_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "x": pl.Int64,  # region box in pixels; all four null for a whole image
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "complexity": pl.Int64,  # CREPE productivity: n from the file name; else null
}
_SOURCE_KEYS = {"files", "dir", "images"}  # and the format's options


@dataclass(frozen=True)
class _Part:
    path: Path
    imported: Imported
    kind: pl.Expr  # the item's type for the per-type counts
    complexity: int | None = None
    task: str | None = None  # ARO task


def import_benchmark_job(
    fmt: str,
    source: Mapping[str, Any],
    benchmark: str,
    candidates_out: str,
    boxes_out: str,
    rejected_out: str,
    log: Log = print,
) -> dict:
    """Import the published files ``source`` names as benchmark ``benchmark``.

    ``fmt`` and ``source``:

    - ``sugarcrepe``: ``{"files": [...]}``, each a ``<type>.json`` file (add_att,
      replace_obj, swap_obj, ...; old ``*_ent`` names too) or a folder of them. The folder
      gives the variant: the release's ``data/`` and a ``refined/`` copy are ``refined``,
      ``data_unrefined/`` and ``unrefined/`` are ``unrefined``. A folder that holds variants
      in subfolders is refused: name one.
    - ``sugarcrepe_pp``: ``{"files": [...]}``, each a SugarCrepe++ ``<subset>.json``
      (replace_att, replace_obj, replace_rel, swap_att, swap_obj) or a folder of them. Items
      have two positives.
    - ``aro``: ``{"files": [...], "tasks": {file name: task}, "drop_symmetric": false,
      "symmetric_relations": [...]}``; the task (vg_relation, vg_attribution, coco_order,
      flickr30k_order) comes from ``tasks`` (optional) or the file name
      (visual_genome_relation.json, visual_genome_attribution.json, coco_order.json,
      flickr30k_order.json). Folders: their ``*.json`` files with a known task.
      VG-Relation items whose relation is in ``symmetric_relations`` (default
      ``aro.SYMMETRIC_RELATIONS``) are reported; ``drop_symmetric: true`` rejects them.
    - ``crepe_csv``: ``{"files": [...], "kinds": [...]}``, CSV files or folders of them,
      the release's ``prod_hard_negatives/`` with its ``atom/``, ``negate/``, ``swap/``
      subfolders included (``crepe.crepe_folder_files``); ``kinds`` (default atom, comp)
      picks the systematicity hard-negative columns.
    - ``valse``: ``{"files": [...], "validated_only": true, "image_folders": {}}``, VALSE
      instrument files (``existence.json``, ``counting-hard.json``, ...) or a folder of them;
      the caption against its foil, validated samples only unless ``validated_only`` is false.
    - ``vl_checklist``: ``{"files": [...]}``, corpus YAMLs (``corpus/v1/<type>/<corpus>.yaml``,
      naming their JSON file and image root) or ``data/`` JSON files, or folders searched
      recursively (the YAMLs when there are any); the first positive against the first
      negative.

    ``files`` may also be given as ``dir``, and as one path instead of a list; ``images`` is
    not read here (the image index resolves ``image`` against it). Returns a summary (items
    per type and per file, rejected per reason, duplicates, the authors' metrics), which is
    also logged.
    """
    if fmt not in FORMATS:
        two = (
            f" ({fmt} is a two-image set: import it with import_two_image_job)"
            if fmt in (*TWO_IMAGE_FORMATS, *IMAGE_SELECTION_FORMATS)
            else ""
        )
        raise ValueError(f"unknown benchmark format {fmt!r}; expected one of {list(FORMATS)}{two}")
    _check_name(benchmark)
    entries = source_entries(source)
    symmetric = _symmetric_options(source) if fmt == "aro" else None
    _log_ignored(fmt, source, log)
    skipped: list[str] = []
    parts: list[_Part] = []
    seen: dict[Path, Path] = {}
    for path in expand_entries(fmt, entries, source, skipped, log):
        resolved = path.resolve()
        if resolved in seen:
            log(f"{path}: listed more than once (also as {seen[resolved]}); read once")
            continue
        seen[resolved] = path
        part = _read(fmt, path, source, benchmark)
        parts.append(part)
        items = part.imported.candidates["item_id"].n_unique()
        log(f"{path}: {items} items, {part.imported.rejected.height} rejected rows")
    _check_unique_items(parts)
    symmetric_report: dict[str, list[str]] = {}
    if symmetric is not None:
        parts = [_symmetric(part, *symmetric, symmetric_report) for part in parts]

    candidates = pl.concat(
        [p.imported.candidates.with_columns(_type=p.kind) for p in parts], how="vertical"
    )
    rejected = [p.imported.rejected for p in parts]
    complexity = {
        item_id: p.complexity
        for p in parts
        if p.complexity is not None
        for item_id in p.imported.candidates["item_id"].unique().to_list()
    }
    candidates, boxes, box_rejected = _split_boxes(candidates, complexity)
    rejected.append(box_rejected)
    rejected_frame = pl.concat(rejected, how="vertical")
    _check_positives(candidates, POSITIVES.get(fmt, 1))

    summary = candidate_summary(
        fmt, benchmark, [p.path for p in parts], candidates, boxes, rejected_frame, skipped
    )
    check_not_empty(summary, log)
    if symmetric is not None:
        summary["symmetric_relations"] = {
            relation: {"items": len(ids), "item_ids": ids}
            for relation, ids in symmetric_report.items()
        }
        summary["symmetric_dropped"] = symmetric[0]
    if fmt == "aro" and any(p.task in ORDER_TASKS for p in parts):
        summary["notes"].append(ORDER_GENERATION_NOTE)
    if fmt == "aro":
        summary["macro_groups"] = aro_macro_groups(candidates)
    if fmt == "vl_checklist":
        summary["notes"] += vl_checklist_notes(candidates, **options_of(fmt, source))
    write_parquet(candidates.select(list(CANDIDATES_SCHEMA)), candidates_out)
    write_parquet(boxes, boxes_out)
    write_parquet(rejected_frame, rejected_out)
    log_candidate_summary(summary, log)
    return summary


def _log_ignored(fmt: str, source: Mapping[str, Any], log: Log) -> None:
    ignored = sorted(set(source) - _SOURCE_KEYS - set(REGISTRY[fmt].options))
    if ignored:
        log(f"source keys not used by the import: {ignored}")


def _check_name(benchmark: object) -> None:
    if not isinstance(benchmark, str) or not benchmark.strip():
        raise ValueError(f"benchmark name must be a non-empty string, got {benchmark!r}")


def _symmetric_options(source: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    drop = source.get("drop_symmetric", False)
    if not isinstance(drop, bool):
        raise ValueError(f"drop_symmetric must be true or false, got {drop!r}")
    relations = source.get("symmetric_relations", SYMMETRIC_RELATIONS)
    if isinstance(relations, str) or not all(isinstance(r, str) and r.strip() for r in relations):
        raise ValueError(f"symmetric_relations must be a list of relation names, got {relations!r}")
    return drop, tuple(relations)


def _symmetric(
    part: _Part, drop: bool, relations: tuple[str, ...], report: dict[str, list[str]]
) -> _Part:
    """Record the part's VG-Relation items with a symmetric relation in ``report``; with
    ``drop``, move them to the part's rejected rows."""
    if part.task != "vg_relation":
        return part
    found = symmetric_relation_items(part.imported.candidates, relations)
    for relation, ids in found.items():
        report.setdefault(relation, []).extend(ids)
    if not drop or not found:
        return part
    ids = [i for group in found.values() for i in group]
    candidates = part.imported.candidates
    dropped = (
        candidates.filter(pl.col("item_id").is_in(ids), pl.col("is_positive"))
        .select(
            source=pl.col("provenance").str.split("#").list.first(),
            location=pl.col("provenance").str.split("#").list.get(1).str.split(";").list.first(),
            reason=pl.lit("symmetric relation (drop_symmetric)"),
            raw=pl.col("text"),
        )
        .cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
    )
    imported = Imported(
        candidates.filter(~pl.col("item_id").is_in(ids)),
        pl.concat([part.imported.rejected, dropped], how="vertical"),
    )
    return _Part(part.path, imported, part.kind, part.complexity, part.task)


def _read(fmt: str, path: Path, source: Mapping[str, Any], benchmark: str) -> _Part:
    if fmt == "sugarcrepe":
        imported = read_sugarcrepe_file(path, benchmark=benchmark, on_error="reject")
        return _Part(path, imported, pl.lit(sugarcrepe_file_type(path)))
    if fmt == "sugarcrepe_pp":
        imported = read_sugarcrepe_pp_file(path, benchmark=benchmark, on_error="reject")
        return _Part(path, imported, pl.lit(sugarcrepe_pp_file_type(path)))
    if fmt == "aro":
        task = aro_task(path, source)
        if task is None:
            raise ImportFormatError(
                f"{path}: cannot tell the ARO task from the file name (expected one of "
                f"{[f'{n}.json' for n in ARO_FILES]}); name it in the source's tasks"
            )
        imported = read_aro_file(path, task, benchmark=benchmark, on_error="reject")  # type: ignore[arg-type]
        return _Part(path, imported, pl.lit(task), task=task)
    if fmt != "crepe_csv":  # the registry's reader with the format's options
        read = REGISTRY[fmt].reader
        imported = read(path, benchmark=benchmark, on_error="reject", **options_of(fmt, source))
        kind = pl.when(pl.col("target").is_null()).then(pl.col("family"))
        return _Part(path, imported, kind.otherwise(pl.format("{}_{}", "family", "target")))
    kinds = source.get("kinds") or ("atom", "comp")
    if isinstance(kinds, str):
        kinds = [kinds]
    imported = read_crepe_csv(path, kinds, benchmark=benchmark, on_error="reject")
    return _Part(
        path,
        imported,
        pl.format("{}/{}", pl.lit(path.stem), pl.col("family")),
        productivity_complexity(path),
    )


def _check_unique_items(parts: list[_Part]) -> None:
    owner: dict[str, Path] = {}
    for part in parts:
        for item_id in part.imported.candidates["item_id"].unique(maintain_order=True):
            other = owner.setdefault(item_id, part.path)
            if other != part.path:
                raise ImportFormatError(
                    f"{other} and {part.path} give the same item ids (e.g. {item_id!r}): the "
                    "same type / task twice; list only one of them"
                )


def _pixel_box(box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    # PIL.Image.crop rounds each corner (Python round), as ARO's and CREPE's loaders crop.
    x, y, width, height = box
    left, top, right, bottom = round(x), round(y), round(x + width), round(y + height)
    return left, top, right - left, bottom - top


def _split_boxes(
    candidates: pl.DataFrame, complexity: dict[str, int]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Bare image references, the boxes table, and rejected rows for boxes that are empty
    at whole pixels."""
    items = candidates.select("item_id", "image", "provenance").unique(
        subset="item_id", keep="first", maintain_order=True
    )
    bare: dict[str, str] = {}
    rows: dict[str, list] = {name: [] for name in BOXES_SCHEMA}
    dropped: dict[str, list] = {name: [] for name in REJECTED_SCHEMA}
    for item_id, image, provenance in items.iter_rows():
        name, box = split_region(image)
        values: tuple[int | None, ...] = (None, None, None, None)
        if box is not None:
            values = _pixel_box(box)
            if values[2] <= 0 or values[3] <= 0:
                source, _, location = provenance.partition("#")
                for column, value in zip(
                    REJECTED_SCHEMA,
                    (source, location.split(";")[0], "box is empty at whole pixels", image),
                    strict=True,
                ):
                    dropped[column].append(value)
                continue
        bare[item_id] = name
        for column, value in zip(
            BOXES_SCHEMA, (item_id, *values, complexity.get(item_id)), strict=True
        ):
            rows[column].append(value)
    kept = candidates.filter(pl.col("item_id").is_in(list(bare)))
    kept = kept.with_columns(image=pl.col("item_id").replace_strict(bare, return_dtype=pl.String))
    return (
        kept,
        pl.DataFrame(rows, schema=BOXES_SCHEMA),
        pl.DataFrame(dropped, schema=REJECTED_SCHEMA),
    )


def _check_positives(candidates: pl.DataFrame, positives: int) -> None:
    per_item = candidates.group_by("item_id").agg(
        positives=pl.col("is_positive").sum(), rows=pl.len()
    )
    bad = per_item.filter((pl.col("positives") != positives) | (pl.col("rows") <= positives))
    if bad.height:
        raise RuntimeError(
            f"importer bug: items without exactly {positives} positive(s) and a negative: {bad}"
        )


# --- two-image sets -----------------------------------------------------------------------


def import_two_image_job(
    fmt: str,
    source: Mapping[str, Any],
    benchmark: str,
    items_out: str,
    rejected_out: str,
    log: Log = print,
) -> dict:
    """Import a two-image benchmark as ``TWO_IMAGE_SCHEMA`` items (caption_0 describes
    image_0, caption_1 describes image_1) plus its rejected records.

    ``fmt`` and ``source`` (``{"files": [...], "images": <folder>}``; ``images`` is not read
    here, the image index resolves ``image_0`` / ``image_1`` against it):

    - ``winoground``: ``examples.jsonl`` or the folder holding it; item_id
      ``winoground/<id>``; images are file stems (``ex_0_img_0``, files ``<stem>.png``).
    - ``bivlc``: row files (``.json``, ``.jsonl``, ``.csv``, ``.parquet``) with ``image,
      caption, negative_image, negative_caption, type, subtype`` (``id`` optional), or folders
      of them; item_id ``bivlc/<file stem>/<id or row>``.
    - ``vismin``: row files with ``image_0, text_0, image_1, text_1, category`` (``id``
      optional); item_id ``vismin/<file stem>/<id or row>``.
    - ``cola``: ``COLA_multiobjects_matching_benchmark.json`` or the folder holding it;
      item_id ``cola/<file stem>/<position>``.
    - ``colorswap``: row files with ``caption_1, caption_2, image_1, image_2`` (``id``
      optional); item_id ``colorswap/<file stem>/<id or row>``.
    - ``mmvp_vlm``: ``Questions.csv`` or the folder holding it; item_id
      ``mmvp_vlm/<id 1>-<id 2>`` (option ``text_prefix``).
    - ``eqben``: JSON annotation files in pairs or folders of them; item_id
      ``eqben/<file stem>/<key>``.
    - ``svo_probes`` (image selection: ``IMAGE_SELECTION_SCHEMA`` items, one caption,
      image_0 its image, image_1 the negative image): ``svo_probes.csv`` or the folder
      holding it; item_id ``svo_probes/<index>`` (option ``image_name``).

    A malformed record, a repeated id, equal captions or equal images make a rejected row
    (with the record's key), never a stopped import; a file that cannot be read raises naming
    it. Returns a summary (items per type and file, images, rejected per reason, duplicate
    ids, key gaps, duplicate content), which is also logged.
    """
    accepted = (*TWO_IMAGE_FORMATS, *IMAGE_SELECTION_FORMATS)
    if fmt not in accepted:
        raise ValueError(
            f"unknown two-image benchmark format {fmt!r}; expected one of {list(accepted)}"
        )
    _check_name(benchmark)
    entries = source_entries(source)
    _log_ignored(fmt, source, log)
    options = options_of(fmt, source)
    skipped: list[str] = []
    parts: list[tuple[Path, TwoImageImported]] = []
    seen: dict[Path, Path] = {}
    for path in expand_entries(fmt, entries, source, skipped, log):
        resolved = path.resolve()
        if resolved in seen:
            log(f"{path}: listed more than once (also as {seen[resolved]}); read once")
            continue
        seen[resolved] = path
        read = REGISTRY[fmt].reader
        imported = read(path, benchmark=benchmark, on_error="reject", **options)
        parts.append((path, imported))
        log(f"{path}: {imported.items.height} items, {imported.rejected.height} rejected rows")
    owner: dict[str, Path] = {}
    for path, imported in parts:
        for item_id in imported.items["item_id"]:
            other = owner.setdefault(item_id, path)
            if other != path:
                raise ImportFormatError(
                    f"{other} and {path} give the same item ids (e.g. {item_id!r}): the same "
                    "file twice under two names, or two splits with overlapping ids; list one"
                )
    items = pl.concat([imported.items for _, imported in parts], how="vertical")
    rejected = pl.concat([imported.rejected for _, imported in parts], how="vertical")
    summary = two_image_summary(fmt, benchmark, [p for p, _ in parts], items, rejected, skipped)
    check_not_empty(summary, log)
    schema = IMAGE_SELECTION_SCHEMA if fmt in IMAGE_SELECTION_FORMATS else TWO_IMAGE_SCHEMA
    write_parquet(items.select(list(schema)), items_out)
    write_parquet(rejected, rejected_out)
    log_two_image_summary(summary, log)
    return summary
