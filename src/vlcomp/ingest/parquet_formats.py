"""Readers of caption corpora in Parquet: LAION-400M metadata and a user's caption table.

Files are read one row group at a time, in batches of ``read_batch_rows`` rows; a broken
footer or row group raises ``CorruptInputError`` naming the file and the row group.
caption_id is ``<corpus>/<file key>/<row>`` (rows from 0 within the file) or
``<corpus>/<id>`` from a configured id column (checked for duplicates).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .jsonstream import CorruptInputError
from .reader_types import Candidate, Item, Rejected, SeenIds, Shared, decode_utf8, raw_text

READ_BATCH_ROWS = 65_536


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
    text = decode_utf8(value)
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
                yield Rejected(loc, text.reason, raw_text(text.raw))
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
