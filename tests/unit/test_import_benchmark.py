"""import_benchmark_job: published benchmark files as an ordinary candidate set."""

import json
import runpy
import shutil
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from tests.conftest import REPO, SHARED
from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA
from vlcomp.importers import ImportFormatError
from vlcomp.importers.jobs import BOXES_SCHEMA, import_benchmark_job

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
REAL_SUGARCREPE = SHARED / "data" / "sugarcrepe"
REFINED_COUNTS = {
    "add_att": 692,
    "add_obj": 2062,
    "replace_att": 788,
    "replace_obj": 1652,
    "replace_rel": 1406,
    "swap_att": 666,
    "swap_obj": 245,
}


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
    return summary, tables, "\n".join(lines)


def _check_contract(tables, benchmark="bench"):
    cands, boxes = tables["candidates"], tables["boxes"]
    assert cands.schema == pl.Schema(CANDIDATES_SCHEMA)
    assert boxes.schema == pl.Schema(BOXES_SCHEMA)
    assert tables["rejected"].schema == pl.Schema(REJECTED_SCHEMA)
    assert set(cands["benchmark"]) == {benchmark}
    assert not cands["image"].str.contains("#xywh=", literal=True).any()
    assert cands["image"].null_count() == 0
    per_item = cands.group_by("item_id").agg(
        pos=pl.col("is_positive").sum(), n=pl.len(), images=pl.col("image").n_unique()
    )
    assert (per_item["pos"] == 1).all() and (per_item["n"] >= 2).all()
    assert (per_item["images"] == 1).all()
    # one boxes row per item, no more, no less
    assert boxes["item_id"].is_unique().all()
    assert sorted(boxes["item_id"]) == sorted(per_item["item_id"])


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- SugarCrepe ---------------------------------------------------------------------------


def test_sugarcrepe_folder(tmp_path):
    summary, tables, text = _run(
        tmp_path, "sugarcrepe", {"files": [str(FIXTURES / "sugarcrepe" / "unrefined")]}
    )
    _check_contract(tables)
    cands = tables["candidates"]
    assert summary["items_per_type"] == {"add_obj": 2, "swap_att": 4}
    assert summary["items_per_file"] == {"unrefined/add_obj.json": 2, "unrefined/swap_att.json": 4}
    assert summary["items"] == 6 and summary["candidates"] == 12 and summary["rejected"] == 0
    row = cands.filter(pl.col("item_id") == "sugarcrepe/unrefined/swap_att/7", "is_positive")
    assert row["image"][0] == "000000000003.jpg"
    assert (row["family"][0], row["target"][0]) == ("swap", "att")
    assert row["provenance"][0] == "unrefined/swap_att.json#key=7"
    assert tables["boxes"].drop("item_id").null_count().row(0) == (6,) * 5  # whole images
    assert "swap_att: 4 items" in text


def test_sugarcrepe_parent_of_variants_must_name_one(tmp_path):
    with pytest.raises(ImportFormatError, match=r"subfolder\(s\) \['refined', 'unrefined'\]") as e:
        _run(tmp_path, "sugarcrepe", {"files": [str(FIXTURES / "sugarcrepe")]})
    assert str(FIXTURES / "sugarcrepe") in str(e.value)


def test_sugarcrepe_two_variants_have_distinct_ids(tmp_path):
    root = FIXTURES / "sugarcrepe"
    source = {"files": [str(root / "refined"), str(root / "unrefined" / "add_obj.json")]}
    summary, tables, _ = _run(tmp_path, "sugarcrepe", source)
    _check_contract(tables)
    assert summary["items_per_type"] == {"add_obj": 3, "swap_att": 2}


def test_sugarcrepe_same_type_twice_is_refused(tmp_path):
    for name in ("a", "b"):
        folder = tmp_path / name / "refined"
        folder.mkdir(parents=True)
        shutil.copy(FIXTURES / "sugarcrepe" / "refined" / "swap_att.json", folder)
    source = {"files": [str(tmp_path / "a" / "refined"), str(tmp_path / "b" / "refined")]}
    with pytest.raises(ImportFormatError, match="same item ids"):
        _run(tmp_path, "sugarcrepe", source)


