"""The YFCC100M metadata reader (``yfcc_tsv``): titles and descriptions as captions, and
the photo-id subset (OpenAI's ``yfcc100m_subset_data.tsv``) that limits which are read."""

from __future__ import annotations

import array
import html
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import numpy as np

from vlcomp.text import collapse_spaces

from .jsonstream import CorruptInputError
from .reader_types import (
    Candidate,
    IngestOptionsError,
    Item,
    Rejected,
    Shared,
    decode_utf8,
    raw_text,
)
from .text_formats import MAX_LINE_BYTES, iter_lines

_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_YFCC_TEXT_MODES = ("title", "description", "title_description", "separate")


def yfcc_text(field: str, opts: Mapping[str, Any]) -> str | None:
    """A YFCC100M title or description as text: '+' is a space and %XX an UTF-8 byte
    (``unquote_plus``: decoding the percent escapes after replacing '+' keeps an encoded
    '%2B' as a literal plus), then HTML entities, tags and URLs removed as configured.
    None when the escapes do not decode as UTF-8."""
    try:
        text = unquote_plus(field, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        return None
    if opts["strip_html"]:
        text = _HTML_TAG.sub(" ", html.unescape(text))
    if opts["strip_urls"]:
        text = _URL.sub(" ", text)
    return collapse_spaces(text)


def _join(title: str, description: str) -> str:
    if not title or not description:
        return title or description
    sep = " " if title[-1] in ".!?:;" else ". "
    return title + sep + description


def load_subset_ids(path: Path, column: int) -> np.ndarray:
    """Sorted photo ids from OpenAI's ``yfcc100m_subset_data.tsv`` (line number, photo id,
    hash per line, no header); ``column`` picks the id column (0-based)."""
    ids = array.array("q")  # 8 bytes per id: 15M ids take 120 MB, not a list's ~0.5 GB
    for n, line, complete in iter_lines(path, MAX_LINE_BYTES):
        if not complete:
            raise CorruptInputError(path, f"line {n}", "line too long for a subset file")
        if not line.strip():
            continue
        try:
            ids.append(int(line.split(b"\t")[column]))
        except (IndexError, ValueError):
            raise CorruptInputError(path, f"line {n}", "expected an integer photo id") from None
    return np.unique(np.frombuffer(ids, dtype=np.int64))


def _yfcc_columns(header: list[str] | None, opts: Mapping[str, Any], path: Path) -> list[int]:
    wanted = [opts["id_column"], opts["title_column"], opts["description_column"]]
    if header is None:
        if not all(isinstance(c, int) and c >= 0 for c in wanted):
            raise IngestOptionsError(
                "yfcc_tsv: with header: false, id_column, title_column and description_column "
                "must be 0-based column indices"
            )
        return wanted
    index = {name.strip(): k for k, name in enumerate(header)}
    missing = [c for c in wanted if isinstance(c, str) and c not in index]
    if missing:
        raise CorruptInputError(path, "line 1", f"header lacks column(s) {missing}")
    return [index[c] if isinstance(c, str) else c for c in wanted]


def read_yfcc_tsv(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """YFCC100M metadata TSV (the 15M subset CLIP used, or the full dump).

    With ``header: true`` (default) the first line names the columns and ``id_column``,
    ``title_column``, ``description_column`` are names (defaults: photoid, title,
    description); with ``header: false`` they are 0-based indices. image_id is the photo
    id. ``text`` chooses the caption: title, description, title_description (both, joined
    by ". "; default) or separate (one caption each, ids ``.../title``, ``.../description``;
    an empty part is not a caption). Photo ids not in ``subset`` (when given) are skipped
    and counted as ``not_in_subset`` (a filter, not a rejection).
    """
    subset = (shared or Shared()).subset
    mode = opts["text"]
    if mode not in _YFCC_TEXT_MODES:
        raise IngestOptionsError(f"yfcc_tsv.text: {mode!r} is not one of {_YFCC_TEXT_MODES}")
    lines = iter_lines(path, opts["max_line_bytes"])
    header = None
    if opts["header"]:
        first = next(lines, None)
        if first is None:
            raise CorruptInputError(path, "line 1", "empty file, expected a header")
        header = (decode_utf8(first[1]) or "").split("\t")
    cols = _yfcc_columns(header, opts, path)
    need = max(cols) + 1
    for n, line, complete in lines:
        loc = f"line {n}"
        if not complete:
            yield Rejected(loc, "too_long", raw_text(line))
            continue
        text = decode_utf8(line)
        if text is None:
            yield Rejected(loc, "bad_encoding", raw_text(line))
            continue
        fields = text.split("\t")
        if len(fields) < need:
            yield Rejected(loc, "empty" if not text.strip() else "missing_columns", text)
            continue
        photo = fields[cols[0]].strip()
        if subset is not None:
            try:
                pid = int(photo)
            except ValueError:
                yield Rejected(loc, "malformed_row", text)
                continue
            k = int(np.searchsorted(subset, pid))
            if k == len(subset) or subset[k] != pid:
                yield Rejected(loc, "not_in_subset", None)
                continue
        title, description = yfcc_text(fields[cols[1]], opts), yfcc_text(fields[cols[2]], opts)
        if title is None or description is None:
            yield Rejected(loc, "bad_encoding", text)
            continue
        base = f"{corpus}/{key}/{n}"
        image = photo or None
        if mode == "separate":
            parts = [(p, t) for p, t in (("title", title), ("description", description)) if t]
            if not parts:
                yield Rejected(loc, "empty", text)
            for part, t in parts:
                yield Candidate(f"{base}/{part}", image, t, f"{loc} {part}")
            continue
        caption = {"title": title, "description": description}.get(mode)
        if caption is None:
            caption = _join(title, description)
        yield Candidate(base, image, caption, loc)
