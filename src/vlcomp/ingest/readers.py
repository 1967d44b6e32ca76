"""Generator-style readers of caption corpora in their native formats.

Each reader walks one input file and yields, in file order, a ``Candidate`` (a caption to
screen with ``rules.screen``) or a ``Rejected`` row (the reader could not make a caption of
that part of the file). Readers never hold a whole file: text files are read line by
line, Parquet by row group in batches, JSON with ``jsonstream``. A file that cannot be read
as its format (bad Parquet footer or row group, truncated or broken JSON, an unreadable
compressed stream, a header without the configured columns) raises ``CorruptInputError``
naming the file and the offset, line, row or row group.

caption_id is ``<corpus>/<file key>/<line or row>`` for line and row formats (line numbers
from 1, Parquet rows from 0 within the file; the file key is the file name without its
suffixes) and ``<corpus>/<id>`` where the dataset has its own caption id (COCO annotation
id, Visual Genome region id, a configured id column); such ids are checked for
duplicates (reason ``duplicate_id``).
"""

from __future__ import annotations

import array
import csv
import html
import io
import json
import lzma
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote_plus

import numpy as np

from vlcomp.text import collapse_spaces

from .jsonstream import COMPRESSED, CorruptInputError, iter_json_array, open_binary

MAX_LINE_BYTES = 1 << 20
READ_BATCH_ROWS = 65_536


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


# ------------------------------------------------------------------------------ helpers


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


def file_key(path: Path) -> str:
    """The file name without compression and format suffixes ("part-00000.parquet" ->
    "part-00000", "cc12m.tsv.gz" -> "cc12m")."""
    name = path.name
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name


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


def _decode(line: bytes) -> str | None:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _raw(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


def parse_box(region: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[int, ...] | None:
    """(x, y, width, height) as integers, or None when a value is missing, not a finite
    number, negative (x, y) or not positive (width, height). Floats are rounded."""
    out = []
    for k in keys:
        v = region.get(k)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        out.append(round(v))
    x, y, w, h = out
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        return None
    return tuple(out)


# ------------------------------------------------------------------------ line formats


def _decoded_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, str, str | Rejected]]:
    """(line number, location, text) per line; the text is a ``Rejected`` for a line that is
    too long or not valid UTF-8."""
    for n, line, complete in iter_lines(path, max_line_bytes):
        loc = f"line {n}"
        if not complete:
            yield n, loc, Rejected(loc, "too_long", _raw(line))
            continue
        text = _decode(line)
        yield n, loc, Rejected(loc, "bad_encoding", _raw(line)) if text is None else text


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
            yield Rejected(loc, "too_long", _raw(line))
            continue
        if not line.strip():
            yield Rejected(loc, "empty", "")
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            yield Rejected(loc, "broken_json", _raw(line))
            continue
        if not isinstance(obj, dict):
            yield Rejected(loc, "malformed_row", _raw(line))
            continue
        caption_id = f"{corpus}/{key}/{n}"
        if id_field is not None:
            own = obj.get(id_field)
            if own is None or isinstance(own, dict | list):
                yield Rejected(loc, "missing_field", _raw(line))
                continue
            if not seen.add(own):
                yield Rejected(loc, "duplicate_id", _raw(line))
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
        header = (_decode(first[1]) or "").split("\t")
    cols = _yfcc_columns(header, opts, path)
    need = max(cols) + 1
    for n, line, complete in lines:
        loc = f"line {n}"
        if not complete:
            yield Rejected(loc, "too_long", _raw(line))
            continue
        text = _decode(line)
        if text is None:
            yield Rejected(loc, "bad_encoding", _raw(line))
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


# ------------------------------------------------------------------------------ Parquet


def _parquet_file(path: Path) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises ArrowInvalid/OSError for a broken footer
        raise CorruptInputError(path, "footer", f"not a readable Parquet file: {err}") from None


