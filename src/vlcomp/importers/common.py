"""Shared pieces of the importers: the result type, errors, and candidate-row building."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA, TWO_IMAGE_SCHEMA, conform


class ImportFormatError(ValueError):
    """A file that cannot be imported; the message names the file and the key or row."""


class RecordError(ImportFormatError):
    """One malformed record (row, key) of an otherwise readable file.

    The message is ``"<where>: <reason><detail>"``; ``reason`` alone (no offending value) is
    what a rejected row records, so that rejections can be counted per reason.
    """

    def __init__(self, where: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{where}: {reason}{detail}")
        self.where = where
        self.reason = reason


# What a reader does with a malformed record: raise ``RecordError`` (the default), or
# "reject": record it in ``Imported.rejected`` (with the reason and the record's key) and go
# on. A file that cannot be read at all (not JSON / CSV, wrong top-level shape, missing
# columns) raises ``ImportFormatError`` either way.
OnError = Literal["raise", "reject"]


def check_on_error(on_error: str) -> None:
    if on_error not in ("raise", "reject"):
        raise ValueError(f"on_error must be 'raise' or 'reject', got {on_error!r}")


def raw_json(value: object) -> str:
    """A record as compact JSON for the ``raw`` column of a rejected row."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """The file's text; a file that is not text in ``encoding`` raises naming the file."""
    try:
        return path.read_bytes().decode(encoding)
    except UnicodeDecodeError as error:
        raise ImportFormatError(
            f"{path}: not {encoding.removesuffix('-sig').upper()} text ({error})"
        ) from error


@dataclass(frozen=True)
class Imported:
    """Candidates in ``CANDIDATES_SCHEMA`` plus rows that were read but not usable.

    ``rejected`` (``REJECTED_SCHEMA``) holds well-formed rows that cannot make an item, such
    as a CREPE row whose hard-negative list is empty or a negative equal to its positive.
    Malformed input raises ``ImportFormatError`` instead, unless the reader was called with
    ``on_error="reject"``: then malformed records are rejected rows too.
    """

    candidates: pl.DataFrame
    rejected: pl.DataFrame


def source_label(path: Path) -> str:
    # Parent folder + file name: enough to tell refined/ from unrefined/ without putting
    # machine-specific absolute paths into outputs that should be byte-identical anywhere.
    return f"{path.parent.name}/{path.name}"


def region_image(image: str, x: float, y: float, width: float, height: float) -> str:
    """An image reference with its crop as a Media Fragments ``#xywh=`` suffix."""
    return f"{image}#xywh={_number(x)},{_number(y)},{_number(width)},{_number(height)}"


_REGION = re.compile(
    r"^(?P<image>.*)#xywh=(?P<x>[^,#]+),(?P<y>[^,#]+),(?P<w>[^,#]+),(?P<h>[^,#]+)$"
)


