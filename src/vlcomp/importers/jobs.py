"""Job: an imported benchmark (published SugarCrepe / ARO / CREPE files) as a candidate set.

``import_benchmark_job`` reads the files a benchmark's config names and writes three tables
that the common evaluation path reads like any other candidate set:

- candidates (``CANDIDATES_SCHEMA``): ``benchmark`` is the configured name for every row; the
  published sub-benchmark stays in ``item_id`` (``sugarcrepe/<variant>/<type>/<key>``,
  ``aro_<task>/<index>``, ``crepe/<file stem>/<row>/<kind>``), ``family`` / ``target`` and
  ``provenance`` (file and key). ``image`` is the image reference as the published file
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
and listed under ``duplicate_content`` in the summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA
from vlcomp.importers.aro import ARO_FILES, aro_file_task, read_aro_file
from vlcomp.importers.common import Imported, ImportFormatError, split_region
from vlcomp.importers.crepe import productivity_complexity, read_crepe_csv
from vlcomp.importers.sugarcrepe import (
    SUGARCREPE_TYPES,
    read_sugarcrepe_file,
    sugarcrepe_file_type,
)
from vlcomp.io import write_parquet

Log = Callable[[str], None]
FORMATS = ("sugarcrepe", "aro", "crepe_csv")
BOXES_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "x": pl.Int64,  # region box in pixels; all four null for a whole image
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "complexity": pl.Int64,  # CREPE productivity: n from the file name; else null
}
_SOURCE_KEYS = {"files", "dir", "images", "tasks", "kinds"}
_SHOWN = 10  # duplicates listed by name in the log


@dataclass(frozen=True)
class _Part:
    path: Path
    imported: Imported
    kind: pl.Expr  # the item's type for the per-type counts
    complexity: int | None = None


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
      replace_obj, swap_obj, ...; old ``*_ent`` names too) or a folder of them. A folder that
      holds variants in subfolders (``refined/``, ``unrefined/``) is refused: name one.
    - ``aro``: ``{"files": [...], "tasks": {file name: task}}``; the task (vg_relation,
      vg_attribution) comes from ``tasks`` (optional) or the published file name
      (visual_genome_relation.json, visual_genome_attribution.json). Folders: their
      ``*.json`` files with a known task.
    - ``crepe_csv``: ``{"files": [...], "kinds": [...]}``, CSV files or folders of them;
      ``kinds`` (default atom, comp) picks the systematicity hard-negative columns.

    ``files`` may also be given as ``dir``, and as one path instead of a list; ``images`` is
    not read here (the image index resolves ``image`` against it). Returns a summary (items
    per type and per file, rejected per reason, duplicates), which is also logged.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown benchmark format {fmt!r}; expected one of {list(FORMATS)}")
    if not isinstance(benchmark, str) or not benchmark.strip():
        raise ValueError(f"benchmark name must be a non-empty string, got {benchmark!r}")
    entries = _entries(source)
    ignored = sorted(set(source) - _SOURCE_KEYS)
    if ignored:
        log(f"source keys not used by the import: {ignored}")
    skipped: list[str] = []
    parts: list[_Part] = []
    seen: dict[Path, Path] = {}
    for path in _expand(fmt, entries, source, skipped, log):
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
    _check_one_positive(candidates)

    summary = _summary(fmt, benchmark, parts, candidates, boxes, rejected_frame, skipped)
    write_parquet(candidates.select(list(CANDIDATES_SCHEMA)), candidates_out)
    write_parquet(boxes, boxes_out)
    write_parquet(rejected_frame, rejected_out)
    _log_summary(summary, log)
    return summary


def _entries(source: Mapping[str, Any]) -> list[Path]:
    if not isinstance(source, Mapping):
        raise ValueError(f"source must be a mapping with 'files', got {type(source).__name__}")
    files = source.get("files", source.get("dir"))
    if files is None:
        raise ValueError("source needs 'files': a list of benchmark files or folders")
    if isinstance(files, str | Path):
        files = [files]
    if not files:
        raise ValueError("source 'files' is empty")
    entries = [Path(f) for f in files]
    for entry in entries:
        if not entry.exists():
            raise FileNotFoundError(f"benchmark file or folder {entry} does not exist")
    return entries


def _expand(
    fmt: str, entries: list[Path], source: Mapping[str, Any], skipped: list[str], log: Log
) -> list[Path]:
    """The files to read, in the order given (a folder's files sorted by name)."""
    files: list[Path] = []
    for entry in entries:
        if entry.is_file():
            files.append(entry)
            continue
        if fmt == "sugarcrepe":
            nested = sorted(
                d.name
                for d in entry.iterdir()
                if d.is_dir() and any(sugarcrepe_file_type(p) for p in d.glob("*.json"))
            )
            if nested:
                raise ImportFormatError(
                    f"{entry}: holds SugarCrepe files in the subfolder(s) {nested}, which are "
                    f"different benchmarks: name one of them in files (e.g. {entry / nested[0]})"
                )
            wanted = sorted(p for p in entry.glob("*.json") if sugarcrepe_file_type(p))
            others = sorted(p for p in entry.glob("*.json") if not sugarcrepe_file_type(p))
            expected = f"<type>.json files ({', '.join(SUGARCREPE_TYPES)})"
        elif fmt == "aro":
            wanted = sorted(p for p in entry.glob("*.json") if _aro_task(p, source))
            others = sorted(p for p in entry.glob("*.json") if not _aro_task(p, source))
            expected = f"ARO files ({', '.join(f'{n}.json' for n in ARO_FILES)})"
        else:
            wanted = sorted(entry.glob("*.csv"))
            others = []
            expected = "CREPE *.csv files"
        if not wanted:
            raise ImportFormatError(f"{entry}: no {expected}")
        for other in others:
            skipped.append(str(other))
            log(f"{other}: not a {fmt} file name; skipped")
        files.extend(wanted)
    return files


def _aro_task(path: Path, source: Mapping[str, Any]) -> str | None:
    tasks = source.get("tasks") or {}
    for key in (str(path), path.name, path.stem):
        if key in tasks:
            return tasks[key]
    return aro_file_task(path)


def _read(fmt: str, path: Path, source: Mapping[str, Any], benchmark: str) -> _Part:
    if fmt == "sugarcrepe":
        imported = read_sugarcrepe_file(path, benchmark=benchmark, on_error="reject")
        return _Part(path, imported, pl.lit(sugarcrepe_file_type(path)))
    if fmt == "aro":
        task = _aro_task(path, source)
        if task is None:
            raise ImportFormatError(
                f"{path}: cannot tell the ARO task from the file name (expected one of "
                f"{[f'{n}.json' for n in ARO_FILES]}); name it in the source's tasks"
            )
        imported = read_aro_file(path, task, benchmark=benchmark, on_error="reject")  # type: ignore[arg-type]
        return _Part(path, imported, pl.lit(task))
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


def _check_one_positive(candidates: pl.DataFrame) -> None:
    per_item = candidates.group_by("item_id").agg(
        positives=pl.col("is_positive").sum(), rows=pl.len()
    )
    bad = per_item.filter((pl.col("positives") != 1) | (pl.col("rows") < 2))
    if bad.height:
        raise RuntimeError(
            f"importer bug: items without exactly one positive and a negative: {bad}"
        )


def _duplicate_content(candidates: pl.DataFrame, boxes: pl.DataFrame) -> list[list[str]]:
    """Groups of items of one type with the same image, region and texts."""
    per_item = (
        candidates.group_by("item_id", maintain_order=True)
        .agg(
            pl.col("family", "target", "image").first(),
            positive=pl.col("text").filter(pl.col("is_positive")).first(),
            negatives=pl.col("text").filter(~pl.col("is_positive")).sort().str.join("\x1f"),
        )
        .join(boxes.select("item_id", "x", "y", "width", "height"), on="item_id", how="left")
    )
    key = ["family", "target", "image", "x", "y", "width", "height", "positive", "negatives"]
    groups = (
        per_item.group_by(key, maintain_order=True)
        .agg(items=pl.col("item_id"))
        .filter(pl.col("items").list.len() > 1)
    )
    return groups["items"].to_list()


def _summary(
    fmt: str,
    benchmark: str,
    parts: list[_Part],
    candidates: pl.DataFrame,
    boxes: pl.DataFrame,
    rejected: pl.DataFrame,
    skipped: list[str],
) -> dict:
    positives = candidates.filter(pl.col("is_positive"))
    per_type = positives.group_by("_type", maintain_order=True).len()
    per_file = Counter(p.split("#", 1)[0] for p in positives["provenance"].to_list())
    duplicate_keys = (
        rejected.filter(pl.col("reason") == "duplicate key")
        .select(pl.format("{}#{}", "source", "location"))
        .to_series()
        .to_list()
    )
    return {
        "benchmark": benchmark,
        "format": fmt,
        "files": [str(p.path) for p in parts],
        "skipped_files": skipped,
        "items": positives.height,
        "candidates": candidates.height,
        "items_per_type": dict(per_type.iter_rows()),
        "items_per_file": dict(per_file),
        "items_with_box": boxes.filter(pl.col("x").is_not_null()).height,
        "images": candidates["image"].n_unique(),
        "rejected": rejected.height,
        "rejected_per_reason": dict(Counter(rejected["reason"].to_list()).most_common()),
        "duplicate_keys": duplicate_keys,
        "duplicate_content": _duplicate_content(candidates, boxes),
    }


def _log_summary(summary: dict, log: Log) -> None:
    log(
        f"{summary['benchmark']} ({summary['format']}): {summary['items']} items, "
        f"{summary['candidates']} candidate rows, {summary['images']} images, "
        f"{summary['items_with_box']} items with a region box"
    )
    for kind, count in summary["items_per_type"].items():
        log(f"  {kind}: {count} items")
    log(f"rejected rows: {summary['rejected']}")
    for reason, count in summary["rejected_per_reason"].items():
        log(f"  {reason}: {count}")
    keys = summary["duplicate_keys"]
    if keys:
        shown = ", ".join(keys[:_SHOWN]) + (" ..." if len(keys) > _SHOWN else "")
        log(f"duplicate keys (first occurrence kept, the others rejected): {len(keys)}: {shown}")
    groups = summary["duplicate_content"]
    if groups:
        shown = "; ".join(" = ".join(g) for g in groups[:_SHOWN])
        more = " ..." if len(groups) > _SHOWN else ""
        log(f"items with the same image, region and texts (all kept): {len(groups)}: {shown}{more}")
