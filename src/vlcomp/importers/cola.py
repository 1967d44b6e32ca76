"""COLA multi-object setting (Ray et al., NeurIPS 2023) as a two-image set.

The release (github.com/arijitray1993/COLA, ``data/COLA_multiobjects_matching_benchmark.json``)
is a JSON list of ``[link to image 1, caption 1, link to image 2, caption 2]``; caption 1
applies to image 1 and not to image 2, and vice versa (the two captions swap attributes and
objects). The links are URLs such as
``https://cs-people.bu.edu/array/data/vg_gqa_images/2414605.jpg`` whose file name is the
Visual Genome id: the image reference kept here is that file name (``2414605.jpg``), which
the eval set's images folder (Visual Genome / GQA images) resolves; a value that is not a
URL is kept as given.

The authors' metric (``scripts/eval.py``, ``ColaMultiObjAcc``) is Winoground's image score:
each caption scores its own image strictly above the other image; chance 0.25. ``family`` is
``swap`` (no target).

The single-object setting (``COLA_singleobjects_benchmark_*.json``: per image, labels over
320 multi-attribute classes, scored by mean average precision) is not a two-image set and is
not imported.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from vlcomp.importers.common import (
    ImportFormatError,
    OnError,
    RecordError,
    TwoImageImported,
    TwoImageItem,
    image_reference,
    read_two_image_file,
    require_text,
)

GENERATOR = "imported:cola"
MULTI_OBJECT_FILE = "COLA_multiobjects_matching_benchmark.json"
SINGLE_OBJECT_PREFIX = "COLA_singleobjects"


def cola_image(value: str) -> str:
    """The file name of an image URL (``.../vg_gqa_images/2414605.jpg`` -> ``2414605.jpg``);
    anything else unchanged."""
    parts = urlsplit(value)
    if parts.scheme in ("http", "https") and parts.path.rstrip("/"):
        return unquote(parts.path.rstrip("/").rsplit("/", 1)[-1])
    return value


def _convert(value: object, where: str) -> TwoImageItem:
    if not isinstance(value, list) or len(value) != 4:
        raise RecordError(where, "expected [image 1, caption 1, image 2, caption 2]")
    image_0 = image_reference(value[0], "image 1", where)
    caption_0 = require_text(value[1], "caption 1", where)
    image_1 = image_reference(value[2], "image 2", where)
    caption_1 = require_text(value[3], "caption 2", where)
    return TwoImageItem(
        image_0=cola_image(image_0),
        image_1=cola_image(image_1),
        caption_0=caption_0,
        caption_1=caption_1,
        family="swap",
        target=None,
    )


def read_cola_file(
    path: str | Path, benchmark: str = "cola", on_error: OnError = "raise"
) -> TwoImageImported:
    """The multi-object JSON list. item_id is ``cola/<file stem>/<position>``; malformed
    entries, equal captions and equal images are rejected (``key=<position>``)."""
    path = Path(path)
    if path.name.startswith(SINGLE_OBJECT_PREFIX):
        raise ImportFormatError(
            f"{path}: COLA's single-object setting (labels over 320 classes, scored by mAP) is "
            f"not a two-image set; import {MULTI_OBJECT_FILE}"
        )
    if path.suffix.lower() != ".json":
        raise ImportFormatError(f"{path}: the COLA multi-object file is JSON ({MULTI_OBJECT_FILE})")
    return read_two_image_file(
        path,
        _convert,
        id_field=None,
        benchmark=benchmark,
        prefix=f"cola/{path.stem}",
        generator=GENERATOR,
        on_error=on_error,
    )