def split_region(image: str) -> tuple[str, tuple[float, float, float, float] | None]:
    """Inverse of :func:`region_image`: the bare image reference and its box (x, y, width,
    height), or None for a reference without an ``#xywh=`` suffix."""
    match = _REGION.match(image)
    if not match:
        return image, None
    try:
        box = tuple(float(match.group(k)) for k in "xywh")
    except ValueError:
        return image, None
    return match.group("image"), box  # type: ignore[return-value]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class CandidateRows:
    """Collects candidate and rejected rows column-wise, then builds the contract tables."""

    def __init__(self) -> None:
        self._columns: dict[str, list] = {name: [] for name in CANDIDATES_SCHEMA}
        self._rejected: dict[str, list] = {name: [] for name in REJECTED_SCHEMA}

    def add_item(
        self,
        *,
        benchmark: str,
        item_id: str,
        image: str | None,
        positive: str | Sequence[str],
        negatives: Sequence[str],
        family: str,
        target: str | None,
        generator: str,
        provenance: str,
        notes: Sequence[str] | None = None,
    ) -> None:
        """One item: its positive(s) first, then its negatives, in order.

        ``positive`` is one text, or several (SugarCrepe++ has two). ``notes``, one per row
        (positives then negatives), are appended to that row's provenance after ``;``
        (e.g. ``field=caption2``, ``perturbation=shuffle_trigrams``).
        """
        positives = [positive] if isinstance(positive, str) else list(positive)
        texts = [*((p, True) for p in positives), *((n, False) for n in negatives)]
        if notes is not None and len(notes) != len(texts):
            raise ValueError(f"{item_id}: {len(notes)} notes for {len(texts)} rows")
        for index, (text, is_positive) in enumerate(texts):
            note = notes[index] if notes is not None else ""
            row = {
                "benchmark": benchmark,
                "item_id": item_id,
                "image": image,
                "text": text,
                "is_positive": is_positive,
                "family": family,
                "target": target,
                "generator": generator,
                "provenance": f"{provenance};{note}" if note else provenance,
            }
            for name, value in row.items():
                self._columns[name].append(value)

    def reject(self, source: str, location: str, reason: str, raw: str) -> None:
        for name, value in zip(REJECTED_SCHEMA, (source, location, reason, raw[:500]), strict=True):
            self._rejected[name].append(value)

    def build(self) -> Imported:
        candidates = conform(
            pl.DataFrame(self._columns, schema=CANDIDATES_SCHEMA), CANDIDATES_SCHEMA, "candidates"
        )
        rejected = pl.DataFrame(self._rejected, schema=REJECTED_SCHEMA)
        return Imported(candidates, rejected)


def require_text(value: object, what: str, where: str) -> str:
    if not isinstance(value, str):
        raise RecordError(where, f"{what} must be a string", f", got {type(value).__name__}")
    if not value.strip():
        raise RecordError(where, f"{what} is empty")
    return value


def concat_imports(parts: list[Imported]) -> Imported:
    return Imported(
        pl.concat([p.candidates for p in parts])
        if parts
        else pl.DataFrame(schema=CANDIDATES_SCHEMA),
        pl.concat([p.rejected for p in parts]) if parts else pl.DataFrame(schema=REJECTED_SCHEMA),
    )


# --- JSON objects that remember repeated keys --------------------------------------------


class JsonObject(dict):
    """A JSON object that remembers the keys it repeated (later occurrences, in order)."""

    duplicates: list[tuple[str, object]]


def json_object_hook(where: str, on_error: OnError):
    """``object_pairs_hook``: raise on a repeated key, or (``reject``) keep the first
    occurrence and remember the others on the object (``JsonObject.duplicates``)."""

    def hook(pairs: list[tuple[str, object]]) -> JsonObject:
        seen = JsonObject()
        seen.duplicates = []
        for key, value in pairs:
            if key in seen:
                if on_error == "raise":
                    raise ImportFormatError(f"{where}: duplicate key {key!r}")
                seen.duplicates.append((key, value))
                continue
            seen[key] = value
        return seen

    return hook


def load_json(path: Path, on_error: OnError = "raise") -> object:
    """The parsed file; a file that is not UTF-8 JSON raises naming it."""
    try:
        return json.loads(read_text(path), object_pairs_hook=json_object_hook(str(path), on_error))
    except json.JSONDecodeError as error:
        raise ImportFormatError(f"{path}: not valid JSON ({error})") from error


def check_fields(record: object, fields: Sequence[str], where: str) -> dict:
    """``record`` as a dict holding ``fields``, or ``RecordError`` (not an object, repeated
    fields, missing fields)."""
    if not isinstance(record, dict):
        raise RecordError(where, "expected an object", f", got {type(record).__name__}")
    if getattr(record, "duplicates", None):
        keys = sorted({key for key, _ in record.duplicates})  # type: ignore[attr-defined]
        raise RecordError(where, "duplicate field(s)", f" {keys}")
    missing = [f for f in fields if f not in record]
    if missing:
        raise RecordError(where, f"missing field(s) {missing}")
    return record


