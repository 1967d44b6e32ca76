"""Unit tests of the systematicity tables and splits (vlcomp.systematicity)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from vlcomp.contracts import EVAL_ITEMS_SCHEMA, GRAPHS_SCHEMA
from vlcomp.counts import count_shard, merge_counts, read_counts, read_totals
from vlcomp.io import read_parquet_metadata
from vlcomp.splits import (
    ASSIGNMENTS_SCHEMA,
    SUMMARY_SCHEMA,
    assign,
    assign_splits,
    binding_label,
    bindsplit_sample,
    bucket_of,
    collapse,
    crepe_split,
    graph_bindings,
    normalize_binding,
)
from vlcomp.vocabulary import BUCKETS
from vlcomp.world import DEFAULT_WORLD_CONFIG, build_corpus, build_eval_set, write_manifest
from vlcomp.world.checks.groundtruth import check_world_splits, items_from_truth
from vlcomp_dev.bench.counts import benchmark_counting

Obj = tuple[int, str | None, str | None]
Attr = tuple[int, str]
Rel = tuple[int, str, int]


def graph(
    key: str,
    objects: list[Obj],
    attributes: list[Attr] = (),  # type: ignore[assignment]
    relations: list[Rel] = (),  # type: ignore[assignment]
    ok: bool = True,
) -> dict[str, Any]:
    return {
        "caption_id": key,
        "objects": [{"idx": i, "name": n, "lemma": lem} for i, n, lem in objects],
        "attributes": [{"obj": o, "value": v} for o, v in attributes],
        "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in relations],
        "parser": "hand/1",
        "ok": ok,
    }


def graphs_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=GRAPHS_SCHEMA)


def items_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Eval items from graph dicts (caption_id becomes item_id)."""
    full = [
        {
            **{k: None for k in EVAL_ITEMS_SCHEMA},
            **{k: r[k] for k in ("objects", "attributes", "relations")},
            "item_id": r["caption_id"],
            "source": "hand",
            "text": r["caption_id"],
        }
        for r in rows
    ]
    return pl.DataFrame(full, schema=EVAL_ITEMS_SCHEMA)


# Training graphs written by hand; the expected counts below are caption document
# frequencies over the ok rows (T4 is not ok).
TRAIN = [
    # "a red circle left of two Blue squares"
    graph(
        "T1",
        [(0, "circle", "circle"), (1, "squares", "square")],
        [(0, "red"), (1, "Blue")],
        [(0, "left of", 1)],
    ),
    # "a small red circle": two attributes on one noun -> close bindings
    graph("T2", [(0, "circle", "circle")], [(0, "small"), (0, "red")]),
    # "a red circle and a red circle": counted once for the caption
    graph("T3", [(0, "circle", "circle"), (1, "circle", "circle")], [(0, "red"), (1, "red")]),
    # parse failure: skipped
    graph("T4", [(0, "hexagon", "hexagon")], [(0, "pink")], ok=False),
    # "black glasses on ...": a graph whose lemma says "glass": atoms and bindings both take
    # the lemma (one lemmatiser); one attribute and one relation point at missing objects
    graph("T5", [(0, "glasses", "glass")], [(0, "black"), (3, "green")], [(0, "on", 7)]),
    # alt-text casing and spacing
    graph("T6", [(0, " Circle", "Circle ")], [(0, "RED")]),
]

EXPECTED_ATOMS = [
    ("attribute", "black", 1),
    ("attribute", "blue", 1),
    ("attribute", "green", 1),
    ("attribute", "red", 4),
    ("attribute", "small", 1),
    ("object", "circle", 4),
    ("object", "glass", 1),
    ("object", "square", 1),
    ("relation", "left of", 1),
    ("relation", "on", 1),
]
EXPECTED_COMPOUNDS = [
    ("attr_obj", ["black", "glass"], 1),
    ("attr_obj", ["blue", "square"], 1),
    ("attr_obj", ["red", "circle"], 4),
    ("attr_obj", ["small", "circle"], 1),
    ("obj_rel_obj", ["circle", "left of", "square"], 1),
]
EXPECTED_BINDINGS = [
    ("black", "glass", 1, 0),
    ("blue", "square", 1, 0),
    ("red", "circle", 3, 1),
    ("small", "circle", 0, 1),
]


