"""VALSE (Parcalabescu et al., ACL 2022) JSON files as 1+1 candidate sets.

The release (github.com/Heidelberg-NLP/VALSE, ``data/``) has one file per instrument of a
piece (``existence.json``, ``plurals.json``, ``counting-hard.json``,
``counting-small-quant.json``, ``counting-adversarial.json``, ``relations.json``,
``action-replacement.json``, ``actant-swap.json``, ``coreference-standard.json``,
``coreference-hard.json``, ``foil-it.json``). Each is a JSON object keyed by sample id
(``"actions_test_0"``, ``"existence_visual7w_2371044"``, ``"1283539"``...) whose values hold
``image_file`` (a file name of the source ``dataset``: visual7w, SWiG, VisDial, COCO),
``caption`` (describes the image), ``foil`` (the caption with one phrase changed so that it
no longer does), ``linguistic_phenomena`` and ``mturk``: three annotators' votes, ``caption``
counting those who chose the caption and not the foil.

The release mixes validated and non-validated samples; its README defines the valid set as
``mturk.caption >= 2`` and the authors' evaluation scores only those. ``validated_only``
(default true) rejects the others (reason ``not validated (mturk caption votes < 2)``).

Each item is the image with the caption as its positive and the foil as its negative. The
authors' CLIP metric is pairwise ranking accuracy (acc_r): the caption strictly above the
foil, chance 0.5. ``family`` / ``target`` come from the file name (piece / instrument:
``counting`` / ``hard``, ``actions`` / ``swap``, ...), so that metrics break down per
instrument as the paper reports them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
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
    require_text,
    source_label,
)

GENERATOR = "imported:valse"
FIELDS = ("image_file", "caption", "foil")
# file stem -> (family = piece, target = instrument)
VALSE_FILES: dict[str, tuple[str, str | None]] = {
    "existence": ("existence", None),
    "plurals": ("plurality", None),
    "counting-hard": ("counting", "hard"),
    "counting-small-quant": ("counting", "small_quant"),
    "counting-adversarial": ("counting", "adversarial"),
    "relations": ("relations", None),
    "action-replacement": ("actions", "replacement"),
    "actant-swap": ("actions", "swap"),
    "coreference-standard": ("coreference", "standard"),
    "coreference-hard": ("coreference", "hard"),
    "foil-it": ("noun_phrases", "foil_it"),
}
MIN_VOTES = 2  # README: valid when at least two of three annotators chose the caption only
NOT_VALIDATED = f"not validated (mturk caption votes < {MIN_VOTES})"


def valse_file_piece(path: str | Path) -> tuple[str, str | None] | None:
    """(piece, instrument) of a released VALSE file name, or None."""
    return VALSE_FILES.get(Path(path).stem.lower())


def _votes(record: dict, where: str) -> int:
    mturk = record.get("mturk")
    if mturk is None:
        raise RecordError(where, "missing field(s) ['mturk']")
    if not isinstance(mturk, dict) or "caption" not in mturk:
        raise RecordError(where, "mturk must be an object with a caption count")
    votes = mturk["caption"]
    if isinstance(votes, bool) or not isinstance(votes, int):
        raise RecordError(where, "mturk caption count must be an integer", f", got {votes!r}")
    return votes


def _check_options(validated_only: object, image_folders: object) -> dict[str, str]:
    if not isinstance(validated_only, bool):
        raise ValueError(
            f"valse option validated_only must be true or false, got {validated_only!r}"
        )
    if not isinstance(image_folders, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in image_folders.items()
    ):
        raise ValueError(
            "valse option image_folders must map a record's dataset (visual7w, SWiG, ...) to a "
            f"folder, got {image_folders!r}"
        )
    return dict(image_folders)


def read_valse_file(
    path: str | Path,
    benchmark: str = "valse",
    on_error: OnError = "raise",
    *,
    validated_only: bool = True,
    image_folders: Mapping[str, str] | None = None,
) -> Imported:
    """One VALSE file. item_id is ``valse/<file stem>/<sample id>``; the image is
    ``image_file``, under ``image_folders[dataset]`` when that maps the record's ``dataset``
    (so that one images folder can hold every source dataset).

    Rejected with ``on_error="reject"`` (located by ``key=<sample id>``): malformed records,
    a repeated sample id, non-validated samples (with ``validated_only``) and samples whose
    foil equals the caption. A file that is not a JSON object raises naming it.
    """
    check_on_error(on_error)
    path = Path(path)
    folders = _check_options(validated_only, image_folders or {})
    if path.suffix.lower() != ".json":
        raise ImportFormatError(f"{path}: VALSE files are JSON (<instrument>.json)")
    family, target = valse_file_piece(path) or (path.stem.lower().replace("-", "_"), None)
    label = source_label(path)
    rows = CandidateRows()
    records = read_records(path, on_error)
    if records and all(r.key is None for r in records):
        raise ImportFormatError(f"{path}: expected a JSON object keyed by sample id, got a list")
    for record in records:
        location = record.location
        where = f"{path}, {location.replace('=', ' ', 1)}"
        try:
            if record.error:
                raise RecordError(where, record.error)
            value = check_fields(record.value, FIELDS, where)
            image = image_reference(value["image_file"], "image_file", where)
            caption = require_text(value["caption"], "caption", where)
            foil = require_text(value["foil"], "foil", where)
            dataset = value.get("dataset")
            if dataset is not None and not isinstance(dataset, str):
                raise RecordError(where, "dataset must be a string", f", got {dataset!r}")
            votes = _votes(value, where) if validated_only or "mturk" in value else None
            if validated_only and votes is not None and votes < MIN_VOTES:
                raise RecordError(where, NOT_VALIDATED)
            if foil == caption:
                raise RecordError(where, "foil equals caption")
        except RecordError as error:
            if on_error == "raise":
                raise
            raw = record.value if isinstance(record.value, str) else raw_json(record.value)
            rows.reject(label, location, error.reason, raw)
            continue
        folder = folders.get(dataset) if dataset is not None else None
        notes = [f"dataset={dataset}"] if dataset is not None else []
        if votes is not None:
            notes.append(f"mturk_caption={votes}")
        rows.add_item(
            benchmark=benchmark,
            item_id=f"valse/{path.stem}/{record.key}",
            image=posixpath.join(folder, image) if folder else image,
            positive=caption,
            negatives=[foil],
            family=family,
            target=target,
            generator=GENERATOR,
            provenance=";".join([f"{label}#key={record.key}", *notes]),
        )
    return rows.build()
