"""SugarCrepe++ JSON files (Dumpala et al., NeurIPS 2024 D&B) as candidates.

One file per subset, ``<subset>.json`` (replace_att, replace_obj, replace_rel, swap_att,
swap_obj). The release (github.com/Sri-Harsha/scpp, ``data/``) writes each file as a JSON
list of records ``{id, filename, caption, caption2, negative_caption}``; a JSON object
keyed by index (SugarCrepe's layout) is read too. ``caption`` and ``caption2`` both describe
the COCO image ``filename`` (``caption2`` is a paraphrase with different words), and
``negative_caption`` does not.

Each item therefore has TWO positive candidate rows (``caption``, then ``caption2``; their
provenance ends in ``;field=caption`` / ``;field=caption2``) and one negative: unlike every
other candidate set, "exactly one positive per item" does not hold here. SugarCrepe++
scores them with its own metrics (image-text task: both positives beat the negative for the
image; text-only task: the two positives are closer to each other than either is to the
negative).

Texts are kept verbatim (trailing spaces and newlines included), as in SugarCrepe.
"""

from __future__ import annotations

from pathlib import Path

from vlcomp.importers.common import (
    CandidateRows,
    Imported,
    ImportFormatError,
    OnError,
    RecordError,
    check_fields,
    check_on_error,
    image_reference,
    raw_json,
    read_records,
    record_key,
    require_text,
    source_label,
)

# subset -> (family, target); the release has no add_* subsets.
SUGARCREPE_PP_TYPES: dict[str, tuple[str, str]] = {
    "replace_att": ("replace", "att"),
    "replace_obj": ("replace", "obj"),
    "replace_rel": ("replace", "rel"),
    "swap_att": ("swap", "att"),
    "swap_obj": ("swap", "obj"),
}
_ALIASES = {
    "replace_ent": "replace_obj",
    "swap_ent": "swap_obj",
    "replace_object": "replace_obj",
    "replace_attribute": "replace_att",
    "replace_relation": "replace_rel",
    "swap_object": "swap_obj",
    "swap_attribute": "swap_att",
}
GENERATOR = "imported:sugarcrepe_pp"
FIELDS = ("filename", "caption", "caption2", "negative_caption")


def sugarcrepe_pp_file_type(path: str | Path) -> str | None:
    """The SugarCrepe++ subset a ``<subset>.json`` file name gives, or None."""
    stem = Path(path).stem.lower()
    name = _ALIASES.get(stem, stem)
    return name if name in SUGARCREPE_PP_TYPES else None


def _record_item(record: object, where: str) -> tuple[str, str, str, str]:
    value = check_fields(record, FIELDS, where)
    return (
        image_reference(value["filename"], "filename", where),
        require_text(value["caption"], "caption", where),
        require_text(value["caption2"], "caption2", where),
        require_text(value["negative_caption"], "negative_caption", where),
    )


def read_sugarcrepe_pp_file(
    path: str | Path,
    benchmark: str = "sugarcrepe_pp",
    on_error: OnError = "raise",
) -> Imported:
    """One ``<subset>.json`` file. item_id is ``sugarcrepe_pp/<subset>/<key>``, the key being
    the record's ``id`` (else its JSON object key, else its position in the list).

    Rejected with ``on_error="reject"`` (located by ``key=<key>``, or ``record=<i>`` when the
    id cannot be read): malformed records, a repeated id or object key (every occurrence
    after the first), and items whose texts collide (``caption2 equals caption``,
    ``negative_caption equals a positive``). A file that is not a JSON list or object raises
    naming it.
    """
    check_on_error(on_error)
    path = Path(path)
    subset = sugarcrepe_pp_file_type(path)
    if subset is None:
        raise ImportFormatError(
            f"{path}: unknown SugarCrepe++ subset {path.stem!r} (expected one of "
            f"{sorted(SUGARCREPE_PP_TYPES)})"
        )
    if path.suffix.lower() != ".json":
        raise ImportFormatError(f"{path}: SugarCrepe++ files are JSON (<subset>.json)")
    family, target = SUGARCREPE_PP_TYPES[subset]
    label = source_label(path)
    rows = CandidateRows()
    seen: set[str] = set()
    for record in read_records(path, on_error):
        location = record.location
        where = f"{path}, {location.replace('=', ' ', 1)}"
        try:
            if record.error:
                raise RecordError(where, record.error)
            value = record.value
            if isinstance(value, dict) and value.get("id") is not None:
                key = record_key(value["id"], "id", where)
            else:
                key = record.key if record.key is not None else str(record.index)
            location = f"key={key}"
            where = f"{path}, key {key!r}"
            filename, caption, caption2, negative = _record_item(value, where)
            if key in seen:
                raise RecordError(where, "duplicate id")
            if caption2 == caption:
                raise RecordError(where, "caption2 equals caption")
            if negative in (caption, caption2):
                raise RecordError(where, "negative_caption equals a positive")
        except RecordError as error:
            if on_error == "raise":
                raise
            raw = record.value if isinstance(record.value, str) else raw_json(record.value)
            rows.reject(label, location, error.reason, raw)
            continue
        seen.add(key)
        rows.add_item(
            benchmark=benchmark,
            item_id=f"sugarcrepe_pp/{subset}/{key}",
            image=filename,
            positive=[caption, caption2],
            negatives=[negative],
            family=family,
            target=target,
            generator=GENERATOR,
            provenance=f"{label}#key={key}",
            notes=["field=caption", "field=caption2", "field=negative_caption"],
        )
    return rows.build()