def iter_parquet_columns(
    path: Path, columns: list[str], batch_rows: int
) -> Iterator[tuple[int, list[list[Any]]]]:
    """(first row index, column values) per batch, reading one row group at a time.

    A missing column or an unreadable row group raises ``CorruptInputError`` naming the
    file and the row group (and its first row).
    """
    import pyarrow as pa

    pf = _parquet_file(path)
    names = pf.schema_arrow.names
    missing = [c for c in columns if c not in names]
    if missing:
        raise CorruptInputError(path, "schema", f"missing column(s) {missing} (has {names})")
    row = 0
    try:
        for group in range(pf.num_row_groups):
            batches = pf.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns)
            while True:
                try:
                    batch = next(batches, None)
                except (OSError, pa.ArrowException) as err:
                    where = f"row group {group} (row {row})"
                    raise CorruptInputError(path, where, f"unreadable: {err}") from None
                if batch is None:
                    break
                yield row, [_pylist(batch.column(k)) for k in range(len(columns))]
                row += batch.num_rows
    finally:
        pf.close()


def _binary_text(value: bytes | None) -> str | Rejected | None:
    if value is None:
        return None
    text = _decode(value)
    return Rejected("", "bad_encoding", value) if text is None else text


def _pylist(column: Any) -> list[Any]:
    """Python values of a column: strings as they are, binary decoded as UTF-8 (a
    ``Rejected`` marks bytes that are not), anything else as its ``str``."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column.to_pylist()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return [_binary_text(v) for v in column.to_pylist()]
    return [None if v is None else str(v) for v in column.to_pylist()]


def _parquet_items(
    path: Path,
    corpus: str,
    key: str,
    opts: Mapping[str, Any],
    text_col: str,
    image_col: str | None,
    id_col: str | None,
    image_required: bool,
    seen: SeenIds | None,
) -> Iterator[Item]:
    columns = [text_col] + [c for c in (image_col, id_col) if c is not None]
    for start, values in iter_parquet_columns(path, columns, opts["read_batch_rows"]):
        texts = values[0]
        images = values[1] if image_col is not None else None
        ids = values[-1] if id_col is not None else None
        for k, text in enumerate(texts):
            row = start + k
            loc = f"row {row}"
            if isinstance(text, Rejected):
                yield Rejected(loc, text.reason, _raw(text.raw))
                continue
            image = images[k] if images is not None else None
            if isinstance(image, Rejected):
                yield Rejected(loc, "bad_encoding", text)
                continue
            if image_required and (image is None or not image.strip()):
                yield Rejected(loc, "missing_field", text)
                continue
            caption_id = f"{corpus}/{key}/{row}"
            if ids is not None:
                own = ids[k]
                if own is None or isinstance(own, Rejected):
                    yield Rejected(loc, "missing_field", text)
                    continue
                if seen is not None and not seen.add(own):
                    yield Rejected(loc, "duplicate_id", text)
                    continue
                caption_id = f"{corpus}/{own}"
            yield Candidate(caption_id, image, text, loc)


def read_laion_parquet(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """LAION-400M metadata Parquet (``URL``, ``TEXT`` and other columns); image_id is the
    URL (a row without one is rejected, ``missing_field``)."""
    yield from _parquet_items(
        path, corpus, key, opts, opts["text_column"], opts["url_column"], None, True, None
    )


def read_text_parquet(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """A user corpus as Parquet: ``text_column`` (and optional ``id_column``,
    ``image_column``)."""
    yield from _parquet_items(
        path,
        corpus,
        key,
        opts,
        opts["text_column"],
        opts["image_column"],
        opts["id_column"],
        False,
        (shared or Shared()).seen,
    )


# --------------------------------------------------------------------------------- JSON


def read_coco_json(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """COCO captions JSON: ``annotations`` of {id, image_id, caption}; caption_id is
    ``<corpus>/<annotation id>``, image_id the COCO image id."""
    seen = (shared or Shared()).seen
    for i, offset, ann in iter_json_array(path, "annotations"):
        loc = f"annotations[{i}] (byte {offset})"
        if not isinstance(ann, dict):
            yield Rejected(loc, "malformed_row", ann)
            continue
        own, image = ann.get("id"), ann.get("image_id")
        if own is None or image is None or isinstance(own, dict | list):
            yield Rejected(loc, "missing_field", ann)
            continue
        if not seen.add(own):
            yield Rejected(loc, "duplicate_id", ann)
            continue
        yield Candidate(f"{corpus}/{own}", str(image), ann.get("caption"), loc)


REGION_BOX_KEYS = ("x", "y", "width", "height")


def read_vg_regions(
    path: Path, corpus: str, key: str, opts: Mapping[str, Any], shared: Shared | None = None
) -> Iterator[Item]:
    """Visual Genome ``region_descriptions.json``: per image {id, regions: [{region_id,
    image_id, phrase, x, y, width, height}]}; one caption per region (caption_id
    ``<corpus>/<region_id>``). A region without a valid box is rejected (``invalid_box``)."""
    seen = (shared or Shared()).seen
    for i, offset, entry in iter_json_array(path):
        regions = entry.get("regions") if isinstance(entry, dict) else None
        if not isinstance(regions, list):
            yield Rejected(f"[{i}] (byte {offset})", "malformed_row", entry)
            continue
        image_of_entry = entry.get("id", entry.get("image_id"))
        for k, region in enumerate(regions):
            loc = f"[{i}].regions[{k}] (byte {offset})"
            if not isinstance(region, dict):
                yield Rejected(loc, "malformed_row", region)
                continue
            own = region.get("region_id")
            image = region.get("image_id", image_of_entry)
            if own is None or image is None or isinstance(own, dict | list):
                yield Rejected(loc, "missing_field", region)
                continue
            if not seen.add(own):
                yield Rejected(loc, "duplicate_id", region)
                continue
            if parse_box(region, REGION_BOX_KEYS) is None:
                yield Rejected(loc, "invalid_box", region)
                continue
            yield Candidate(f"{corpus}/{own}", str(image), region.get("phrase"), loc)


# ------------------------------------------------------------------------------ registry


@dataclass(frozen=True)
class Format:
    reader: Callable[..., Iterator[Item]]
    suffixes: tuple[str, ...]  # what a directory input is expanded to
    defaults: Mapping[str, Any]
    ids: str  # "line", "row" or "own": how caption ids are made
    id_option: str | None = None  # the option that gives the dataset's own caption ids
    doc: str = ""  # what a file of this format holds (config/README.md)
    option_docs: Mapping[str, str] = field(default_factory=dict)  # one per key of defaults


_LINE = {"max_line_bytes": MAX_LINE_BYTES}
_LINE_DOC = {"max_line_bytes": "Longest line read, in bytes; a longer one is rejected (too_long)."}
_TEXT_SUFFIXES = COMPRESSED
_OWN_ID = "The dataset's own caption id (checked for duplicates); null: {} numbers make the ids."
_IMAGE = "Image id or file name of each caption (null: none, a text-only corpus)."

FORMATS: dict[str, Format] = {
    "cc12m_tsv": Format(
        read_cc12m_tsv,
        (".tsv", ".txt", *_TEXT_SUFFIXES),
        _LINE,
        "line",
        doc="CC12M: `<url>\\t<caption>` per line, no header; the image id is the URL.",
        option_docs=_LINE_DOC,
    ),
    "yfcc_tsv": Format(
        read_yfcc_tsv,
        (".tsv", ".txt", *_TEXT_SUFFIXES),
        {
            **_LINE,
            "header": True,
            "id_column": "photoid",
            "title_column": "title",
            "description_column": "description",
            "text": "title_description",
            "strip_html": True,
            "strip_urls": True,
            "subset_ids": None,
            "subset_column": 1,
        },
        "line",
        doc="YFCC100M metadata TSV (the 15M subset CLIP used, or the full dump); the image "
        "id is the photo id. Titles and descriptions are URL-decoded ('+' is a space).",
        option_docs={
            **_LINE_DOC,
            "header": "The first line names the columns; false: the column options are 0-based "
            "indices.",
            "id_column": "Photo id column (a name, or an index without a header).",
            "title_column": "Title column.",
            "description_column": "Description column.",
            "text": "The caption: title, description, title_description (joined by '. ') or "
            "separate (one caption each, ids ending /title and /description).",
            "strip_html": "Unescape HTML entities and remove tags.",
            "strip_urls": "Remove URLs.",
            "subset_ids": "OpenAI's yfcc100m_subset_data.tsv: only these photo ids are read, the "
            "others are counted as not_in_subset (null: every photo).",
            "subset_column": "0-based column of the photo id in subset_ids.",
        },
    ),
    "laion_parquet": Format(
        read_laion_parquet,
        (".parquet",),
        {"text_column": "TEXT", "url_column": "URL", "read_batch_rows": READ_BATCH_ROWS},
        "row",
        doc="LAION-400M metadata Parquet; the image id is the URL (a row without one is "
        "rejected, missing_field).",
        option_docs={
            "text_column": "Caption column.",
            "url_column": "Image URL column.",
            "read_batch_rows": "Rows read at a time (bounds memory).",
        },
    ),
    "coco_json": Format(
        read_coco_json,
        (".json", *COMPRESSED),
        {},
        "own",
        doc="COCO captions JSON: `annotations` of {id, image_id, caption}; the caption id is "
        "the annotation id, the image id COCO's.",
    ),
    "vg_regions": Format(
        read_vg_regions,
        (".json", *COMPRESSED),
        {},
        "own",
        doc="Visual Genome `region_descriptions.json`: one caption per region (caption id: "
        "the region id); a region without a valid box is rejected (invalid_box).",
    ),
    "text_csv": Format(
        read_text_csv,
        (".csv", *_TEXT_SUFFIXES),
        {"text_column": "caption", "id_column": None, "image_column": None},
        "row",
        "id_column",
        doc="CSV with a header row; quoted fields may span lines.",
        option_docs={
            "text_column": "Caption column.",
            "id_column": _OWN_ID.format("row"),
            "image_column": _IMAGE,
        },
    ),
    "text_lines": Format(
        read_text_lines,
        (".txt", *_TEXT_SUFFIXES),
        _LINE,
        "line",
        doc="One caption per line, no image.",
        option_docs=_LINE_DOC,
    ),
    "text_jsonl": Format(
        read_text_jsonl,
        (".jsonl", *_TEXT_SUFFIXES),
        {**_LINE, "text_field": "text", "id_field": None, "image_field": None},
        "line",
        "id_field",
        doc="JSON lines: one object per line.",
        option_docs={
            **_LINE_DOC,
            "text_field": "Caption field.",
            "id_field": _OWN_ID.format("line"),
            "image_field": _IMAGE,
        },
    ),
    "text_parquet": Format(
        read_text_parquet,
        (".parquet",),
        {
            "text_column": "text",
            "id_column": None,
            "image_column": None,
            "read_batch_rows": READ_BATCH_ROWS,
        },
        "row",
        "id_column",
        doc="Parquet with a caption column.",
        option_docs={
            "text_column": "Caption column.",
            "id_column": _OWN_ID.format("row"),
            "image_column": _IMAGE,
            "read_batch_rows": "Rows read at a time (bounds memory).",
        },
    ),
}


def own_ids(fmt: str, format_opts: Mapping[str, Any]) -> bool:
    """Whether captions of this format and options carry the dataset's own ids (checked
    for duplicates across a job's files) rather than ids made from file and line or row."""
    spec = FORMATS[fmt]
    return spec.ids == "own" or (
        spec.id_option is not None and format_opts.get(spec.id_option) is not None
    )


