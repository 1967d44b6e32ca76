"""Importers of SugarCrepe++, ARO order sets, the VG-Relation symmetric-relation report and the
two-image benchmarks (Winoground, BiVLC, VisMin), on fixtures in the published formats."""

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA, TWO_IMAGE_SCHEMA
from vlcomp.importers import (
    ORDER_PERTURBATIONS,
    ImportFormatError,
    RecordError,
    integer_key_gaps,
    read_sugarcrepe_pp_file,
    read_winoground_file,
    symmetric_relation_items,
)
from vlcomp.importers.jobs import BOXES_SCHEMA, import_benchmark_job, import_two_image_job
from vlcomp.splits.items import image_index

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def _run(tmp_path, fmt, source, benchmark="bench"):
    out = tmp_path / "out"
    lines: list[str] = []
    summary = import_benchmark_job(
        fmt,
        source,
        benchmark,
        str(out / "candidates.parquet"),
        str(out / "boxes.parquet"),
        str(out / "rejected.parquet"),
        lines.append,
    )
    tables = {
        name: pl.read_parquet(out / f"{name}.parquet")
        for name in ("candidates", "boxes", "rejected")
    }
    assert tables["candidates"].schema == pl.Schema(CANDIDATES_SCHEMA)
    assert tables["boxes"].schema == pl.Schema(BOXES_SCHEMA)
    assert tables["rejected"].schema == pl.Schema(REJECTED_SCHEMA)
    return summary, tables, "\n".join(lines)


def _run_two(tmp_path, fmt, source, benchmark="bench"):
    out = tmp_path / "out"
    lines: list[str] = []
    summary = import_two_image_job(
        fmt,
        source,
        benchmark,
        str(out / "items.parquet"),
        str(out / "rejected.parquet"),
        lines.append,
    )
    items = pl.read_parquet(out / "items.parquet")
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert items.schema == pl.Schema(TWO_IMAGE_SCHEMA)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert items["item_id"].is_unique().all()
    assert set(items["benchmark"]) <= {benchmark}
    return summary, items, rejected, "\n".join(lines)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _png(path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 3), "white").save(path)


# --- SugarCrepe++ -------------------------------------------------------------------------


def test_sugarcrepe_pp_folder_two_positives_and_a_gap(tmp_path):
    summary, tables, text = _run(
        tmp_path, "sugarcrepe_pp", {"files": [str(FIXTURES / "sugarcrepe_pp")]}
    )
    cands = tables["candidates"]
    assert summary["items_per_type"] == {"replace_rel": 3, "swap_att": 3}
    assert summary["items"] == 6 and summary["candidates"] == 18 and summary["rejected"] == 0
    assert summary["items_per_file"] == {
        "sugarcrepe_pp/replace_rel.json": 3,
        "sugarcrepe_pp/swap_att.json": 3,
    }
    per_item = cands.group_by("item_id").agg(
        pos=pl.col("is_positive").sum(), n=pl.len(), images=pl.col("image").n_unique()
    )
    assert (per_item["pos"] == 2).all() and (per_item["n"] == 3).all()
    assert (per_item["images"] == 1).all()
    item = cands.filter(pl.col("item_id") == "sugarcrepe_pp/replace_rel/1")
    assert item["text"].to_list() == [
        "A cat sleeping on a sofa.\n",  # verbatim
        "On the sofa, a cat is asleep.",
        "A cat sleeping under a sofa.",
    ]
    assert item["is_positive"].to_list() == [True, True, False]
    assert item["provenance"].to_list() == [
        "sugarcrepe_pp/replace_rel.json#key=1;field=caption",
        "sugarcrepe_pp/replace_rel.json#key=1;field=caption2",
        "sugarcrepe_pp/replace_rel.json#key=1;field=negative_caption",
    ]
    assert set(item["image"]) == {"000000000776.jpg"}
    assert (item["family"][0], item["target"][0]) == ("replace", "rel")
    assert set(cands["generator"]) == {"imported:sugarcrepe_pp"}
    # id 2 is missing from replace_rel: reported, not an error
    assert summary["key_gaps"] == {"sugarcrepe_pp/replace_rel.json": ["2"]}
    assert "sugarcrepe_pp/replace_rel.json: integer keys missing" in text
    assert tables["boxes"].height == 6 and tables["boxes"]["x"].null_count() == 6


