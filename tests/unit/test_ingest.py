"""Unit tests of vlcomp.ingest: loaders, sharding, bad input, eval items from Visual Genome."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.fixtures.ingest.make_fixtures import CC12M, COCO_EXPECTED, YFCC
from vlcomp.contracts import CAPTIONS_SCHEMA, EVAL_ITEMS_SCHEMA, REJECTED_SCHEMA
from vlcomp.ingest import (
    CaptionRules,
    CorruptInputError,
    IngestOptionsError,
    Rejected,
    RulesError,
    eval_items_from_vg,
    ingest,
    iter_captions,
    iter_json_array,
    screen,
    shard_of,
)
from vlcomp.ingest.vg import atoms_and_compounds, build_graph, default_canon, graph_key
from vlcomp.io import read_parquet_metadata
from vlcomp.world import DEFAULT_WORLD_CONFIG, build_eval_set

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ingest"
CANON = default_canon()
# Filters that keep every world region (to compare items with the region graphs).
KEEP_ALL = {
    "min_area": 0,
    "min_area_fraction": 0.0,
    "min_aspect": 0.01,
    "max_aspect": 100.0,
    "min_atoms": 1,
    "min_compounds": 0,
    "dedupe": "none",
}
# Recommended for the world's 64 px images: CREPE's 10 % of the image, no absolute floor.
WORLD_FILTERS = {"min_area": 0, "min_area_fraction": 0.1}


def run(
    fmt: str,
    inputs: list[Path],
    out: Path,
    n_shards: int = 3,
    options: dict[str, Any] | None = None,
    corpus: str = "c",
) -> tuple[Any, pl.DataFrame, pl.DataFrame]:
    summary = ingest(fmt, inputs, corpus, out, n_shards, options or {})
    shards = [pl.read_parquet(out / f"captions-{i}-of-{n_shards}.parquet") for i in range(n_shards)]
    for frame in shards:
        assert frame.schema == pl.Schema(CAPTIONS_SCHEMA)
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert summary.accepted == sum(f.height for f in shards)
    assert sum(summary.rejected.values()) == rejected.height
    return summary, pl.concat(shards), rejected


def tree(root: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir())}


# ------------------------------------------------------------------------------- loaders


def test_cc12m_every_line_is_kept_or_rejected_with_its_reason(tmp_path: Path) -> None:
    summary, captions, rejected = run("cc12m_tsv", [FIX / "cc12m.tsv"], tmp_path)
    assert summary.total == len(CC12M)
    by_line = dict(zip(rejected["location"], rejected["reason"], strict=True))
    for n, (line, reason) in enumerate(CC12M, 1):
        if reason is None:
            row = captions.filter(pl.col("caption_id") == f"c/cc12m/{n}").row(0, named=True)
            url, text = line.decode().split("\t")
            assert row["image_id"] == url and row["text"] == " ".join(text.split())
            assert row["corpus"] == "c"
        else:
            assert by_line[f"line {n}"] == reason, line
    assert set(rejected["source"]) == {str(FIX / "cc12m.tsv")}
    assert rejected.filter(pl.col("reason") == "too_long")["raw"][0].endswith("…")
    assert summary.rejected["non_english"] == 3


def test_yfcc_title_and_description_are_url_decoded(tmp_path: Path) -> None:
    summary, captions, rejected = run("yfcc_tsv", [FIX / "yfcc15m_metadata.tsv"], tmp_path)
    texts = dict(zip(captions["image_id"], captions["text"], strict=True))
    reasons = dict(zip(rejected["location"], rejected["reason"], strict=True))
    for n, (fields, expected) in enumerate(YFCC, 2):  # line 1 is the header
        if fields[0] in texts:
            assert texts[fields[0]] == expected
        else:
            assert reasons[f"line {n}"] == expected
    assert captions.filter(pl.col("image_id") == "1001")["caption_id"][0] == (
        "c/yfcc15m_metadata/2"
    )


def test_yfcc_text_modes_and_subset(tmp_path: Path) -> None:
    path = FIX / "yfcc15m_metadata.tsv"
    rows = list(iter_captions("yfcc_tsv", path, "y", {"text": "separate"}))
    ids = [r.caption_id for r in rows if not isinstance(r, Rejected)]
    assert "y/yfcc15m_metadata/2/title" in ids and "y/yfcc15m_metadata/2/description" in ids
    assert "y/yfcc15m_metadata/3/description" not in ids  # no description: not a caption
    titles = {
        r.image_id: r.text
        for r in iter_captions("yfcc_tsv", path, "y", {"text": "title"})
        if not isinstance(r, Rejected)
    }
    assert titles["1003"] == "IMG_0042" and titles["1009"] == "Fish & chips!"
    raw = {
        r.image_id: r.text
        for r in iter_captions("yfcc_tsv", path, "y", {"strip_html": False, "strip_urls": False})
        if not isinstance(r, Rejected)
    }
    assert "<b>A cat</b>" in raw["1003"] and "http://www.example.com/cat" in raw["1003"]

    subset = {"subset_ids": str(FIX / "yfcc100m_subset_data.tsv")}
    summary, captions, rejected = run("yfcc_tsv", [path], tmp_path, options=subset)
    assert summary.filtered == {"not_in_subset": 1}
    assert "1002" not in set(captions["image_id"])
    assert "not_in_subset" not in set(rejected["reason"])


def test_yfcc_positional_columns_and_missing_header_column(tmp_path: Path) -> None:
    lines = (FIX / "yfcc15m_metadata.tsv").read_text().splitlines()[1:]
    headless = tmp_path / "dump.tsv"
    headless.write_text("\n".join(lines) + "\n")
    options = {"header": False, "id_column": 0, "title_column": 2, "description_column": 3}
    rows = [r for r in iter_captions("yfcc_tsv", headless, "y", options)]
    assert rows[0].text == YFCC[0][1] and rows[0].caption_id == "y/dump/1"
    with pytest.raises(IngestOptionsError, match="indices"):
        list(iter_captions("yfcc_tsv", headless, "y", {"header": False}))
    with pytest.raises(CorruptInputError, match=r"yfcc15m_metadata.tsv: line 1: .*'caption'"):
        list(
            iter_captions(
                "yfcc_tsv", FIX / "yfcc15m_metadata.tsv", "y", {"title_column": "caption"}
            )
        )


def test_laion_directory_of_parts(tmp_path: Path) -> None:
    summary, captions, rejected = run("laion_parquet", [FIX / "laion"], tmp_path)
    assert summary.files == 2 and summary.total == 6
    assert sorted(captions["caption_id"]) == ["c/part-00000/0", "c/part-00001/0", "c/part-00001/2"]
    assert captions.filter(pl.col("caption_id") == "c/part-00001/0")["image_id"][0] == (
        "https://l.example/4.jpg"
    )
    assert rejected.select("source", "location", "reason").rows() == [
        (str(FIX / "laion/part-00000.parquet"), "row 1", "missing_field"),  # no URL
        (str(FIX / "laion/part-00000.parquet"), "row 2", "missing_field"),  # no TEXT
        (str(FIX / "laion/part-00001.parquet"), "row 1", "non_english"),
    ]


def test_directory_glob_selects_part_files(tmp_path: Path) -> None:
    data = tmp_path / "laion"
    shutil.copytree(FIX / "laion", data)
    pl.DataFrame({"x": [1]}).write_parquet(data / "stats.parquet")
    with pytest.raises(CorruptInputError, match=r"stats.parquet: schema: missing column"):
        ingest("laion_parquet", [data], "l", tmp_path / "a", 2, {})
    summary = ingest("laion_parquet", [data], "l", tmp_path / "b", 2, {"glob": "part-*.parquet"})
    assert summary.files == 2 and summary.accepted == 3


def test_coco_captions(tmp_path: Path) -> None:
    summary, captions, rejected = run(
        "coco_json", [FIX / "coco_captions.json"], tmp_path, 2, {}, "coco"
    )
    assert (
        dict(zip(captions["caption_id"], captions["text"], strict=True))
        == (COCO_EXPECTED["accepted"])
    )
    assert set(captions["image_id"]) == {"1"}
    assert rejected["reason"].to_list() == COCO_EXPECTED["rejected"]
    assert rejected["location"][0].startswith("annotations[2] (byte ")


def test_vg_region_descriptions_as_captions(tmp_path: Path) -> None:
    path = FIX / "vg/region_descriptions.json"
    summary, captions, rejected = run("vg_regions", [path], tmp_path, 2, {}, "vg")
    expected = json.loads((FIX / "vg_expected.json").read_text())
    caption_reasons = {"invalid_box", "duplicate_id", "empty", "non_english"}
    # region 109's box leaves its image: only the eval items, which know image sizes, see it
    want_rejected = [r for i, r in expected if r in caption_reasons and i != 109]
    assert rejected["reason"].to_list() == want_rejected
    assert summary.total == len(expected)
    row = captions.filter(pl.col("caption_id") == "vg/101").row(0, named=True)
    assert row == {
        "caption_id": "vg/101",
        "corpus": "vg",
        "image_id": "1",
        "text": "a man riding a brown horse",
    }


def test_user_corpora(tmp_path: Path) -> None:
    lines = list(iter_captions("text_lines", FIX / "user/captions.txt", "u"))
    assert lines[0].caption_id == "u/captions/1" and lines[0].image_id is None
    assert [r.reason for r in lines[1:]] == ["empty", "non_english"]

    rows = list(
        iter_captions(
            "text_jsonl",
            FIX / "user/captions.jsonl",
            "u",
            {"id_field": "id", "image_field": "image"},
        )
    )
    kept = [r for r in rows if not isinstance(r, Rejected)]
    assert [(r.caption_id, r.image_id) for r in kept] == [("u/a1", "img1.png"), ("u/7", None)]
    assert [r.reason for r in rows if isinstance(r, Rejected)] == [
        "broken_json",
        "duplicate_id",
        "missing_field",
        "malformed_row",
    ]

    opts = {"text_column": "caption", "id_column": "key"}
    rows = list(iter_captions("text_parquet", FIX / "user/captions.parquet", "u", opts))
    assert rows[0] == ("u/k1", "u", None, "a green star")
    assert [r.reason for r in rows[1:]] == ["missing_field", "empty"]


# ------------------------------------------------------------------------------ sharding


def _corpus(path: Path, n: int, start: int = 0) -> Path:
    words = ["red", "circle", "blue", "square", "above", "a", "the", "left", "of", "star"]
    lines = [
        f"https://x.example/{i}.jpg\t{' '.join(words[(i * k) % 10] for k in range(1, 6))}"
        for i in range(start, start + n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shards_are_deterministic_and_union_to_all_accepted(tmp_path: Path) -> None:
    a, b = _corpus(tmp_path / "a.tsv", 700), _corpus(tmp_path / "b.tsv", 500, 700)
    small = {"buffer_rows": 128}  # several row groups per shard
    _, one, _ = run("cc12m_tsv", [a, b], tmp_path / "one", 1, small)
    s4, four, _ = run("cc12m_tsv", [a, b], tmp_path / "four", 4, small)
    run("cc12m_tsv", [a, b], tmp_path / "again", 4, small)
    assert tree(tmp_path / "four") == tree(tmp_path / "again")
    assert one.height == 1200 == four.height
    assert sorted(one.rows()) == sorted(four.rows())
    assert four["caption_id"].n_unique() == 1200
    assert min(s4.per_shard) > 200  # balanced
    for i in range(4):
        shard = pl.read_parquet(tmp_path / "four" / f"captions-{i}-of-4.parquet")
        assert all(shard_of(c, 4) == i for c in shard["caption_id"])
        expected_order = [c for c in one["caption_id"] if shard_of(c, 4) == i]
        assert shard["caption_id"].to_list() == expected_order  # input order within a shard
    meta = read_parquet_metadata(tmp_path / "four/captions-0-of-4.parquet")
    assert meta["vlcomp.format"] == "cc12m_tsv" and meta["vlcomp.shard"] == "0"
    # Membership depends on the caption id only, not on the order of the inputs.
    run("cc12m_tsv", [b, a], tmp_path / "swapped", 4, small)
    for i in range(4):
        name = f"captions-{i}-of-4.parquet"
        first = set(pl.read_parquet(tmp_path / "four" / name)["caption_id"])
        assert set(pl.read_parquet(tmp_path / "swapped" / name)["caption_id"]) == first


def test_changing_the_shard_count_removes_old_shards(tmp_path: Path) -> None:
    a = _corpus(tmp_path / "a.tsv", 50)
    ingest("cc12m_tsv", [a], "c", tmp_path / "out", 4, {})
    ingest("cc12m_tsv", [a], "c", tmp_path / "out", 2, {})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "captions-0-of-2.parquet",
        "captions-1-of-2.parquet",
        "rejected.parquet",
    ]


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("A man riding a horse.", None),
        (None, "missing_field"),
        (7, "missing_field"),
        ("a\x00b", "control_chars"),
        ("tab\tand\nnewline are whitespace", None),
        ("broken \ufffd", "bad_encoding"),
        (" \t\n ", "empty"),
        ("word " * 201, "too_long"),
        ("!!! ???", "no_letters"),
        ("Ἀθῆναι πόλις", "non_english"),
        ("Le chat et le chien dans la maison", "non_english"),
        ("The cat and the dog in la maison", None),
        ("La La Land movie poster", None),
        ("Red Circle Blue Star Clipart Png", None),
        ("Crème brûlée with fresh berries", None),
    ],
)
def test_caption_rules(text: Any, reason: str | None) -> None:
    assert screen(text, CaptionRules())[1] == reason


def test_caption_rules_are_configurable() -> None:
    long = "x" * 50
    assert screen(long, CaptionRules.from_options({"max_chars": 40}))[1] == "too_long"
    assert screen("Le chat et le chien", CaptionRules(english=False)) == (
        "Le chat et le chien",
        None,
    )
    with pytest.raises(RulesError, match="max_chars"):
        CaptionRules.from_options({"max_chars": 0})
    with pytest.raises(RulesError, match="unknown key.*max_char"):
        CaptionRules.from_options({"max_char": 10})


def test_over_long_lines_are_rejected_without_reading_them_whole(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_bytes(b"short caption one\n" + b"y" * 5000 + b"\nshort caption two\n")
    rows = list(iter_captions("text_lines", path, "t", {"max_line_bytes": 100}))
    assert [getattr(r, "reason", None) for r in rows] == [None, "too_long", None]
    assert rows[2].caption_id == "t/long/3"
    assert len(rows[1].raw) <= CaptionRules().raw_chars + 1


def test_invalid_options_name_the_key(tmp_path: Path) -> None:
    a = _corpus(tmp_path / "a.tsv", 5)
    with pytest.raises(IngestOptionsError, match="unknown option.*'text_colum'"):
        ingest("laion_parquet", [FIX / "laion"], "l", tmp_path / "o", 1, {"text_colum": "T"})
    with pytest.raises(IngestOptionsError, match="unknown format"):
        ingest("cc3m", [a], "c", tmp_path / "o", 1, {})
    with pytest.raises(IngestOptionsError, match="n_shards"):
        ingest("cc12m_tsv", [a], "c", tmp_path / "o", 0, {})
    with pytest.raises(IngestOptionsError, match="share the file key"):
        ingest("cc12m_tsv", [a, a], "c", tmp_path / "o", 1, {})
    assert not (tmp_path / "o").exists()


def _corrupt_row_group(src: Path, dst: Path) -> None:
    """Copy ``src`` with the header of the first data page of column TEXT overwritten."""
    import pyarrow.parquet as pq

    data = bytearray(src.read_bytes())
    start = pq.ParquetFile(src).metadata.row_group(0).column(2).data_page_offset
    data[start : start + 6] = b"\xff" * 6
    dst.write_bytes(bytes(data))


@pytest.mark.parametrize("case", ["json", "vg", "parquet_footer", "parquet_row_group", "gzip"])
def test_corrupt_input_fails_naming_file_and_offset(tmp_path: Path, case: str) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    if case == "json":
        raw = (FIX / "coco_captions.json").read_bytes()
        bad = inputs / "coco.json"
        bad.write_bytes(raw[: len(raw) // 2])
        fmt, pattern = "coco_json", r"coco.json: byte \d+: unexpected end of file"
    elif case == "vg":
        raw = (FIX / "vg/region_descriptions.json").read_bytes()
        bad = inputs / "region_descriptions.json"
        bad.write_bytes(raw.replace(b'"phrase"', b'"phrase" "', 1))
        fmt, pattern = "vg_regions", r"region_descriptions.json: byte \d+: invalid JSON"
    elif case == "parquet_footer":
        raw = (FIX / "laion/part-00001.parquet").read_bytes()
        bad = inputs / "part-00001.parquet"
        bad.write_bytes(raw[:-20])
        fmt, pattern = "laion_parquet", r"part-00001.parquet: footer: not a readable Parquet"
    elif case == "parquet_row_group":
        bad = inputs / "part-00001.parquet"
        _corrupt_row_group(FIX / "laion/part-00001.parquet", bad)
        fmt, pattern = "laion_parquet", r"part-00001.parquet: row group 0 \(row 0\): unreadable"
    else:
        payload = gzip.compress((FIX / "cc12m.tsv").read_bytes())
        bad = inputs / "cc12m.tsv.gz"
        bad.write_bytes(payload[: len(payload) // 2])
        fmt, pattern = "cc12m_tsv", r"cc12m.tsv.gz: line \d+ \(byte \d+\): unreadable"
    good = {"coco_json": FIX / "coco_captions.json", "vg_regions": None}.get(fmt)
    files = [bad] if good is None else [good, bad]
    out = tmp_path / "out"
    with pytest.raises(CorruptInputError, match=pattern):
        ingest(fmt, files, "c", out, 2, {})
    assert not out.exists() or not list(out.iterdir()), "a failed job left output behind"


def test_json_stream_matches_json_load(tmp_path: Path) -> None:
    doc = json.loads((FIX / "coco_captions.json").read_text())
    raw = (FIX / "coco_captions.json").read_bytes()
    for chunk in (3, 17, 1 << 20):
        items = list(iter_json_array(FIX / "coco_captions.json", "annotations", chunk=chunk))
        assert [v for _, _, v in items] == doc["annotations"]
        assert all(raw[off : off + 1] in (b"{", b'"') for _, off, _ in items)
    regions = json.loads((FIX / "vg/region_descriptions.json").read_text())
    assert [v for *_, v in iter_json_array(FIX / "vg/region_descriptions.json", chunk=5)] == regions
    (tmp_path / "x.json").write_bytes(b"[1, 2] [3]")
    with pytest.raises(CorruptInputError, match=r"x.json: byte 7: unexpected data"):
        list(iter_json_array(tmp_path / "x.json"))


# ---------------------------------------------------------------------------- eval items


def read_items(
    vg_dir: Path, out: Path, filters: dict[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    eval_items_from_vg(vg_dir, out / "items.parquet", out / "rejected.parquet", filters)
    items = pl.read_parquet(out / "items.parquet")
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert items.schema == pl.Schema(EVAL_ITEMS_SCHEMA)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    return items, rejected


def test_vg_fixture_filters_give_the_expected_reasons(tmp_path: Path) -> None:
    items, rejected = read_items(FIX / "vg", tmp_path, {})
    expected = json.loads((FIX / "vg_expected.json").read_text())
    assert items["region_id"].to_list() == [str(r) for r, reason in expected if reason is None]
    assert rejected["reason"].to_list() == [reason for _, reason in expected if reason]
    first = items.row(0, named=True)
    assert first["item_id"] == "vg_regions/101" and first["image_id"] == "1"
    assert (first["x"], first["y"], first["width"], first["height"]) == (100, 100, 400, 300)
    assert [o["lemma"] for o in first["objects"]] == ["man", "horse"]
    assert first["attributes"] == [{"obj": 1, "value": "brown"}]
    # "riding" in the annotation, "ride" as the parser writes it; the dangling one dropped
    assert first["relations"] == [{"subj": 0, "pred": "ride", "obj": 1}]
    summary = eval_items_from_vg(
        FIX / "vg", tmp_path / "c.parquet", tmp_path / "cr.parquet", {"clip_to_image": True}
    )
    clipped = pl.read_parquet(tmp_path / "cr.parquet")
    assert clipped.filter(pl.col("location").str.contains(r"^\[0\]\.regions\[8\]"))[
        "reason"
    ].to_list() == ["too_small"]
    assert summary.clipped_boxes == 1


@pytest.mark.parametrize("source", ["scene_graphs", "attributes_relationships"])
def test_vg_fixture_graphs_from_image_scene_graphs(tmp_path: Path, source: str) -> None:
    vg = tmp_path / "vg"
    shutil.copytree(FIX / "vg", vg)
    (vg / "region_graphs.json").unlink()
    if source == "attributes_relationships":
        (vg / "scene_graphs.json").unlink()
    items, _ = read_items(vg, tmp_path, {})
    first = items.row(0, named=True)
    assert first["region_id"] == "101"
    assert [o["lemma"] for o in first["objects"]] == ["man", "horse"]
    assert first["relations"] == [{"subj": 0, "pred": "ride", "obj": 1}]


@pytest.fixture(scope="module")
def world_vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg["eval"] = {"n_images": 30, "captions_per_image": 2, "heldout_fraction": 0.5}
    out = tmp_path_factory.mktemp("world")
    build_eval_set(cfg, out)
    return out / "vg"


def test_world_items_carry_the_region_graphs(world_vg: Path, tmp_path: Path) -> None:
    items, rejected = read_items(world_vg, tmp_path, KEEP_ALL)
    assert rejected.height == 0
    graphs = json.loads((world_vg / "region_graphs.json").read_text())
    regions = [r for entry in graphs for r in entry["regions"]]
    assert items["region_id"].to_list() == [str(r["region_id"]) for r in regions]
    for row, region in zip(items.iter_rows(named=True), regions, strict=True):
        objs, attrs, rels = build_graph(region["objects"], region["relationships"], CANON)
        assert row["text"] == region["phrase"]
        assert [(o["idx"], o["name"], o["lemma"]) for o in row["objects"]] == objs
        assert [(a["obj"], a["value"]) for a in row["attributes"]] == attrs
        assert [(r["subj"], r["pred"], r["obj"]) for r in row["relations"]] == rels
        assert (row["x"], row["y"], row["width"], row["height"]) == (
            region["x"],
            region["y"],
            region["width"],
            region["height"],
        )


def test_world_items_with_64px_thresholds(world_vg: Path, tmp_path: Path) -> None:
    items, rejected = read_items(world_vg, tmp_path, WORLD_FILTERS)
    n_regions = sum(
        len(e["regions"]) for e in json.loads((world_vg / "region_descriptions.json").read_text())
    )
    assert items.height + rejected.height == n_regions
    assert items.height > 0
    assert set(rejected["reason"]) <= {"too_small_fraction", "aspect_ratio", "duplicate_graph"}
    assert "too_small_fraction" in set(rejected["reason"])
    for row in items.iter_rows(named=True):
        w, h = row["width"], row["height"]
        assert w * h >= 0.1 * 64 * 64 and 0.5 <= w / h <= 2.0
        graph = (
            [(o["idx"], o["name"], o["lemma"]) for o in row["objects"]],
            [(a["obj"], a["value"]) for a in row["attributes"]],
            [(r["subj"], r["pred"], r["obj"]) for r in row["relations"]],
        )
        n_atoms, n_compounds = atoms_and_compounds(graph)
        assert n_atoms >= 2 and n_compounds >= 1
    keys = items.with_columns(
        key=pl.struct("objects", "attributes", "relations").map_elements(
            lambda s: repr(
                graph_key(
                    (
                        [(o["idx"], o["name"], o["lemma"]) for o in s["objects"]],
                        [(a["obj"], a["value"]) for a in s["attributes"]],
                        [(r["subj"], r["pred"], r["obj"]) for r in s["relations"]],
                    )
                )
            ),
            return_dtype=pl.String,
        )
    )
    assert keys.select("image_id", "key").is_duplicated().sum() == 0
    # CREPE's absolute floor (40,000 px) keeps nothing of a 64 px image: the job fails
    # saying so, and writes nothing
    with pytest.raises(ValueError, match=r"no region became an evaluation item.*too_small \d+\)"):
        read_items(world_vg, tmp_path / "crepe", {})
    assert not (tmp_path / "crepe" / "items.parquet").exists()
    # Global de-duplication keeps fewer; the same settings give the same bytes.
    fewer, _ = read_items(world_vg, tmp_path / "global", {**WORLD_FILTERS, "dedupe": "global"})
    assert fewer.height < items.height
    read_items(world_vg, tmp_path / "again", WORLD_FILTERS)
    assert (tmp_path / "items.parquet").read_bytes() == (
        tmp_path / "again/items.parquet"
    ).read_bytes()


def test_world_fallback_without_region_graphs(world_vg: Path, tmp_path: Path) -> None:
    vg = tmp_path / "vg"
    shutil.copytree(world_vg, vg)
    (vg / "region_graphs.json").unlink()
    items, _ = read_items(vg, tmp_path, {**KEEP_ALL, "min_atoms": 0})
    exact, _ = read_items(world_vg, tmp_path / "exact", {**KEEP_ALL, "min_atoms": 0})
    assert items["region_id"].to_list() == exact["region_id"].to_list()
    # Single-object regions: the box holds exactly that object in both.
    single = exact.filter(pl.col("objects").list.len() == 1)["region_id"]
    a = items.filter(pl.col("region_id").is_in(single.implode()))["objects"].to_list()
    b = exact.filter(pl.col("region_id").is_in(single.implode()))["objects"].to_list()
    assert a == b


def test_unknown_filter_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="min_aera"):
        eval_items_from_vg(
            FIX / "vg", tmp_path / "i.parquet", tmp_path / "r.parquet", {"min_aera": 1}
        )
    assert not list(tmp_path.iterdir())


def test_text_csv_reads_quoted_lines_and_rejects_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    path.write_text(
        "image_id,region_id,caption\n"
        "1,10,a red car\n"
        '2,20,"a dog, on\ntwo lines"\n'
        "3,30\n"
        "1,40,another id one\n"
        ",,\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    summary = ingest(
        "text_csv", [path], "mine", out, 1,
        {"rules": {}, "id_column": "image_id", "image_column": "region_id"},
    )  # fmt: skip
    captions = pl.read_parquet(out / "captions-0-of-1.parquet")
    assert captions["caption_id"].to_list() == ["mine/1", "mine/2"]
    assert captions["image_id"].to_list() == ["10", "20"]
    assert captions["text"].to_list()[1] == "a dog, on two lines"
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert dict(zip(rejected["location"], rejected["reason"], strict=True)) == {
        "row 3": "missing_columns",
        "row 4": "duplicate_id",
        "row 5": "empty",
    }
    assert summary.accepted == 2


def test_text_csv_without_its_column_fails_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    path.write_text("id,text\n1,a cat\n", encoding="utf-8")
    with pytest.raises(CorruptInputError, match="captions.csv"):
        ingest("text_csv", [path], "mine", tmp_path / "out", 1, {"rules": {}})


def test_an_empty_corpus_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n\n%%%%\n")
    messages: list[str] = []
    with caplog.at_level("WARNING"):
        summary = ingest(
            "text_lines", [path], "c", tmp_path / "out", 2, {}, progress=messages.append
        )
    assert summary.accepted == 0
    [warning] = summary.as_dict()["warnings"]
    assert "'c' has no accepted caption" in warning and "unseen" in warning
    assert any(m.startswith("WARNING: corpus 'c' has no accepted caption") for m in messages)
    assert any("no accepted caption" in r.message for r in caplog.records)


def test_empty_shards_are_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "one.txt"
    path.write_text("a red circle next to a blue square\n")
    summary = ingest("text_lines", [path], "c", tmp_path / "out", 3, {})
    assert summary.warnings == [
        "corpus 'c': 2 of 3 shards are empty (1 captions); fewer shards would do"
    ]


# ------------------------------------------------------------------ ingest in parts


def _lines_corpus(folder: Path, files: int) -> list[Path]:
    folder.mkdir()
    paths = []
    for i in range(files):
        path = folder / f"part-{i:05d}.txt"
        path.write_text("".join(f"caption {j} of file {i}\n" for j in range(6)) + "\n")
        paths.append(path)
    return paths


def test_plan_parts_groups_the_files_in_order(tmp_path: Path) -> None:
    from vlcomp.ingest.parts import plan_parts

    files = [str(p) for p in _lines_corpus(tmp_path / "c", 5)]
    later = str(tmp_path / "written_by_a_rule.txt")  # not there yet: one file
    assert plan_parts("text_lines", [str(tmp_path / "c")], {}, None) == [[str(tmp_path / "c")]]
    assert plan_parts("text_lines", [str(tmp_path / "c")], {}, 2) == [
        files[0:2],
        files[2:4],
        files[4:],
    ]
    assert plan_parts("text_lines", [later, files[0]], {}, 1) == [[later], [files[0]]]
    assert plan_parts("text_lines", [str(tmp_path / "c")], {"glob": "*0000[13].txt"}, 5) == [
        [files[1], files[3]]
    ]


def test_plan_parts_refuses_own_ids_and_colliding_file_keys(tmp_path: Path) -> None:
    from vlcomp.ingest.parts import plan_parts

    files = _lines_corpus(tmp_path / "a", 1) + _lines_corpus(tmp_path / "b", 1)
    with pytest.raises(IngestOptionsError, match="share the file key 'part-00000'"):
        plan_parts("text_lines", [str(p) for p in files], {}, 1)
    with pytest.raises(IngestOptionsError, match="own ids .* one job"):
        plan_parts("text_csv", [str(files[0])], {"id_column": "id"}, 1)
    with pytest.raises(IngestOptionsError, match="own ids"):
        plan_parts("coco_json", [str(files[0])], {}, 1)
    with pytest.raises(IngestOptionsError, match="positive integer"):
        plan_parts("text_lines", [str(files[0])], {}, 0)


def test_parts_gathered_and_merged_equal_one_job(tmp_path: Path) -> None:
    """Library level: the parts' shards concatenated in order and their summaries summed
    are what one ingest job over all files writes (rows, order, metadata, rejected)."""
    from vlcomp.ingest.parts import gather_shard, merge_parts, plan_parts

    files = _lines_corpus(tmp_path / "c", 4)
    one = ingest("text_lines", files, "c", tmp_path / "one", 3, {"buffer_rows": 5})
    parts = plan_parts("text_lines", [str(tmp_path / "c")], {}, 3)
    assert [len(p) for p in parts] == [3, 1]
    part_dirs, summaries = [], []
    for j, part in enumerate(parts):
        part_dirs.append(tmp_path / f"part{j}")
        summary = ingest(
            "text_lines",
            [Path(p) for p in part],
            "c",
            part_dirs[j],
            3,
            {"buffer_rows": 5},
            part=f"{j}",
        )
        summaries.append(part_dirs[j] / "summary.json")
        summaries[-1].write_text(json.dumps(summary.as_dict()))
    (tmp_path / "out").mkdir()
    for i in range(3):
        name = f"captions-{i}-of-3.parquet"
        rows = gather_shard([d / name for d in part_dirs], tmp_path / "out" / name)
        assert rows == one.per_shard[i]
        assert pl.read_parquet(tmp_path / "out" / name).equals(
            pl.read_parquet(tmp_path / "one" / name)
        )
        assert read_parquet_metadata(tmp_path / "out" / name) == read_parquet_metadata(
            tmp_path / "one" / name
        )
    merged = merge_parts(
        summaries,
        [d / "rejected.parquet" for d in part_dirs],
        tmp_path / "out" / "rejected.parquet",
    )
    assert merged.as_dict() == one.as_dict()
    assert one.rejected == {"empty": 4}
    assert pl.read_parquet(tmp_path / "out" / "rejected.parquet").equals(
        pl.read_parquet(tmp_path / "one" / "rejected.parquet")
    )
    other = tmp_path / "other"
    ingest("text_lines", files[:1], "other", other, 3)
    with pytest.raises(ValueError, match="not a shard of the same corpus"):
        gather_shard([part_dirs[0] / "captions-0-of-3.parquet", other / "captions-0-of-3.parquet"],
                     tmp_path / "bad.parquet")  # fmt: skip
    assert not (tmp_path / "bad.parquet").exists()
