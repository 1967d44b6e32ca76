"""SugarCrepe JSON files (Hsieh et al., 2023) as candidates.

Each file ``<type>.json`` is a JSON object keyed by a string index, each value
``{filename, caption, negative_caption}``. The published ``refined`` files are *re-indexed*
(keys 0..n-1 with gaps), so a refined item's key is not its key in the ``unrefined`` file of
the same type: match the two by content with :func:`match_refined`.

Texts are kept verbatim (some captions carry leading or trailing whitespace in the release),
so that scorers and models see exactly what the published evaluation sees.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from vlcomp.importers.common import (
    CandidateRows,
    Imported,
    ImportFormatError,
    OnError,
    RecordError,
    check_on_error,
    concat_imports,
    image_reference,
    json_object_hook,
    raw_json,
    read_text,
    require_text,
    source_label,
)
from vlcomp.vocabulary import SUGARCREPE_TYPES

# SUGARCREPE_TYPES (vocabulary): type -> (family, target). The first public release named
# objects "ent" (add_ent, ...).
_ALIASES = {"add_ent": "add_obj", "replace_ent": "replace_obj", "swap_ent": "swap_obj"}
GENERATOR = "imported:sugarcrepe"
BENCHMARKS = {"refined": "sugarcrepe", "unrefined": "sugarcrepe_unrefined"}
# Folder name -> variant: the release's own folders (RAIVNLab/sugar-crepe: data/ holds the
# refined benchmark, data_unrefined/ the candidates before refinement) and their renamed
# copies refined/ and unrefined/.
VARIANT_FOLDERS = {
    "refined": "refined",
    "unrefined": "unrefined",
    "data": "refined",
    "data_unrefined": "unrefined",
}


def sugarcrepe_type(family: str, target: str) -> str:
    return f"{family}_{target}"


def sugarcrepe_variant(folder: str | Path) -> str:
    """The variant a folder holds: ``refined`` for ``refined/`` and the release's ``data/``,
    ``unrefined`` for ``unrefined/`` and ``data_unrefined/``; any other folder's own name."""
    name = Path(folder).name
    return VARIANT_FOLDERS.get(name, name)


def sugarcrepe_file_type(path: str | Path) -> str | None:
    """The SugarCrepe type a ``<type>.json`` file name gives (old ``*_ent`` names mapped to
    ``*_obj``), or None for any other name."""
    stem = Path(path).stem
    type_name = _ALIASES.get(stem, stem)
    return type_name if type_name in SUGARCREPE_TYPES else None


def _record_item(record: object, where: str) -> tuple[str, str, str]:
    """(filename, caption, negative_caption) of one record, or ``RecordError``."""
    if not isinstance(record, dict):
        raise RecordError(where, "expected an object", f", got {type(record).__name__}")
    if getattr(record, "duplicates", None):
        keys = sorted({key for key, _ in record.duplicates})
        raise RecordError(where, "duplicate field(s)", f" {keys}")
    missing = [f for f in ("filename", "caption", "negative_caption") if f not in record]
    if missing:
        raise RecordError(where, f"missing field(s) {missing}")
    return (
        image_reference(record["filename"], "filename", where),
        require_text(record["caption"], "caption", where),
        require_text(record["negative_caption"], "negative_caption", where),
    )


def read_sugarcrepe_file(
    path: str | Path,
    variant: str | None = None,
    benchmark: str | None = None,
    on_error: OnError = "raise",
) -> Imported:
    """One ``<type>.json`` file; ``variant`` defaults to the parent folder's
    (:func:`sugarcrepe_variant`: ``data/`` is ``refined``, ``data_unrefined/`` ``unrefined``).

    item_id is ``sugarcrepe/<variant>/<type>/<key>`` with the file's original key. With
    ``on_error="reject"`` a malformed record, and every repetition of a key after its first
    occurrence (reason ``duplicate key``), becomes a rejected row located by ``key=<key>``.
    """
    check_on_error(on_error)
    path = Path(path)
    type_name = sugarcrepe_file_type(path)
    if type_name is None:
        raise ImportFormatError(
            f"{path}: unknown SugarCrepe type {path.stem!r} (expected one of "
            f"{sorted(SUGARCREPE_TYPES)})"
        )
    variant = variant or sugarcrepe_variant(path.parent)
    benchmark = benchmark or BENCHMARKS.get(variant, f"sugarcrepe_{variant}")
    family, target = SUGARCREPE_TYPES[type_name]
    try:
        data = json.loads(read_text(path), object_pairs_hook=json_object_hook(str(path), on_error))
    except json.JSONDecodeError as error:
        raise ImportFormatError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(data, dict):
        raise ImportFormatError(
            f"{path}: expected a JSON object keyed by index, got {type(data).__name__}"
        )
    rows = CandidateRows()
    label = source_label(path)
    for key, record in data.items():
        where = f"{path}, key {key!r}"
        try:
            filename, positive, negative = _record_item(record, where)
        except RecordError as error:
            if on_error == "raise":
                raise
            rows.reject(label, f"key={key}", error.reason, raw_json(record))
            continue
        if positive == negative:
            rows.reject(label, f"key={key}", "negative_caption equals caption", positive)
            continue
        rows.add_item(
            benchmark=benchmark,
            item_id=f"sugarcrepe/{variant}/{type_name}/{key}",
            image=filename,
            positive=positive,
            negatives=[negative],
            family=family,
            target=target,
            generator=GENERATOR,
            provenance=f"{label}#key={key}",
        )
    for key, record in getattr(data, "duplicates", []):
        rows.reject(label, f"key={key}", "duplicate key", raw_json(record))
    return rows.build()


def read_sugarcrepe_dir(
    directory: str | Path,
    variant: str | None = None,
    benchmark: str | None = None,
    on_error: OnError = "raise",
) -> Imported:
    """Every known ``<type>.json`` in ``directory`` (sorted by type); error if none."""
    directory = Path(directory)
    files = sorted(p for p in directory.glob("*.json") if sugarcrepe_file_type(p))
    if not files:
        raise ImportFormatError(f"{directory}: no SugarCrepe <type>.json files")
    return concat_imports([read_sugarcrepe_file(p, variant, benchmark, on_error) for p in files])


def content_key_frame(candidates: pl.DataFrame) -> pl.DataFrame:
    """Per paired item: benchmark, item_id, family, target and the (image, positive, negative)
    content that identifies it across re-indexed releases."""
    pos = candidates.filter(pl.col("is_positive")).select(
        "benchmark", "item_id", "family", "target", "image", pl.col("text").alias("positive")
    )
    neg = candidates.filter(~pl.col("is_positive")).select(
        "benchmark", "item_id", pl.col("text").alias("negative")
    )
    return pos.join(neg, on=["benchmark", "item_id"], how="inner")


def match_refined(refined: pl.DataFrame, unrefined: pl.DataFrame) -> pl.DataFrame:
    """Map each refined item to the unrefined item(s) with the same type, image and texts.

    Returns refined_item_id, unrefined_item_id (null where a refined item has no match);
    an item matches several rows only when the unrefined file itself repeats a pair.
    """
    on = ["family", "target", "image", "positive", "negative"]
    left = content_key_frame(refined).select(*on, pl.col("item_id").alias("refined_item_id"))
    right = content_key_frame(unrefined).select(*on, pl.col("item_id").alias("unrefined_item_id"))
    return (
        left.join(right, on=on, how="left", nulls_equal=True)
        .select("refined_item_id", "unrefined_item_id")
        .sort("refined_item_id", "unrefined_item_id")
    )
