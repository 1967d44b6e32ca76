"""Jobs: a generated benchmark exported in a format other tools read, with its manifest.

``export_benchmark_job`` writes one export folder (SugarCrepe JSON or Winoground JSONL,
their images, ``keys.csv``, ``manifest.json``) atomically; ``crepe_manifest_job`` adds the
same manifest to a folder of CREPE CSVs written by ``vlcomp.negatives.crepe_export``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp import __version__
from vlcomp.evaluate.images import read_image_index
from vlcomp.export.manifest import (
    MANIFEST,
    TIE_POLICY_NOTE,
    atomic_dir,
    generator_info,
    input_entry,
    left_out_section,
    versions,
    write_manifest,
)

Log = Callable[[str], None]
FORMATS = ("sugarcrepe", "winoground")
_SHOWN = 5


def export_benchmark_job(
    fmt: str,
    benchmark: str,
    candidates_or_items: str,
    boxes: str | None,
    image_index: str,
    config_section: Mapping[str, Any],
    out_dir: str,
    log: Log = print,
    *,
    link: bool = True,
) -> dict:
    """Export benchmark ``benchmark`` into ``out_dir`` (replaced whole, or left as it was
    when the export fails).

    - ``sugarcrepe``: ``candidates_or_items`` is a candidates table (``CANDIDATES_SCHEMA``),
      ``boxes`` its boxes (item_id, x, y, width, height; null = whole image) or None;
      see ``export.sugarcrepe``.
    - ``winoground``: ``candidates_or_items`` is a two-image table (``TWO_IMAGE_SCHEMA``);
      ``boxes`` must be None; see ``export.winoground``.

    ``image_index``: the eval set's image index (``IMAGE_INDEX_SCHEMA``), which resolves the
    image ids. ``config_section``: the config that produced the benchmark, copied into the
    manifest. ``link``: hard-link whole images (copy where that fails) rather than copy.
    Returns the manifest (also written as ``manifest.json``) and logs a summary.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; expected one of {list(FORMATS)}")
    if not isinstance(config_section, Mapping):
        raise ValueError(f"config_section must be a mapping, got {type(config_section).__name__}")
    table = pl.read_parquet(candidates_or_items)
    index = read_image_index(image_index)
    with atomic_dir(out_dir) as tmp:
        if fmt == "sugarcrepe":
            from vlcomp.export.sugarcrepe import write_sugarcrepe

            box_table = pl.read_parquet(boxes) if boxes else None
            sections = write_sugarcrepe(table, box_table, index, tmp, link=link)
        else:
            from vlcomp.export.winoground import write_winoground

            if boxes:
                raise ValueError("winoground export: two-image items have no boxes table")
            sections = write_winoground(table, index, tmp, link=link)
        if not sections["counts"]["items"]:
            raise ValueError(
                f"{benchmark}: nothing to export, all {len(sections['left_out'])} item(s) left "
                f"out ({_reasons(sections['left_out'])})"
            )
        manifest = write_manifest(
            tmp,
            benchmark=benchmark,
            format=fmt,
            vlcomp=__version__,
            versions=versions(),
            config=config_section,
            generation=generator_info(table),
            tie_policy={"vlcomp": "tie_counts_as_wrong", "note": TIE_POLICY_NOTE},
            inputs={
                "candidates_or_items": input_entry(candidates_or_items),
                "boxes": input_entry(boxes),
                "image_index": input_entry(image_index),
            },
            layout=sections["layout"],
            counts=sections["counts"],
            left_out=left_out_section(sections["left_out"]),
        )
    _log_summary(manifest, out_dir, log)
    return manifest


def crepe_manifest_job(
    benchmark: str,
    candidates: str,
    export_dir: str,
    config_section: Mapping[str, Any],
    log: Log = print,
) -> dict:
    """Write ``manifest.json`` into a folder of CREPE CSVs (``export_crepe_csv`` /
    ``export_productivity_csv``): every file's sha256 and size, the rows per CSV, the items
    left out as its ``summary.json`` counts them, config, versions and generators."""
    folder = Path(export_dir)
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"{folder}: no CREPE CSV files")
    rows = {}
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            rows[path.name] = max(sum(1 for _ in csv.reader(handle)) - 1, 0)
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    left = summary.get("left_out", {})
    manifest = write_manifest(
        folder,
        benchmark=benchmark,
        format="crepe_csv",
        vlcomp=__version__,
        versions=versions(),
        config=config_section,
        generation=generator_info(pl.read_parquet(candidates)),
        tie_policy={"vlcomp": "tie_counts_as_wrong", "note": TIE_POLICY_NOTE},
        inputs={"candidates": input_entry(candidates)},
        layout={
            "format": "crepe_csv",
            "files": "CREPE's released CSV layout (vlcomp.negatives.crepe_export)",
        },
        counts={"rows_per_file": rows, "records": sum(rows.values())},
        left_out={"count": sum(left.values()), "per_reason": left, "items": []},
    )
    log(f"{benchmark}: manifest of {len(manifest['files'])} files in {folder / MANIFEST}")
    return manifest


def _reasons(left_out: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for row in left_out:
        counts[row["reason"]] = counts.get(row["reason"], 0) + 1
    return ", ".join(f"{reason}: {n}" for reason, n in sorted(counts.items())) or "no items"


def _log_summary(manifest: dict, out_dir: str, log: Log) -> None:
    counts = manifest["counts"]
    log(
        f"{manifest['benchmark']} as {manifest['format']} in {out_dir}: {counts['items']} items, "
        f"{counts['records']} records, {counts['image_files']} image files "
        f"({manifest['layout']['images']}), {len(manifest['files'])} files in the manifest"
    )
    for kind, n in counts["per_type"].items():
        log(f"  {kind}: {n['items']} items, {n['records']} records")
    left = manifest["left_out"]
    log(f"left out: {left['count']} items")
    for reason, n in left["per_reason"].items():
        examples = [r["item_id"] for r in left["items"] if r["reason"] == reason][:_SHOWN]
        log(f"  {reason}: {n} (e.g. {', '.join(examples)})")
    untyped = manifest["layout"].get("types_not_read_by_sugarcrepe_loaders")
    if untyped:
        log(f"types that SugarCrepe loaders do not read (written anyway): {untyped}")
