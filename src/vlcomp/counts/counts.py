"""Training-side tables (DESIGN §2, stage ``atoms``): count per shard, then merge.

Count unit: **caption document frequency**. A caption adds at most 1 to each atom,
compound and binding it contains, however often it repeats it; ``perfect_count`` and
``close_count`` are the numbers of captions in which a binding occurs at least once as a
perfect (resp. close) binding, so a caption may add to both. Only rows with ``ok`` true
are counted (all rows when the table has no ``ok`` column, e.g. the world's ground truth).

Merging sums partial counts, which is associative and commutative: any grouping of shards
(a tree of merges on a cluster) gives the same rows, written in a fixed order (atoms by
kind, value; compounds by kind, parts; bindings by attr, obj_lemma), so the same bytes.
The caption totals travel in the Parquet key-value metadata and are summed the same way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.counts.units import (
    ATOM_KINDS,
    COMPOUND_KINDS,
    GRAPH_COLUMNS,
    Vocab,
    doc_frequency,
    extract_units,
)
from vlcomp.io import read_parquet_metadata, write_parquet
from vlcomp.text import TEXT_LAYER_VERSION as NORMALIZATION_VERSION

log = logging.getLogger(__name__)

ATOMS_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String,  # object | attribute | relation
    "value": pl.String,
    "count": pl.Int64,
}
COMPOUNDS_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String,  # attr_obj: [attr, obj] | obj_rel_obj: [subj, pred, obj]
    "parts": pl.List(pl.String),
    "count": pl.Int64,
}
BINDINGS_SCHEMA: dict[str, pl.DataType] = {
    "attr": pl.String,
    "obj_lemma": pl.String,
    "perfect_count": pl.Int64,
    "close_count": pl.Int64,
}
TABLES: dict[str, dict[str, pl.DataType]] = {
    "atoms": ATOMS_SCHEMA,
    "compounds": COMPOUNDS_SCHEMA,
    "bindings": BINDINGS_SCHEMA,
}
TABLE_KEYS: dict[str, list[str]] = {
    "atoms": ["kind", "value"],
    "compounds": ["kind", "parts"],
    "bindings": ["attr", "obj_lemma"],
}
COUNT_UNIT = "caption_document_frequency"

# Totals summed on merge (Parquet metadata "vlcomp.<name>").
TOTALS: tuple[str, ...] = (
    "n_rows",  # graph rows read
    "n_captions",  # rows counted (ok)
    "n_not_ok",  # rows skipped: the parser flagged them
    "n_dangling_attributes",  # attributes on a missing object index (no compound/binding)
    "n_dangling_relations",  # relations with a missing end (no compound)
)


def table_path(counts_dir: Path, table: str) -> Path:
    return Path(counts_dir) / f"{table}.parquet"


def _metadata(table: str, totals: Mapping[str, int], parsers: Sequence[str]) -> dict[str, str]:
    meta = {
        "vlcomp.table": table,
        "vlcomp.count_unit": COUNT_UNIT,
        "vlcomp.normalization": NORMALIZATION_VERSION,
        "vlcomp.parsers": json.dumps(sorted(set(parsers))),
    }
    meta.update({f"vlcomp.{k}": str(int(totals[k])) for k in TOTALS})
    return meta


def read_totals(counts_dir: Path) -> tuple[dict[str, int], list[str]]:
    """Caption totals and parser names recorded with a counts directory."""
    meta = read_parquet_metadata(table_path(counts_dir, "atoms"))
    missing = [k for k in TOTALS if f"vlcomp.{k}" not in meta]
    if missing or meta.get("vlcomp.count_unit") != COUNT_UNIT:
        raise ValueError(f"{counts_dir}: not a vlcomp counts directory (metadata {missing})")
    if meta.get("vlcomp.normalization") != NORMALIZATION_VERSION:
        raise ValueError(
            f"{counts_dir}: counted with normalization {meta.get('vlcomp.normalization')!r}, "
            f"this code uses {NORMALIZATION_VERSION!r}; recount"
        )
    totals = {k: int(meta[f"vlcomp.{k}"]) for k in TOTALS}
    return totals, json.loads(meta["vlcomp.parsers"])


def _finish(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    schema = TABLES[table]
    frame = frame.select([pl.col(c).cast(t) for c, t in schema.items()])
    return frame.sort(TABLE_KEYS[table]).rechunk()


def _write_all(
    out_dir: Path, frames: Mapping[str, pl.DataFrame], totals: Mapping[str, int], parsers: list[str]
) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for table, frame in frames.items():
        write_parquet(
            _finish(table, frame), table_path(out_dir, table), _metadata(table, totals, parsers)
        )


BATCH_ROWS = 65_536  # rows read and counted at a time: memory is flat in shard size
_COMPACT_EVERY = 32  # batches between sums of the partial counts


def _graph_batches(
    graphs: Path, dictionary: bool = True
) -> tuple[Iterator[pa.RecordBatch], bool, bool]:
    """Record batches of a graphs file (strings kept dictionary-encoded where asked); whether
    it has the ok and parser columns."""
    file = pq.ParquetFile(graphs)
    names = file.schema_arrow.names
    missing = [c for c in ("caption_id", *GRAPH_SCHEMA) if c not in names]
    if missing:
        raise ValueError(f"{graphs}: missing graph column(s) {missing} (graphs contract)")
    strings = [
        file.schema.column(i).path
        for i in range(len(file.schema))
        if file.schema.column(i).physical_type == "BYTE_ARRAY"
    ]
    has_ok, has_parser = "ok" in names, "parser" in names
    columns = [*GRAPH_COLUMNS, *(["ok"] if has_ok else []), *(["parser"] if has_parser else [])]
    file = pq.ParquetFile(graphs, read_dictionary=strings if dictionary else None)
    return file.iter_batches(BATCH_ROWS, columns=columns, use_threads=False), has_ok, has_parser


class _Tally:
    """Document frequencies summed over batches, keyed by ``Vocab`` codes."""

    def __init__(self) -> None:
        self.vocab = Vocab()
        self.parts: dict[str, list[pl.DataFrame]] = {t: [] for t in (*COMPOUND_KINDS, "atoms")}
        self.parts["bindings"] = []
        self.totals = dict.fromkeys(TOTALS, 0)
        self.parsers: set[str] = set()
        self._batches = 0

    def add(self, batch: pa.RecordBatch | pa.Table, has_ok: bool, has_parser: bool) -> None:
        self.totals["n_rows"] += batch.num_rows
        if has_parser:
            self.parsers.update(p for p in pc.unique(batch.column("parser")).to_pylist() if p)
        if has_ok:
            batch = batch.filter(pc.fill_null(batch.column("ok"), False))
        self.totals["n_captions"] += batch.num_rows
        units = extract_units(batch, np.arange(batch.num_rows, dtype=np.int64), self.vocab)
        self.totals["n_dangling_attributes"] += units.n_dangling_attributes
        self.totals["n_dangling_relations"] += units.n_dangling_relations

        def frame(names: Sequence[str], doc: np.ndarray, *parts: np.ndarray) -> pl.DataFrame:
            columns, counts = doc_frequency(doc, *parts)
            return pl.DataFrame({**dict(zip(names, columns, strict=True)), "count": counts})

        self.parts["atoms"].append(
            frame(("kind", "value"), units.atom_doc, units.atom_kind, units.atom_value)
        )
        self.parts["attr_obj"].append(frame(("a", "b"), units.attr_obj_doc, *units.attr_obj))
        self.parts["obj_rel_obj"].append(frame(("a", "b", "c"), units.rel_doc, *units.rel))
        perfect = units.binding_perfect
        for flag, keep in (("perfect", perfect), ("close", ~perfect)):
            part = frame(
                ("attr", "obj"),
                units.binding_doc[keep],
                units.binding[0][keep],
                units.binding[1][keep],
            )
            self.parts["bindings"].append(part.with_columns(pl.lit(flag).alias("flag")))
        self._batches += 1
        if self._batches % _COMPACT_EVERY == 0:
            self._compact()

    def _compact(self) -> None:
        for name, frames in self.parts.items():
            keys = [c for c in frames[0].columns if c != "count"]
            self.parts[name] = [
                pl.concat(frames, how="diagonal").group_by(keys).agg(pl.col("count").sum())
            ]

    def tables(self) -> dict[str, pl.DataFrame]:
        """The atoms, compounds and bindings tables, decoded to text."""
        if self._batches == 0:
            return {t: pl.DataFrame(schema=s) for t, s in TABLES.items()}
        self._compact()
        strings = self.vocab.strings

        def text(column: str) -> pl.Expr:
            return pl.col(column).replace_strict(
                list(range(len(strings))), strings, return_dtype=pl.String
            )

        atoms = self.parts["atoms"][0].select(
            pl.col("kind").replace_strict(list(range(3)), list(ATOM_KINDS), return_dtype=pl.String),
            text("value").alias("value"),
            "count",
        )
        compounds = pl.concat(
            [
                self.parts["attr_obj"][0].select(
                    pl.lit("attr_obj").alias("kind"),
                    pl.concat_list(text("a"), text("b")).alias("parts"),
                    "count",
                ),
                self.parts["obj_rel_obj"][0].select(
                    pl.lit("obj_rel_obj").alias("kind"),
                    pl.concat_list(text("a"), text("b"), text("c")).alias("parts"),
                    "count",
                ),
            ]
        )
        bindings = (
            self.parts["bindings"][0]
            .group_by("attr", "obj")
            .agg(
                pl.col("count").filter(pl.col("flag") == "perfect").sum().alias("perfect_count"),
                pl.col("count").filter(pl.col("flag") == "close").sum().alias("close_count"),
            )
            .select(text("attr").alias("attr"), text("obj").alias("obj_lemma"),
                    "perfect_count", "close_count")
        )  # fmt: skip
        return {"atoms": atoms, "compounds": compounds, "bindings": bindings}


def count_graphs(
    batches: Iterable[pa.RecordBatch | pa.Table], has_ok: bool = True, has_parser: bool = True
) -> tuple[dict[str, pl.DataFrame], dict[str, int], list[str]]:
    """Counts of graph rows given in batches: (tables by name, totals, parser names)."""
    tally = _Tally()
    for batch in batches:
        tally.add(batch, has_ok, has_parser)
    totals = tally.totals
    totals["n_not_ok"] = totals["n_rows"] - totals["n_captions"]
    return tally.tables(), totals, sorted(tally.parsers)


def count_shard(graphs: Path, out_dir: Path) -> None:
    """Count one shard of parsed captions (``graphs`` contract) into ``out_dir``.

    Writes ``atoms.parquet``, ``compounds.parquet`` and ``bindings.parquet`` (partial
    counts, mergeable with ``merge_counts``), each carrying the shard's totals in its
    metadata. The world's ``truth.parquet`` is accepted too (no ``ok``/``parser`` column).
    """
    try:
        batches, has_ok, has_parser = _graph_batches(Path(graphs))
        frames, totals, parsers = count_graphs(batches, has_ok, has_parser)
    except pa.ArrowNotImplementedError:
        # Arrow reads nested strings as dictionaries only where a row group keeps one
        # dictionary per column (the parse stage writes them so); otherwise decode them.
        batches, has_ok, has_parser = _graph_batches(Path(graphs), dictionary=False)
        frames, totals, parsers = count_graphs(batches, has_ok, has_parser)
    _write_all(Path(out_dir), frames, totals, parsers)
    log.info("%s: %s", graphs, ", ".join(f"{k}={v}" for k, v in totals.items()))


def merge_counts(partials: list[Path], out_dir: Path) -> None:
    """Sum partial counts directories (from ``count_shard`` or earlier merges) into ``out_dir``.

    Associative and order-free: ``merge([a, b, c])``, ``merge([merge([a, b]), c])`` and
    ``merge([c, a, b])`` write identical bytes.
    """
    if not partials:
        raise ValueError("merge_counts: no partial counts given")
    totals = dict.fromkeys(TOTALS, 0)
    parsers: list[str] = []
    for part in partials:
        part_totals, part_parsers = read_totals(Path(part))
        for k in TOTALS:
            totals[k] += part_totals[k]
        parsers += part_parsers
    frames = {}
    for table, keys in TABLE_KEYS.items():
        value_cols = [c for c in TABLES[table] if c not in keys]
        lf = pl.scan_parquet([table_path(Path(p), table) for p in partials])
        frames[table] = (
            lf.group_by(keys).agg(pl.col(c).sum() for c in value_cols).collect(engine="streaming")
        )
    _write_all(Path(out_dir), frames, totals, parsers)
    log.info("merged %d partial counts: %d captions", len(partials), totals["n_captions"])
    if totals["n_captions"] == 0:
        log.warning(
            "%s: no caption counted (%d rows, %d not parsed): every evaluation item will "
            "count as unseen",
            out_dir,
            totals["n_rows"],
            totals["n_not_ok"],
        )


def read_counts(counts_dir: Path) -> dict[str, pl.DataFrame]:
    """The three merged tables of a counts directory, by name."""
    return {t: pl.read_parquet(table_path(Path(counts_dir), t)) for t in TABLES}
