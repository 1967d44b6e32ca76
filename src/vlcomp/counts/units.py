"""Atoms, compounds and bindings of scene graphs: one columnar extraction for both sides.

The training captions (counted per shard, ``counts.count_shard``) and the evaluation items
(looked up in the counts, ``graph_units``) go through the same ``extract_units``, so both
normalize and pair things the same way.

Definitions (per graph, i.e. per caption or item):

- atoms: ``object`` (the object's lemma, normalized; the normalized name when the lemma
  is missing), ``attribute`` (value), ``relation`` (predicate);
- compounds: ``attr_obj`` (attribute value, object atom) for every attribute attached to an
  object of the graph, ``obj_rel_obj`` (subject atom, predicate, object atom) for every
  relation whose two ends are objects of the graph;
- bindings (BindSplit): (attribute value, object atom) with ``perfect`` true
  when the attribute is the only distinct attribute on that object node and false ("close")
  when the node carries several.

Attributes and relations that point at an object index missing from the graph are
*dangling*: they still give attribute/relation atoms, but no compound or binding; they are
counted so that a stage can report them. An object index is unique within a graph by
contract; where one repeats, its first object is the node.

How: the nested lists are flattened with Arrow (no per-row Python), every distinct raw
string is normalized once in Python (``Vocab``) and replaced by an integer code, nodes are
found with a sorted-key search, and everything after that is NumPy on integer arrays.
Strings stored dictionary-encoded (as the parse stage writes them) are never decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from vlcomp.text import normalise_or_none

ATOM_KINDS: tuple[str, ...] = ("object", "attribute", "relation")
COMPOUND_KINDS: tuple[str, ...] = ("attr_obj", "obj_rel_obj")

DOC = "doc"
CODE = pl.UInt32
MAX_NODES = 1 << 16  # object indices outside [0, MAX_NODES) are treated as missing
GRAPH_COLUMNS: tuple[str, ...] = ("objects", "attributes", "relations")


class Vocab:
    """Normalized strings and their codes, in order of first appearance.

    ``codes`` maps raw strings through a normalizer, each distinct raw string once per
    normalizer (memoised across batches, so a corpus's strings are normalized once).
    ``sorted_codes`` gives the permutation to codes of the sorted vocabulary.
    """

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._code: dict[str, int] = {}
        self._memo: dict[Callable[[str | None], str | None], dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self.strings)

    def _intern(self, text: str | None) -> int:
        if text is None:
            return -1
        code = self._code.get(text)
        if code is None:
            code = self._code[text] = len(self.strings)
            self.strings.append(text)
        return code

    def codes(self, raw: list[str | None], normalize: Callable[[str | None], str | None]):
        """Codes (-1: no value) of the normalized ``raw`` strings, as an int64 array."""
        memo = self._memo.setdefault(normalize, {})
        out = np.empty(len(raw), dtype=np.int64)
        for i, text in enumerate(raw):
            if text is None:
                out[i] = -1
                continue
            code = memo.get(text)
            if code is None:
                code = memo[text] = self._intern(normalize(text))
            out[i] = code
        return out

    def sorted_order(self) -> tuple[list[str], np.ndarray]:
        """The sorted vocabulary and, per code, its position in it."""
        order = sorted(range(len(self.strings)), key=self.strings.__getitem__)
        rank = np.empty(len(order), dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
        return [self.strings[i] for i in order], rank


def _coded(values: pa.Array, vocab: Vocab, normalize: Callable[[str | None], str | None]):
    """Codes of a string (or dictionary-encoded string) array; -1 where null."""
    if not pa.types.is_dictionary(values.type):
        values = pc.dictionary_encode(values)
    table = vocab.codes(values.dictionary.to_pylist(), normalize)
    indices = values.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if not len(table):
        return np.full(len(indices), -1, dtype=np.int64)
    return np.where(indices >= 0, table[np.maximum(indices, 0)], -1)


def _ints(values: pa.Array) -> np.ndarray:
    """An integer index array as int64, -1 where null."""
    return values.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)


def _flatten(column: pa.Array, names: tuple[str, ...]) -> tuple[np.ndarray, list[pa.Array]]:
    """Row of each list element and the element fields (struct-level nulls give nulls)."""
    rows = pc.list_parent_indices(column).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(column)
    return rows, [pc.struct_field(flat, [name]) for name in names]


def _node_key(rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """row * MAX_NODES + idx, or -1 where idx is outside [0, MAX_NODES)."""
    valid = (idx >= 0) & (idx < MAX_NODES)
    return np.where(valid, rows * MAX_NODES + np.where(valid, idx, 0), -1)


@dataclass(frozen=True)
class _NodeFinder:
    """The nodes of a batch (objects with an atom and an index in range, the first one of
    a repeated index) and the lookup (row, object index) -> node, -1 where there is none."""

    rows: np.ndarray  # row of each node
    objects: np.ndarray  # flat object position of each node
    starts: np.ndarray | None  # positional lookup: first flat position of each row's objects
    lengths: np.ndarray | None
    node_of_object: np.ndarray | None
    keys: np.ndarray | None  # sorted lookup: row * MAX_NODES + idx of each node

    def __call__(self, rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
        if self.keys is None:
            assert self.starts is not None and self.lengths is not None
            assert self.node_of_object is not None
            valid = (idx >= 0) & (idx < self.lengths[rows])
            flat = np.where(valid, self.starts[rows] + np.where(valid, idx, 0), 0)
            return np.where(valid, self.node_of_object[flat], -1) if len(flat) else flat
        queries = _node_key(rows, idx)
        if not len(self.keys):
            return np.full(len(queries), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, queries), len(self.keys) - 1)
        return np.where((queries >= 0) & (self.keys[pos] == queries), pos, -1)


def _node_finder(
    objects: pa.Array, rows: np.ndarray, idx: np.ndarray, has_atom: np.ndarray
) -> _NodeFinder:
    lengths = pc.list_value_length(objects).fill_null(0).to_numpy(zero_copy_only=False)
    lengths = lengths.astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    if np.array_equal(idx, np.arange(len(idx)) - starts[rows]):
        # Objects numbered by position, as parsers write them: index arithmetic, no search.
        node_objects = np.flatnonzero(has_atom)
        node_of_object = np.full(len(idx), -1, dtype=np.int64)
        node_of_object[node_objects] = np.arange(len(node_objects))
        return _NodeFinder(rows[node_objects], node_objects, starts, lengths, node_of_object, None)
    keys = np.where(has_atom, _node_key(rows, idx), -1)
    candidates = np.flatnonzero(keys >= 0)
    order = candidates[np.argsort(keys[candidates], kind="stable")]
    sorted_keys = keys[order]
    first = np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]])[: len(order)]
    node_objects = order[first]
    return _NodeFinder(rows[node_objects], node_objects, None, None, None, sorted_keys[first])


@dataclass
class CodedUnits:
    """Mentions of units as integer arrays over ``Vocab`` codes (a graph may repeat one).

    ``doc`` arrays hold the owner of each mention (the row, or a group of rows).
    atoms: kind index into ``ATOM_KINDS``, value. attr_obj: attr, obj. obj_rel_obj: subj,
    pred, obj. bindings: one per distinct (node, attribute): attr, obj (the object atom),
    perfect.
    """

    atom_doc: np.ndarray
    atom_kind: np.ndarray
    atom_value: np.ndarray
    attr_obj_doc: np.ndarray
    attr_obj: tuple[np.ndarray, np.ndarray]
    rel_doc: np.ndarray
    rel: tuple[np.ndarray, np.ndarray, np.ndarray]
    binding_doc: np.ndarray
    binding: tuple[np.ndarray, np.ndarray]
    binding_perfect: np.ndarray
    n_dangling_attributes: int = 0
    n_dangling_relations: int = 0


def extract_units(graphs: pa.Table | pa.RecordBatch, doc: np.ndarray, vocab: Vocab) -> CodedUnits:
    """Units of every row of ``graphs`` (columns ``objects``, ``attributes``, ``relations``
    of the graphs contract); ``doc[row]`` is the owner of row ``row``."""
    if isinstance(graphs, pa.Table):
        graphs = pa.RecordBatch.from_struct_array(
            pa.StructArray.from_arrays(
                [graphs.column(c).combine_chunks() for c in GRAPH_COLUMNS], GRAPH_COLUMNS
            )
        )
    doc = np.asarray(doc, dtype=np.int64)

    objects = graphs.column("objects")
    obj_rows, (obj_idx, obj_name, obj_lemma) = _flatten(objects, ("idx", "name", "lemma"))
    lemma = _coded(obj_lemma, vocab, normalise_or_none)
    name = _coded(obj_name, vocab, normalise_or_none)
    atom = np.where(lemma >= 0, lemma, name)
    find = _node_finder(objects, obj_rows, _ints(obj_idx), atom >= 0)
    node_rows, node_atom = find.rows, atom[find.objects]
    keep = atom >= 0
    obj_rows, atom = obj_rows[keep], atom[keep]

    attr_rows, (attr_obj, attr_value) = _flatten(graphs.column("attributes"), ("obj", "value"))
    value = _coded(attr_value, vocab, normalise_or_none)
    keep = value >= 0
    attr_rows, value = attr_rows[keep], value[keep]
    attr_node = find(attr_rows, _ints(attr_obj)[keep])
    attached = attr_node >= 0

    rel_rows, (rel_subj, rel_pred, rel_obj) = _flatten(
        graphs.column("relations"), ("subj", "pred", "obj")
    )
    pred = _coded(rel_pred, vocab, normalise_or_none)
    keep = pred >= 0
    rel_rows, pred = rel_rows[keep], pred[keep]
    subj_node = find(rel_rows, _ints(rel_subj)[keep])
    obj_node = find(rel_rows, _ints(rel_obj)[keep])
    linked = (subj_node >= 0) & (obj_node >= 0)

    # Bindings: distinct (node, value) pairs; a node with one distinct value is perfect.
    pair_node, pair_value = attr_node[attached], value[attached]
    if len(pair_node):
        width = int(pair_value.max()) + 1
        pairs = _distinct_sorted(pair_node * width + pair_value)
        pair_node, pair_value = pairs // width, pairs % width
    n_values = np.bincount(pair_node, minlength=len(node_rows))
    node_doc = doc[node_rows]

    attached_node = attr_node[attached]
    return CodedUnits(
        atom_doc=np.concatenate([doc[obj_rows], doc[attr_rows], doc[rel_rows]]),
        atom_kind=np.repeat(np.arange(3), [len(atom), len(value), len(pred)]),
        atom_value=np.concatenate([atom, value, pred]),
        attr_obj_doc=doc[attr_rows[attached]],
        attr_obj=(value[attached], node_atom[attached_node]),
        rel_doc=doc[rel_rows[linked]],
        rel=(node_atom[subj_node[linked]], pred[linked], node_atom[obj_node[linked]]),
        binding_doc=node_doc[pair_node],
        binding=(pair_value, node_atom[pair_node]),
        binding_perfect=n_values[pair_node] == 1,
        n_dangling_attributes=int((~attached).sum()),
        n_dangling_relations=int((~linked).sum()),
    )


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; ``values`` are mostly ascending (rows in order), which
    the stable sort (a merge of runs) finds cheaply."""
    ordered = np.sort(values, kind="stable")
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])]


