"""File writing that never leaves a half-written output behind.

Every output goes through :func:`atomic_path` (a file) or :func:`atomic_dir` (a folder):
written under a temporary name beside its target, then moved into place. Either gets the
mode a plain ``open`` or ``mkdir`` would give under the process umask (``mkstemp`` alone
gives 0600, which the group of a shared results folder cannot read).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl


def _read_umask() -> int:
    # The umask can only be read by setting it; done once, at import, before any thread.
    old = os.umask(0)
    os.umask(old)
    return old


UMASK = _read_umask()
FILE_MODE = 0o666 & ~UMASK
DIR_MODE = 0o777 & ~UMASK


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place, with mode ``FILE_MODE``,
    only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_dir(out_dir: str | Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``out_dir``; when the block succeeds it
    replaces ``out_dir`` (an existing one is removed), otherwise it is deleted, so a failed
    run leaves neither a half-written folder nor a changed old one."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{secrets.token_hex(4)}.tmp"
    tmp.mkdir()  # plain mkdir: DIR_MODE, unlike mkdtemp's 0700
    try:
        yield tmp
        old = None
        if out.exists() or out.is_symlink():
            old = out.parent / f".{out.name}.{secrets.token_hex(4)}.old"
            os.replace(out, old)
        os.replace(tmp, out)
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 3}
ROW_GROUP_ROWS = 1 << 17


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
    if dictionary:
        write_parquet_chunks([frame], path, lambda: metadata or {})
        return
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, statistics=True, metadata=metadata, **PARQUET_OPTIONS)


def write_parquet_chunks(
    frames: Iterable[pl.DataFrame],
    path: str | Path,
    metadata: Callable[[], dict[str, str]],
) -> None:
    """Write frames of one schema as one dictionary-encoded Parquet file, atomically, holding
    one frame at a time (row groups of at most ``ROW_GROUP_ROWS``); ``metadata()`` is called
    after the last frame, so it may report on all of them. No frame: nothing is written."""
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        writer = None
        try:
            for frame in frames:
                table = frame.to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(
                        tmp, table.schema, use_dictionary=True, write_statistics=True,
                        **PARQUET_OPTIONS,
                    )  # fmt: skip
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
            if writer is None:
                raise ValueError(f"{path}: nothing to write")
            writer.add_key_value_metadata(metadata())
        finally:
            if writer is not None:
                writer.close()


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


def write_csv_copy(parquet: str | Path, csv: str | Path) -> None:
    """The table in ``parquet`` as CSV (a header row, floats with 6 decimals), atomically:
    the copy a reader opens without a Parquet reader (the Snakemake report shows CSV as a
    table). A nested column (list, struct) has no CSV form: an error names the file and the
    column."""
    frame = pl.read_parquet(parquet)
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    if nested:
        raise ValueError(
            f"{parquet}: column {nested[0]!r} is nested ({frame.schema[nested[0]]}); no CSV copy"
        )
    write_with(csv, lambda tmp: frame.write_csv(tmp, float_precision=6))