def test_sugarcrepe_pp_keyed_object_and_malformed_records(tmp_path):
    good = {
        "filename": "a.jpg",
        "caption": "a red cup",
        "caption2": "a cup that is red",
        "negative_caption": "a blue cup",
    }
    path = _write(
        tmp_path / "scpp" / "swap_obj.json",
        "{"
        f'"0": {json.dumps(good)},'
        f'"1": {json.dumps({k: v for k, v in good.items() if k != "caption2"})},'
        f'"2": {json.dumps({**good, "caption2": good["caption"]})},'
        f'"4": {json.dumps({**good, "negative_caption": good["caption2"]})},'
        '"5": "not an object",'
        f'"0": {json.dumps({**good, "filename": "z.jpg"})},'
        f'"7": {json.dumps({**good, "caption": 3})}'
        "}",
    )
    summary, tables, text = _run(tmp_path, "sugarcrepe_pp", {"files": [str(path)]})
    assert tables["candidates"]["item_id"].unique().to_list() == ["sugarcrepe_pp/swap_obj/0"]
    assert set(tables["candidates"]["image"]) == {"a.jpg"}  # first occurrence of key 0 kept
    assert tables["rejected"].select("source", "location", "reason").rows() == [
        ("scpp/swap_obj.json", "key=1", "missing field(s) ['caption2']"),
        ("scpp/swap_obj.json", "key=2", "caption2 equals caption"),
        ("scpp/swap_obj.json", "key=4", "negative_caption equals a positive"),
        ("scpp/swap_obj.json", "key=5", "expected an object"),
        ("scpp/swap_obj.json", "key=7", "caption must be a string"),
        ("scpp/swap_obj.json", "key=0", "duplicate key"),
    ]
    assert summary["rejected_per_reason"]["duplicate key"] == 1
    assert summary["duplicate_keys"] == ["scpp/swap_obj.json#key=0"]
    assert summary["key_gaps"] == {"scpp/swap_obj.json": ["3", "6"]}
    assert "caption2 equals caption: 1" in text


def test_sugarcrepe_pp_duplicate_id_in_list(tmp_path):
    records = json.loads((FIXTURES / "sugarcrepe_pp" / "swap_att.json").read_text())
    records.append({**records[0], "filename": "other.jpg"})
    path = _write(tmp_path / "d" / "swap_att.json", json.dumps(records))
    result = read_sugarcrepe_pp_file(path, on_error="reject")
    assert result.rejected.select("location", "reason").rows() == [("key=0", "duplicate id")]
    with pytest.raises(RecordError, match="duplicate id"):
        read_sugarcrepe_pp_file(path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("swap_att.json", "[{not json", "not valid JSON"),
        ("swap_att.json", '"a string"', "expected a JSON list of records"),
        ("add_att.json", "[]", "unknown SugarCrepe\\+\\+ subset"),
    ],
)
def test_sugarcrepe_pp_unreadable_file_raises_naming_it(tmp_path, name, content, message):
    path = _write(tmp_path / "bad" / name, content)
    with pytest.raises(ImportFormatError, match=message) as error:
        _run(tmp_path, "sugarcrepe_pp", {"files": [str(path)]})
    assert str(path) in str(error.value)


# --- ARO COCO-Order / Flickr30k-Order -----------------------------------------------------