def format_options(fmt: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The format's defaults updated with ``options``; unknown keys raise."""
    if fmt not in FORMATS:
        raise IngestOptionsError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    defaults = FORMATS[fmt].defaults
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise IngestOptionsError(
            f"{fmt}: unknown option(s) {unknown} (known: {sorted(defaults) or 'none'})"
        )
    merged = {**defaults, **options}
    for name in ("max_line_bytes", "read_batch_rows"):
        if name in merged and (not isinstance(merged[name], int) or merged[name] < 1):
            raise IngestOptionsError(f"{fmt}.{name}: must be a positive integer")
    return merged


def expand_inputs(fmt: str, inputs: list[Path], glob: str | None = None) -> list[tuple[Path, str]]:
    """Input files with their file keys. A directory is expanded to its files matching
    ``glob`` (default: the format's suffixes), sorted by name; two inputs with the same key
    raise when caption ids are made from file keys (they would collide)."""
    suffixes = FORMATS[fmt].suffixes
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            candidates = item.glob(glob) if glob else item.iterdir()
            found = sorted(
                p for p in candidates if p.is_file() and (glob or p.name.endswith(suffixes))
            )
            if not found:
                wanted = glob or ", ".join(suffixes)
                raise IngestOptionsError(f"{item}: no {fmt} input files ({wanted})")
            files += found
        elif item.is_file():
            files.append(item)
        else:
            raise FileNotFoundError(f"{item}: input not found")
    keyed = [(p, file_key(p)) for p in files]
    seen: dict[str, Path] = {}
    for p, k in keyed:
        if k in seen and FORMATS[fmt].ids != "own":
            raise IngestOptionsError(f"inputs {seen[k]} and {p} share the file key {k!r}")
        seen[k] = p
    return keyed