def test_sugarcrepe_same_file_twice_is_read_once(tmp_path):
    folder = FIXTURES / "sugarcrepe" / "refined"
    source = {"files": [str(folder), str(folder / "swap_att.json")]}
    summary, _, text = _run(tmp_path, "sugarcrepe", source)
    assert summary["items"] == 3 and "listed more than once" in text


def test_sugarcrepe_malformed_records_become_rejected_rows(tmp_path):
    path = _write(
        tmp_path / "data" / "swap_obj.json",
        "{"
        '"0": {"filename": "a.jpg", "caption": "a dog and a cat", "negative_caption": "x"},'
        '"1": {"filename": "b.jpg", "caption": "a cup"},'
        '"2": ["not", "an", "object"],'
        '"3": {"filename": "c.jpg", "caption": " ", "negative_caption": "y"},'
        '"4": {"filename": "d.jpg", "caption": "same", "negative_caption": "same"},'
        '"0": {"filename": "z.jpg", "caption": "again", "negative_caption": "other"},'
        '"5": {"filename": "e.jpg", "caption": "a cat and a dog", "negative_caption": "y"}'
        "}",
    )
    summary, tables, text = _run(tmp_path, "sugarcrepe", {"files": [str(path)]})
    _check_contract(tables)
    assert sorted(tables["candidates"]["item_id"].unique()) == [
        "sugarcrepe/refined/swap_obj/0",
        "sugarcrepe/refined/swap_obj/5",
    ]
    # the first occurrence of a repeated key is the one kept
    kept = tables["candidates"].filter(pl.col("item_id") == "sugarcrepe/refined/swap_obj/0")
    assert kept["image"][0] == "a.jpg"
    rejected = tables["rejected"].sort("location")
    assert rejected.select("source", "location", "reason").rows() == [
        ("data/swap_obj.json", "key=0", "duplicate key"),
        ("data/swap_obj.json", "key=1", "missing field(s) ['negative_caption']"),
        ("data/swap_obj.json", "key=2", "expected an object"),
        ("data/swap_obj.json", "key=3", "caption is empty"),
        ("data/swap_obj.json", "key=4", "negative_caption equals caption"),
    ]
    assert json.loads(rejected["raw"][1]) == {"filename": "b.jpg", "caption": "a cup"}
    assert summary["rejected"] == 5
    assert summary["rejected_per_reason"]["duplicate key"] == 1
    assert summary["duplicate_keys"] == ["data/swap_obj.json#key=0"]
    assert "duplicate keys" in text and "data/swap_obj.json#key=0" in text


def test_sugarcrepe_same_content_items_are_kept_and_reported(tmp_path):
    record = {
        "filename": "a.jpg",
        "caption": "a dog on a mat",
        "negative_caption": "a mat on a dog",
    }
    other = {**record, "filename": "b.jpg"}
    path = _write(
        tmp_path / "unrefined" / "swap_obj.json",
        json.dumps({"0": record, "1": other, "1413": record}),
    )
    summary, tables, text = _run(tmp_path, "sugarcrepe", {"files": [str(path)]})
    assert summary["items"] == 3
    assert summary["duplicate_content"] == [
        ["sugarcrepe/unrefined/swap_obj/0", "sugarcrepe/unrefined/swap_obj/1413"]
    ]
    assert "swap_obj/0 = sugarcrepe/unrefined/swap_obj/1413" in text


@pytest.mark.parametrize("content", ["{not json", "\x00\xff\xfe binary"])
def test_sugarcrepe_not_json_raises_naming_file(tmp_path, content):
    path = tmp_path / "refined" / "add_att.json"
    path.parent.mkdir()
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ImportFormatError, match="not valid JSON|not UTF-8 text") as error:
        _run(tmp_path, "sugarcrepe", {"files": [str(path)]})
    assert str(path) in str(error.value)


def test_sugarcrepe_folder_without_type_files(tmp_path):
    _write(tmp_path / "bench" / "notes.json", "{}")
    with pytest.raises(ImportFormatError, match="no <type>.json files"):
        _run(tmp_path, "sugarcrepe", {"files": [str(tmp_path / "bench")]})


def test_source_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark format"):
        _run(tmp_path, "winoground", {"files": ["x"]})
    with pytest.raises(ValueError, match="source needs 'files'"):
        _run(tmp_path, "aro", {"images": "x"})
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        _run(tmp_path, "aro", {"files": [str(tmp_path / "nowhere.json")]})


