"""Streaming Parquet output: tables written row group by row group, committed atomically.

``open_tables`` yields one ``TableWriter`` per path; rows are buffered and written as row
groups by ``flush``. The files are temporary siblings (``vlcomp.io.atomic_path``) until the
block ends without error; then all are moved into place. On error none is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.io import atomic_path


def arrow_schema(schema: dict[str, pl.DataType], metadata: dict[str, str]) -> Any:
    """The Arrow schema polars uses for ``schema``, with file key-value ``metadata``."""
    return pl.DataFrame(schema=schema).to_arrow().schema.with_metadata(metadata)


class TableWriter:
    """Buffers rows and writes them as one Parquet row group on ``flush``."""

    def __init__(self, path: Path, schema: Any) -> None:
        import pyarrow.parquet as pq

        self.schema = schema
        self.pending: list[Sequence[Any]] = []
        self.writer = pq.ParquetWriter(
            path, schema, compression="zstd", compression_level=3, write_statistics=True
        )
        self.rows = 0

    def add(self, row: Sequence[Any]) -> None:
        """Buffer one row (values in schema order)."""
        self.pending.append(row)

    @property
    def buffered(self) -> int:
        return len(self.pending)

    def flush(self) -> None:
        import pyarrow as pa

        n = len(self.pending)
        if not n:
            return
        columns = zip(*self.pending, strict=True)
        arrays = [pa.array(c, type=f.type) for c, f in zip(columns, self.schema, strict=True)]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema), row_group_size=n)
        self.rows += n
        self.pending = []


@contextmanager
def open_tables(
    paths: Sequence[Path], schemas: Sequence[dict[str, pl.DataType]], metadata: Sequence[dict]
) -> Iterator[list[TableWriter]]:
    """Writers for ``paths``; every file appears (complete) only if the block succeeds."""
    with ExitStack() as stack:
        tmps = [stack.enter_context(atomic_path(p)) for p in paths]
        writers: list[TableWriter] = []
        try:
            for tmp, schema, meta in zip(tmps, schemas, metadata, strict=True):
                writers.append(TableWriter(tmp, arrow_schema(schema, meta)))
            yield writers
            for w in writers:
                w.flush()
        finally:
            for w in writers:
                w.writer.close()
