"""SVO-Probes (Hendricks and Nematzadeh, Findings of ACL 2021) as an image-selection set.

The benchmark (github.com/deepmind/svo_probes) is one CSV, ``svo_probes.csv``: per row a
``sentence``, the image it describes (``pos_image_id``, ``pos_url``, its triplet
``pos_triplet`` such as ``man,sit,grass``) and a negative image (``neg_image_id``,
``neg_url``, ``neg_triplet``) that differs from it in the subject, the verb or the object;
the boolean columns ``subj_neg``, ``verb_neg``, ``obj_neg`` say which. The authors' Colab
(``probing_image_text_models.ipynb``) keeps the rows with exactly one of the three flags
set and reports accuracy per negative type (Subj, Verb, Obj) and over all, for a model
that says match / no match per (sentence, image): the mean of its accuracy on the positive
and on the negative pairs. A CLIP-style similarity has no threshold, so vlcomp compares the
two images of a row instead (image selection, as the Winoground image score does per
caption).

Here each row is one item (``contracts.IMAGE_SELECTION_SCHEMA``): ``caption`` the sentence,
``image_0`` the positive image, ``image_1`` the negative one, both named by the option
``image_name`` (default ``{image_id}.jpg``: the id with the extension the downloaders use;
``{url_name}`` is the URL's file name), ``family`` subject / verb / object. A model picks the
image it scores higher for the sentence (``evaluate.two_image``: image selection, chance
0.5, a tie wrong). item_id is ``svo_probes/<index>`` (the file's ``index`` column, else the
row's position). A row is rejected (``key=<index>`` or ``row=<position>``) when a field is
missing or empty, an image id is not an integer, a flag is not a boolean, not exactly one
flag is set (the Colab drops those rows too), the two images are the same, or its index
repeats an earlier one.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import polars as pl

from vlcomp.contracts import IMAGE_SELECTION_SCHEMA, conform
from vlcomp.importers.common import (
    CandidateRows,
    ImportFormatError,
    OnError,
    RecordError,
    TwoImageImported,
    check_on_error,
    image_reference,
    raw_json,
    read_records,
    require_text,
    source_label,
)

GENERATOR = "imported:svo_probes"
REQUIRED = ("sentence", "pos_image_id", "neg_image_id", "subj_neg", "verb_neg", "obj_neg")
OPTIONAL = ("index", "pos_triplet", "neg_triplet", "pos_url", "neg_url")
# flag column -> family (the Colab's Subj / Verb / Obj)
NEGATIVE_TYPES = {"subj_neg": "subject", "verb_neg": "verb", "obj_neg": "object"}
IMAGE_NAME = "{image_id}.jpg"
_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


def _flag(value: str, column: str, where: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise RecordError(where, f"{column} is not a boolean", f": {value!r}")


def _image_id(value: str, column: str, where: str) -> str:
    text = require_text(value, column, where).strip()
    if not text.isdigit():
        raise RecordError(where, f"{column} is not an integer", f": {value!r}")
    return str(int(text))


def _url_name(url: str | None) -> str:
    if not url or not url.strip():
        return ""
    return PurePosixPath(unquote(urlsplit(url.strip()).path)).name


def _image_name(template: str, image_id: str, url: str | None, side: str, where: str) -> str:
    url_name = _url_name(url)
    if "{url_name}" in template and not url_name:
        raise RecordError(where, f"{side}_url is empty (image_name uses {{url_name}})")
    if "{url_name}" in template:
        image_reference(url_name, f"{side}_url", where)
    return template.format(image_id=image_id, url_name=url_name)


def _check_template(template: object) -> str:
    if not isinstance(template, str) or not ("{image_id}" in template or "{url_name}" in template):
        raise ValueError(
            f"svo_probes option image_name must be a string with {{image_id}} or {{url_name}}, "
            f"got {template!r}"
        )
    try:
        template.format(image_id="1", url_name="x.jpg")
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(f"svo_probes option image_name {template!r}: {error}") from None
    return template


def read_svo_probes_file(
    path: str | Path,
    benchmark: str = "svo_probes",
    on_error: OnError = "raise",
    *,
    image_name: str = IMAGE_NAME,
) -> TwoImageImported:
    """``svo_probes.csv`` as image-selection items (``IMAGE_SELECTION_SCHEMA``, in
    ``TwoImageImported.items``) plus the rows that could not make one (see the module
    docstring). A file that is not a CSV with the columns of ``REQUIRED`` raises naming it."""
    check_on_error(on_error)
    path = Path(path)
    template = _check_template(image_name)
    if path.suffix.lower() != ".csv":
        raise ImportFormatError(f"{path}: SVO-Probes is a CSV file (svo_probes.csv)")
    records = read_records(path, on_error)
    header = next((r.value for r in records if isinstance(r.value, dict)), None)
    missing = [c for c in REQUIRED if header is not None and c not in header]
    if header is None or missing:
        raise ImportFormatError(
            f"{path}: expected the columns {list(REQUIRED)} (SVO-Probes svo_probes.csv)"
            + (f"; missing {missing}" if missing else "; no readable row")
        )
    label = source_label(path)
    columns: dict[str, list] = {name: [] for name in IMAGE_SELECTION_SCHEMA}
    rejected = CandidateRows()
    seen: set[str] = set()
    for record in records:
        where = f"{path}, {record.location.replace('=', ' ', 1)}"
        raw = record.value if isinstance(record.value, str) else raw_json(record.value)
        location = record.location
        try:
            if record.error:
                raise RecordError(where, record.error)
            row = record.value
            index = (row.get("index") or "").strip()
            key = index if index else str(record.index)
            if index:
                location, where = f"key={key}", f"{path}, key {key!r}"
            if key in seen:
                raise RecordError(where, "duplicate id")
            sentence = require_text(row["sentence"], "sentence", where).strip()
            positive = _image_id(row["pos_image_id"], "pos_image_id", where)
            negative = _image_id(row["neg_image_id"], "neg_image_id", where)
            flags = [c for c in NEGATIVE_TYPES if _flag(row[c], c, where)]
            if len(flags) != 1:
                raise RecordError(
                    where,
                    "not exactly one negative type (subj_neg, verb_neg, obj_neg)",
                    f": {flags or 'none'}",
                )
            if positive == negative:
                raise RecordError(where, "images are equal")
            image_0 = _image_name(template, positive, row.get("pos_url"), "pos", where)
            image_1 = _image_name(template, negative, row.get("neg_url"), "neg", where)
        except RecordError as error:
            if on_error == "raise":
                raise
            rejected.reject(label, location, error.reason, raw)
            continue
        seen.add(key)
        triplets = ";".join(
            f"{c}={row[c].strip()}" for c in ("pos_triplet", "neg_triplet") if row.get(c)
        )
        values = {
            "benchmark": benchmark,
            "item_id": f"svo_probes/{key}",
            "image_0": image_0,
            "image_1": image_1,
            "caption": sentence,
            "family": NEGATIVE_TYPES[flags[0]],
            "target": None,
            "generator": GENERATOR,
            "provenance": f"{label}#key={key}" + (f";{triplets}" if triplets else ""),
        }
        for name, value in values.items():
            columns[name].append(value)
    items = conform(
        pl.DataFrame(columns, schema=IMAGE_SELECTION_SCHEMA),
        IMAGE_SELECTION_SCHEMA,
        "image-selection",
    )
    return TwoImageImported(items, rejected.build().rejected)
