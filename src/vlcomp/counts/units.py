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

Every distinct raw string is normalized once in Python and replaced by an integer code
(``vocab``); joins, de-duplication and counting run on the codes, and only aggregated
results are decoded back to text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.counts.normalize import normalize_text, singularize

ATOM_KINDS: tuple[str, ...] = ("object", "attribute", "relation")
COMPOUND_KINDS: tuple[str, ...] = ("attr_obj", "obj_rel_obj")

_ROW = "_row"
DOC = "doc"
CODE = pl.UInt32
MAX_NODES = 1 << 16  # object indices outside [0, MAX_NODES) are treated as missing


@dataclass(frozen=True)
class GraphUnits:
    """Per-graph units, with text as codes of ``vocab``.

    The ``*_mentions`` frames hold one row per occurrence (a graph may repeat a unit);
    ``atoms``, ``compounds`` and ``bindings`` are the same, unique per ``doc``. Columns:
    atoms: doc, kind, value. compounds: doc, kind, a, b, c (attr_obj: a=attr, b=obj,
    c=null; obj_rel_obj: a=subj, b=pred, c=obj). bindings: doc, attr, obj_lemma, perfect.
    dangling: one row, n_attributes and n_relations (references to missing objects).
    ``decoded_*`` turn the code columns back into text (``parts`` lists for compounds).
    """

    atom_mentions: pl.LazyFrame
    compound_mentions: pl.LazyFrame
    binding_mentions: pl.LazyFrame
    dangling: pl.LazyFrame
    vocab: list[str]

    @property
    def atoms(self) -> pl.LazyFrame:
        return self.atom_mentions.unique()

    @property
    def compounds(self) -> pl.LazyFrame:
        return self.compound_mentions.unique()

    @property
    def bindings(self) -> pl.LazyFrame:
        return self.binding_mentions.unique()

    def text(self, column: str) -> pl.Expr:
        """Decode a code column to text (same name)."""
        return pl.col(column).replace_strict(
            list(range(len(self.vocab))), self.vocab, return_dtype=pl.String
        )

    def parts(self) -> pl.Expr:
        a, b, c = self.text("a"), self.text("b"), self.text("c")
        return (
            pl.when(pl.col("c").is_null())
            .then(pl.concat_list(a, b))
            .otherwise(pl.concat_list(a, b, c))
            .alias("parts")
        )

    def decoded_atoms(self) -> pl.LazyFrame:
        return self.atoms.with_columns(self.text("value"))

    def decoded_compounds(self) -> pl.LazyFrame:
        return self.compounds.select(DOC, "kind", self.parts())

    def decoded_bindings(self) -> pl.LazyFrame:
        return self.bindings.with_columns(self.text("attr"), self.text("obj_lemma"))


def _field(column: str, field: str) -> pl.Expr:
    return pl.col(column).explode().struct.field(field).unique().drop_nulls()


@dataclass(frozen=True)
class _Codes:
    vocab: list[str]
    lemma: dict[str, int | None]
    name: dict[str, int | None]
    value: dict[str, int | None]
    pred: dict[str, int | None]


def _codes(lf: pl.LazyFrame) -> _Codes:
    """Code of the normalized form of every distinct raw string (one cheap pass).

    Mapping distinct values keeps the Python normalizers (which define the semantics)
    off the per-row path.
    """
    queries = [
        lf.select(_field("objects", "lemma")),
        lf.select(_field("objects", "name")),
        lf.select(_field("attributes", "value")),
        lf.select(_field("relations", "pred")),
    ]
    raw = [f.to_series().to_list() for f in pl.collect_all(queries, engine="streaming")]
    fns: list[Callable[[str], str | None]] = [
        normalize_text,
        singularize,
        normalize_text,
        normalize_text,
    ]
    normal = [{s: fn(s) for s in strings} for strings, fn in zip(raw, fns, strict=True)]
    vocab = sorted({v for table in normal for v in table.values() if v is not None})
    code = {text: k for k, text in enumerate(vocab)}

    def coded(table: dict[str, str | None]) -> dict[str, int | None]:
        return {s: None if v is None else code[v] for s, v in table.items()}

    lemma, name, value, pred = (coded(t) for t in normal)
    return _Codes(vocab, lemma, name, value, pred)


def _coded(column: str, mapping: dict[str, int | None]) -> pl.Expr:
    return pl.col(column).replace_strict(
        list(mapping), list(mapping.values()), default=None, return_dtype=CODE
    )


