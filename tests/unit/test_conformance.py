"""Visual Genome and COCO files written from the datasets' published formats (not by the
world) give the atoms the parser gives for the same words (``tests/fixtures/conformance``,
whose README lists each quirk and its source)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from vlcomp.counts.units import Vocab, extract_units
from vlcomp.ingest.vg import default_canon, eval_items_from_vg
from vlcomp.ingest.visual_genome import read_image_data, scene_graphs
from vlcomp.negatives.productivity import read_scene_graphs
from vlcomp.splits.assign import graph_bindings, normalize_binding
from vlcomp.splits.items import eval_items_job, make_parser

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "conformance"


def items_of(vg_dir: Path, tmp_path: Path, filters: dict | None = None):
    summary = eval_items_from_vg(
        vg_dir, tmp_path / "items.parquet", tmp_path / "rejected.parquet", filters
    )
    return summary, pl.read_parquet(tmp_path / "items.parquet")


def atoms(graph: dict) -> set[tuple[str, ...]]:
    lemma = {o["idx"]: o["lemma"] for o in graph["objects"]}
    return (
        {("object", v) for v in lemma.values()}
        | {("attr_obj", a["value"], lemma[a["obj"]]) for a in graph["attributes"]}
        | {("rel", lemma[r["subj"]], r["pred"], lemma[r["obj"]]) for r in graph["relations"]}
    )


@pytest.fixture(scope="module")
def parser():
    return make_parser({})


def test_v12_region_graphs_get_their_stated_attributes(tmp_path: Path) -> None:
    summary, items = items_of(FIX / "vg_v1_2", tmp_path)
    by_region = {r["region_id"]: r for r in items.iter_rows(named=True)}
    # region graphs carry no attributes; attributes.json has "White " for the suit
    suit = by_region["1001"]
    assert suit["attributes"] == [{"obj": 1, "value": "white"}]
    # the woman is "smiling" and "young" in attributes.json, but the phrase says neither
    assert [a for a in suit["attributes"] if a["obj"] == 0] == []
    # an object whose annotation has no "attributes" key: no attributes, no error
    assert by_region["1002"]["attributes"] == []
    assert summary.items_with_attributes == 7 and summary.kept == 8
    assert summary.merge.attributes_joined == 9
    assert summary.merge.attributes_not_stated > 0
    assert summary.warnings() == []


def test_v12_predicates_and_names_in_the_parsers_form(tmp_path: Path) -> None:
    _, items = items_of(FIX / "vg_v1_2", tmp_path)
    preds = {r["region_id"]: [x["pred"] for x in r["relations"]] for r in items.to_dicts()}
    assert preds["1001"] == ["wear"]  # "wearing"
    assert preds["1002"] == ["have"]  # "has"
    assert preds["2001"] == ["sit on"]  # "sitting on"
    assert preds["3001"] == ["on"]  # "ON"
    assert preds["5001"] == ["park on"]  # "parked on"
    assert preds["5002"] == ["have"]  # "wheels of a motorcycle": (motorcycle, have, wheel)
    names = {o["name"]: o["lemma"] for r in items.to_dicts() for o in r["objects"]}
    assert names["Cup"] == "cup" and names["wheels"] == "wheel" and names["eyes"] == "eye"


def test_a_box_leaving_its_image_is_invalid_unless_clipped(tmp_path: Path) -> None:
    summary, _ = items_of(FIX / "vg_v1_2", tmp_path)
    assert summary.rejected == {"invalid_box": 1} and summary.clipped_boxes == 0
    clipped, items = items_of(FIX / "vg_v1_2", tmp_path / "clip", {"clip_to_image": True})
    assert clipped.clipped_boxes == 1
    row = items.filter(pl.col("region_id") == "3002").row(0, named=True)
    assert row["x"] + row["width"] == 600  # the image's width


def test_annotation_and_caption_give_the_same_atoms(tmp_path: Path, parser) -> None:
    """The same words as a VG region graph and as a caption: identical atoms, except where
    the two say different things (listed)."""
    _, items = items_of(FIX / "vg_v1_2", tmp_path)
    content = {
        # VG annotates "parked" as an attribute too; the parser reads it as the verb only
        "5001": {("attr_obj", "parked", "motorcycle")},
    }
    for row in items.iter_rows(named=True):
        caption = parser.parse_one(row["text"]).row()
        assert atoms(row) ^ atoms(caption) == content.get(row["region_id"], set()), row["text"]


def test_no_unseen_atom_from_inflection(tmp_path: Path, parser) -> None:
    """Count the parsed phrases as a corpus: every atom of the annotated items is seen."""
    _, items = items_of(FIX / "vg_v1_2", tmp_path)
    corpus = pl.DataFrame([parser.parse_one(t).row() for t in items["text"]])
    vocab = Vocab()
    graphs = corpus.select("objects", "attributes", "relations").to_arrow()
    seen = extract_units(graphs, np.zeros(corpus.height, dtype=np.int64), vocab)
    corpus_atoms = {vocab.strings[v] for v in seen.atom_value}
    for row in items.iter_rows(named=True):
        if row["region_id"] == "5001":
            continue
        own = {o["lemma"] for o in row["objects"]} | {a["value"] for a in row["attributes"]}
        own |= {r["pred"] for r in row["relations"]}
        assert own <= corpus_atoms, (row["text"], own - corpus_atoms)


def test_v14_merged_object_ids_and_names_lists(tmp_path: Path) -> None:
    graphs = dict(scene_graphs(FIX / "vg_v1_4"))
    objects = {o["object_id"]: o for o in graphs["1"]["objects"]}
    # street (7046) was merged into sidewalk (7001): its attribute and relation moved there
    assert 7046 not in objects and objects[7001]["attributes"] == ["wet"]
    rels = graphs["1"]["relationships"]
    assert {(r["subject_id"], r["predicate"], r["object_id"]) for r in rels} == {
        (7002, "walking on", 7001),
        (7002, "WEARS", 7003),
    }
    _, items = items_of(FIX / "vg_v1_4", tmp_path)
    first = items.row(0, named=True)
    assert ("rel", "man", "walk on", "sidewalk") in atoms(first)
    assert ("attr_obj", "wet", "sidewalk") in atoms(first)
    assert ("rel", "man", "wear", "shirt") in atoms(items.row(1, named=True))


def test_productivity_reads_the_same_files(tmp_path: Path) -> None:
    (graph,) = read_scene_graphs(FIX / "vg_v1_4")
    names = {o.name: o.attributes for o in graph.objects}
    assert names == {"sidewalk": ("wet",), "man": ("tall",), "shirt": ("blue",)}
    assert (graph.width, graph.height) == (512, 512)


def test_missing_image_data_is_one_clear_error(tmp_path: Path) -> None:
    vg = tmp_path / "vg"
    shutil.copytree(FIX / "vg_v1_4", vg)
    (vg / "image_data.json").unlink()
    for read in (
        lambda: read_image_data(vg),
        lambda: list(read_scene_graphs(vg)),
        lambda: items_of(vg, tmp_path),
    ):
        with pytest.raises(FileNotFoundError, match="image_data.json"):
            read()


def test_attributes_that_match_no_object_fail(tmp_path: Path) -> None:
    vg = tmp_path / "vg"
    shutil.copytree(FIX / "vg_v1_2", vg)
    doc = json.loads((vg / "attributes.json").read_text())
    for entry in doc:
        for obj in entry["attributes"]:
            obj["object_id"] += 100_000  # ids from another release
            obj["x"] += 1  # and boxes that do not line up
    (vg / "attributes.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="do not belong together"):
        items_of(vg, tmp_path / "out")
    assert not (tmp_path / "out" / "items.parquet").exists()


def test_stop_objects_are_not_objects(tmp_path: Path) -> None:
    """The parser drops caption boilerplate ("background"): an annotated one is dropped too,
    with its attribute and relation, so that it cannot make an item UA."""
    _, items = items_of(FIX / "vg_v1_2", tmp_path)
    horse = items.filter(pl.col("region_id") == "6001").row(0, named=True)
    assert atoms(horse) == {("object", "horse"), ("attr_obj", "black", "horse")}


def test_bindings_key_objects_by_the_parsers_lemma() -> None:
    assert normalize_binding("White ", "Glasses") == ("white", "glasses")
    assert normalize_binding("red", "Men") == ("red", "man")
    graph = {
        "objects": [{"idx": 0, "name": "Wheels", "lemma": "wheel"}],
        "attributes": [{"obj": 0, "value": "Shiny"}],
    }
    assert graph_bindings(graph) == [(("shiny", "wheel"), True)]
    assert default_canon().object_lemma("tennis rackets") == "tennis racket"


def test_eval_items_job_writes_its_summary(tmp_path: Path) -> None:
    summary = eval_items_job(
        "visual_genome",
        {"dir": str(FIX / "vg_v1_2"), "images": str(tmp_path), "regions": {}},
        {},
        str(tmp_path / "items.parquet"),
        str(tmp_path / "rejected.parquet"),
        lambda _: None,
        summary_out=str(tmp_path / "summary.json"),
    )
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written == summary
    assert written["items_with_attributes"] == 7 and written["rejected_by_reason"] == {
        "invalid_box": 1
    }
    assert written["merged"]["attributes_joined"] == 9


def test_coco_captions_in_the_published_layout(tmp_path: Path) -> None:
    summary = eval_items_job(
        "coco_captions",
        {"captions": str(FIX / "coco" / "captions_val2017.json"), "images": str(tmp_path)},
        {},
        str(tmp_path / "items.parquet"),
        str(tmp_path / "rejected.parquet"),
        lambda _: None,
    )
    assert summary["items"] == 4 and summary["rejected"] == 0
    items = pl.read_parquet(tmp_path / "items.parquet")
    woman = items.filter(pl.col("item_id") == "11").row(0, named=True)
    assert ("rel", "woman", "wear", "suit") in atoms(woman)
    assert (
        items.filter(pl.col("item_id") == "21")["text"][0]
        == "An orange cat sitting on a wooden table."
    )


def test_a_set_that_keeps_no_item_fails_saying_why(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no region became an evaluation item.*too_small"):
        items_of(FIX / "vg_v1_2", tmp_path, {"min_area": 10**7})
    assert not (tmp_path / "items.parquet").exists()
    empty = tmp_path / "captions.json"
    empty.write_text(json.dumps({"images": [], "annotations": [{"id": 1, "caption": "x"}]}))
    with pytest.raises(ValueError, match=r"no caption became an evaluation item.*missing_field"):
        eval_items_job(
            "coco_captions",
            {"captions": str(empty), "images": str(tmp_path)},
            {},
            str(tmp_path / "coco.parquet"),
            str(tmp_path / "coco_rejected.parquet"),
            lambda _: None,
        )
    assert not (tmp_path / "coco.parquet").exists()
