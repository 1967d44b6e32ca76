"""A corpus's input files ingested in parts, one job per part, in parallel.

A corpus shipped as many files (LAION-400M comes as 32 Parquet files) would otherwise be
read by one job. With ``files_per_job`` its files (directories expanded, in name order)
are grouped, in order, into parts of that many files. Each part is ingested by ``ingest``
into the corpus's n caption shards (the sharding depends on the caption id alone), then:

- ``gather_shard`` concatenates the parts' shard i in part order, so shard i holds the
  rows, in the order, that one job over all the files writes;
- ``merge_parts`` concatenates the parts' rejected rows and sums their summaries.

A caption id must not depend on another file: formats whose captions carry the dataset's
own ids, checked for duplicates across all files, are ingested in one job.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlcomp.io import atomic_path

from .job import IngestOptions, IngestSummary
from .reader_types import IngestOptionsError
from .readers import expand_inputs, file_key, own_ids

log = logging.getLogger(__name__)


def part_name(j: int, n_parts: int) -> str:
    return f"{j}-of-{n_parts}"


def plan_parts(
    fmt: str,
    inputs: Sequence[str | Path],
    options: Mapping[str, Any] | None,
    files_per_job: int | None,
) -> list[list[str]]:
    """The corpus's input files in parts of ``files_per_job`` files, in order (one part
    holding the inputs as given when ``files_per_job`` is None). Inputs that do not exist
    yet (another rule writes them) count as one file each."""
    if files_per_job is None:
        return [[str(p) for p in inputs]]
    if not isinstance(files_per_job, int) or files_per_job < 1:
        raise IngestOptionsError(
            f"files_per_job: must be a positive integer, got {files_per_job!r}"
        )
    opts = IngestOptions.parse(fmt, options)
    if own_ids(fmt, opts.format):
        raise IngestOptionsError(
            f"files_per_job: {fmt} captions with the dataset's own ids are checked for duplicates "
            "across all files, so they are ingested in one job (remove files_per_job)"
        )
    files: list[str] = []
    for item in map(Path, inputs):
        if item.exists():
            files += [str(path) for path, _ in expand_inputs(fmt, [item], opts.glob)]
        else:
            files.append(str(item))
    first_of: dict[str, str] = {}
    for name in files:
        key = file_key(Path(name))
        if key in first_of:
            raise IngestOptionsError(
                f"inputs {first_of[key]} and {name} share the file key {key!r}"
            )
        first_of[key] = name
    return [files[i : i + files_per_job] for i in range(0, len(files), files_per_job)]


def gather_shard(parts: Sequence[Path], out: Path) -> int:
    """Concatenate one caption shard of every part, in order, into ``out`` (row group by
    row group; written atomically). Returns the rows written."""
    import pyarrow.parquet as pq

    if not parts:
        raise ValueError(f"{out}: no part to gather")
    first = pq.ParquetFile(parts[0])
    schema = first.schema_arrow
    rows = 0
    with atomic_path(out) as tmp:
        writer = pq.ParquetWriter(
            tmp, schema, compression="zstd", compression_level=3, write_statistics=True
        )
        try:
            for path in parts:
                source = pq.ParquetFile(path)
                if not source.schema_arrow.equals(schema, check_metadata=True):
                    raise ValueError(
                        f"{path}: not a shard of the same corpus and ingest as {parts[0]}"
                    )
                for i in range(source.num_row_groups):
                    table = source.read_row_group(i)
                    if table.num_rows:
                        writer.write_table(table, row_group_size=table.num_rows)
                        rows += table.num_rows
        finally:
            writer.close()
    return rows


def merge_parts(
    summaries: Sequence[Path], rejected: Sequence[Path], out_rejected: Path
) -> IngestSummary:
    """The corpus's summary (the parts' counts summed) and its rejected rows (the parts'
    in order, written to ``out_rejected``). Logs the corpus's warnings."""
    docs = [json.loads(Path(p).read_text()) for p in summaries]
    if not docs:
        raise ValueError(f"{out_rejected}: no part to merge")
    head = docs[0]
    for path, doc in zip(summaries, docs, strict=True):
        if (doc["format"], doc["corpus"], doc["n_shards"]) != (
            head["format"], head["corpus"], head["n_shards"]
        ):  # fmt: skip
            raise ValueError(f"{path}: a part of another corpus or sharding than {summaries[0]}")
    summary = IngestSummary(head["format"], head["corpus"], head["n_shards"])
    summary.per_shard = [0] * head["n_shards"]
    for doc in docs:
        summary.files += doc["files"]
        summary.accepted += doc["accepted"]
        summary.rejected.update(Counter(doc["rejected"]))
        summary.filtered.update(Counter(doc["filtered"]))
        summary.per_shard = [
            a + b for a, b in zip(summary.per_shard, doc["per_shard"], strict=True)
        ]
    gather_shard([Path(p) for p in rejected], Path(out_rejected))
    log.info("%s (%d parts)", summary.describe(), len(docs))
    for warning in summary.warnings:
        log.warning(warning)
    return summary