# Texts that exports write in place of an image file name. Found in a real release: BiVLC's
# results CSV holds ``<PIL.JpegImagePlugin.JpegImageFile image mode=RGB size=500x332 at
# 0x7F...>`` in its image columns (pandas printing the images it was given).
_OBJECT_TEXT = re.compile(r"^<[A-Za-z_][\w.]*( [^<>]*)?>$|\bat 0x[0-9A-Fa-f]+>")
_MAPPING_TEXT = re.compile(r"^\{.*\}$", re.DOTALL)
_BYTES_TEXT = re.compile(r"^b(['\"]).*\1$", re.DOTALL)
_MISSING_TEXT = frozenset({"none", "nan", "null", "<na>"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NAME_MAX_BYTES = 255  # longest file name (one path component) of common file systems


def not_a_file_reference(value: str) -> str | None:
    """Why ``value`` cannot be an image file name or path (what an export wrote instead), or
    None when it can be one."""
    text = value.strip()
    if _OBJECT_TEXT.search(text):
        return "Python object text, such as a PIL image printed by pandas"
    if text.lower() in _MISSING_TEXT:
        return "a missing value written as text"
    if _MAPPING_TEXT.match(text):
        return "a mapping written as text, such as an inline image"
    if _BYTES_TEXT.match(text):
        return "bytes written as text"
    if text.lower().startswith("data:"):
        return "an inline data URI"
    if _CONTROL.search(value):
        return "control characters"
    if any(len(part.encode("utf-8")) > NAME_MAX_BYTES for part in re.split(r"[/\\]", text)):
        return f"a path component longer than {NAME_MAX_BYTES} bytes, such as inline image data"
    return None


def image_reference(value: object, what: str, where: str) -> str:
    """An image file reference (a file name, a relative or absolute path, or a URL): a
    non-empty string, or a Hugging Face ``Image`` feature exported as ``{"bytes": ...,
    "path": <file name>}`` (its ``path``). Every importer reads its image columns through
    here; text that cannot name a file (:func:`not_a_file_reference`) is a ``RecordError``
    naming the file and row (``where``), the column (``what``) and why."""
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        value = value["path"]
    text = require_text(value, what, where)
    problem = not_a_file_reference(text)
    if problem:
        raise RecordError(
            where, f"{what} is not an image file name or path ({problem})", f": {text[:100]!r}"
        )
    return text


def record_key(value: object, what: str, where: str) -> str:
    """A record's own id as text: a non-negative integer or a non-empty string."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise RecordError(where, f"{what} must be an integer or a string", f", got {value!r}")
    if isinstance(value, str) and not value.strip():
        raise RecordError(where, f"{what} is empty")
    return str(value)


# --- row files: JSON list or object, JSON Lines, CSV, Parquet -----------------------------


@dataclass(frozen=True)
class Record:
    """One record of a row file. ``location`` names it in the rejected table (``key=K`` for a
    JSON object keyed by id, ``record=N`` for a JSON list, ``line=N`` (1-based) for JSON
    Lines, ``row=N`` (0-based data row) for CSV and Parquet); ``key`` is the JSON object key,
    else None. ``error`` is set when the record itself could not be parsed (a JSON Lines line
    that is not JSON, a repeated object key); ``value`` is then its raw text or value."""

    location: str
    index: int  # 0-based position among the file's records
    key: str | None
    value: object
    error: str | None = None


ROW_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".parquet")


def read_records(path: Path, on_error: OnError = "raise") -> list[Record]:
    """The records of a row file, told apart by suffix: ``.json`` (a list of objects, or an
    object keyed by id), ``.jsonl`` / ``.ndjson`` (one object a line; blank lines skipped),
    ``.csv`` (header row; all values strings) or ``.parquet``. A file that cannot be read as
    its kind raises ``ImportFormatError`` naming it; so does a JSON Lines file none of whose
    lines is JSON."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = load_json(path, on_error)
        if isinstance(data, list):
            return [Record(f"record={i}", i, None, v) for i, v in enumerate(data)]
        if isinstance(data, dict):
            records = [Record(f"key={k}", i, k, v) for i, (k, v) in enumerate(data.items())]
            records += [
                Record(f"key={k}", len(records) + i, k, v, "duplicate key")
                for i, (k, v) in enumerate(getattr(data, "duplicates", []))
            ]
            return records
        raise ImportFormatError(
            f"{path}: expected a JSON list of records or an object keyed by id, got "
            f"{type(data).__name__}"
        )
    if suffix in (".jsonl", ".ndjson"):
        return _json_lines(path, on_error)
    if suffix == ".csv":
        handle = io.StringIO(read_text(path, "utf-8-sig"), newline="")
        try:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise ImportFormatError(f"{path}: empty CSV file (no header)")
            records = []
            for index, row in enumerate(reader):
                if None in row or any(v is None for v in row.values()):
                    records.append(
                        Record(f"row={index}", index, None, raw_json(row), "wrong number of fields")
                    )
                else:
                    records.append(Record(f"row={index}", index, None, dict(row)))
            return records
        except csv.Error as error:
            raise ImportFormatError(f"{path}: not a readable CSV file ({error})") from error
    if suffix == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except Exception as error:  # polars raises several kinds for a bad file
            raise ImportFormatError(f"{path}: not a readable Parquet file ({error})") from error
        rows = frame.iter_rows(named=True)
        return [Record(f"row={i}", i, None, row) for i, row in enumerate(rows)]
    raise ImportFormatError(
        f"{path}: unknown row file kind {path.suffix!r} (expected one of {list(ROW_SUFFIXES)})"
    )


def _json_lines(path: Path, on_error: OnError) -> list[Record]:
    records: list[Record] = []
    parsed = 0
    for number, line in enumerate(read_text(path, "utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            value = json.loads(line, object_pairs_hook=json_object_hook(where, "reject"))
        except json.JSONDecodeError:
            records.append(Record(f"line={number}", len(records), None, line, "not valid JSON"))
            continue
        parsed += 1
        records.append(Record(f"line={number}", len(records), None, value))
    if records and not parsed:
        raise ImportFormatError(f"{path}: no line is valid JSON (not a JSON Lines file)")
    if on_error == "raise":
        bad = next((r for r in records if r.error), None)
        if bad is not None:
            raise ImportFormatError(f"{path}, {bad.location.replace('=', ' ')}: {bad.error}")
    return records


# --- key gaps -----------------------------------------------------------------------------


def integer_key_gaps(keys: Iterable[str]) -> list[str] | None:
    """The integers missing from 0 .. max(keys), as ``"108"`` or ``"5-9"`` ranges, when every
    key is a non-negative decimal integer without leading zeros; None otherwise (keys that
    are not indices have no gaps to report)."""
    numbers = set()
    for key in keys:
        if not (key.isdecimal() and key.isascii()) or (len(key) > 1 and key[0] == "0"):
            return None
        numbers.add(int(key))
    gaps: list[str] = []
    top = max(numbers, default=-1)
    n = 0
    while n <= top:
        if n in numbers:
            n += 1
            continue
        start = n
        while n not in numbers:
            n += 1
        gaps.append(str(start) if start == n - 1 else f"{start}-{n - 1}")
    return gaps


# --- two-image sets -----------------------------------------------------------------------


@dataclass(frozen=True)
class TwoImageImported:
    """Two-image items in ``TWO_IMAGE_SCHEMA`` plus the records that could not make one."""

    items: pl.DataFrame
    rejected: pl.DataFrame


class TwoImageRows:
    """Collects two-image items and rejected rows column-wise, then builds the tables."""

    def __init__(self) -> None:
        self._columns: dict[str, list] = {name: [] for name in TWO_IMAGE_SCHEMA}
        self._rejected = CandidateRows()

    def add_item(self, **row: str | None) -> None:
        if set(row) != set(TWO_IMAGE_SCHEMA):
            raise ValueError(f"two-image row needs exactly {list(TWO_IMAGE_SCHEMA)}")
        for name, value in row.items():
            self._columns[name].append(value)

    def reject(self, source: str, location: str, reason: str, raw: str) -> None:
        self._rejected.reject(source, location, reason, raw)

    def build(self) -> TwoImageImported:
        items = conform(
            pl.DataFrame(self._columns, schema=TWO_IMAGE_SCHEMA), TWO_IMAGE_SCHEMA, "two-image"
        )
        return TwoImageImported(items, self._rejected.build().rejected)


@dataclass(frozen=True)
class TwoImageItem:
    """What a format's record gives: the two image references and captions (caption_0
    describes image_0), family, target and extra provenance (``k=v;k=v``)."""

    image_0: str
    image_1: str
    caption_0: str
    caption_1: str
    family: str
    target: str | None
    extra: str = ""


def read_two_image_file(
    path: Path,
    convert: Callable[[Any, str], TwoImageItem],
    *,
    id_field: str | None,
    id_required: bool = False,
    benchmark: str,
    prefix: str,
    generator: str,
    on_error: OnError = "raise",
) -> TwoImageImported:
    """Read a row file (:func:`read_records`) whose records ``convert(record, where)`` turns
    into a :class:`TwoImageItem` (or raises ``RecordError``).

    A record's key is its ``id_field`` value when it has one, else its JSON object key, else
    its 0-based position in the file (with ``id_required``, a record without an id is
    rejected instead); item_id is ``<prefix>/<key>``. Rejected, located by
    ``key=<key>`` (or, for a record whose id cannot be read, by ``record=`` / ``line=`` /
    ``row=``): malformed records, every occurrence of an id after its first (``duplicate
    id``), items whose two captions or two images are equal.
    """
    check_on_error(on_error)
    return two_image_items(
        path,
        read_records(path, on_error),
        convert,
        id_field=id_field,
        id_required=id_required,
        benchmark=benchmark,
        prefix=prefix,
        generator=generator,
        on_error=on_error,
    )


def two_image_items(
    path: Path,
    records: Iterable[Record],
    convert: Callable[[Any, str], TwoImageItem],
    *,
    id_field: str | None,
    id_required: bool = False,
    benchmark: str,
    prefix: str,
    generator: str,
    on_error: OnError = "raise",
) -> TwoImageImported:
    """The two-image items of ``records`` (read from ``path``), as
    :func:`read_two_image_file` describes. With ``id_field`` None a record need not be an
    object (``convert`` checks its shape) and its key is its ``Record.key``, else its
    position."""
    check_on_error(on_error)
    label = source_label(path)
    rows = TwoImageRows()
    seen: set[str] = set()
    for record in records:
        where = f"{path}, {record.location.replace('=', ' ', 1)}"
        raw = record.value if isinstance(record.value, str) else raw_json(record.value)
        if record.error:
            if on_error == "raise":
                raise RecordError(where, record.error)
            rows.reject(label, record.location, record.error, raw)
            continue
        location = record.location
        try:
            value = record.value
            if id_field is not None:
                value = check_fields(value, (), where)
            if id_field is not None and value.get(id_field) is not None:
                key = record_key(value[id_field], id_field, where)
                where = f"{path}, key {key!r}"
            elif id_required:
                raise RecordError(where, f"missing field(s) {[id_field]}")
            elif record.key is not None:
                key = record.key
                where = f"{path}, key {key!r}"
            else:  # keyed by position: the message keeps naming the row / record / line
                key = str(record.index)
            location = f"key={key}"
            item = convert(value, where)
            if key in seen:
                raise RecordError(where, "duplicate id")
            if item.caption_0 == item.caption_1:
                raise RecordError(where, "captions are equal")
            if item.image_0 == item.image_1:
                raise RecordError(where, "images are equal")
        except RecordError as error:
            if on_error == "raise":
                raise
            rows.reject(label, location, error.reason, raw)
            continue
        seen.add(key)
        extra = f";{item.extra}" if item.extra else ""
        rows.add_item(
            benchmark=benchmark,
            item_id=f"{prefix}/{key}",
            image_0=item.image_0,
            image_1=item.image_1,
            caption_0=item.caption_0,
            caption_1=item.caption_1,
            family=item.family,
            target=item.target,
            generator=generator,
            provenance=f"{label}#key={key}{extra}",
        )
    return rows.build()
