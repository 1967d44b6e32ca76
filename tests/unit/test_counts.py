"""The columnar counting stage against the Python-loop statement of the same definitions,
on random graphs with every irregularity the graphs contract allows."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from vlcomp.contracts import GRAPHS_SCHEMA
from vlcomp.counts import counts as counts_module
from vlcomp.counts.counts import count_shard, merge_counts, read_counts, read_totals
from vlcomp.counts.units import GRAPH_COLUMNS, graph_units
from vlcomp_dev.bench.counts import python_loop_counts

NOUNS = ["dog", "Dogs", "glasses", "Glass", "tennis balls", "man", "men", " cat ", "box", None]
ATTRS = ["red", "Red ", "big", "small", "wooden", "dark  blue", None, ""]
PREDS = ["on", "next to", "On", "holding", None]


def random_graphs(n_rows: int, seed: int, positional: bool) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n_rows):
        n_obj = rng.choice([0, 1, 2, 3, 5])
        idx = list(range(n_obj)) if positional else [rng.choice([0, 1, 2, 7, -1, 70000, None])
                                                        for _ in range(n_obj)]  # fmt: skip
        objects = [
            None
            if not positional and rng.random() < 0.05
            else {"idx": k, "name": rng.choice(NOUNS), "lemma": rng.choice(NOUNS + [None] * 3)}
            for k in idx
        ]
        targets = [*range(n_obj), n_obj + 1, -3, None] if n_obj else [0, None]
        attributes = [
            {"obj": rng.choice(targets), "value": rng.choice(ATTRS)}
            for _ in range(rng.choice([0, 1, 2, 4, 6]))
        ]
        relations = [
            {"subj": rng.choice(targets), "pred": rng.choice(PREDS), "obj": rng.choice(targets)}
            for _ in range(rng.choice([0, 1, 3]))
        ]
        rows.append(
            {
                "caption_id": f"c{i}",
                "objects": objects,
                "attributes": attributes,
                "relations": relations,
                "parser": rng.choice(["p/1", "p/2", None]),
                "ok": rng.choice([True, True, True, False, None]),
            }
        )
    return pl.DataFrame(rows, schema=GRAPHS_SCHEMA)


@pytest.mark.parametrize("positional", [True, False])
@pytest.mark.parametrize("dictionary", [True, False])
def test_columnar_counts_equal_the_python_loop(
    tmp_path: Path, positional: bool, dictionary: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(counts_module, "BATCH_ROWS", 97)  # several batches and compactions
    monkeypatch.setattr(counts_module, "_COMPACT_EVERY", 3)
    graphs = random_graphs(1500, seed=positional + 2 * dictionary, positional=positional)
    path = tmp_path / "graphs.parquet"
    pq.write_table(graphs.to_arrow(), path, use_dictionary=dictionary, row_group_size=400)
    count_shard(path, tmp_path / "counts")
    ours = read_counts(tmp_path / "counts")
    reference = python_loop_counts(path)
    for table in ("atoms", "compounds", "bindings"):
        assert ours[table].height > 5, table
        assert ours[table].equals(reference[table]), table
    totals, parsers = read_totals(tmp_path / "counts")
    ok = graphs["ok"].fill_null(False)
    assert totals["n_rows"] == 1500 and totals["n_captions"] == ok.sum()
    assert parsers == ["p/1", "p/2"]
    if not positional:
        assert totals["n_dangling_attributes"] > 0 and totals["n_dangling_relations"] > 0


def test_shard_grouping_gives_identical_bytes(tmp_path: Path) -> None:
    graphs = random_graphs(900, seed=7, positional=True)
    whole, parts = tmp_path / "whole.parquet", []
    graphs.write_parquet(whole)
    for k in range(3):
        part = tmp_path / f"part{k}.parquet"
        graphs.slice(300 * k, 300).write_parquet(part)
        count_shard(part, tmp_path / f"c{k}")
        parts.append(tmp_path / f"c{k}")
    count_shard(whole, tmp_path / "one")
    merge_counts(parts, tmp_path / "merged")
    merge_counts([tmp_path / "merged"], tmp_path / "again")
    for table in ("atoms", "compounds", "bindings"):
        one = (tmp_path / "one" / f"{table}.parquet").read_bytes()
        for other in ("merged", "again"):
            assert (tmp_path / other / f"{table}.parquet").read_bytes() == one, (table, other)


def test_graph_units_pool_rows_by_doc() -> None:
    graphs = pl.DataFrame(
        [
            {"item": "b", "objects": [{"idx": 0, "name": "dogs", "lemma": "dog"}],
             "attributes": [{"obj": 0, "value": "Red"}], "relations": []},
            {"item": "a", "objects": [{"idx": 0, "name": "dog", "lemma": None}],
             "attributes": [{"obj": 0, "value": "red"}, {"obj": 0, "value": "big"}],
             "relations": []},
            {"item": "b", "objects": [{"idx": 3, "name": "cat", "lemma": "cat"}],
             "attributes": [{"obj": 3, "value": "red"}, {"obj": 0, "value": "big"}],
             "relations": []},
        ],
        schema={"item": pl.String, **{k: GRAPHS_SCHEMA[k] for k in GRAPH_COLUMNS}},
    )  # fmt: skip
    units = graph_units(graphs.lazy(), "item")
    atoms = units.decoded_atoms().collect().sort("doc", "kind", "value")
    assert atoms.rows() == [
        ("a", "attribute", "big"), ("a", "attribute", "red"), ("a", "object", "dog"),
        ("b", "attribute", "big"), ("b", "attribute", "red"), ("b", "object", "cat"),
        ("b", "object", "dog"),
    ]  # fmt: skip
    bindings = units.decoded_bindings().collect().sort("doc", "attr", "obj_lemma", "perfect")
    assert bindings.rows() == [
        ("a", "big", "dog", False), ("a", "red", "dog", False),
        ("b", "red", "cat", True), ("b", "red", "dog", True),
    ]  # fmt: skip
    assert units.dangling.collect().rows() == [(1, 0)]
