"""What became of each benchmark's items, for the metrics summary.

Per benchmark: the items it holds (per part, e.g. once per training corpus of a
systematicity benchmark), those excluded from every metric because their image is unusable
(by image status: missing, unreadable; pooled over the evaluated models), and the records
of its source files that were rejected before they became items (per reason, from the
benchmark's or its eval set's rejected tables, ``contracts.REJECTED_SCHEMA``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import ITEMS_KEY
from vlcomp.io import read_parquet_metadata

# The image statuses of ``evaluate.embed`` (not imported: it loads torch).
IMAGE_STATUSES: tuple[str, ...] = ("missing", "unreadable")

ITEMS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "kind": pl.String,
    "items": pl.Int64,  # null: no model evaluated it
    "evaluated": pl.Int64,
    **{f"excluded_{status}": pl.Int64 for status in IMAGE_STATUSES},
    "excluded_share": pl.Float64,
    "rejected": pl.Int64,  # records of its rejected tables
}
REJECTED_REASONS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "table": pl.String,
    "reason": pl.String,
    "records": pl.Int64,
}


def _excluded(paths: Sequence[str]) -> tuple[int | None, pl.DataFrame]:
    """Items the evaluations were given (the largest count over models) and the excluded
    items of all models, each (part, item_id) once."""
    totals, frames = [], []
    for path in paths:
        meta = read_parquet_metadata(path)
        if ITEMS_KEY not in meta:
            raise ValueError(
                f"{path}: no item count in its metadata ({ITEMS_KEY}): written by an older "
                "vlcomp; rerun its evaluation (snakemake --forcerun evaluate_benchmark ...)"
            )
        totals.append(int(meta[ITEMS_KEY]))
        frame = pl.read_parquet(path, columns=["part", "item_id", "status"])
        unknown = sorted(set(frame["status"].to_list()) - set(IMAGE_STATUSES))
        if unknown:
            raise ValueError(f"{path}: unknown image status(es) {unknown}")
        frames.append(frame)
    excluded = (
        pl.concat(frames).sort("part", "item_id", "status", nulls_last=False)
        if frames
        else pl.DataFrame(schema={"part": pl.String, "item_id": pl.String, "status": pl.String})
    )
    return (max(totals) if totals else None), excluded.unique(["part", "item_id"], keep="first")


def benchmark_items(
    benchmarks: Mapping[str, Mapping[str, Any]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``ITEMS_SCHEMA`` (one row per benchmark, in the given order) and
    ``REJECTED_REASONS_SCHEMA`` (per benchmark, rejected table and reason).

    ``benchmarks``: name -> {"kind": str, "excluded": [excluded tables of the models'
    evaluations, with the item count in their metadata], "rejected": [rejected tables]}."""
    rows, reasons = [], []
    for name, entry in benchmarks.items():
        total, excluded = _excluded(list(entry.get("excluded", [])))
        by_status = dict(excluded.group_by("status").len().iter_rows())
        n_excluded = excluded.height
        n_rejected = 0
        for path in entry.get("rejected", []):
            table = pl.read_parquet(path, columns=["reason"])
            n_rejected += table.height
            counts = table.group_by("reason").len().sort("len", "reason", descending=[True, False])
            reasons += [(name, str(path), reason, n) for reason, n in counts.iter_rows()]
        rows.append(
            (
                name,
                entry.get("kind"),
                total,
                None if total is None else total - n_excluded,
                *(by_status.get(status, 0) for status in IMAGE_STATUSES),
                n_excluded / total if total else None,
                n_rejected,
            )
        )
    return (
        pl.DataFrame(rows, schema=ITEMS_SCHEMA, orient="row"),
        pl.DataFrame(reasons, schema=REJECTED_REASONS_SCHEMA, orient="row"),
    )


def items_markdown(items: pl.DataFrame, reasons: pl.DataFrame) -> list[str]:
    """The summary's section on items: the per-benchmark table, a line for each benchmark
    that lost items to unusable images, and the rejected records per reason."""
    lines = [
        "## Items per benchmark",
        "",
        "items: what the benchmark holds (per part: a systematicity benchmark counts its items "
        "once per training corpus); excluded: left out of every metric because the image is "
        "missing or unreadable (any evaluated model); rejected: source records that never "
        "became items (the benchmark's or its eval set's rejected tables).",
        "",
        "| benchmark | kind | items | evaluated | excluded (image missing) "
        "| excluded (image unreadable) | excluded share | rejected records |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in items.iter_rows(named=True):
        share = f"{r['excluded_share']:.1%}" if r["excluded_share"] is not None else ""
        total = "" if r["items"] is None else r["items"]
        evaluated = "" if r["evaluated"] is None else r["evaluated"]
        lines.append(
            f"| {r['benchmark']} | {r['kind'] or ''} | {total} | {evaluated} "
            f"| {r['excluded_missing']} | {r['excluded_unreadable']} | {share} "
            f"| {r['rejected']} |"
        )
    lines.append("")
    for r in items.filter(pl.col("excluded_share") > 0).iter_rows(named=True):
        lines.append(
            f"- **{r['benchmark']}**: {r['excluded_share']:.0%} of its items "
            f"({r['items'] - r['evaluated']} of {r['items']}) are excluded because their image "
            f"is unusable ({r['excluded_missing']} missing, {r['excluded_unreadable']} "
            f"unreadable); its metrics rest on {r['evaluated']} "
            + ("item." if r["evaluated"] == 1 else "items.")
        )
    lines += ["", "### Records rejected before they became items", ""]
    if reasons.is_empty():
        return [*lines, "No record was rejected.", ""]
    lines += ["| benchmark | table | reason | records |", "|---|---|---|---:|"]
    for r in reasons.iter_rows(named=True):
        reason = r["reason"].replace("|", "\\|")
        lines.append(f"| {r['benchmark']} | {r['table']} | {reason} | {r['records']} |")
    return [*lines, ""]


def eval_set_markdown(benchmarks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A line per eval set summary (``eval_sets`` of a benchmark entry: the eval items
    job's ``items_summary.json``) that has something to say: warnings (no attribute or no
    relation in any item), boxes clipped to their image, what joining annotation files
    merged. Each summary once, under the first benchmark that uses it."""
    lines: list[str] = []
    seen: set[str] = set()
    for name, entry in benchmarks.items():
        for path in entry.get("eval_sets", []):
            if path in seen:
                continue
            seen.add(path)
            summary = json.loads(Path(path).read_text())
            eval_set = Path(path).parent.name
            notes = [f"**warning:** {w}" for w in summary.get("warnings", [])]
            if summary.get("clipped_boxes"):
                notes.append(f"{summary['clipped_boxes']} region boxes clipped to their image")
            merged = summary.get("merged") or {}
            if merged.get("attributes_joined") or merged.get("attributes_unmatched"):
                notes.append(
                    f"{merged.get('attributes_joined', 0)} attribute values joined from the "
                    f"annotation files ({merged.get('attributes_not_stated', 0)} left out as not "
                    f"stated by the region's phrase, {merged.get('attributes_unmatched', 0)} "
                    "annotated objects in no region)"
                )
            items = summary.get("items")
            head = (
                f"- eval set **{eval_set}** ({name}): {items} items, "
                f"{summary.get('items_with_attributes')} with attributes, "
                f"{summary.get('items_with_relations')} with relations"
            )
            lines.append("; ".join([head, *notes]) + ".")
    return ["### Evaluation sets", "", *lines, ""] if lines else []
