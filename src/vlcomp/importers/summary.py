"""The summary an import returns and logs: items per type and per file, images, rejected
rows per reason (with the first of each), repeated keys or ids, items with the same content,
gaps in integer keys, and the metrics the format's authors report. An import that yields no
item stops here (``check_not_empty``), naming its files and why their records were
rejected."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import polars as pl

from vlcomp.importers.aro import aro_group_counts, aro_item_groups
from vlcomp.importers.common import ImportFormatError, integer_key_gaps
from vlcomp.importers.registry import FORMATS as REGISTRY

Log = Callable[[str], None]
_SHOWN = 10  # duplicates listed by name in the log
# formats whose keys are integers ("0", "1", ...): their gaps are listed (the two-image
# summary lists them for every format)
_KEYED = {"sugarcrepe", "sugarcrepe_pp"}


def candidate_summary(
    fmt: str,
    benchmark: str,
    paths: list[Path],
    candidates: pl.DataFrame,
    boxes: pl.DataFrame,
    rejected: pl.DataFrame,
    skipped: list[str],
) -> dict:
    """The summary of a candidate-set import (``_type``: each candidate's type) read from
    ``paths``; ``skipped``: the files passed over in its folders."""
    items = candidates.unique(subset="item_id", keep="first", maintain_order=True)
    per_type = items.group_by("_type", maintain_order=True).len()
    per_file = Counter(p.split("#", 1)[0] for p in items["provenance"].to_list())
    duplicate_keys = (
        rejected.filter(pl.col("reason") == "duplicate key")
        .select(pl.format("{}#{}", "source", "location"))
        .to_series()
        .to_list()
    )
    return {
        "benchmark": benchmark,
        "format": fmt,
        "files": [str(p) for p in paths],
        "skipped_files": skipped,
        "items": items.height,
        "candidates": candidates.height,
        "items_per_type": dict(per_type.iter_rows()),
        "items_per_file": dict(per_file),
        "items_with_box": boxes.filter(pl.col("x").is_not_null()).height,
        "images": candidates["image"].n_unique(),
        "rejected": rejected.height,
        "rejected_per_reason": dict(Counter(rejected["reason"].to_list()).most_common()),
        "first_rejected": _first_rejected(rejected),
        "duplicate_keys": duplicate_keys,
        "duplicate_content": _duplicate_content(candidates, boxes),
        "key_gaps": _key_gaps(candidates["provenance"], rejected) if fmt in _KEYED else {},
        "authors_metrics": _authors_metrics(fmt),
        "notes": [],
    }


def two_image_summary(
    fmt: str,
    benchmark: str,
    paths: list[Path],
    items: pl.DataFrame,
    rejected: pl.DataFrame,
    skipped: list[str],
) -> dict:
    """The summary of a two-image (or image-selection) import read from ``paths``."""
    kinds = items.select(
        kind=pl.when(pl.col("target").is_null())
        .then(pl.col("family"))
        .otherwise(pl.format("{}_{}", "family", "target"))
    )["kind"]
    per_file = Counter(p.split("#", 1)[0] for p in items["provenance"].to_list())
    duplicate_ids = (
        rejected.filter(pl.col("reason").is_in(["duplicate id", "duplicate key"]))
        .select(pl.format("{}#{}", "source", "location"))
        .to_series()
        .to_list()
    )
    texts = ("caption", "caption_0", "caption_1")
    key = ["family", "target", "image_0", "image_1", *(c for c in texts if c in items.columns)]
    duplicate_content = (
        items.group_by(key, maintain_order=True)
        .agg(items=pl.col("item_id"))
        .filter(pl.col("items").list.len() > 1)["items"]
        .to_list()
    )
    return {
        "benchmark": benchmark,
        "format": fmt,
        "files": [str(p) for p in paths],
        "skipped_files": skipped,
        "items": items.height,
        "items_per_type": dict(Counter(kinds.to_list())),
        "items_per_file": dict(per_file),
        "images": pl.concat([items["image_0"], items["image_1"]]).n_unique(),
        "rejected": rejected.height,
        "rejected_per_reason": dict(Counter(rejected["reason"].to_list()).most_common()),
        "first_rejected": _first_rejected(rejected),
        "duplicate_ids": duplicate_ids,
        "duplicate_content": duplicate_content,
        "key_gaps": _key_gaps(items["provenance"], rejected),
        "authors_metrics": _authors_metrics(fmt),
        "notes": [],
    }


def aro_macro_groups(candidates: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Per VG-Relation / VG-Attribution task: its relations / attribute pairs, those ARO's
    macro accuracy counts (``aro.aro_macro_accuracy``) and the items in them."""
    counts = aro_group_counts(aro_item_groups(candidates))
    return {
        task: {
            "groups": frame.height,
            "groups_counted": int(frame["counted"].sum()),
            "items_counted": int(frame.filter(pl.col("counted"))["n"].sum()),
        }
        for (task,), frame in counts.group_by("task", maintain_order=True)
    }


def check_not_empty(summary: dict, log: Log) -> None:
    """An import that yields no item stops, naming the files and why their records were
    rejected (an empty benchmark would evaluate to nothing without saying so)."""
    if summary["items"]:
        return
    first = summary["first_rejected"]
    reasons = "; ".join(
        f"{r}: {n} (first at {first[r]})" for r, n in summary["rejected_per_reason"].items()
    )
    message = (
        f"{summary['benchmark']} ({summary['format']}): no item in {summary['files']}: "
        f"{summary['rejected']} records rejected" + (f" ({reasons})" if reasons else "")
    )
    log(message)
    raise ImportFormatError(message)


def _duplicate_content(candidates: pl.DataFrame, boxes: pl.DataFrame) -> list[list[str]]:
    """Groups of items of one type with the same image, region and texts."""
    per_item = (
        candidates.group_by("item_id", maintain_order=True)
        .agg(
            pl.col("family", "target", "image").first(),
            positive=pl.col("text").filter(pl.col("is_positive")).str.join("\x1f"),
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


def _first_rejected(rejected: pl.DataFrame) -> dict[str, str]:
    """Per rejection reason, its first rejected record as ``<file>#<location>``."""
    first: dict[str, str] = {}
    for source, location, reason in rejected.select("source", "location", "reason").iter_rows():
        first.setdefault(reason, f"{source}#{location}")
    return first


def _authors_metrics(fmt: str) -> list[dict]:
    """The metrics the format's authors report (the headline first), as vlcomp's metric
    tables name them, with chance (null: 1 / the item's candidates)."""
    return [
        {"metric": m.name, "chance": m.chance, "definition": m.definition}
        for m in REGISTRY[fmt].metrics
    ]


def _log_metrics(summary: dict, log: Log) -> None:
    shown = ", ".join(
        f"{m['metric']} (chance {'1/candidates' if m['chance'] is None else round(m['chance'], 4)})"
        for m in summary["authors_metrics"]
    )
    log(f"authors' metrics: {shown}; a tie counts as wrong")


def _key_gaps(provenance: pl.Series, rejected: pl.DataFrame) -> dict[str, list[str]]:
    """Per file, the integer keys missing from 0 .. the largest key, over the keys of its
    items (``<file>#key=<key>[;...]``) and of its rejected rows (``key=<key>``); files whose
    keys are not all integers, or have no gap, are left out."""
    keys: dict[str, set[str]] = {}
    for value in provenance.unique().to_list():
        source, _, location = value.partition("#")
        if location.startswith("key="):
            keys.setdefault(source, set()).add(location[4:].split(";")[0])
    for source, location in rejected.select("source", "location").iter_rows():
        if location and location.startswith("key="):
            keys.setdefault(source, set()).add(location[4:].split(";")[0])
    gaps = {source: integer_key_gaps(found) for source, found in sorted(keys.items())}
    return {source: found for source, found in gaps.items() if found}


def _shown(values: list[str], separator: str = ", ") -> str:
    """The first ``_SHOWN`` of ``values``, joined, with " ..." when there are more."""
    return separator.join(values[:_SHOWN]) + (" ..." if len(values) > _SHOWN else "")


def _log_common(summary: dict, log: Log) -> None:
    """Types and rejected rows: the lines both summaries start with."""
    for kind, count in summary["items_per_type"].items():
        log(f"  {kind}: {count} items")
    log(f"rejected rows: {summary['rejected']}")
    for reason, count in summary["rejected_per_reason"].items():
        log(f"  {reason}: {count} (first at {summary['first_rejected'][reason]})")


def _log_gaps(summary: dict, log: Log) -> None:
    for source, gaps in summary["key_gaps"].items():
        log(
            f"{source}: integer keys missing (a gap in the numbering, not an error): {_shown(gaps)}"
        )


def log_candidate_summary(summary: dict, log: Log) -> None:
    log(
        f"{summary['benchmark']} ({summary['format']}): {summary['items']} items, "
        f"{summary['candidates']} candidate rows, {summary['images']} images, "
        f"{summary['items_with_box']} items with a region box"
    )
    _log_common(summary, log)
    keys = summary["duplicate_keys"]
    if keys:
        kept = "first occurrence kept, the others rejected"
        log(f"duplicate keys ({kept}): {len(keys)}: {_shown(keys)}")
    groups = [" = ".join(g) for g in summary["duplicate_content"]]
    if groups:
        shown = _shown(groups, "; ")
        log(f"items with the same image, region and texts (all kept): {len(groups)}: {shown}")
    _log_gaps(summary, log)
    symmetric = summary.get("symmetric_relations")
    if symmetric:
        total = sum(v["items"] for v in symmetric.values())
        action = "rejected (drop_symmetric)" if summary["symmetric_dropped"] else "kept"
        log(
            f"VG-Relation items with a symmetric relation, whose swapped caption is still true: "
            f"{total}, {action}"
        )
        for relation, found in symmetric.items():
            log(f"  {relation}: {found['items']} items: {_shown(found['item_ids'])}")
    for task, groups in summary.get("macro_groups", {}).items():
        log(
            f"{task}: {groups['groups']} groups, {groups['groups_counted']} counted by ARO's macro "
            f"accuracy ({groups['items_counted']} items; importers.aro.aro_macro_accuracy)"
        )
    for note in summary["notes"]:
        log(f"note: {note}")
    _log_metrics(summary, log)


def log_two_image_summary(summary: dict, log: Log) -> None:
    log(
        f"{summary['benchmark']} ({summary['format']}): {summary['items']} two-image items, "
        f"{summary['images']} distinct images"
    )
    _log_common(summary, log)
    ids = summary["duplicate_ids"]
    if ids:
        log(
            f"duplicate ids (first occurrence kept, the others rejected): {len(ids)}: {_shown(ids)}"
        )
    groups = [" = ".join(g) for g in summary["duplicate_content"]]
    if groups:
        shown = _shown(groups, "; ")
        log(f"items with the same images and captions (all kept): {len(groups)}: {shown}")
    _log_gaps(summary, log)
    _log_metrics(summary, log)
