"""ColorSwap (Burapacheep et al., 2024) as a two-image set.

The release (github.com/Top34051/colorswap README; the files themselves are downloaded into
``data/``) holds ``data/{train,test}.json``: JSON lists of ``{"id", "caption_1",
"caption_2", "image_1", "image_2", "image_source", "caption_source"}``, with the images in
``data/images.zip`` (``"image_1": "images/img_0_1.png"``). The Hugging Face copy
(``stanfordnlp/colorswap``) has the same fields with the images inline; an export of it is
read too (JSON Lines, CSV or Parquet; an image exported as ``{"bytes", "path"}`` gives its
``path``).

``caption_1`` describes ``image_1`` and ``caption_2`` describes ``image_2``; the two captions
have the same words with the colour words moved to other objects. The authors score
image-text matching models with Winoground's text, image and group scores (chance 0.25,
0.25, 1/6). ``family`` / ``target`` are ``swap`` / ``att``; ``image_source`` and
``caption_source`` (midjourney, dalle, human, ...) are kept in ``provenance``.
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

GENERATOR = "imported:colorswap"
FIELDS = ("caption_1", "caption_2", "image_1", "image_2")
SOURCES = ("image_source", "caption_source")


def _convert(record: dict, where: str) -> TwoImageItem:
    check_fields(record, FIELDS, where)
    notes = []
    for name in SOURCES:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise RecordError(where, f"{name} must be a string", f", got {value!r}")
        notes.append(f"{name}={value.strip()}")
    return TwoImageItem(
        image_0=image_reference(record["image_1"], "image_1", where),
        image_1=image_reference(record["image_2"], "image_2", where),
        caption_0=require_text(record["caption_1"], "caption_1", where),
        caption_1=require_text(record["caption_2"], "caption_2", where),
        family="swap",
        target="att",
        extra=";".join(notes),
    )


def read_colorswap_file(
    path: str | Path, benchmark: str = "colorswap", on_error: OnError = "raise"
) -> TwoImageImported:
    """One row file (``test.json``, ``train.json`` or an export). item_id is
    ``colorswap/<file stem>/<id>`` (the record's ``id``, else its position)."""
    path = Path(path)
    return read_two_image_file(
        path,
        _convert,
        id_field="id",
        benchmark=benchmark,
        prefix=f"colorswap/{path.stem}",
        generator=GENERATOR,
        on_error=on_error,
    )
