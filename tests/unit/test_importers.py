import json
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import SHARED, needs_shared
from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA
from vlcomp.importers import (
    ImportFormatError,
    match_refined,
    read_aro_file,
    read_crepe_csv,
    read_sugarcrepe_dir,
    read_sugarcrepe_file,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
REAL_SUGARCREPE = SHARED / "data" / "sugarcrepe"
PUBLISHED = {
    "add_att": (692, 1789),
    "add_obj": (2062, 3967),
    "replace_att": (788, 1703),
    "replace_obj": (1652, 3124),
    "replace_rel": (1406, 3177),
    "swap_att": (666, 2305),
    "swap_obj": (245, 1413),
}


def _one_positive_per_item(candidates: pl.DataFrame) -> None:
    assert candidates.schema == pl.Schema(CANDIDATES_SCHEMA)
    per_item = candidates.group_by("item_id").agg(pos=pl.col("is_positive").sum(), n=pl.len())
    assert (per_item["pos"] == 1).all() and (per_item["n"] >= 2).all()


def test_sugarcrepe_fixture_keeps_keys_and_types():
    result = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "unrefined")
    cands = result.candidates
    _one_positive_per_item(cands)
    assert result.rejected.schema == pl.Schema(REJECTED_SCHEMA) and result.rejected.height == 0
    assert set(cands["benchmark"]) == {"sugarcrepe_unrefined"}
    ids = sorted(set(cands["item_id"]))
    assert ids == [
        "sugarcrepe/unrefined/add_obj/11",
        "sugarcrepe/unrefined/add_obj/3",
        "sugarcrepe/unrefined/swap_att/0",
        "sugarcrepe/unrefined/swap_att/2",
        "sugarcrepe/unrefined/swap_att/7",
        "sugarcrepe/unrefined/swap_att/8",
    ]
    row = cands.filter(
        pl.col("item_id") == "sugarcrepe/unrefined/swap_att/7", pl.col("is_positive")
    )
    assert row["text"][0] == "A woman's hat and a man's coat. "  # verbatim, trailing space kept
    assert (row["family"][0], row["target"][0]) == ("swap", "att")
    assert row["image"][0] == "000000000003.jpg"
    assert row["provenance"][0] == "unrefined/swap_att.json#key=7"
    assert set(cands["generator"]) == {"imported:sugarcrepe"}


def test_sugarcrepe_refined_matches_unrefined_by_content():
    refined = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "refined").candidates
    unrefined = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "unrefined").candidates
    assert set(refined["benchmark"]) == {"sugarcrepe"}
    matched = match_refined(refined, unrefined)
    assert matched.to_dicts() == [
        {
            "refined_item_id": "sugarcrepe/refined/add_obj/0",
            "unrefined_item_id": "sugarcrepe/unrefined/add_obj/11",
        },
        {
            "refined_item_id": "sugarcrepe/refined/swap_att/0",
            "unrefined_item_id": "sugarcrepe/unrefined/swap_att/2",
        },
        {
            "refined_item_id": "sugarcrepe/refined/swap_att/1",
            "unrefined_item_id": "sugarcrepe/unrefined/swap_att/8",
        },
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"0": {"filename": "a.jpg", "caption": "x"}}', "key '0': missing field"),
        ('{"0": {"filename": "a.jpg", "caption": "x", "negative_caption": 3}}', "key '0'"),
        ('{"4": {"filename": "a.jpg", "caption": " ", "negative_caption": "y"}}', "key '4'"),
        (
            '{"0": {"filename": "a.jpg", "caption": "x", "negative_caption": "y"}, "0": {}}',
            "duplicate key '0'",
        ),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_sugarcrepe_bad_rows_name_file_and_key(tmp_path, content, message):
    path = tmp_path / "unrefined" / "swap_obj.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(ImportFormatError, match=message) as error:
        read_sugarcrepe_file(path)
    assert str(path) in str(error.value)


def test_sugarcrepe_unknown_type(tmp_path):
    path = tmp_path / "swap_everything.json"
    path.write_text("{}")
    with pytest.raises(ImportFormatError, match="unknown SugarCrepe type"):
        read_sugarcrepe_file(path)


def test_sugarcrepe_old_ent_names_map_to_obj(tmp_path):
    path = tmp_path / "data" / "swap_ent.json"
    path.parent.mkdir()
    path.write_text('{"0": {"filename": "a.jpg", "caption": "a b", "negative_caption": "b a"}}')
    cands = read_sugarcrepe_file(path, variant="refined").candidates
    assert cands["item_id"][0] == "sugarcrepe/refined/swap_obj/0"
    assert cands["target"][0] == "obj"


@needs_shared(REAL_SUGARCREPE)
def test_real_sugarcrepe_counts_and_refined_subset():
    refined = read_sugarcrepe_dir(REAL_SUGARCREPE / "refined").candidates
    unrefined = read_sugarcrepe_dir(REAL_SUGARCREPE / "unrefined").candidates
    for frame, column in [(refined, 0), (unrefined, 1)]:
        counts = (
            frame.filter(pl.col("is_positive"))
            .group_by(pl.format("{}_{}", "family", "target").alias("type"))
            .len()
        )
        assert dict(counts.iter_rows()) == {t: v[column] for t, v in PUBLISHED.items()}
        _one_positive_per_item(frame)
    assert refined["item_id"].n_unique() == 7511
    assert unrefined["item_id"].n_unique() == 17478
    # The refined files are re-indexed, so items are matched by (type, image, texts).
    matched = match_refined(refined, unrefined)
    assert matched["unrefined_item_id"].null_count() == 0
    assert matched["refined_item_id"].n_unique() == matched.height == 7511
    assert matched["unrefined_item_id"].n_unique() == 7511