def test_aro_order_sets(tmp_path):
    summary, tables, text = _run(tmp_path, "aro", {"files": [str(FIXTURES / "aro_order")]})
    cands = tables["candidates"]
    assert summary["items_per_type"] == {"coco_order": 3, "flickr30k_order": 2}
    assert cands["item_id"].n_unique() == 5
    first = cands.filter(pl.col("item_id") == "aro_coco_order/0")
    assert first["is_positive"].to_list() == [True, False, False, False, False]
    assert first["text"][0] == "a man with a red helmet on a small moped on a dirt road"
    assert [p.split(";")[-1] for p in first["provenance"]] == [
        "field=caption",
        *(f"perturbation={name}" for name in ORDER_PERTURBATIONS),
    ]
    assert set(first["image"]) == {"val2014/COCO_val2014_000000391895.jpg"}
    assert (first["family"][0], first["target"][0]) == ("order", None)
    # record 2: its shuffle_allbut_nouns_and_adj option is the true caption itself
    short = cands.filter(pl.col("item_id") == "aro_coco_order/2")
    assert short.height == 4
    assert tables["rejected"].select("source", "location", "reason").rows() == [
        ("aro_order/coco_order.json", "record=2;option=2", "caption option equals the true caption")
    ]
    flickr = cands.filter(pl.col("item_id") == "aro_flickr30k_order/1", pl.col("is_positive"))
    assert flickr["image"][0] == "flickr30k-images/1009434119.jpg"
    assert tables["boxes"]["x"].null_count() == 5  # whole images
    assert summary["images"] == 4
    # ARO's own generation is unseeded: said in the summary and the log
    assert any("unseeded" in note for note in summary["notes"])
    assert "note: ARO builds COCO-Order" in text


def test_aro_order_malformed_records(tmp_path):
    path = _write(
        tmp_path / "mine" / "coco_order.json",
        json.dumps(
            [
                {"image": "a.jpg", "caption_options": ["a b c", "c b a"]},
                {"image": "b.jpg", "caption_options": ["only one"]},
                {"caption_options": ["x y", "y x"]},
                {"image": "c.jpg", "caption_options": ["same", "same", "same"]},
                {"image": "d.jpg", "caption_options": ["p q r", "r q p", "r q p"]},
                ["not", "a", "record"],
            ]
        ),
    )
    summary, tables, _ = _run(tmp_path, "aro", {"files": [str(path)]})
    assert sorted(tables["candidates"]["item_id"].unique()) == [
        "aro_coco_order/0",
        "aro_coco_order/4",
    ]
    assert tables["rejected"].select("location", "reason").rows() == [
        ("record=1", "caption_options must be a list of at least two captions"),
        ("record=2", "missing field(s) ['image']"),
        ("record=3;option=1", "caption option equals the true caption"),
        ("record=3;option=2", "caption option equals the true caption"),
        ("record=3", "no caption option differs from the true caption"),
        ("record=4;option=2", "repeated caption option"),
        ("record=5", "expected an object"),
    ]
    # fewer than four negatives: perturbations named by position
    kept = tables["candidates"].filter(pl.col("item_id") == "aro_coco_order/0")
    assert kept["provenance"][1].endswith(";perturbation=1")
    assert summary["items"] == 2


# --- ARO VG-Relation: symmetric relations -------------------------------------------------


def test_vg_relation_symmetric_relations_reported_and_kept(tmp_path):
    summary, tables, text = _run(tmp_path, "aro", {"files": [str(FIXTURES / "aro_vgr_symmetric")]})
    assert summary["items"] == 5  # kept by default
    assert summary["symmetric_relations"] == {
        "near": {"items": 2, "item_ids": ["aro_vg_relation/0", "aro_vg_relation/3"]},
        "next to": {"items": 1, "item_ids": ["aro_vg_relation/2"]},
    }
    assert summary["symmetric_dropped"] is False
    assert "VG-Relation items with a symmetric relation" in text
    assert "near: 2 items: aro_vg_relation/0, aro_vg_relation/3" in text
    assert summary["notes"] == []


