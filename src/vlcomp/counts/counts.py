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
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.counts.normalize import NORMALIZATION_VERSION
from vlcomp.counts.units import graph_units
from vlcomp.io import read_parquet_metadata, write_parquet

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
_KEYS: dict[str, list[str]] = {
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
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()]).sort(_KEYS[table]).rechunk()


def _write_all(
    out_dir: Path, frames: Mapping[str, pl.DataFrame], totals: Mapping[str, int], parsers: list[str]
) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for table, frame in frames.items():
        write_parquet(
            _finish(table, frame), table_path(out_dir, table), _metadata(table, totals, parsers)
        )


def _scan_graphs(graphs: Path) -> tuple[pl.LazyFrame, bool, bool]:
    lf = pl.scan_parquet(graphs)
    names = lf.collect_schema().names()
    missing = [c for c in ("caption_id", *GRAPH_SCHEMA) if c not in names]
    if missing:
        raise ValueError(f"{graphs}: missing graph column(s) {missing} (graphs contract)")
    return lf, "ok" in names, "parser" in names


def count_graphs(
    graphs: pl.LazyFrame, has_ok: bool = True, has_parser: bool = True
) -> tuple[dict[str, pl.DataFrame], dict[str, int], list[str]]:
    """Counts of one table of graphs: (tables by name, totals, parser names)."""
    ok = pl.col("ok").fill_null(False) if has_ok else pl.lit(True)
    used = graphs.filter(ok)
    units = graph_units(used)
    doc = pl.col("doc")
    queries = [
        units.atom_mentions.group_by("kind", "value")
        .agg(doc.n_unique().alias("count"))
        .with_columns(units.text("value")),
        units.compound_mentions.group_by("kind", "a", "b", "c")
        .agg(doc.n_unique().alias("count"))
        .select("kind", units.parts(), "count"),
        units.binding_mentions.group_by("attr", "obj_lemma")
        .agg(
            doc.filter(pl.col("perfect")).n_unique().alias("perfect_count"),
            doc.filter(~pl.col("perfect")).n_unique().alias("close_count"),
        )
        .with_columns(units.text("attr"), units.text("obj_lemma")),
        units.dangling,
        graphs.select(pl.len().alias("n_rows")),
        used.select(pl.len().alias("n_captions")),
    ]
    if has_parser:
        queries.append(graphs.select(pl.col("parser").drop_nulls().unique()))
    results = pl.collect_all(queries, engine="streaming")
    atoms, compounds, bindings, dangling, rows, captions = results[:6]
    parsers = results[6].to_series().to_list() if has_parser else []
    n_rows, n_captions = int(rows.item()), int(captions.item())
    totals = {
        "n_rows": n_rows,
        "n_captions": n_captions,
        "n_not_ok": n_rows - n_captions,
        "n_dangling_attributes": int(dangling["n_attributes"][0] or 0),
        "n_dangling_relations": int(dangling["n_relations"][0] or 0),
    }
    frames = {"atoms": atoms, "compounds": compounds, "bindings": bindings}
    return frames, totals, parsers


def count_shard(graphs: Path, out_dir: Path) -> None:
    """Count one shard of parsed captions (``graphs`` contract) into ``out_dir``.

    Writes ``atoms.parquet``, ``compounds.parquet`` and ``bindings.parquet`` (partial
    counts, mergeable with ``merge_counts``), each carrying the shard's totals in its
    metadata. The world's ``truth.parquet`` is accepted too (no ``ok``/``parser`` column).
    """
    lf, has_ok, has_parser = _scan_graphs(Path(graphs))
    frames, totals, parsers = count_graphs(lf, has_ok, has_parser)
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
    for table, keys in _KEYS.items():
        value_cols = [c for c in TABLES[table] if c not in keys]
        lf = pl.scan_parquet([table_path(Path(p), table) for p in partials])
        frames[table] = (
            lf.group_by(keys).agg(pl.col(c).sum() for c in value_cols).collect(engine="streaming")
        )
    _write_all(Path(out_dir), frames, totals, parsers)
    log.info("merged %d partial counts: %d captions", len(partials), totals["n_captions"])


def read_counts(counts_dir: Path) -> dict[str, pl.DataFrame]:
    """The three merged tables of a counts directory, by name."""
    return {t: pl.read_parquet(table_path(Path(counts_dir), t)) for t in TABLES}