def doc_frequency(doc: np.ndarray, *parts: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Distinct tuples of ``parts`` (non-negative codes) and, for each, the number of
    distinct docs having it; tuples in ascending order."""
    if not len(doc):
        return [np.zeros(0, np.int64) for _ in parts], np.zeros(0, np.int64)
    # Fold the tuple into one integer over the values present (dense per part).
    key = np.zeros(len(doc), dtype=np.int64)
    space, widths, values = 1, [], []
    n_docs = int(doc.max()) + 1
    for part in parts:
        present = np.zeros(int(part.max()) + 1, dtype=bool)
        present[part] = True
        rank = np.cumsum(present) - 1
        widths.append(int(rank[-1]) + 1)
        values.append(np.flatnonzero(present))
        space *= widths[-1]
        if space * n_docs >= 1 << 62:
            return _doc_frequency_lexsort(doc, parts)
        key = key * widths[-1] + rank[part]
    per_doc = _distinct_sorted(doc * space + key) % space
    if space <= 4 * len(per_doc) + 4096:
        counts = np.bincount(per_doc, minlength=space)
        keys = np.flatnonzero(counts)
        counts = counts[keys]
    else:
        ordered = np.sort(per_doc)
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
        keys, counts = ordered[starts], np.diff(np.append(starts, len(ordered)))
    out: list[np.ndarray] = []
    for width, value in zip(widths[::-1], values[::-1], strict=True):
        out.append(value[keys % width])
        keys = keys // width
    return out[::-1], counts.astype(np.int64)


def _doc_frequency_lexsort(
    doc: np.ndarray, parts: tuple[np.ndarray, ...]
) -> tuple[list[np.ndarray], np.ndarray]:
    """``doc_frequency`` for tuples too wide to fold into one int64 (huge vocabularies)."""
    order = np.lexsort((doc, *parts[::-1]))
    columns = [p[order] for p in parts]
    doc = doc[order]
    new_tuple = np.zeros(len(doc), dtype=bool)
    new_tuple[0] = True
    for column in columns:
        new_tuple[1:] |= column[1:] != column[:-1]
    new_doc = new_tuple.copy()
    new_doc[1:] |= doc[1:] != doc[:-1]
    starts = np.flatnonzero(new_tuple)
    counts = np.add.reduceat(new_doc.astype(np.int64), starts)
    return [c[starts] for c in columns], counts


# ----------------------------------------------------------------------- polars view


@dataclass(frozen=True)
class GraphUnits:
    """Per-graph units as polars frames, with text as codes of ``vocab``.

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
        return self.atom_mentions.unique(maintain_order=True)

    @property
    def compounds(self) -> pl.LazyFrame:
        return self.compound_mentions.unique(maintain_order=True)

    @property
    def bindings(self) -> pl.LazyFrame:
        return self.binding_mentions.unique(maintain_order=True)

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


def graph_units(graphs: pl.LazyFrame, doc: str | None = None) -> GraphUnits:
    """Extract the units of every row of ``graphs`` (the graphs contract's columns).

    ``doc`` names the column that identifies a graph's owner (several rows may share
    one, e.g. the negatives of an item: their units are then pooled); ``None`` uses the
    row number. Units are unique per doc.
    """
    frame = graphs.select(*((doc,) if doc else ()), *GRAPH_COLUMNS).collect()
    if doc:
        encoded = pc.dictionary_encode(frame[doc].to_arrow(), null_encoding="encode")
        doc_ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        owner_values = pl.Series(DOC, encoded.dictionary, dtype=frame.schema[doc])
    else:
        doc_ids = np.arange(frame.height, dtype=np.int64)
        owner_values = pl.Series(DOC, doc_ids)
    vocab = Vocab()
    units = extract_units(frame.select(GRAPH_COLUMNS).to_arrow(), doc_ids, vocab)
    strings, rank = vocab.sorted_order()

    def codes(values: np.ndarray) -> pl.Series:
        return pl.Series(rank[values] if len(values) else values, dtype=CODE)

    def owners_of(ids: np.ndarray) -> pl.Series:
        return owner_values.gather(ids).alias(DOC) if len(ids) else owner_values.clear()

    atoms = pl.DataFrame(
        {
            DOC: owners_of(units.atom_doc),
            "kind": pl.Series(np.asarray(ATOM_KINDS)[units.atom_kind], dtype=pl.String),
            "value": codes(units.atom_value),
        }
    )
    null_c = pl.Series("c", [None] * len(units.attr_obj_doc), dtype=CODE)
    compounds = pl.concat(
        [
            pl.DataFrame(
                {
                    DOC: owners_of(units.attr_obj_doc),
                    "kind": pl.Series(["attr_obj"] * len(units.attr_obj_doc), dtype=pl.String),
                    "a": codes(units.attr_obj[0]),
                    "b": codes(units.attr_obj[1]),
                    "c": null_c,
                }
            ),
            pl.DataFrame(
                {
                    DOC: owners_of(units.rel_doc),
                    "kind": pl.Series(["obj_rel_obj"] * len(units.rel_doc), dtype=pl.String),
                    "a": codes(units.rel[0]),
                    "b": codes(units.rel[1]),
                    "c": codes(units.rel[2]),
                }
            ),
        ]
    )
    bindings = pl.DataFrame(
        {
            DOC: owners_of(units.binding_doc),
            "attr": codes(units.binding[0]),
            "obj_lemma": codes(units.binding[1]),
            "perfect": pl.Series(units.binding_perfect, dtype=pl.Boolean),
        }
    )
    dangling = pl.DataFrame(
        {
            "n_attributes": [units.n_dangling_attributes],
            "n_relations": [units.n_dangling_relations],
        },
        schema={"n_attributes": pl.Int64, "n_relations": pl.Int64},
    )
    return GraphUnits(atoms.lazy(), compounds.lazy(), bindings.lazy(), dangling.lazy(), strings)