def test_vg_relation_drop_symmetric(tmp_path):
    source = {"files": [str(FIXTURES / "aro_vgr_symmetric")], "drop_symmetric": True}
    summary, tables, text = _run(tmp_path, "aro", source)
    assert sorted(tables["candidates"]["item_id"].unique()) == [
        "aro_vg_relation/1",
        "aro_vg_relation/4",
    ]
    assert tables["boxes"].height == 2
    source_file = "aro_vgr_symmetric/visual_genome_relation.json"
    reason = "symmetric relation (drop_symmetric)"
    assert tables["rejected"].select("source", "location", "reason").rows() == [
        (source_file, f"record={i}", reason) for i in (0, 2, 3)
    ]
    assert summary["rejected_per_reason"] == {"symmetric relation (drop_symmetric)": 3}
    assert summary["symmetric_relations"]["near"]["items"] == 2
    assert "rejected (drop_symmetric)" in text


def test_vg_relation_symmetric_relation_list_and_options(tmp_path):
    folder = FIXTURES / "aro_vgr_symmetric"
    summary, _, _ = _run(tmp_path, "aro", {"files": [str(folder)], "symmetric_relations": ["NEAR"]})
    assert list(summary["symmetric_relations"]) == ["near"]
    with pytest.raises(ValueError, match="drop_symmetric must be true or false"):
        _run(tmp_path, "aro", {"files": [str(folder)], "drop_symmetric": "yes"})
    with pytest.raises(ValueError, match="symmetric_relations must be a list"):
        _run(tmp_path, "aro", {"files": [str(folder)], "symmetric_relations": "near"})
    # VG-Attribution has no relations: nothing reported
    summary, _, _ = _run(tmp_path, "aro", {"files": [str(FIXTURES / "aro")]})
    assert summary["symmetric_relations"] == {}


def test_symmetric_relation_items_matches_whole_names():
    frame = pl.DataFrame(
        {
            "item_id": ["a", "a", "b", "c", "d"],
            "provenance": [
                "f#record=0;relation_name=Near",
                "f#record=0;relation_name=Near",
                "f#record=1;relation_name=nearby",
                "f#record=2;relation_name=standing  by",
                "f#record=3;relation_name=by",
            ],
        }
    )
    assert symmetric_relation_items(frame) == {"Near": ["a"], "by": ["d"]}


# --- Winoground ---------------------------------------------------------------------------


def test_winoground_examples(tmp_path):
    summary, items, rejected, text = _run_two(
        tmp_path, "winoground", {"files": [str(FIXTURES / "winoground")]}, "winoground"
    )
    assert summary["items"] == 4 and rejected.height == 0
    assert summary["items_per_type"] == {"swap_obj": 2, "swap_rel": 1, "swap_both": 1}
    assert items["item_id"].to_list() == [f"winoground/{i}" for i in range(4)]
    first = items.row(0, named=True)
    assert (first["image_0"], first["image_1"]) == ("ex_0_img_0", "ex_0_img_1")  # stems kept
    assert first["caption_0"] == "an old person kisses a young person"
    assert first["caption_1"] == "a young person kisses an old person"
    assert items["provenance"][3] == (
        "winoground/examples.jsonl#key=3;tag=Relation;secondary_tag=Symbolic;"
        "num_main_preds=2;collapsed_tag=Both"
    )
    assert summary["images"] == 8 and summary["key_gaps"] == {}
    assert "winoground (winoground): 4 two-image items, 8 distinct images" in text
    # the image index resolves the stems to <stem>.png in the images folder
    images = tmp_path / "images"
    stems = sorted({*items["image_0"], *items["image_1"]})
    for stem in stems[:-1]:
        _png(images / f"{stem}.png")
    index = image_index("winoground", {"images": str(images)}, stems)
    assert index["status"].to_list() == ["ok"] * 7 + ["missing"]
    assert index["path"][0] == str(images / f"{stems[0]}.png")