@pytest.mark.skipif(
    not REAL_SUGARCREPE.exists(),
    reason=f"the real SugarCrepe files are not present at {REAL_SUGARCREPE} (shared data)",
)
def test_real_sugarcrepe_refined_and_unrefined(tmp_path):
    summary, tables, _ = _run(
        tmp_path, "sugarcrepe", {"files": [str(REAL_SUGARCREPE / "refined")]}, "sugarcrepe"
    )
    _check_contract(tables, "sugarcrepe")
    assert summary["items_per_type"] == REFINED_COUNTS
    assert summary["items"] == 7511 and summary["rejected"] == 0
    assert summary["duplicate_keys"] == [] and summary["duplicate_content"] == []
    summary, tables, _ = _run(
        tmp_path, "sugarcrepe", {"files": [str(REAL_SUGARCREPE / "unrefined")]}, "sc_unrefined"
    )
    _check_contract(tables, "sc_unrefined")
    assert summary["items"] == 17478 and summary["items_per_type"]["swap_obj"] == 1413
    assert summary["duplicate_content"] == [
        ["sugarcrepe/unrefined/swap_obj/0", "sugarcrepe/unrefined/swap_obj/1413"]
    ]


# --- ARO ----------------------------------------------------------------------------------


def test_aro_files_task_from_name_and_boxes(tmp_path):
    summary, tables, _ = _run(tmp_path, "aro", {"files": [str(FIXTURES / "aro")], "images": "x"})
    _check_contract(tables)
    assert summary["items_per_type"] == {"vg_attribution": 2, "vg_relation": 3}
    cands = tables["candidates"]
    first = cands.filter(pl.col("item_id") == "aro_vg_relation/1")
    assert first["image"][0] == "2340271.jpg"
    assert first["provenance"][0] == "aro/visual_genome_relation.json#record=1;relation_name=on"
    boxes = {r["item_id"]: r for r in tables["boxes"].iter_rows(named=True)}
    # bbox 0, 0, 120.5, 80: PIL.Image.crop rounds the corners, round(120.5) == 120
    assert [boxes["aro_vg_relation/1"][c] for c in ("x", "y", "width", "height")] == [0, 0, 120, 80]
    assert [boxes["aro_vg_relation/0"][c] for c in ("x", "y", "width", "height")] == [
        10,
        20,
        300,
        200,
    ]
    assert tables["boxes"]["x"].null_count() == 0
    assert summary["items_with_box"] == 5


def test_aro_malformed_and_tiny_records_are_rejected(tmp_path):
    base = json.loads((FIXTURES / "aro" / "visual_genome_relation.json").read_text())[0]
    records = [
        base,
        {**base, "bbox_w": "wide"},
        {k: v for k, v in base.items() if k != "false_caption"},
        {**base, "bbox_w": 0.4, "bbox_x": 3.0},
        "not a record",
    ]
    path = _write(tmp_path / "mine" / "visual_genome_relation.json", json.dumps(records))
    summary, tables, _ = _run(tmp_path, "aro", {"files": [str(path)]})
    _check_contract(tables)
    assert summary["items"] == 1
    assert tables["rejected"].select("location", "reason").rows() == [
        ("record=1", "bbox_w must be a number"),
        ("record=2", "missing field(s) ['false_caption']"),
        ("record=4", "expected an object"),
        ("record=3", "box is empty at whole pixels"),
    ]
    assert set(tables["rejected"]["source"]) == {"mine/visual_genome_relation.json"}
    assert tables["rejected"]["raw"][3] == "2315882.jpg#xywh=3,20,0.4,200"


def test_aro_task_needs_known_name_or_mapping(tmp_path):
    path = tmp_path / "relations_subset.json"
    shutil.copy(FIXTURES / "aro" / "visual_genome_relation.json", path)
    with pytest.raises(ImportFormatError, match="cannot tell the ARO task") as error:
        _run(tmp_path, "aro", {"files": [str(path)]})
    assert str(path) in str(error.value)
    summary, _, _ = _run(
        tmp_path, "aro", {"files": [str(path)], "tasks": {"relations_subset.json": "vg_relation"}}
    )
    assert summary["items_per_type"] == {"vg_relation": 3}