def test_aro_relation_and_attribution():
    rel = read_aro_file(FIXTURES / "aro" / "visual_genome_relation.json", "vg_relation")
    _one_positive_per_item(rel.candidates)
    first = rel.candidates.filter(pl.col("item_id") == "aro_vg_relation/1")
    assert first.filter("is_positive")["text"][0] == "the cup is on the table"
    assert first.filter(~pl.col("is_positive"))["text"][0] == "the table is on the cup"
    assert first["image"][0] == "2340271.jpg#xywh=0,0,120.5,80"
    assert first["provenance"][0] == "aro/visual_genome_relation.json#record=1;relation_name=on"
    assert (first["family"][0], first["target"][0]) == ("swap", "rel")
    att = read_aro_file(FIXTURES / "aro" / "visual_genome_attribution.json", "vg_attribution")
    assert att.candidates.height == 4
    assert set(att.candidates["benchmark"]) == {"aro_vg_attribution"}
    assert att.candidates["provenance"][0].endswith("attributes=white_wooden")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"bbox_x": 0}, "record 0: missing field"),
        ({"bbox_w": "wide"}, "bbox_w must be a number"),
        ({"bbox_h": 0}, "empty box"),
        ({"true_caption": ""}, "true_caption is empty"),
        ({"relation_name": None}, "relation_name must be a string"),
    ],
)
def test_aro_bad_records(tmp_path, record, message):
    base = json.loads((FIXTURES / "aro" / "visual_genome_relation.json").read_text())[0]
    broken = {**base, **record}
    if record == {"bbox_x": 0}:
        del broken["bbox_y"]
    path = tmp_path / "visual_genome_relation.json"
    path.write_text(json.dumps([broken]))
    with pytest.raises(ImportFormatError, match=message) as error:
        read_aro_file(path, "vg_relation")
    assert str(path) in str(error.value)


def test_aro_attribution_needs_two_attributes(tmp_path):
    base = json.loads((FIXTURES / "aro" / "visual_genome_attribution.json").read_text())[0]
    path = tmp_path / "visual_genome_attribution.json"
    path.write_text(json.dumps([base, {**base, "attributes": ["white"]}]))
    with pytest.raises(ImportFormatError, match="record 1: attributes must be a list of two"):
        read_aro_file(path, "vg_attribution")


def test_crepe_systematicity():
    result = read_crepe_csv(FIXTURES / "crepe" / "syst_vg_hard_negs_seen_compounds_in_cc12m.csv")
    cands = result.candidates
    _one_positive_per_item(cands)
    assert set(cands["benchmark"]) == {"crepe_systematicity"}
    first = cands.filter(
        pl.col("item_id") == "crepe/syst_vg_hard_negs_seen_compounds_in_cc12m/0/atom"
    )
    assert first.height == 3 and first["image"][0] == "2339876#xywh=10,20,100,80"
    assert first["provenance"][0].endswith("#row=0;region_id=4211837")
    assert first["target"].null_count() == 3
    # Row 1: atom list has a negative equal to the caption and a repeat; comp list is empty.
    row1 = cands.filter(pl.col("item_id").str.contains("/1/"))
    assert sorted(row1["item_id"].unique()) == [
        "crepe/syst_vg_hard_negs_seen_compounds_in_cc12m/1/atom"
    ]
    assert row1.filter(~pl.col("is_positive"))["text"].to_list() == ["a woman, holding an umbrella"]
    reasons = sorted(result.rejected["reason"].to_list())
    assert reasons == [
        "valid_hard_negs_atom: negative equals the caption",
        "valid_hard_negs_atom: repeated negative",
        "valid_hard_negs_comp: no usable hard negatives",
    ]
    assert set(result.rejected["location"]) == {"row=1"}
    combined = read_crepe_csv(
        FIXTURES / "crepe" / "syst_vg_hard_negs_seen_compounds_in_cc12m.csv", kinds=["combined"]
    ).candidates
    assert set(combined["family"]) == {"combined"}


def test_crepe_productivity_family_from_file_name():
    cands = read_crepe_csv(
        FIXTURES / "crepe" / "prod_vg_hard_negs_swap_complexity_4.csv"
    ).candidates
    _one_positive_per_item(cands)
    assert set(cands["family"]) == {"swap"}
    assert set(cands["benchmark"]) == {"crepe_productivity"}
    assert cands.filter(~pl.col("is_positive")).height == 3


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "1,2,cap,0,0,10,10,\"['a'\",[],[]",
            r"row 0 \(line 2\): valid_hard_negs_atom is not a Python list",
        ),
        ("1,2,cap,0,0,10,10,\"{'a': 1}\",[],[]", "must be a list of strings"),
        ("1,2,cap,0,x,10,10,['a'],[],[]", "y is not a number"),
        ("1,2,cap,0,0,0,10,['a'],[],[]", "empty region"),
        ("1,2,cap,0,0,10,10,['a']", "wrong number of fields"),
    ],
)
def test_crepe_bad_rows(tmp_path, row, message):
    path = tmp_path / "syst_vg_hard_negs_unseen_compounds_in_laion.csv"
    path.write_text(
        "image_id,region_id,caption,x,y,width,height,valid_hard_negs_atom,valid_hard_negs_comp,"
        "valid_hard_negs_combined\n" + row + "\n"
    )
    with pytest.raises(ImportFormatError, match=message) as error:
        read_crepe_csv(path)
    assert str(path) in str(error.value)


def test_crepe_missing_column(tmp_path):
    path = tmp_path / "syst.csv"
    path.write_text("image_id,caption,x,y,width,height\n1,c,0,0,1,1\n")
    with pytest.raises(ImportFormatError, match=r"missing column\(s\) \['valid_hard_negs_atom'"):
        read_crepe_csv(path)
