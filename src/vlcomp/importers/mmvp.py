"""MMVP-VLM (Tong et al., CVPR 2024) as a two-image set.

The benchmark (Hugging Face ``MMVP/MMVP_VLM``; read by ``scripts/evaluate_vlm.py`` of
github.com/tsb0601/MMVP) is a folder with ``Questions.csv`` (columns ``Question ID``,
``Type``, ``Statement``) and ``MLLM_VLM Images/<Type>/<Question ID>.jpg``. The authors'
script walks the CSV two rows at a time: rows 2k and 2k+1 are a pair of images and
statements (the odd id first), statement i describes image i, and both images are in the
folder of the first row's ``Type``. It prefixes every statement with ``"a photo of "``, and
counts a pair right when each statement gives its own image the higher probability of the
two (softmax over the two images): Winoground's image score, chance 0.25. Results are per
visual pattern (9 patterns x 15 pairs).

Here each pair of rows is one item: images ``<Type>/<id>.jpg`` (relative to the eval set's
images folder, ``MLLM_VLM Images``), captions ``text_prefix + Statement`` (default the
authors' ``"a photo of "``), ``family`` the pattern (``Type`` in lower case with ``_`` for
spaces: ``orientation``, ``camera_perspective``, ...), item_id ``mmvp_vlm/<id 1>-<id 2>``.
A pair is rejected (located by ``key=<id 1>-<id 2>``, or ``row=<first row>``) when a row is
malformed, when its ids are not an odd id and the next one, when its two rows name different
types, or when it repeats a pair; a last row without a partner is rejected too.
"""

from __future__ import annotations

from pathlib import Path

from vlcomp.importers.common import (
    ImportFormatError,
    OnError,
    Record,
    RecordError,
    TwoImageImported,
    TwoImageItem,
    check_on_error,
    image_reference,
    read_records,
    require_text,
    two_image_items,
)

GENERATOR = "imported:mmvp_vlm"
COLUMNS = ("Question ID", "Type", "Statement")
QUESTIONS_FILE = "Questions.csv"
TEXT_PREFIX = "a photo of "  # scripts/evaluate_vlm.py


def pattern_family(kind: str) -> str:
    """``Camera Perspective`` -> ``camera_perspective``."""
    return "_".join(kind.lower().split())


def _question_id(row: dict, where: str) -> int:
    raw = row["Question ID"]
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        return int(text)
    except (TypeError, ValueError):
        raise RecordError(where, "Question ID is not an integer", f": {raw!r}") from None


def _pairs(records: list[Record]) -> list[Record]:
    """Rows 2k and 2k+1 as one record each (the authors' pairing), located by the first
    row (or by the row that could not be read); an odd last row is a record with an error."""
    pairs = []
    for k in range(0, len(records), 2):
        first = records[k]
        if k + 1 == len(records):
            error = "unpaired row (MMVP-VLM pairs consecutive rows)"
            pairs.append(Record(first.location, k // 2, None, first.value, error))
            continue
        second = records[k + 1]
        value = [first.value, second.value]
        bad = first if first.error else second if second.error else None
        if bad is not None:
            pairs.append(Record(bad.location, k // 2, None, value, bad.error))
            continue
        key = "-".join(str(row["Question ID"]).strip() for row in value)
        pairs.append(Record(first.location, k // 2, key, value))
    return pairs


def _converter(prefix: str):
    def convert(value: list[dict], where: str) -> TwoImageItem:
        first, second = value
        ids = (_question_id(first, where), _question_id(second, where))
        if ids[0] % 2 != 1 or ids[1] != ids[0] + 1:
            raise RecordError(where, "Question IDs are not an odd id and the next one")
        kinds = [image_reference(row["Type"], "Type", where).strip() for row in value]
        if kinds[0] != kinds[1]:
            raise RecordError(where, "the two rows name different types")
        statements = [require_text(row["Statement"], "Statement", where) for row in value]
        return TwoImageItem(
            image_0=f"{kinds[0]}/{ids[0]}.jpg",
            image_1=f"{kinds[0]}/{ids[1]}.jpg",
            caption_0=prefix + statements[0],
            caption_1=prefix + statements[1],
            family=pattern_family(kinds[0]),
            target=None,
            extra=f"type={kinds[0]}",
        )

    return convert


def read_mmvp_file(
    path: str | Path,
    benchmark: str = "mmvp_vlm",
    on_error: OnError = "raise",
    *,
    text_prefix: str = TEXT_PREFIX,
) -> TwoImageImported:
    """``Questions.csv`` as pairs of consecutive rows (see the module docstring). A file
    that is not a CSV with the columns ``Question ID, Type, Statement`` raises naming it."""
    check_on_error(on_error)
    path = Path(path)
    if not isinstance(text_prefix, str):
        raise ValueError(f"mmvp_vlm option text_prefix must be a string, got {text_prefix!r}")
    if path.suffix.lower() != ".csv":
        raise ImportFormatError(f"{path}: MMVP-VLM questions are a CSV file ({QUESTIONS_FILE})")
    records = read_records(path, on_error)
    header = next((r.value for r in records if isinstance(r.value, dict)), None)
    missing = [c for c in COLUMNS if header is not None and c not in header]
    if header is None or missing:
        raise ImportFormatError(
            f"{path}: expected the columns {list(COLUMNS)} (MMVP-VLM {QUESTIONS_FILE})"
            + (f"; missing {missing}" if missing else "; no readable row")
        )
    return two_image_items(
        path,
        _pairs(records),
        _converter(text_prefix),
        id_field=None,
        benchmark=benchmark,
        prefix="mmvp_vlm",
        generator=GENERATOR,
        on_error=on_error,
    )
