"""Shared pieces of the importers: the result type, errors, and candidate-row building."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA, conform


class ImportFormatError(ValueError):
    """A file that cannot be imported; the message names the file and the key or row."""


@dataclass(frozen=True)
class Imported:
    """Candidates in ``CANDIDATES_SCHEMA`` plus rows that were read but not usable.

    ``rejected`` (``REJECTED_SCHEMA``) holds well-formed rows that cannot make an item, such
    as a CREPE row whose hard-negative list is empty or a negative equal to its positive.
    Malformed input raises ``ImportFormatError`` instead.
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
        raise ImportFormatError(f"{where}: {what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ImportFormatError(f"{where}: {what} is empty")
    return value


def concat_imports(parts: list[Imported]) -> Imported:
    return Imported(
        pl.concat([p.candidates for p in parts])
        if parts
        else pl.DataFrame(schema=CANDIDATES_SCHEMA),
        pl.concat([p.rejected for p in parts]) if parts else pl.DataFrame(schema=REJECTED_SCHEMA),
    )
