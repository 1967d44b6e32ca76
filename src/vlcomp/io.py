"""File writing that never leaves a half-written output behind."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_parquet(
    frame: pl.DataFrame,
    path: str | Path,
    metadata: dict[str, str] | None = None,
    *,
    dictionary: bool = False,
) -> None:
    """Write deterministically (same frame, same bytes) and atomically.

    ``metadata`` goes into the file's key-value metadata (versions, model fingerprints).
    ``dictionary``: dictionary-encode every column, nested ones included (Arrow's writer),
    so that a reader can keep repeated strings as codes (the counting stage does).
    """
    with atomic_path(path) as tmp:
        if not dictionary:
            frame.write_parquet(
                tmp, compression="zstd", compression_level=3, statistics=True, metadata=metadata
            )
            return
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **(metadata or {})})
        pq.write_table(
            table,
            tmp,
            compression="zstd",
            compression_level=3,
            use_dictionary=True,
            write_statistics=True,
            row_group_size=1 << 17,
        )


def read_parquet_metadata(path: str | Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    raw = pq.read_metadata(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if not k.startswith(b"ARROW")}


def write_json(obj: Any, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")


def write_with(path: str | Path, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and move the result into place atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)
