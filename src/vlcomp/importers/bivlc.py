"""BiVLC (Miranda et al., NeurIPS 2024 D&B) as a two-image set (``TWO_IMAGE_SCHEMA``).

Each instance has ``image`` (a COCO 2017 val image), ``caption`` (its COCO caption),
``negative_caption`` (SugarCrepe's hard negative of that caption), ``negative_image`` (an
image generated from the negative caption), ``type`` (add, replace, swap) and ``subtype``
(obj, att, rel); an ``id`` when the export has one. ``caption`` matches ``image`` and
``negative_caption`` matches ``negative_image``, so ``image_0 = image``,
``caption_0 = caption``, ``image_1 = negative_image``, ``caption_1 = negative_caption``.

The release is a Hugging Face dataset with the images inline; what is read here is an export
with image FILE names (a JSON list or object, JSON Lines, CSV or Parquet; a Hugging Face
image exported as ``{"bytes", "path"}`` gives its ``path``). ``family`` / ``target`` are
``type`` / ``subtype`` (long names such as ``object`` mapped to ``obj``).
"""

from __future__ import annotations

from pathlib import Path

from vlcomp.importers.common import (
    OnError,
    TwoImageImported,
    TwoImageItem,
    check_fields,
    image_reference,
    read_two_image_file,
    require_text,
)

GENERATOR = "imported:bivlc"
FIELDS = ("image", "caption", "negative_image", "negative_caption", "type", "subtype")
SUBTYPES = {"object": "obj", "attribute": "att", "relation": "rel"}


def _convert(record: dict, where: str) -> TwoImageItem:
    check_fields(record, FIELDS, where)
    family = require_text(record["type"], "type", where).strip().lower()
    subtype = require_text(record["subtype"], "subtype", where).strip().lower()
    return TwoImageItem(
        image_0=image_reference(record["image"], "image", where),
        image_1=image_reference(record["negative_image"], "negative_image", where),
        caption_0=require_text(record["caption"], "caption", where),
        caption_1=require_text(record["negative_caption"], "negative_caption", where),
        family=family,
        target=SUBTYPES.get(subtype, subtype),
    )


def read_bivlc_file(
    path: str | Path, benchmark: str = "bivlc", on_error: OnError = "raise"
) -> TwoImageImported:
    """One row file. item_id is ``bivlc/<file stem>/<key>`` (the row's ``id``, else its
    position in the file)."""
    path = Path(path)
    return read_two_image_file(
        path,
        _convert,
        id_field="id",
        benchmark=benchmark,
        prefix=f"bivlc/{path.stem}",
        generator=GENERATOR,
        on_error=on_error,
    )