def test_winoground_malformed_records_and_key_gaps(tmp_path):
    lines = (FIXTURES / "winoground" / "examples.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    bad = [
        lines[0],
        "{not json",
        json.dumps({k: v for k, v in record.items() if k != "caption_1"}),
        json.dumps({k: v for k, v in record.items() if k != "id"}),
        json.dumps({**record, "id": 0, "caption_0": "another"}),
        json.dumps({**record, "id": 6, "caption_1": record["caption_0"]}),
        json.dumps({**record, "id": 7, "num_main_preds": "one"}),
        "",
        json.dumps({**record, "id": 9}),
    ]
    path = _write(tmp_path / "wg" / "examples.jsonl", "\n".join(bad) + "\n")
    summary, items, rejected, text = _run_two(tmp_path, "winoground", {"files": [str(path)]})
    assert items["item_id"].to_list() == ["winoground/0", "winoground/9"]
    assert rejected.select("source", "location", "reason").rows() == [
        ("wg/examples.jsonl", "line=2", "not valid JSON"),
        ("wg/examples.jsonl", "key=1", "missing field(s) ['caption_1']"),
        ("wg/examples.jsonl", "line=4", "missing field(s) ['id']"),
        ("wg/examples.jsonl", "key=0", "duplicate id"),
        ("wg/examples.jsonl", "key=6", "captions are equal"),
        ("wg/examples.jsonl", "key=7", "num_main_preds must be an integer"),
    ]
    assert rejected["raw"][0] == "{not json"
    assert summary["duplicate_ids"] == ["wg/examples.jsonl#key=0"]
    # ids 0, 1, 6, 7, 9 occur (kept or rejected): 2-5 and 8 are missing
    assert summary["key_gaps"] == {"wg/examples.jsonl": ["2-5", "8"]}
    assert "integer keys missing (a gap in the numbering, not an error): 2-5, 8" in text
    with pytest.raises(ImportFormatError, match="line 2: not valid JSON"):
        read_winoground_file(path)


def test_winoground_unreadable_file_raises_naming_it(tmp_path):
    path = _write(tmp_path / "w" / "examples.jsonl", "this is not json\nnor this\n")
    with pytest.raises(ImportFormatError, match="no line is valid JSON") as error:
        _run_two(tmp_path, "winoground", {"files": [str(path)]})
    assert str(path) in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ImportFormatError, match="no Winoground examples.jsonl"):
        _run_two(tmp_path, "winoground", {"files": [str(tmp_path / "empty")]})


# --- BiVLC --------------------------------------------------------------------------------


def test_bivlc_rows(tmp_path):
    summary, items, rejected, _ = _run_two(
        tmp_path, "bivlc", {"files": [str(FIXTURES / "bivlc")], "images": "x"}
    )
    assert rejected.height == 0
    assert summary["items_per_type"] == {
        "add_obj": 1,
        "replace_att": 1,
        "replace_rel": 1,
        "swap_att": 1,
        "replace_obj": 1,
    }
    row = items.filter(pl.col("item_id") == "bivlc/bivlc_test/1").row(0, named=True)
    # caption describes image, negative_caption describes negative_image
    assert (row["image_0"], row["caption_0"]) == (
        "000000000285.jpg",
        "A brown bear sitting in the grass.",
    )
    assert (row["image_1"], row["caption_1"]) == (
        "bivlc_neg_1.png",
        "A white bear sitting in the grass.",
    )
    assert row["generator"] == "imported:bivlc"
    assert summary["images"] == 9  # 000000000285.jpg is the positive image of two items


