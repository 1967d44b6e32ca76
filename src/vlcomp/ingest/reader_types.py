"""What every corpus reader yields and shares.

A reader yields, in file order, a ``Candidate`` (a caption to screen with ``rules.screen``)
or a ``Rejected`` row (the reader could not make a caption of that part of the file). The
readers of one job share a ``Shared`` state: the dataset ids seen so far (``SeenIds``) and
the YFCC subset to keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np


class Candidate(NamedTuple):
    caption_id: str
    image_id: str | None
    text: Any  # raw text, not yet screened (None or a non-string when missing)
    location: str


class Rejected(NamedTuple):
    location: str
    reason: str
    raw: Any


Item = Candidate | Rejected

# Reasons for rows a configured filter skips on purpose: counted, not written as rejected.
FILTERED: frozenset[str] = frozenset({"not_in_subset"})


class IngestOptionsError(ValueError):
    """An invalid ingest option (the message names the key)."""


class SeenIds:
    """Exact duplicate detection for dataset ids with little memory for small integers.

    Non-negative integer ids below ``BITMAP_LIMIT`` set a bit in a growing bitmap (Visual
    Genome region ids need < 1 MB); other ids go into a set.
    """

    BITMAP_LIMIT = 1 << 27  # at most 16 MiB of bitmap

    def __init__(self) -> None:
        self.bits = bytearray()
        self.other: set[Any] = set()

    def add(self, value: Any) -> bool:
        """Record ``value``; False when it was seen before."""
        if type(value) is int and 0 <= value < self.BITMAP_LIMIT:
            byte, bit = divmod(value, 8)
            if byte >= len(self.bits):
                self.bits.extend(bytes(max(byte + 1 - len(self.bits), len(self.bits))))
            if self.bits[byte] >> bit & 1:
                return False
            self.bits[byte] |= 1 << bit
            return True
        key = (type(value).__name__, value)
        if key in self.other:
            return False
        self.other.add(key)
        return True


@dataclass
class Shared:
    """State the readers of one job share across its input files."""

    seen: SeenIds = field(default_factory=SeenIds)
    subset: np.ndarray | None = None  # sorted YFCC photo ids to keep


def decode_utf8(line: bytes) -> str | None:
    """``line`` as UTF-8 text, or None when it is not valid UTF-8."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


def raw_text(line: bytes) -> str:
    """``line`` as text for a rejected row: bytes that are not UTF-8 become U+FFFD."""
    return line.decode("utf-8", errors="replace")
