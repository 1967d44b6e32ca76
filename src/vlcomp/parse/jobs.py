"""Job-level functions of the parse stage: files in, files out (one Snakemake rule each)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import GRAPHS_SCHEMA, conform
from vlcomp.io import ROW_GROUP_ROWS, write_parquet_chunks

from .backends import DEFAULT_MAX_CHARS, DEFAULT_SPACY_MODEL
from .parser import CaptionParser, make_options
from .predicates import PredicateMap

log = logging.getLogger(__name__)
METADATA_KEY = "vlcomp.parser"


def read_captions(path: str | Path) -> pl.DataFrame:
    """The ``caption_id`` and ``text`` columns of a captions Parquet file."""
    names = pl.read_parquet_schema(path)
    missing = [c for c in ("caption_id", "text") if c not in names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} of the captions contract")
    return pl.read_parquet(path, columns=["caption_id", "text"]).with_columns(
        pl.col("caption_id").cast(pl.String), pl.col("text").cast(pl.String)
    )


def graphs_frame(
    caption_ids: Iterable[str], graphs: Iterable[Any], parser_name: str
) -> pl.DataFrame:
    """A ``graphs`` table (``GRAPHS_SCHEMA``) from ids and ``SceneGraph`` objects."""
    rows: dict[str, list[Any]] = {k: [] for k in GRAPHS_SCHEMA}
    for cid, graph in zip(caption_ids, graphs, strict=True):
        row = graph.row()
        rows["caption_id"].append(cid)
        rows["objects"].append(row["objects"])
        rows["attributes"].append(row["attributes"])
        rows["relations"].append(row["relations"])
        rows["parser"].append(parser_name)
        rows["ok"].append(graph.ok)
    return conform(pl.DataFrame(rows, schema=GRAPHS_SCHEMA), GRAPHS_SCHEMA, "graphs")


def parse_captions(
    captions: str | Path,
    out: str | Path,
    backend: str = "spacy",
    n_process: int = 1,
    batch_size: int = 256,
    predicate_map: str | Path | Mapping[str, str] | PredicateMap | None = None,
    *,
    model: str = DEFAULT_SPACY_MODEL,
    strip_verbs: bool | None = None,
    stop_objects: Iterable[str] | None = None,
    frame_objects: Iterable[str] | None = None,
    numerals: bool = False,
    max_chars: int = DEFAULT_MAX_CHARS,
    backend_options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Parse a captions Parquet file (``caption_id``, ``text``) into a ``graphs`` table.

    Rows keep the input order; a missing, empty or unparsable text gives ``ok`` false and
    an empty graph (never an error). ``predicate_map``: ``None``/"generic", a
    mapping, or a YAML/JSON file (see ``predicates.resolve_predicate_map``). The parser,
    model and library versions and the options go into the file's metadata
    (``vlcomp.parser``, JSON) and the ``parser`` column.
    """
    say = progress or log.info
    frame = read_captions(captions)
    options = make_options(
        predicate_map,
        strip_verbs=strip_verbs,
        stop_objects=stop_objects,
        frame_objects=frame_objects,
        numerals=numerals,
    )
    kwargs: dict[str, Any] = dict(backend_options or {})
    kwargs.setdefault("max_chars", max_chars)
    if backend == "spacy":
        kwargs.setdefault("model", model)
    parser = CaptionParser(backend, options, **kwargs)
    say(f"parse: {frame.height} captions from {captions} with {parser.parser_name}")
    texts = frame["text"].to_list()
    ids = frame["caption_id"].to_list()
    graphs = parser.parse(texts, batch_size=batch_size, n_process=n_process)
    counts = {"n_captions": 0, "n_ok": 0}

    def chunks() -> Iterator[pl.DataFrame]:
        # Graphs go to the file a row group at a time: memory does not grow with the shard.
        for start in range(0, max(len(ids), 1), ROW_GROUP_ROWS):
            chunk = ids[start : start + ROW_GROUP_ROWS]
            table = graphs_frame(chunk, islice(graphs, len(chunk)), parser.parser_name)
            counts["n_captions"] += table.height
            counts["n_ok"] += int(table["ok"].sum())
            say(f"parse: {counts['n_captions']}/{len(ids)} captions")
            yield table

    def metadata() -> dict[str, str]:
        meta = {**parser.metadata(), **counts}
        return {METADATA_KEY: json.dumps(meta, sort_keys=True)}

    write_parquet_chunks(chunks(), out, metadata)
    say(f"parse: {counts['n_ok']}/{counts['n_captions']} captions ok, written to {out}")