def test_bivlc_csv_and_parquet_exports(tmp_path):
    rows = [
        json.loads(line)
        for line in (FIXTURES / "bivlc" / "bivlc_test.jsonl").read_text().splitlines()
    ]
    frame = pl.DataFrame(rows).drop("id")
    csv_path = tmp_path / "exports" / "test.csv"
    csv_path.parent.mkdir()
    frame.write_csv(csv_path)
    _write(tmp_path / "exports" / "broken.csv", "image,caption\na.jpg,x,extra\n")
    # a Hugging Face export keeps images as {"bytes", "path"}
    hf = frame.with_columns(
        pl.struct(pl.lit(None, pl.Binary).alias("bytes"), pl.col("image").alias("path")).alias(
            "image"
        )
    )
    hf.write_parquet(tmp_path / "exports" / "hf.parquet")
    summary, items, rejected, _ = _run_two(
        tmp_path, "bivlc", {"files": [str(tmp_path / "exports")]}
    )
    assert summary["items_per_file"] == {"exports/hf.parquet": 5, "exports/test.csv": 5}
    assert items.filter(pl.col("item_id") == "bivlc/hf/0")["image_0"][0] == "000000000139.jpg"
    assert items.filter(pl.col("item_id") == "bivlc/test/4")["target"][0] == "obj"
    assert rejected.select("source", "location", "reason").rows() == [
        ("exports/broken.csv", "row=0", "wrong number of fields")
    ]


# --- VisMin -------------------------------------------------------------------------------


def test_vismin_rows(tmp_path):
    summary, items, rejected, _ = _run_two(
        tmp_path, "vismin", {"files": [str(FIXTURES / "vismin" / "vismin_bench.csv")]}
    )
    assert rejected.height == 0
    assert summary["items_per_type"] == {
        "replace_obj": 1,
        "replace_att": 1,
        "replace_count": 2,
        "replace_rel": 1,
    }
    assert items["item_id"].to_list() == [f"vismin/vismin_bench/{i}" for i in range(5)]
    row = items.row(2, named=True)
    assert (row["image_0"], row["caption_0"]) == ("vismin/2_a.png", "Two apples on a plate.")
    assert (row["image_1"], row["caption_1"]) == ("vismin/2_b.png", "Three apples on a plate.")
    assert row["provenance"] == "vismin/vismin_bench.csv#key=2;category=counting"


def test_vismin_malformed_rows(tmp_path):
    path = _write(
        tmp_path / "v" / "bench.json",
        json.dumps(
            [
                {"image_0": "a.png", "text_0": "a", "image_1": "b.png", "text_1": "b",
                 "category": "object"},
                {"image_0": "a.png", "text_0": "a", "image_1": "a.png", "text_1": "b",
                 "category": "object"},
                {"image_0": "a.png", "text_0": "", "image_1": "b.png", "text_1": "b",
                 "category": "object"},
                {"image_0": "a.png", "text_0": "a", "image_1": "b.png", "text_1": "b"},
            ]
        ),
    )  # fmt: skip
    summary, items, rejected, _ = _run_two(tmp_path, "vismin", {"files": [str(path)]})
    assert items["item_id"].to_list() == ["vismin/bench/0"]
    assert rejected.select("location", "reason").rows() == [
        ("key=1", "images are equal"),
        ("key=2", "text_0 is empty"),
        ("key=3", "missing field(s) ['category']"),
    ]
    assert summary["rejected_per_reason"] == {
        "images are equal": 1,
        "text_0 is empty": 1,
        "missing field(s) ['category']": 1,
    }


# --- dispatch and helpers -----------------------------------------------------------------


def test_format_dispatch(tmp_path):
    with pytest.raises(ValueError, match="two-image set: import it with import_two_image_job"):
        _run(tmp_path, "winoground", {"files": [str(FIXTURES / "winoground")]})
    with pytest.raises(ValueError, match="unknown two-image benchmark format 'aro'"):
        _run_two(tmp_path, "aro", {"files": [str(FIXTURES / "aro")]})


def test_same_two_image_file_under_two_names_is_refused(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "winoground", tmp_path / name)
    source = {"files": [str(tmp_path / "a"), str(tmp_path / "b")]}
    with pytest.raises(ImportFormatError, match="same item ids"):
        _run_two(tmp_path, "winoground", source)


def test_integer_key_gaps():
    assert integer_key_gaps(["0", "1", "2"]) == []
    assert integer_key_gaps(["1", "2", "5", "9"]) == ["0", "3-4", "6-8"]
    assert integer_key_gaps([]) == []
    assert integer_key_gaps(["0", "x"]) is None
    assert integer_key_gaps(["0", "01"]) is None