def write_graphs(rows: list[dict[str, Any]], path: Path) -> Path:
    graphs_frame(rows).write_parquet(path)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dir_hashes(counts_dir: Path) -> dict[str, str]:
    return {t: sha(counts_dir / f"{t}.parquet") for t in ("atoms", "compounds", "bindings")}


@pytest.fixture(scope="module")
def hand_counts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hand")
    count_shard(write_graphs(TRAIN, root / "graphs.parquet"), root / "counts")
    return root / "counts"


# ---------------------------------------------------------------------------- normalizing


def test_normalize_binding() -> None:
    assert normalize_binding("Red", "Circles") == ("red", "circle")
    with pytest.raises(ValueError, match="blank binding"):
        normalize_binding(" ", "circle")


# ------------------------------------------------------------------------------- counting


def test_count_shard_on_hand_graphs(hand_counts: Path) -> None:
    tables = read_counts(hand_counts)
    assert tables["atoms"].rows() == EXPECTED_ATOMS
    assert tables["compounds"].rows() == EXPECTED_COMPOUNDS
    assert tables["bindings"].rows() == EXPECTED_BINDINGS
    totals, parsers = read_totals(hand_counts)
    assert totals == {
        "n_rows": 6,
        "n_captions": 5,
        "n_not_ok": 1,
        "n_dangling_attributes": 1,
        "n_dangling_relations": 1,
    }
    assert parsers == ["hand/1"]
    meta = read_parquet_metadata(hand_counts / "bindings.parquet")
    assert meta["vlcomp.count_unit"] == "caption_document_frequency"


def test_count_shard_without_ok_and_parser_columns(tmp_path: Path, hand_counts: Path) -> None:
    # The world's truth tables have the graph columns only; every row counts.
    ok_rows = [r for r in TRAIN if r["ok"]]
    graphs_frame(ok_rows).drop("ok", "parser").write_parquet(tmp_path / "truth.parquet")
    count_shard(tmp_path / "truth.parquet", tmp_path / "counts")
    assert read_counts(tmp_path / "counts")["atoms"].equals(read_counts(hand_counts)["atoms"])
    assert read_totals(tmp_path / "counts")[0]["n_captions"] == 5


