"""Readers of caption corpora in text formats: CC12M TSV, caption lines, JSON lines, CSV.

Files are read line by line (``iter_lines``; CSV through the ``csv`` module, whose quoted
fields may span lines), decompressed on the fly; a line over ``max_line_bytes`` is never
held in memory. caption_id is ``<corpus>/<file key>/<line or row>`` (numbers from 1), or
``<corpus>/<id>`` from a configured id field or column (checked for duplicates).
"""

from __future__ import annotations

import csv
import io
import json
import lzma
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .jsonstream import CorruptInputError, open_binary
from .reader_types import Candidate, Item, Rejected, Shared, decode_utf8, raw_text

MAX_LINE_BYTES = 1 << 20


def iter_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, line without its end, complete) for each line of ``path``.

    A line longer than ``max_line_bytes`` is not held in memory: its first
    ``max_line_bytes`` bytes are yielded with ``complete`` False and the rest is skipped.
    Compressed files (.gz, .bz2, .xz) are decompressed on the fly; a broken stream raises
    ``CorruptInputError`` with the line and decompressed byte offset.
    """
    number, offset = 0, 0
    with open_binary(path) as handle:
        while True:
            try:
                line = handle.readline(max_line_bytes + 1)
                if not line:
                    return
                number += 1
                offset += len(line)
                complete = len(line) <= max_line_bytes or line.endswith(b"\n")
                if not complete:
                    rest = line
                    while rest and not rest.endswith(b"\n"):
                        rest = handle.readline(MAX_LINE_BYTES)
                        offset += len(rest)
            except (OSError, EOFError, lzma.LZMAError) as err:
                where = f"line {number + 1} (byte {offset})"
                raise CorruptInputError(path, where, f"unreadable: {err}") from None
            yield number, line.rstrip(b"\r\n"), complete


def _decoded_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, str, str | Rejected]]:
    """(line number, location, text) per line; the text is a ``Rejected`` for a line that is
    too long or not valid UTF-8."""
    for n, line, complete in iter_lines(path, max_line_bytes):
        loc = f"line {n}"
        if not complete:
            yield n, loc, Rejected(loc, "too_long", raw_text(line))
            continue
        text = decode_utf8(line)
        yield n, loc, Rejected(loc, "bad_encoding", raw_text(line)) if text is None else text


def read_cc12m_tsv(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """CC12M: no header, ``<url>\\t<caption>`` per line; image_id is the URL."""
    for n, loc, text in _decoded_lines(path, opts["max_line_bytes"]):
        if isinstance(text, Rejected):
            yield text
            continue
        fields = text.split("\t")
        if len(fields) != 2:
            if not text.strip():
                yield Rejected(loc, "empty", text)
            else:
                reason = "missing_columns" if len(fields) < 2 else "extra_columns"
                yield Rejected(loc, reason, text)
            continue
        url, caption = fields
        if not url.strip():
            yield Rejected(loc, "missing_field", text)
            continue
        yield Candidate(f"{corpus}/{key}/{n}", url.strip(), caption, loc)


def read_text_lines(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """A user corpus: one caption per line, no image."""
    for n, loc, text in _decoded_lines(path, opts["max_line_bytes"]):
        yield (
            text
            if isinstance(text, Rejected)
            else Candidate(f"{corpus}/{key}/{n}", None, text, loc)
        )


def read_text_jsonl(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """A user corpus as JSON lines: one object per line with ``text_field`` (and optional
    ``id_field``, ``image_field``)."""
    seen = (shared or Shared()).seen
    text_field, id_field, image_field = opts["text_field"], opts["id_field"], opts["image_field"]
    for n, line, complete in iter_lines(path, opts["max_line_bytes"]):
        loc = f"line {n}"
        if not complete:
            yield Rejected(loc, "too_long", raw_text(line))
            continue
        if not line.strip():
            yield Rejected(loc, "empty", "")
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            yield Rejected(loc, "broken_json", raw_text(line))
            continue
        if not isinstance(obj, dict):
            yield Rejected(loc, "malformed_row", raw_text(line))
            continue
        caption_id = f"{corpus}/{key}/{n}"
        if id_field is not None:
            own = obj.get(id_field)
            if own is None or isinstance(own, dict | list):
                yield Rejected(loc, "missing_field", raw_text(line))
                continue
            if not seen.add(own):
                yield Rejected(loc, "duplicate_id", raw_text(line))
                continue
            caption_id = f"{corpus}/{own}"
        image = obj.get(image_field) if image_field is not None else None
        yield Candidate(caption_id, None if image is None else str(image), obj.get(text_field), loc)


def read_text_csv(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """A user corpus as CSV with a header row: ``text_column`` (and optional ``id_column``,
    ``image_column``); quoted fields may span lines. Rows are numbered from 1 after the
    header."""
    seen = (shared or Shared()).seen
    text_col, id_col, image_col = opts["text_column"], opts["id_column"], opts["image_column"]
    with open_binary(path) as raw:
        handle = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise CorruptInputError(path, "line 1", "empty file, expected a header row")
        missing = [c for c in (text_col, id_col, image_col) if c is not None and c not in header]
        if missing:
            raise CorruptInputError(path, "line 1", f"header has no column(s) {missing}")
        index = {name: i for i, name in enumerate(header)}
        for n, row in enumerate(reader, 1):
            loc = f"row {n}"
            if not any(field.strip() for field in row):
                yield Rejected(loc, "empty", "")
                continue
            if len(row) != len(header):
                reason = "missing_columns" if len(row) < len(header) else "extra_columns"
                yield Rejected(loc, reason, ",".join(row))
                continue
            caption_id = f"{corpus}/{key}/{n}"
            if id_col is not None:
                own = row[index[id_col]].strip()
                if not own:
                    yield Rejected(loc, "missing_field", ",".join(row))
                    continue
                if not seen.add(own):
                    yield Rejected(loc, "duplicate_id", ",".join(row))
                    continue
                caption_id = f"{corpus}/{own}"
            image = row[index[image_col]].strip() if image_col is not None else ""
            yield Candidate(caption_id, image or None, row[index[text_col]], loc)
