"""VisMin (Awal et al., 2024) as a two-image set (``TWO_IMAGE_SCHEMA``).

Each row has two images that differ minimally and a caption for each: ``image_0, text_0,
image_1, text_1`` (``text_0`` describes ``image_0``) and ``category``: object, attribute,
counting or relation (spatial); an ``id`` when the export has one. Read from an export with
image file names (a JSON list or object, JSON Lines, CSV or Parquet; a Hugging Face image
exported as ``{"bytes", "path"}`` gives its ``path``).

Every category changes one thing in both image and text, so ``family`` is ``replace``;
``target`` is ``obj``, ``att``, ``count`` or ``rel`` (an unknown category is kept, lowercased).
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
from vlcomp.text import normalise

GENERATOR = "imported:vismin"
FIELDS = ("image_0", "text_0", "image_1", "text_1", "category")
CATEGORIES = {
    "object": "obj",
    "attribute": "att",
    "counting": "count",
    "relation": "rel",
    "spatial relation": "rel",
    "spatial_relation": "rel",
}


def _convert(record: dict, where: str) -> TwoImageItem:
    check_fields(record, FIELDS, where)
    category = normalise(require_text(record["category"], "category", where))
    return TwoImageItem(
        image_0=image_reference(record["image_0"], "image_0", where),
        image_1=image_reference(record["image_1"], "image_1", where),
        caption_0=require_text(record["text_0"], "text_0", where),
        caption_1=require_text(record["text_1"], "text_1", where),
        family="replace",
        target=CATEGORIES.get(category, category),
        extra=f"category={category}",
    )


def read_vismin_file(
    path: str | Path, benchmark: str = "vismin", on_error: OnError = "raise"
) -> TwoImageImported:
    """One row file. item_id is ``vismin/<file stem>/<key>`` (the row's ``id``, else its
    position in the file)."""
    path = Path(path)
    return read_two_image_file(
        path,
        _convert,
        id_field="id",
        benchmark=benchmark,
        prefix=f"vismin/{path.stem}",
        generator=GENERATOR,
        on_error=on_error,
    )
