"""Winoground (Thrush et al., CVPR 2022) as a two-image set (``TWO_IMAGE_SCHEMA``).

``examples.jsonl`` holds one example a line: ``{"id", "caption_0", "caption_1", "image_0",
"image_1", "tag", "secondary_tag", "num_main_preds", "collapsed_tag"}``. ``caption_0``
describes ``image_0`` and ``caption_1`` describes ``image_1``; the two captions have the same
words in a different order. ``image_0`` / ``image_1`` are file stems (``ex_0_img_0``) whose
files are ``<stem>.png`` in the release's images folder: they are kept as given and the eval
set's image index resolves them (it tries ``<stem>.png``).

``family`` is ``swap``; ``target`` comes from ``collapsed_tag`` (else ``tag``): Object ->
``obj``, Relation -> ``rel``, Both -> ``both``. The tags and ``num_main_preds`` are kept in
``provenance`` (``;tag=...;secondary_tag=...;num_main_preds=...;collapsed_tag=...``) so that
results can be broken down the way the paper does.
"""

from __future__ import annotations

from pathlib import Path

from vlcomp.importers.common import (
    OnError,
    RecordError,
    TwoImageImported,
    TwoImageItem,
    check_fields,
    image_reference,
    read_two_image_file,
    require_text,
)

GENERATOR = "imported:winoground"
FIELDS = ("caption_0", "caption_1", "image_0", "image_1")
TAGS = ("tag", "secondary_tag", "num_main_preds", "collapsed_tag")
TARGETS = {"object": "obj", "relation": "rel", "both": "both"}


def _tag(record: dict, name: str, where: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if name == "num_main_preds":
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(where, "num_main_preds must be an integer", f", got {value!r}")
        return str(value)
    if not isinstance(value, str):
        raise RecordError(where, f"{name} must be a string", f", got {value!r}")
    return value.strip()


def _convert(record: dict, where: str) -> TwoImageItem:
    check_fields(record, FIELDS, where)
    tags = {name: _tag(record, name, where) for name in TAGS}
    kind = tags["collapsed_tag"] or tags["tag"]
    return TwoImageItem(
        image_0=image_reference(record["image_0"], "image_0", where),
        image_1=image_reference(record["image_1"], "image_1", where),
        caption_0=require_text(record["caption_0"], "caption_0", where),
        caption_1=require_text(record["caption_1"], "caption_1", where),
        family="swap",
        target=TARGETS.get(kind.lower(), kind.lower()) if kind else None,
        extra=";".join(f"{k}={v}" for k, v in tags.items() if v is not None),
    )


def read_winoground_file(
    path: str | Path, benchmark: str = "winoground", on_error: OnError = "raise"
) -> TwoImageImported:
    """``examples.jsonl`` (or a JSON list of the same records). item_id is
    ``winoground/<id>``; a record without an ``id`` is rejected."""
    return read_two_image_file(
        Path(path),
        _convert,
        id_field="id",
        id_required=True,
        benchmark=benchmark,
        prefix="winoground",
        generator=GENERATOR,
        on_error=on_error,
    )
