"""Atoms, compounds and bindings of scene graphs, as long (lazy) polars tables.

One extraction serves both sides: the training captions (counted per shard) and the
evaluation items (looked up in the counts), so both normalize and pair things the same way.

Definitions (per graph, i.e. per caption or item):

- atoms: ``object`` (the object's lemma, normalized; the singularized name when the lemma
  is missing), ``attribute`` (value), ``relation`` (predicate);
- compounds: ``attr_obj`` (attribute value, object atom) for every attribute attached to an
  object of the graph, ``obj_rel_obj`` (subject atom, predicate, object atom) for every
  relation whose two ends are objects of the graph;
- bindings (BindSplit): (attribute value, singularized object name) with ``perfect`` true
  when the attribute is the only distinct attribute on that object node and false ("close")
  when the node carries several.

Attributes and relations that point at an object index missing from the graph are
*dangling*: they still give attribute/relation atoms, but no compound or binding; they are
counted so that a stage can report them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA

from .normalize import normalize_text, singularize

ATOM_KINDS: tuple[str, ...] = ("object", "attribute", "relation")
COMPOUND_KINDS: tuple[str, ...] = ("attr_obj", "obj_rel_obj")

_ROW = "_row"
_DOC = "doc"


@dataclass(frozen=True)
class GraphUnits:
    """Per-graph units; every frame is unique per ``doc``.

    atoms: doc, kind, value. compounds: doc, kind, parts (list of str).
    bindings: doc, attr, obj_lemma, perfect (bool). dangling: n_attributes, n_relations
    (one row: references to missing object indices).
    """

    atoms: pl.LazyFrame
    compounds: pl.LazyFrame
    bindings: pl.LazyFrame
    dangling: pl.LazyFrame


@dataclass(frozen=True)
class _Maps:
    lemma: dict[str, str | None]
    name: dict[str, str | None]
    value: dict[str, str | None]
    pred: dict[str, str | None]


def _field(column: str, field: str) -> pl.Expr:
    return pl.col(column).explode().struct.field(field).unique().drop_nulls()


def _maps(lf: pl.LazyFrame) -> _Maps:
    """Normalized form of every distinct raw string (one cheap pass over the graphs).

    Mapping distinct values keeps the Python normalizers (which define the semantics)
    off the per-row path.
    """
    queries = [
        lf.select(_field("objects", "lemma")),
        lf.select(_field("objects", "name")),
        lf.select(_field("attributes", "value")),
        lf.select(_field("relations", "pred")),
    ]
    lemma, name, value, pred = (
        frame.to_series().to_list() for frame in pl.collect_all(queries, engine="streaming")
    )

    def table(raw: list[str], fn: Callable[[str], str | None]) -> dict[str, str | None]:
        return {s: fn(s) for s in raw}

    return _Maps(
        lemma=table(lemma, normalize_text),
        name=table(name, singularize),
        value=table(value, normalize_text),
        pred=table(pred, normalize_text),
    )


def _mapped(column: str, mapping: dict[str, str | None]) -> pl.Expr:
    return pl.col(column).replace_strict(
        list(mapping), list(mapping.values()), default=None, return_dtype=pl.String
    )


def graph_units(graphs: pl.LazyFrame, doc: str | None = None) -> GraphUnits:
    """Extract the units of every row of ``graphs`` (the ``GRAPH_SCHEMA`` columns).

    ``doc`` names the column that identifies a graph's owner (several rows may share
    one, e.g. the negatives of an item: their units are then pooled); ``None`` uses the
    row number. Units are unique per doc.
    """
    lf = graphs.select(
        pl.col(doc).alias(_DOC) if doc else pl.lit(None, pl.Int64).alias(_DOC),
        *(pl.col(c).cast(t) for c, t in GRAPH_SCHEMA.items()),
    ).with_row_index(_ROW)
    if doc is None:
        lf = lf.with_columns(pl.col(_ROW).cast(pl.Int64).alias(_DOC))
    maps = _maps(lf)

    objects = (
        lf.select(_ROW, _DOC, "objects")
        .explode("objects")
        .unnest("objects")
        .with_columns(
            _mapped("lemma", maps.lemma).alias("_lemma"),
            _mapped("name", maps.name).alias("_name"),
        )
        .select(
            _ROW,
            _DOC,
            "idx",
            pl.coalesce("_lemma", "_name").alias("atom"),
            pl.coalesce("_name", "_lemma").alias("bind_obj"),
        )
        .filter(pl.col("idx").is_not_null() & pl.col("atom").is_not_null())
    )
    attrs = (
        lf.select(_ROW, _DOC, "attributes")
        .explode("attributes")
        .unnest("attributes")
        .with_columns(_mapped("value", maps.value).alias("value"))
        .filter(pl.col("value").is_not_null())
    )
    rels = (
        lf.select(_ROW, _DOC, "relations")
        .explode("relations")
        .unnest("relations")
        .with_columns(_mapped("pred", maps.pred).alias("pred"))
        .filter(pl.col("pred").is_not_null())
    )

    atoms = pl.concat(
        [
            objects.select(_DOC, pl.lit("object").alias("kind"), pl.col("atom").alias("value")),
            attrs.select(_DOC, pl.lit("attribute").alias("kind"), "value"),
            rels.select(_DOC, pl.lit("relation").alias("kind"), pl.col("pred").alias("value")),
        ]
    ).unique()

    # Object indices are unique within a graph by contract; ``unique`` guards the joins.
    nodes = objects.select(_ROW, "idx", "atom", "bind_obj").unique([_ROW, "idx"], keep="first")
    attr_nodes = attrs.join(
        nodes, left_on=[_ROW, "obj"], right_on=[_ROW, "idx"], how="left", coalesce=True
    )
    attached = attr_nodes.filter(pl.col("atom").is_not_null())
    ends = nodes.select(_ROW, "idx", "atom")
    rel_nodes = rels.join(
        ends.rename({"atom": "subj_atom"}),
        left_on=[_ROW, "subj"],
        right_on=[_ROW, "idx"],
        how="left",
        coalesce=True,
    ).join(
        ends.rename({"atom": "obj_atom"}),
        left_on=[_ROW, "obj"],
        right_on=[_ROW, "idx"],
        how="left",
        coalesce=True,
    )
    linked = rel_nodes.filter(pl.col("subj_atom").is_not_null() & pl.col("obj_atom").is_not_null())

    compounds = pl.concat(
        [
            attached.select(
                _DOC,
                pl.lit("attr_obj").alias("kind"),
                pl.concat_list("value", "atom").alias("parts"),
            ),
            linked.select(
                _DOC,
                pl.lit("obj_rel_obj").alias("kind"),
                pl.concat_list("subj_atom", "pred", "obj_atom").alias("parts"),
            ),
        ]
    ).unique()

    bindings = (
        attached.group_by(_ROW, "obj")
        .agg(pl.first(_DOC), pl.first("bind_obj"), pl.col("value").unique().alias("attrs"))
        .with_columns((pl.col("attrs").list.len() == 1).alias("perfect"))
        .explode("attrs")
        .select(_DOC, pl.col("attrs").alias("attr"), pl.col("bind_obj").alias("obj_lemma"), "perfect")
        .unique()
    )

    dangling = pl.concat(
        [
            attr_nodes.select(pl.col("atom").is_null().sum().cast(pl.Int64).alias("n_attributes")),
            rel_nodes.select(
                (pl.col("subj_atom").is_null() | pl.col("obj_atom").is_null())
                .sum()
                .cast(pl.Int64)
                .alias("n_relations")
            ),
        ],
        how="horizontal",
    )
    return GraphUnits(atoms=atoms, compounds=compounds, bindings=bindings, dangling=dangling)