def graph_units(graphs: pl.LazyFrame, doc: str | None = None) -> GraphUnits:
    """Extract the units of every row of ``graphs`` (the ``GRAPH_SCHEMA`` columns).

    ``doc`` names the column that identifies a graph's owner (several rows may share
    one, e.g. the negatives of an item: their units are then pooled); ``None`` uses the
    row number. Units are unique per doc.
    """
    lf = graphs.select(
        pl.col(doc).alias(DOC) if doc else pl.lit(None, pl.Int64).alias(DOC),
        *(pl.col(c).cast(t) for c, t in GRAPH_SCHEMA.items()),
    ).with_row_index(_ROW)
    if doc is None:
        lf = lf.with_columns(pl.col(_ROW).cast(pl.Int64).alias(DOC))
    codes = _codes(lf)

    # A node (object of one graph) is keyed by one integer: row * MAX_NODES + idx.
    def node_key(idx: str) -> pl.Expr:
        return pl.col(_ROW).cast(pl.UInt64) * MAX_NODES + pl.col(idx).cast(pl.UInt64)

    def in_range(idx: str) -> pl.Expr:
        return pl.col(idx).is_between(0, MAX_NODES - 1)

    objects = (
        lf.select(_ROW, DOC, "objects")
        .explode("objects")
        .unnest("objects")
        .with_columns(
            _coded("lemma", codes.lemma).alias("_lemma"),
            _coded("name", codes.name).alias("_name"),
        )
        .select(
            DOC,
            pl.when(in_range("idx")).then(node_key("idx")).alias("node"),
            pl.coalesce("_lemma", "_name").alias("atom"),
            pl.coalesce("_name", "_lemma").alias("bind_obj"),
        )
        .filter(pl.col("atom").is_not_null())
    )
    attrs = (
        lf.select(_ROW, DOC, "attributes")
        .explode("attributes")
        .unnest("attributes")
        .select(
            DOC,
            pl.when(in_range("obj")).then(node_key("obj")).alias("node"),
            _coded("value", codes.value).alias("value"),
        )
        .filter(pl.col("value").is_not_null())
    )
    rels = (
        lf.select(_ROW, DOC, "relations")
        .explode("relations")
        .unnest("relations")
        .select(
            DOC,
            pl.when(in_range("subj")).then(node_key("subj")).alias("subj"),
            _coded("pred", codes.pred).alias("pred"),
            pl.when(in_range("obj")).then(node_key("obj")).alias("obj"),
        )
        .filter(pl.col("pred").is_not_null())
    )

    atom_mentions = pl.concat(
        [
            objects.select(DOC, pl.lit("object").alias("kind"), pl.col("atom").alias("value")),
            attrs.select(DOC, pl.lit("attribute").alias("kind"), "value"),
            rels.select(DOC, pl.lit("relation").alias("kind"), pl.col("pred").alias("value")),
        ]
    )

    # Object indices are unique within a graph by contract; ``unique`` guards the joins.
    nodes = (
        objects.select("node", "atom", "bind_obj")
        .filter(pl.col("node").is_not_null())
        .unique("node", keep="any")
    )
    attr_nodes = attrs.join(nodes, on="node", how="left")
    attached = attr_nodes.filter(pl.col("atom").is_not_null())
    ends = nodes.select("node", "atom")
    rel_nodes = rels.join(
        ends.rename({"node": "subj", "atom": "subj_atom"}), on="subj", how="left"
    ).join(ends.rename({"node": "obj", "atom": "obj_atom"}), on="obj", how="left")
    linked = rel_nodes.filter(pl.col("subj_atom").is_not_null() & pl.col("obj_atom").is_not_null())

    compound_mentions = pl.concat(
        [
            attached.select(
                DOC,
                pl.lit("attr_obj").alias("kind"),
                pl.col("value").alias("a"),
                pl.col("atom").alias("b"),
                pl.lit(None, CODE).alias("c"),
            ),
            linked.select(
                DOC,
                pl.lit("obj_rel_obj").alias("kind"),
                pl.col("subj_atom").alias("a"),
                pl.col("pred").alias("b"),
                pl.col("obj_atom").alias("c"),
            ),
        ]
    )

    # Sorted by node, a node's distinct values are adjacent: it has exactly one attribute
    # when its run has length one (cheaper than a group-by per node).
    node = pl.col("node")
    first = (node != node.shift(1)).fill_null(True)
    last = (node != node.shift(-1)).fill_null(True)
    binding_mentions = (
        attached.select(DOC, "node", "value", "bind_obj")
        .sort("node", "value")
        .filter(first | (pl.col("value") != pl.col("value").shift(1)).fill_null(True))
        .select(
            DOC,
            pl.col("value").alias("attr"),
            pl.col("bind_obj").alias("obj_lemma"),
            (first & last).alias("perfect"),
        )
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
    return GraphUnits(atom_mentions, compound_mentions, binding_mentions, dangling, codes.vocab)
