"""Shared pieces of the importers: the result type, errors, and candidate-row building."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA, conform


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
        positive: str,
        negatives: list[str],
        family: str,
        target: str | None,
        generator: str,
        provenance: str,
    ) -> None:
        for text, is_positive in [(positive, True), *((n, False) for n in negatives)]:
            row = {
                "benchmark": benchmark,
                "item_id": item_id,
                "image": image,
                "text": text,
                "is_positive": is_positive,
                "family": family,
                "target": target,
                "generator": generator,
                "provenance": provenance,
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