def test_count_shard_rejects_missing_columns(tmp_path: Path) -> None:
    graphs_frame(TRAIN).drop("relations").write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"missing graph column\(s\) \['relations'\]"):
        count_shard(tmp_path / "bad.parquet", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_empty_shard_gives_typed_empty_tables(tmp_path: Path) -> None:
    count_shard(write_graphs([], tmp_path / "empty.parquet"), tmp_path / "counts")
    tables = read_counts(tmp_path / "counts")
    assert all(t.height == 0 for t in tables.values())
    assert tables["compounds"].schema["parts"] == pl.List(pl.String)


def test_merge_is_associative_and_order_free(tmp_path: Path, hand_counts: Path) -> None:
    shards = [TRAIN[0:2], TRAIN[2:4], TRAIN[4:6]]
    parts = []
    for k, rows in enumerate(shards):
        count_shard(write_graphs(rows, tmp_path / f"s{k}.parquet"), tmp_path / f"p{k}")
        parts.append(tmp_path / f"p{k}")
    a, b, c = parts
    merge_counts([a, b, c], tmp_path / "flat")
    merge_counts([a, b], tmp_path / "ab")
    merge_counts([tmp_path / "ab", c], tmp_path / "ab_c")
    merge_counts([b, a], tmp_path / "ba")
    merge_counts([c, tmp_path / "ba"], tmp_path / "c_ba")
    expected = dir_hashes(tmp_path / "flat")
    assert dir_hashes(tmp_path / "ab_c") == expected
    assert dir_hashes(tmp_path / "c_ba") == expected
    # ... and the same bytes as counting everything at once.
    assert dir_hashes(hand_counts) == expected
    with pytest.raises(ValueError, match="no partial counts"):
        merge_counts([], tmp_path / "none")


# --------------------------------------------------------------------------------- CREPE


def test_crepe_split_definition() -> None:
    assert crepe_split([True, True], [True]) == "SC"
    assert crepe_split([True, True], [True, False]) == "UC"
    assert crepe_split([True, False], [False]) == "UA"
    assert crepe_split([False], [True, True]) == "UA"
    assert crepe_split([True], []) is None  # no compound: not a CREPE item


ITEMS = [
    # every atom and compound seen
    graph(
        "I1",
        [(0, "circle", "circle"), (1, "square", "square")],
        [(0, "red"), (1, "blue")],
        [(0, "left of", 1)],
    ),
    # atoms seen, "blue circle" never
    graph("I2", [(0, "circle", "circle")], [(0, "blue")]),
    # "pink" never
    graph("I3", [(0, "circle", "circle")], [(0, "pink")]),
    # the converse triple was never stated
    graph("I4", [(0, "square", "square"), (1, "circle", "circle")], [], [(0, "left of", 1)]),
    # no compound at all, and an empty graph
    graph("I5", [(0, "circle", "circle")]),
    graph("I6", []),
    # "above" never
    graph(
        "I7",
        [(0, "circle", "circle"), (1, "square", "square")],
        [(0, "red"), (1, "blue")],
        [(0, "above", 1)],
    ),
    # "small red circle": a close-only and a perfect binding
    graph("I8", [(0, "circles", "circle")], [(0, "small"), (0, "red")]),
    # "a red circle and a blue square" (its swap negative is given below)
    graph("I9", [(0, "circle", "circle"), (1, "square", "square")], [(0, "red"), (1, "blue")]),
]


def test_crepe_splits_on_hand_items(hand_counts: Path) -> None:
    out, _ = assign(items_frame(ITEMS), read_counts(hand_counts), "hand")
    got = dict(zip(out["item_id"], out["crepe_split"], strict=True))
    assert got == {
        "I1": "SC",
        "I2": "UC",
        "I3": "UA",
        "I4": "UC",
        "I5": None,
        "I6": None,
        "I7": "UA",
        "I8": "SC",
        "I9": "SC",
    }
    row = out.row(by_predicate=pl.col("item_id") == "I2", named=True)
    assert row["unseen_compounds"] == [{"kind": "attr_obj", "parts": ["blue", "circle"]}]
    assert row["unseen_atoms"] == []
    row = out.row(by_predicate=pl.col("item_id") == "I7", named=True)
    assert row["unseen_atoms"] == [{"kind": "relation", "value": "above"}]
    assert row["n_atoms"] == 5 and row["n_compounds"] == 3
    row = out.row(by_predicate=pl.col("item_id") == "I6", named=True)
    assert (row["n_atoms"], row["n_compounds"], row["pos_bindings"]) == (0, 0, [])
    assert out["item_id"].to_list() == [r["caption_id"] for r in ITEMS]  # item order kept


def test_min_count_raises_the_bar(hand_counts: Path) -> None:
    out, _ = assign(items_frame(ITEMS[:1]), read_counts(hand_counts), "hand", min_count=2)
    # "blue", "square" and "left of" occur in one training caption only.
    assert out["crepe_split"].to_list() == ["UA"]
    with pytest.raises(ValueError, match="min_count"):
        assign(items_frame(ITEMS[:1]), read_counts(hand_counts), "hand", min_count=0)


def test_bad_items_are_rejected(hand_counts: Path) -> None:
    counts = read_counts(hand_counts)
    with pytest.raises(ValueError, match="duplicate item_id 'I1'"):
        assign(items_frame([ITEMS[0], ITEMS[0]]), counts, "hand")
    with pytest.raises(ValueError, match="missing column"):
        assign(items_frame(ITEMS).drop("objects"), counts, "hand")
    negs = items_frame([{**ITEMS[1], "caption_id": "nope"}])
    with pytest.raises(ValueError, match="'nope' is not an item"):
        assign(items_frame(ITEMS), counts, "hand", negatives=negs)


# ------------------------------------------------------------------------------ BindSplit

# bucket -> (STRICT, LOOSE)
COLLAPSE = {
    "perfect": ("seen", "seen"),
    "close": ("unseen", "seen"),
    "none": ("unseen", "unseen"),
    "perfect+close": ("mixed", "seen"),
    "perfect+none": ("mixed", "mixed"),
    "close+none": ("unseen", "mixed"),
    "perfect+close+none": ("mixed", "mixed"),
}


def test_labels_buckets_and_rules() -> None:
    assert binding_label(2, 0) == "perfect"
    assert binding_label(1, 5) == "perfect"
    assert binding_label(0, 3) == "close"
    assert binding_label(0, 0) == "none"
    assert binding_label(1, 1, min_count=2) == "none"
    assert set(COLLAPSE) == set(BUCKETS) and len(BUCKETS) == 7
    assert bucket_of(["none", "perfect", "perfect"]) == "perfect+none"
    assert bucket_of([]) is None
    for bucket, (strict, loose) in COLLAPSE.items():
        assert bucket_of(bucket.split("+")) == bucket
        assert (collapse(bucket, "strict"), collapse(bucket, "loose")) == (strict, loose)
    assert collapse(None, "strict") is None
    with pytest.raises(ValueError, match="unknown BindSplit rule"):
        collapse("perfect", "medium")
    with pytest.raises(ValueError, match="unknown binding label"):
        bucket_of(["seen"])


def test_bindsplit_sample_with_a_negative() -> None:
    counts = {("red", "circle"): (3, 1), ("blue", "square"): (1, 0), ("small", "circle"): (0, 1)}
    pos = [("red", "circle"), ("blue", "square")]
    neg = [("blue", "circle"), ("red", "square")]  # attribute swap
    s = bindsplit_sample(pos, neg, counts)
    assert s.positive_labels == {("blue", "square"): "perfect", ("red", "circle"): "perfect"}
    assert set(s.negative_labels.values()) == {"none"}  # type: ignore[union-attr]
    assert (s.positive_bucket, s.negative_bucket, s.bucket) == ("perfect", "none", "perfect+none")
    assert s.split("strict") == s.split("loose") == "mixed"
    assert s.split("strict", "positive") == "seen"
    assert s.split("loose", "negative") == "unseen"
    # Without a negative the sample is the positive alone; a function works as lookup too.
    alone = bindsplit_sample([("small", "circle")], None, lambda b: counts.get(b, (0, 0)))
    assert (alone.bucket, alone.negative_bucket, alone.negative_labels) == ("close", None, None)
    assert (alone.split("strict"), alone.split("loose")) == ("unseen", "seen")


def test_graph_bindings_perfect_and_close() -> None:
    g = graph(
        "x",
        [(0, "Circles", "circle"), (1, "glasses", "glass"), (2, "star", "star")],
        [(0, "small"), (0, "Red"), (0, "red"), (1, "black"), (9, "green")],
    )
    assert graph_bindings(g) == [
        (("black", "glass"), True),
        (("red", "circle"), False),
        (("small", "circle"), False),
    ]


NEGATIVES = [
    # I8 has two negatives, pooled: a close-only and an unseen binding
    graph("I8", [(0, "circle", "circle")], [(0, "small")]),
    graph("I8", [(0, "square", "square")], [(0, "red")]),
    # I9's attribute swap
    graph("I9", [(0, "circle", "circle"), (1, "square", "square")], [(0, "blue"), (1, "red")]),
    # a negative without any binding
    graph("I5", [(0, "square", "square")]),
]


def test_bindsplit_columns_with_negatives(hand_counts: Path) -> None:
    out, summary = assign(
        items_frame(ITEMS), read_counts(hand_counts), "hand", negatives=items_frame(NEGATIVES)
    )
    rows = {r["item_id"]: r for r in out.iter_rows(named=True)}
    i8 = rows["I8"]
    assert i8["pos_bindings"] == [
        {"attr": "red", "obj_lemma": "circle", "label": "perfect"},
        {"attr": "small", "obj_lemma": "circle", "label": "close"},
    ]
    assert [b["label"] for b in i8["neg_bindings"]] == ["none", "close"]  # red square, small ...
    assert (i8["pos_bucket"], i8["neg_bucket"], i8["bucket"]) == (
        "perfect+close",
        "close+none",
        "perfect+close+none",
    )
    assert (i8["pos_split_strict"], i8["pos_split_loose"]) == ("mixed", "seen")
    assert (i8["neg_split_strict"], i8["neg_split_loose"]) == ("unseen", "mixed")
    assert (i8["split_strict"], i8["split_loose"]) == ("mixed", "mixed")
    i9 = rows["I9"]
    assert (i9["pos_bucket"], i9["neg_bucket"], i9["bucket"]) == ("perfect", "none", "perfect+none")
    assert (rows["I5"]["neg_bindings"], rows["I5"]["neg_bucket"]) == ([], None)
    assert rows["I1"]["neg_bindings"] is None  # no negative given
    assert rows["I2"]["bucket"] == "none" and rows["I2"]["split_loose"] == "unseen"
    assert rows["I4"]["bucket"] is None and rows["I4"]["split_strict"] is None

    # Fig. 3 asymmetry over the paired samples (I8, I9).
    asym = summary.filter(pl.col("section") == "bindsplit_asymmetry")
    strict = {
        (r["side"], r["split"]): r["value"]
        for r in asym.iter_rows(named=True)
        if r["rule"] == "strict"
    }
    assert strict[("positive", "seen")] == 0.5 and strict[("negative", "seen")] == 0.0
    assert strict[("positive-negative", "seen")] == 0.5
    assert set(asym["n"]) == {2}

    # The vectorized columns agree with the pure definition, sample by sample.
    counts = {
        (r["attr"], r["obj_lemma"]): (r["perfect_count"], r["close_count"])
        for r in read_counts(hand_counts)["bindings"].iter_rows(named=True)
    }
    for item_id, row in rows.items():
        pos = [b for (b, _) in graph_bindings(next(g for g in ITEMS if g["caption_id"] == item_id))]
        negs = [g for g in NEGATIVES if g["caption_id"] == item_id]
        neg = [b for g in negs for (b, _) in graph_bindings(g)] if negs else None
        s = bindsplit_sample(pos, neg, counts)
        assert (row["pos_bucket"], row["neg_bucket"], row["bucket"]) == (
            s.positive_bucket,
            s.negative_bucket,
            s.bucket,
        )
        for rule in ("strict", "loose"):
            assert row[f"split_{rule}"] == s.split(rule)


def test_summary_sections(hand_counts: Path) -> None:
    _, summary = assign(items_frame(ITEMS), read_counts(hand_counts), "hand")
    assert summary.schema == pl.Schema(SUMMARY_SCHEMA)
    sizes = summary.filter(
        (pl.col("section") == "crepe_split_sizes") & (pl.col("metric") == "items")
    )
    assert dict(zip(sizes["split"], sizes["value"], strict=True)) == {
        "SC": 3.0,
        "UC": 2.0,
        "UA": 2.0,
        "no_compound": 2.0,
    }
    unique = summary.filter(pl.col("section") == "crepe_unique")
    ua = {r["metric"]: r["value"] for r in unique.iter_rows(named=True) if r["split"] == "UA"}
    assert ua["unique_atoms_relation"] == 1.0 and ua["unique_unseen_atoms_relation"] == 1.0
    assert ua["unique_unseen_atoms_attribute"] == 1.0  # pink
    # No negatives: no paired samples, so no asymmetry rows.
    assert summary.filter(pl.col("section") == "bindsplit_asymmetry").height == 0


# --------------------------------------------------------------------- job level and world


def small_world_config() -> dict[str, Any]:
    """Few shapes and relations, so that every training-legal compound is sampled."""
    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg.update(
        shapes=["circle", "square", "triangle", "star"],
        colours=["red", "green", "blue", "yellow"],
        eval={"n_images": 40, "captions_per_image": 3, "heldout_fraction": 0.5},
        corpora={
            "cc12m": {
                "format": "cc12m_tsv",
                "n_images": 400,
                "caption_style": "clean",
                "seed": 1,
                "holdout": {
                    "bindings": [["red", "circle"], ["green", "square"]],
                    "triples": [["circle", "left of", "square"]],
                    "atoms": ["star"],
                },
            }
        },
    )
    return cfg


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = small_world_config()
    root = tmp_path_factory.mktemp("world")
    build_eval_set(cfg, root / "eval")
    build_corpus(cfg, "cc12m", root / "cc12m")
    write_manifest(cfg, root / "manifest.json")
    items_from_truth(root / "eval" / "truth.parquet").write_parquet(root / "items.parquet")
    return root


def test_world_splits_agree_with_the_manifest(world: Path, tmp_path: Path) -> None:
    truth = pl.read_parquet(world / "cc12m" / "truth.parquet")
    parts = []
    for k, start in enumerate(range(0, truth.height, 150)):
        shard = tmp_path / f"shard{k}.parquet"
        truth.slice(start, 150).write_parquet(shard)
        count_shard(shard, tmp_path / f"part{k}")
        parts.append(tmp_path / f"part{k}")
    merge_counts(parts, tmp_path / "counts")
    count_shard(world / "cc12m" / "truth.parquet", tmp_path / "whole")
    assert dir_hashes(tmp_path / "counts") == dir_hashes(tmp_path / "whole")

    out, summary_out = tmp_path / "splits.parquet", tmp_path / "summary.parquet"
    assign_splits(world / "items.parquet", tmp_path / "counts", out, summary_out, "cc12m")
    splits = pl.read_parquet(out)
    assert splits.schema == pl.Schema(ASSIGNMENTS_SCHEMA)
    assert read_parquet_metadata(out)["vlcomp.training_captions"] == "400"
    assert set(splits["crepe_split"]) == {"SC", "UC", "UA"}

    report = check_world_splits(
        world / "items.parquet", out, world / "manifest.json", "cc12m", tmp_path / "agree.json"
    )
    print(report.crepe_confusion.filter(pl.col("items") > 0))
    print(report.binding_confusion.filter(pl.col("bindings") > 0))
    assert report.crepe_n == splits.height
    assert report.crepe_rate == 1.0, report.gaps
    assert report.binding_rate == 1.0
    assert report.gaps.height == 0
    doc = json.loads((tmp_path / "agree.json").read_text())
    assert doc["crepe"]["rate"] == 1.0 and doc["corpus"] == "cc12m"

    # Same inputs, same bytes.
    assign_splits(
        world / "items.parquet",
        tmp_path / "counts",
        tmp_path / "again.parquet",
        tmp_path / "again_summary.parquet",
        "cc12m",
    )
    assert sha(tmp_path / "again.parquet") == sha(out)
    assert sha(tmp_path / "again_summary.parquet") == sha(summary_out)


def test_world_check_detects_a_wrong_split(world: Path, tmp_path: Path) -> None:
    # Counting the eval captions themselves as training data sees everything: every
    # item held-out content then disagrees with the manifest.
    count_shard(world / "eval" / "truth.parquet", tmp_path / "counts")
    out = tmp_path / "splits.parquet"
    assign_splits(world / "items.parquet", tmp_path / "counts", out, tmp_path / "s.parquet", "x")
    report = check_world_splits(world / "items.parquet", out, world / "manifest.json", "cc12m")
    assert report.crepe_rate < 1.0
    wrong = report.crepe_confusion.filter(
        (pl.col("expected") == "UA") & (pl.col("derived") == "SC")
    )
    assert wrong["items"].item() > 0


def test_benchmark_runs_and_reports(world: Path, tmp_path: Path) -> None:
    result = benchmark_counting(
        world / "cc12m" / "truth.parquet", tmp_path, n_rows=1000, n_shards=2
    )
    print(result)
    assert result["rows"] == 1000
    assert result["captions_per_s"] > 0 and result["peak_rss_mib"] > 0
    assert result["same_tables_as_python_loop"] and result["python_loop_rows"] == 1000
    totals, _ = read_totals(tmp_path / "full" / "merged")
    assert totals["n_rows"] == 1000 and totals["n_not_ok"] == 10