# --- CREPE --------------------------------------------------------------------------------


def test_crepe_folder_boxes_and_complexity(tmp_path):
    summary, tables, _ = _run(tmp_path, "crepe_csv", {"files": [str(FIXTURES / "crepe")]})
    _check_contract(tables)
    assert summary["items_per_type"] == {
        "prod_vg_hard_negs_swap_complexity_4/swap": 2,
        "syst_vg_hard_negs_seen_compounds_in_cc12m/atom": 3,
        "syst_vg_hard_negs_seen_compounds_in_cc12m/comp": 2,
    }
    boxes = tables["boxes"]
    row = boxes.filter(
        pl.col("item_id") == "crepe/syst_vg_hard_negs_seen_compounds_in_cc12m/0/atom"
    )
    assert row.select("x", "y", "width", "height", "complexity").row(0) == (10, 20, 100, 80, None)
    prod = boxes.filter(pl.col("item_id").str.starts_with("crepe/prod_"))
    assert prod["complexity"].to_list() == [4, 4]
    image = tables["candidates"].filter(pl.col("item_id") == row["item_id"][0])["image"]
    assert set(image) == {"2339876"}
    # well-formed rows that cannot make an item stay rejected rows, as before
    assert summary["rejected_per_reason"] == {
        "valid_hard_negs_atom: negative equals the caption": 1,
        "valid_hard_negs_atom: repeated negative": 1,
        "valid_hard_negs_comp: no usable hard negatives": 1,
    }


def test_crepe_malformed_rows_are_rejected(tmp_path):
    header = (
        "image_id,region_id,caption,x,y,width,height,valid_hard_negs_atom,"
        "valid_hard_negs_comp,valid_hard_negs_combined\n"
    )
    path = _write(
        tmp_path / "syst_vg_hard_negs_unseen_compounds_in_laion.csv",
        header
        + "1,2,a red cup,0,0,10,10,['a blue cup'],['a cup red'],[]\n"
        + "1,3,cap,0,x,10,10,['a'],[],[]\n"
        + "1,4,cap,0,0,10,10,\"['a'\",[],[]\n"
        + "1,5,cap,0,0,10,10,['a']\n",
    )
    summary, tables, _ = _run(tmp_path, "crepe_csv", {"files": [str(path)]})
    _check_contract(tables)
    assert summary["items"] == 2
    assert tables["rejected"].select("location", "reason").rows() == [
        ("row=1", "y is not a number"),
        ("row=2", "valid_hard_negs_atom is not a Python list literal"),
        ("row=3", "wrong number of fields"),
    ]
    assert tables["rejected"]["raw"][2] == "1,5,cap,0,0,10,10,['a']"


def test_crepe_not_csv_raises_naming_file(tmp_path):
    path = _write(tmp_path / "notes.csv", '{"a": 1}\n')
    with pytest.raises(ImportFormatError, match="missing column") as error:
        _run(tmp_path, "crepe_csv", {"files": [str(path)]})
    assert str(path) in str(error.value)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(ImportFormatError, match="not UTF-8 text") as error:
        _run(tmp_path, "crepe_csv", {"files": [str(binary)]})
    assert str(binary) in str(error.value)


# --- workflow script ----------------------------------------------------------------------


def test_workflow_script(tmp_path):
    out = tmp_path / "results"
    snakemake = SimpleNamespace(
        scriptdir=str(REPO / "workflow" / "scripts"),
        params=SimpleNamespace(format="aro", source={"files": [str(FIXTURES / "aro")]}),
        wildcards=SimpleNamespace(benchmark="aro_fixture"),
        output=SimpleNamespace(
            candidates=str(out / "candidates.parquet"),
            boxes=str(out / "boxes.parquet"),
            rejected=str(out / "rejected.parquet"),
        ),
        log=[str(tmp_path / "logs" / "import.log")],
    )
    runpy.run_path(
        str(REPO / "workflow" / "scripts" / "import_benchmark.py"),
        init_globals={"snakemake": snakemake},
    )
    assert set(pl.read_parquet(out / "candidates.parquet")["benchmark"]) == {"aro_fixture"}
    assert pl.read_parquet(out / "boxes.parquet").height == 5
    assert "vg_relation: 3 items" in (tmp_path / "logs" / "import.log").read_text()
