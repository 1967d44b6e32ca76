"""The benchmark format registry and the importers of VALSE, VL-CheckList, COLA, ColorSwap,
MMVP-VLM and EqBen, on fixtures written in each release's layout
(tests/fixtures/importers/README.md names the sources)."""

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.unit.test_importers_more import _png, _run_two, _write
from vlcomp import config as config_module
from vlcomp.contracts import CANDIDATES_SCHEMA, REJECTED_SCHEMA
from vlcomp.importers import (
    FORMATS,
    ImportFormatError,
    RecordError,
    read_cola_file,
    read_mmvp_file,
    read_valse_file,
    read_vl_checklist_file,
    vl_checklist_type,
)
from vlcomp.importers import jobs as import_jobs
from vlcomp.importers.cola import cola_image
from vlcomp.importers.jobs import import_benchmark_job
from vlcomp.importers.registry import (
    CANDIDATES,
    IMAGE_SELECTION,
    TWO_IMAGES,
    TWO_POSITIVES,
    formats_of,
)
from vlcomp.splits.items import image_index

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
NEW = ("valse", "vl_checklist", "cola", "colorswap", "mmvp_vlm", "eqben")


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
    candidates = pl.read_parquet(out / "candidates.parquet")
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert candidates.schema == pl.Schema(CANDIDATES_SCHEMA)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    return summary, candidates, rejected, "\n".join(lines)


def _reasons(rejected: pl.DataFrame) -> list[tuple[str, str]]:
    return rejected.select("location", "reason").rows()


# --- the registry ---------------------------------------------------------------------------


def test_registry_gives_every_format_a_shape_reader_metric_and_chance():
    assert set(NEW) <= set(FORMATS)
    for name, spec in FORMATS.items():
        assert spec.shape in (CANDIDATES, TWO_POSITIVES, TWO_IMAGES, IMAGE_SELECTION), name
        assert callable(spec.reader) and spec.doc and spec.source, name
        assert spec.metrics and spec.headline is spec.metrics[0], name
        for metric in spec.metrics:
            assert metric.definition, (name, metric.name)
            assert metric.chance is None or 0 < metric.chance < 1, (name, metric.name)
        assert set(spec.option_docs) == set(spec.options), name
    headline = {name: (spec.headline.name, spec.headline.chance) for name, spec in FORMATS.items()}
    assert headline["valse"] == ("accuracy", 0.5)
    assert headline["vl_checklist"] == ("accuracy", 0.5)
    assert headline["cola"] == ("image_score", 0.25)
    assert headline["mmvp_vlm"] == ("image_score", 0.25)
    assert headline["colorswap"] == ("text_score", 0.25)
    assert headline["eqben"] == ("text_score", 0.25)
    assert [m.name for m in FORMATS["eqben"].metrics] == [
        "text_score",
        "image_score",
        "group_score",
    ]
    assert FORMATS["crepe_csv"].headline.chance is None  # 1 / the item's candidates


def test_config_and_jobs_read_their_format_lists_from_the_registry():
    assert config_module.SET_FORMATS == ("sugarcrepe", "aro", "crepe_csv", "valse", "vl_checklist")
    assert config_module.TWO_POSITIVE_FORMATS == ("sugarcrepe_pp",)
    assert formats_of(TWO_IMAGES) == config_module.TWO_IMAGE_FORMATS
    assert set(config_module.TWO_IMAGE_FORMATS) == {
        "winoground", "bivlc", "vismin", "cola", "colorswap", "mmvp_vlm", "eqben",
    }  # fmt: skip
    assert set(config_module.BENCHMARK_EVAL_FORMATS["imported"]) == set(FORMATS)
    assert {f for f, keys in config_module.EVAL_SET_SOURCES.items() if keys == ("files",)} == set(
        FORMATS
    )
    assert formats_of(CANDIDATES, TWO_POSITIVES) == import_jobs.FORMATS
    assert import_jobs.TWO_IMAGE_FORMATS == config_module.TWO_IMAGE_FORMATS
    assert import_jobs.IMAGE_SELECTION_FORMATS == config_module.IMAGE_SELECTION_FORMATS
    assert config_module.IMAGE_SELECTION_FORMATS == ("svo_probes",)
    assert import_jobs.POSITIVES == {"sugarcrepe_pp": 2}
    schema = config_module.load_schema()["$defs"]["eval_set"]["properties"]
    assert schema["format"]["enum"] == ["visual_genome", "coco_captions", *FORMATS]
    for name, spec in FORMATS.items():
        for option in spec.options:
            assert f"`{option}`" in schema["options"]["description"], (name, option)
    for name in NEW:
        assert name in schema["format"]["description"], name


def test_registry_chance_levels_are_the_evaluations():
    from vlcomp.evaluate.metrics import chance_recall
    from vlcomp.evaluate.two_image import (
        IMAGE_SELECTION_CHANCE,
        SUGARCREPE_PP_CHANCE,
        WINOGROUND_CHANCE,
    )

    for name, spec in FORMATS.items():
        for metric in spec.metrics:
            if spec.shape == IMAGE_SELECTION:
                assert metric.chance == pytest.approx(IMAGE_SELECTION_CHANCE[metric.name]), name
            elif spec.shape == TWO_IMAGES:
                assert metric.chance == pytest.approx(WINOGROUND_CHANCE[metric.name]), name
            elif spec.shape == TWO_POSITIVES:
                assert metric.chance == pytest.approx(SUGARCREPE_PP_CHANCE[metric.name]), name
            elif metric.name == "accuracy":  # a pair: one positive, one negative
                assert metric.chance == chance_recall(np.array([2]), np.array([1]), 1)[0]
    order = FORMATS["aro"].metrics[1]
    assert order.chance == pytest.approx(chance_recall(np.array([5]), np.array([1]), 1)[0])


def test_an_eval_set_of_a_new_format_validates(tmp_path):
    (tmp_path / "images").mkdir()
    config = config_module.validate_config(
        {
            "eval_sets": {
                "v": {
                    "format": "valse",
                    "files": [str(FIXTURES / "valse")],
                    "images": str(tmp_path / "images"),
                    "options": {"validated_only": False},
                },
                "m": {
                    "format": "mmvp_vlm",
                    "files": [str(FIXTURES / "mmvp_vlm")],
                    "images": str(tmp_path / "images"),
                },
            },
            "models": {"m": {"open_clip": "ViT-B-32-quickgelu", "pretrained": "openai"}},
            "benchmarks": {
                "valse": {"kind": "imported", "eval_set": "v"},
                "mmvp": {"kind": "imported", "eval_set": "m"},
            },
            "evaluate": {"models": ["m"]},
        }
    )
    assert config["eval_sets"]["v"]["options"] == {"validated_only": False}
    del config["eval_sets"]["m"]["files"]
    with pytest.raises(config_module.ConfigError, match="'eval_sets.m.files': required for format"):
        config_module.validate_config(config)


# --- VALSE ----------------------------------------------------------------------------------


def test_valse_folder_keeps_the_validated_caption_foil_pairs(tmp_path):
    summary, candidates, rejected, text = _run(
        tmp_path, "valse", {"files": [str(FIXTURES / "valse")]}, "valse"
    )
    assert summary["items"] == 5 and summary["candidates"] == 10
    assert summary["items_per_type"] == {
        "actions_swap": 1,
        "actions_replacement": 1,
        "counting_hard": 1,
        "existence": 1,
        "noun_phrases_foil_it": 1,
    }
    assert summary["rejected_per_reason"] == {"not validated (mturk caption votes < 2)": 3}
    assert sorted(_reasons(rejected)) == [
        ("key=counting_visual7w_2358515", "not validated (mturk caption votes < 2)"),
        ("key=existence_visual7w_2326438", "not validated (mturk caption votes < 2)"),
        ("key=existence_visual7w_2393805", "not validated (mturk caption votes < 2)"),
    ]
    # the same sample id in two instrument files makes two items
    swap = candidates.filter(pl.col("item_id") == "valse/actant-swap/actions_test_0")
    assert swap["text"].to_list() == ["A man exercises his torso.", "A torso exercises for a man."]
    assert swap["is_positive"].to_list() == [True, False]
    assert swap["image"][0] == "exercising_255.jpg"
    assert (
        swap["provenance"][0]
        == "valse/actant-swap.json#key=actions_test_0;dataset=SWiG;mturk_caption=3"
    )
    assert "valse/action-replacement/actions_test_0" in candidates["item_id"].to_list()
    foil_it = candidates.filter(pl.col("item_id") == "valse/foil-it/1283539")
    assert (foil_it["family"][0], foil_it["target"][0]) == ("noun_phrases", "foil_it")
    assert summary["key_gaps"] == {}  # sample ids are not an index (foil-it's are FOIL ids)
    assert summary["authors_metrics"][0]["metric"] == "accuracy"
    assert "authors' metrics: accuracy (chance 0.5)" in text


def test_valse_options(tmp_path):
    existence = FIXTURES / "valse" / "existence.json"
    imported = read_valse_file(
        existence,
        on_error="reject",
        validated_only=False,
        image_folders={"visual7w": "visual7w/images"},
    )
    assert imported.candidates["item_id"].unique(maintain_order=True).to_list() == [
        "valse/existence/existence_visual7w_2371044",
        "valse/existence/existence_visual7w_2393805",
    ]
    assert imported.candidates["image"][0] == "visual7w/images/v7w_2371044.jpg"
    # a sample whose foil is its caption (the release has some, none of them validated)
    assert _reasons(imported.rejected) == [
        ("key=existence_visual7w_2326438", "foil equals caption")
    ]
    with pytest.raises(ValueError, match="validated_only must be true or false"):
        read_valse_file(existence, validated_only="yes")
    with pytest.raises(ValueError, match="image_folders must map"):
        read_valse_file(existence, image_folders=["visual7w"])
    summary, _, _, text = _run(
        tmp_path, "valse", {"files": [str(existence)], "validated_only": False, "kinds": ["x"]}
    )
    assert summary["items"] == 2
    assert "source keys not used by the import: ['kinds']" in text


def test_valse_malformed_samples_are_rejected_by_reason(tmp_path):
    good = {"image_file": "a.jpg", "caption": "A dog runs.", "foil": "A dog sleeps.",
            "dataset": "coco2017", "mturk": {"foil": 0, "caption": 3, "other": 0}}  # fmt: skip
    body = ",\n".join(
        [
            '"s0": ' + json.dumps(good),
            '"s1": ' + json.dumps({k: v for k, v in good.items() if k != "foil"}),
            '"s2": ' + json.dumps({**good, "caption": 7}),
            '"s3": ' + json.dumps({k: v for k, v in good.items() if k != "mturk"}),
            '"s4": ' + json.dumps({**good, "mturk": {"caption": "3"}}),
            '"s5": ' + json.dumps({**good, "caption": "  "}),
            '"s0": ' + json.dumps({**good, "caption": "A cat runs."}),
            '"s6": ["not", "an", "object"]',
        ]
    )
    path = _write(tmp_path / "v" / "plurals.json", "{" + body + "}")
    summary, candidates, rejected, _ = _run(tmp_path, "valse", {"files": [str(path)]})
    assert candidates["item_id"].unique().to_list() == ["valse/plurals/s0"]
    assert candidates["family"][0] == "plurality" and candidates["target"][0] is None
    assert _reasons(rejected) == [
        ("key=s1", "missing field(s) ['foil']"),
        ("key=s2", "caption must be a string"),
        ("key=s3", "missing field(s) ['mturk']"),
        ("key=s4", "mturk caption count must be an integer"),
        ("key=s5", "caption is empty"),
        ("key=s6", "expected an object"),
        ("key=s0", "duplicate key"),
    ]
    assert summary["duplicate_keys"] == ["v/plurals.json#key=s0"]
    with pytest.raises(RecordError, match="plurals.json, key s1: missing field"):
        read_valse_file(_write(tmp_path / "w" / "plurals.json", "{" + body.split(",\n")[1] + "}"))
    listed = _write(tmp_path / "x" / "relations.json", json.dumps([good]))
    with pytest.raises(ImportFormatError, match="relations.json: expected a JSON object keyed"):
        read_valse_file(listed)
    broken = _write(tmp_path / "y" / "relations.json", '{"s0": ')
    with pytest.raises(ImportFormatError, match="relations.json: not valid JSON"):
        _run(tmp_path, "valse", {"files": [str(broken)]})


def test_valse_folder_skips_other_json_files(tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(FIXTURES / "valse", folder)
    _write(folder / "results.json", "{}")
    summary, _, _, text = _run(tmp_path, "valse", {"files": [str(folder)]})
    assert summary["skipped_files"] == [str(folder / "results.json")]
    assert "results.json: not a valse file name; skipped" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImportFormatError, match="no VALSE files"):
        _run(tmp_path, "valse", {"files": [str(empty)]})


# --- VL-CheckList ---------------------------------------------------------------------------


def test_vl_checklist_release_root_reads_the_corpus_yamls(tmp_path):
    summary, candidates, rejected, text = _run(
        tmp_path, "vl_checklist", {"files": [str(FIXTURES / "vl_checklist")]}, "vlc"
    )
    assert len(summary["files"]) == 4 and all(f.endswith(".yaml") for f in summary["files"])
    assert summary["items"] == 9
    assert summary["items_per_type"] == {
        "attribute_color": 3,
        "object_location_margin": 2,
        "object_size_small": 2,
        "relation_action": 2,
    }
    assert summary["items_per_file"] == {
        "Attribute/vg/color.json": 3,
        "Object/Location/hake_location/hake_obj_margin.json": 2,
        "Object/Size/swig_size/swig_item/swig_item_small.json": 2,
        "Relation/vg/action.json": 2,
    }
    assert _reasons(rejected) == [("record=3", "negative equals the positive")]
    assert rejected["source"][0] == "Attribute/vg/color.json"
    # an exact duplicate entry of the release is kept and reported
    assert summary["duplicate_content"] == [
        ["vl_checklist/attribute/color/vg/0", "vl_checklist/attribute/color/vg/2"]
    ]
    images = candidates.unique("item_id", keep="first", maintain_order=True)["image"].to_list()
    # IMG_ROOT "vg", "hake/", "swig/" joined with the entry's path
    assert images[:2] == ["vg/VG_100K/2376832.jpg", "vg/VG_100K_2/2385955.jpg"]
    assert "hake/openimages/0030feaa83a02c0d.jpg" in images
    assert "swig/manicuring_3.jpg" in images
    # the SWiG corpora list three texts of each kind: the first of each is scored
    swig = candidates.filter(pl.col("item_id") == "vl_checklist/object/size_small/swig_item/0")
    assert swig["text"].to_list() == [
        "manicurist files fingernail using emery board at a salon",
        "manicurist files teapot using emery board at a salon",
    ]
    assert swig["provenance"][0].endswith("#record=0;corpus=swig_item")
    assert "authors' metrics: accuracy (chance 0.5)" in text


def test_vl_checklist_json_files_and_their_types(tmp_path):
    data = FIXTURES / "vl_checklist" / "data"
    assert vl_checklist_type(data / "Attribute" / "vg" / "color.json") == (
        "Attribute", ("color",), "vg",
    )  # fmt: skip
    margin = data / "Object" / "Location" / "hake_location" / "hake_obj_margin.json"
    assert vl_checklist_type(margin) == ("Object", ("Location", "margin"), "hake_obj")
    assert vl_checklist_type(Path("data/Relation/swig_action.json")) == (
        "Relation", ("action",), "swig",
    )  # fmt: skip
    assert vl_checklist_type(Path("corpus/v1/Relation/spatial/vg.yaml")) == (
        "Relation", ("spatial",), "vg",
    )  # fmt: skip
    assert vl_checklist_type(Path("configs/sample.yaml")) is None
    imported = read_vl_checklist_file(margin)
    # a JSON file has no IMG_ROOT: the path as given
    assert imported.candidates["image"][0] == "openimages/0030feaa83a02c0d.jpg"
    assert imported.candidates["item_id"][0] == "vl_checklist/object/location_margin/hake_obj/0"
    # the same corpus through its YAML and its JSON gives the same items
    source = {"files": [str(FIXTURES / "vl_checklist" / "corpus" / "v1" / "Attribute"),
                        str(data / "Attribute")]}  # fmt: skip
    with pytest.raises(ImportFormatError, match="same item ids"):
        _run(tmp_path, "vl_checklist", source)
    with pytest.raises(RecordError, match=r"color.json, record 3: negative equals the positive"):
        read_vl_checklist_file(data / "Attribute" / "vg" / "color.json")


def test_vl_checklist_malformed_entries_and_files(tmp_path):
    root = tmp_path / "release"
    entries = [
        ["VG_100K/1.jpg", {"POS": ["red car"], "NEG": ["blue car"]}],
        ["VG_100K/2.jpg"],
        ["VG_100K/3.jpg", {"POS": "red car", "NEG": ["blue car"]}],
        ["VG_100K/4.jpg", {"POS": [], "NEG": ["blue car"]}],
        ["VG_100K/5.jpg", {"POS": ["red car"]}],
        [5, {"POS": ["red car"], "NEG": ["blue car"]}],
        ["VG_100K/7.jpg", {"POS": ["red car"], "NEG": [""]}],
    ]
    _write(root / "data" / "Attribute" / "vg" / "color.json", json.dumps(entries))
    yaml_path = _write(
        root / "corpus" / "v1" / "Attribute" / "color" / "vg.yaml",
        'ANNO_PATH: "data/Attribute/vg/color.json"\nIMG_ROOT: "vg"\nTYPE: "TUPLE_JSON"',
    )
    summary, candidates, rejected, _ = _run(tmp_path, "vl_checklist", {"files": [str(yaml_path)]})
    assert candidates["image"].unique().to_list() == ["vg/VG_100K/1.jpg"]
    assert _reasons(rejected) == [
        ("record=1", "expected [image path, {POS, NEG}]"),
        ("record=2", "POS must be a non-empty list of texts"),
        ("record=3", "POS must be a non-empty list of texts"),
        ("record=4", "missing field(s) ['NEG']"),
        ("record=5", "image path must be a string"),
        ("record=6", "NEG[0] is empty"),
    ]
    bad = root / "corpus" / "v1" / "Attribute" / "size"
    cases = [
        ('IMG_ROOT: "vg"', "needs ANNO_PATH"),
        ('ANNO_PATH: "data/Attribute/vg/size.json"', "not found in any folder above"),
        ('ANNO_PATH: "data/Attribute/vg/color.json"\nTYPE: "CSV"', "TYPE 'CSV' is not read"),
        ("ANNO_PATH: [", "not valid YAML"),
    ]
    for text, message in cases:
        with pytest.raises(ImportFormatError, match=message):
            read_vl_checklist_file(_write(bad / "vg.yaml", text))
    with pytest.raises(ImportFormatError, match="cannot tell the VL-CheckList type"):
        read_vl_checklist_file(_write(tmp_path / "mine" / "color.json", json.dumps(entries)))
    keyed = _write(root / "data" / "Attribute" / "vaw" / "color.json", '{"0": []}')
    with pytest.raises(ImportFormatError, match="expected a JSON list of entries"):
        read_vl_checklist_file(keyed)


# --- COLA -----------------------------------------------------------------------------------


def test_cola_multi_object_pairs(tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(FIXTURES / "cola", folder)
    _write(folder / "COLA_singleobjects_benchmark_GQA.json", "[[], []]")
    summary, items, rejected, text = _run_two(tmp_path, "cola", {"files": [str(folder)]}, "cola")
    assert summary["items"] == 3 and rejected.height == 0
    assert summary["items_per_type"] == {"swap": 3}
    first = items.row(0, named=True)
    assert first["item_id"] == "cola/COLA_multiobjects_matching_benchmark/0"
    # the image URLs become their file names (Visual Genome ids)
    assert (first["image_0"], first["image_1"]) == ("2390970.jpg", "2388902.jpg")
    assert first["caption_0"] == "small white dog to the left of large black dog"
    assert first["caption_1"] == "small black dog to the left of large white dog"
    assert summary["skipped_files"] == [str(folder / "COLA_singleobjects_benchmark_GQA.json")]
    assert "single-object setting (scored by mAP) is not a two-image set; skipped" in text
    assert "authors' metrics: image_score (chance 0.25)" in text
    assert summary["authors_metrics"] == [
        {
            "metric": "image_score",
            "chance": 0.25,
            "definition": "each caption scores its own image strictly above the other image "
            "(ColaMultiObjAcc)",
        }
    ]
    with pytest.raises(ImportFormatError, match="single-object setting"):
        read_cola_file(folder / "COLA_singleobjects_benchmark_GQA.json")
    assert cola_image("vg/2390970.jpg") == "vg/2390970.jpg"
    assert cola_image("https://host/a%20b/1.jpg") == "1.jpg"


def test_cola_malformed_entries(tmp_path):
    url = "https://cs-people.bu.edu/array/data/vg_gqa_images/{}.jpg"
    entries = [
        [url.format(1), "a red cup on a blue plate", url.format(2), "a blue cup on a red plate"],
        [url.format(1), "a red cup", url.format(2)],
        [url.format(1), 3, url.format(2), "a blue cup"],
        [url.format(1), "a red cup", url.format(1), "a blue cup"],
        [url.format(1), "a red cup", url.format(2), "a red cup"],
        {"image": url.format(1)},
    ]
    path = _write(tmp_path / "c" / "COLA_multiobjects_matching_benchmark.json", json.dumps(entries))
    summary, items, rejected, _ = _run_two(tmp_path, "cola", {"files": [str(path)]})
    assert items["item_id"].to_list() == ["cola/COLA_multiobjects_matching_benchmark/0"]
    assert _reasons(rejected) == [
        ("key=1", "expected [image 1, caption 1, image 2, caption 2]"),
        ("key=2", "caption 1 must be a string"),
        ("key=3", "images are equal"),
        ("key=4", "captions are equal"),
        ("key=5", "expected [image 1, caption 1, image 2, caption 2]"),
    ]


# --- ColorSwap ------------------------------------------------------------------------------


def test_colorswap_test_file_and_hub_export(tmp_path):
    summary, items, rejected, text = _run_two(
        tmp_path, "colorswap", {"files": [str(FIXTURES / "colorswap")]}, "colorswap"
    )
    assert summary["items"] == 3 and rejected.height == 0
    assert items["item_id"].to_list() == [
        "colorswap/test/0",
        "colorswap/test/9",
        "colorswap/test/12",
    ]
    row = items.row(0, named=True)
    # caption_1 describes image_1 -> caption_0 / image_0 of the two-image contract
    assert (row["image_0"], row["caption_0"]) == (
        "images/img_0_1.png",
        "someone holding a yellow umbrella wearing a white dress",
    )
    assert (row["image_1"], row["caption_1"]) == (
        "images/img_0_2.png",
        "someone holding a white umbrella wearing a yellow dress",
    )
    assert (row["family"], row["target"]) == ("swap", "att")
    assert row["provenance"] == (
        "colorswap/test.json#key=0;image_source=midjourney;caption_source=human"
    )
    assert summary["key_gaps"] == {"colorswap/test.json": ["1-8", "10-11"]}
    assert (
        "text_score (chance 0.25), image_score (chance 0.25), group_score (chance 0.1667)" in text
    )
    # the hub copy exported to Parquet keeps its images as {"bytes", "path"} structs
    frame = pl.DataFrame(json.loads((FIXTURES / "colorswap" / "test.json").read_text()))
    hub = frame.with_columns(
        pl.struct(pl.lit(None, pl.Binary).alias("bytes"), pl.col(c).alias("path")).alias(c)
        for c in ("image_1", "image_2")
    )
    hub.write_parquet(tmp_path / "hub" / "test.parquet", mkdir=True)
    summary, items, _, _ = _run_two(tmp_path, "colorswap", {"files": [str(tmp_path / "hub")]})
    assert items["image_1"].to_list() == ["images/img_0_2.png", "images/img_9_2.png",
                                          "images/img_12_2.png"]  # fmt: skip


def test_colorswap_malformed_records(tmp_path):
    good = json.loads((FIXTURES / "colorswap" / "test.json").read_text())[0]
    records = [
        good,
        {k: v for k, v in good.items() if k != "caption_2"},
        {**good, "id": 2, "image_source": 3},
        {**good, "id": 3, "image_2": good["image_1"]},
        {**good, "id": 0},
    ]
    path = _write(tmp_path / "d" / "test.json", json.dumps(records))
    summary, items, rejected, _ = _run_two(tmp_path, "colorswap", {"files": [str(path)]})
    assert items["item_id"].to_list() == ["colorswap/test/0"]
    assert _reasons(rejected) == [
        ("key=0", "missing field(s) ['caption_2']"),
        ("key=2", "image_source must be a string"),
        ("key=3", "images are equal"),
        ("key=0", "duplicate id"),
    ]
    assert summary["duplicate_ids"] == ["d/test.json#key=0"]


# --- MMVP-VLM -------------------------------------------------------------------------------


def test_mmvp_questions_pair_consecutive_rows(tmp_path):
    summary, items, rejected, text = _run_two(
        tmp_path, "mmvp_vlm", {"files": [str(FIXTURES / "mmvp_vlm")]}, "mmvp"
    )
    assert summary["items"] == 3 and rejected.height == 0
    assert summary["items_per_type"] == {"orientation": 1, "presence": 1, "camera_perspective": 1}
    assert items["item_id"].to_list() == ["mmvp_vlm/1-2", "mmvp_vlm/31-32", "mmvp_vlm/241-242"]
    row = items.row(1, named=True)
    assert (row["image_0"], row["image_1"]) == ("Presence/31.jpg", "Presence/32.jpg")
    # the authors' script scores "a photo of <statement>"; a quoted CSV field keeps its comma
    assert row["caption_0"] == "a photo of a cup with a handle, on a table"
    assert row["caption_1"] == "a photo of a cup without a handle, on a table"
    assert items["provenance"][2] == "mmvp_vlm/Questions.csv#key=241-242;type=Camera Perspective"
    assert "authors' metrics: image_score (chance 0.25)" in text
    # the image index finds <Type>/<id>.jpg under the images folder ("MLLM_VLM Images")
    images = tmp_path / "MLLM_VLM Images"
    refs = sorted({*items["image_0"], *items["image_1"]})
    for ref in refs[1:]:
        _png(images / ref)
    index = image_index("mmvp", {"images": str(images)}, refs)
    assert index["status"].to_list() == ["missing"] + ["ok"] * 5
    plain = read_mmvp_file(FIXTURES / "mmvp_vlm" / "Questions.csv", text_prefix="")
    assert plain.items["caption_0"][0] == "the dog's head is turned to the left"
    with pytest.raises(ValueError, match="text_prefix must be a string"):
        read_mmvp_file(FIXTURES / "mmvp_vlm" / "Questions.csv", text_prefix=None)


def test_mmvp_malformed_pairs(tmp_path):
    rows = [
        "Question ID,Type,Statement",
        "1,Color,a red kite",
        "2,Color,a blue kite",
        "4,Color,a green kite",  # an even id first
        "3,Color,a yellow kite",
        "5,Color,a white car",
        "6,State,a parked car",  # two types
        "seven,Text,a sign",
        "8,Text,no sign",
        "9,Text,a sign,extra",  # a field too many
        "10,Text,no sign",
        "1,Color,a red kite",
        "2,Color,a blue kite",  # the first pair again
        "11,Quantity,two birds",  # no partner
    ]
    path = _write(tmp_path / "m" / "Questions.csv", "\n".join(rows) + "\n")
    summary, items, rejected, _ = _run_two(tmp_path, "mmvp_vlm", {"files": [str(path)]})
    assert items["item_id"].to_list() == ["mmvp_vlm/1-2"]
    assert _reasons(rejected) == [
        ("key=4-3", "Question IDs are not an odd id and the next one"),
        ("key=5-6", "the two rows name different types"),
        ("key=seven-8", "Question ID is not an integer"),
        ("row=8", "wrong number of fields"),
        ("key=1-2", "duplicate id"),
        ("row=12", "unpaired row (MMVP-VLM pairs consecutive rows)"),
    ]
    for text, message in [
        ("id,type,statement\n1,Color,a\n", r"missing \['Question ID', 'Type', 'Statement'\]"),
        ("Question ID,Type,Statement\n", "no readable row"),
    ]:
        with pytest.raises(ImportFormatError, match=message):
            read_mmvp_file(_write(tmp_path / "bad" / "Questions.csv", text))
    with pytest.raises(ImportFormatError, match="no MMVP-VLM Questions.csv"):
        _run_two(tmp_path, "mmvp_vlm", {"files": [str(tmp_path)]})


# --- EqBen ----------------------------------------------------------------------------------


def test_eqben_subset_list(tmp_path):
    summary, items, rejected, text = _run_two(
        tmp_path, "eqben", {"files": [str(FIXTURES / "eqben")]}, "eqben"
    )
    assert summary["items"] == 4 and rejected.height == 0
    assert summary["items_per_type"] == {"ag": 1, "kubric_att": 1, "sd": 1, "youcook2": 1}
    row = items.row(1, named=True)
    assert row["item_id"] == "eqben/eqben_subset_10percent_final/1"
    assert row["image_0"] == "eqbenkubric_attr/scene_0042/rgba_00000.png"
    assert row["caption_0"] == "A red metal cube is to the left of a blue rubber sphere."
    assert row["provenance"].endswith("#key=1;subset=eqbenkubric_attr")
    assert "text_score (chance 0.25), image_score (chance 0.25)" in text
    # EqBen-YouCook2 frames are NumPy arrays: the image index cannot decode them
    images = tmp_path / "images"
    ref = items.filter(pl.col("family") == "youcook2")["image_0"][0]
    (images / ref).parent.mkdir(parents=True)
    np.save(images / ref, np.zeros((3, 4, 3), np.uint8))
    assert image_index("eqben", {"images": str(images)}, [ref])["status"][0] == "unreadable"


def test_eqben_per_subset_layouts(tmp_path):
    pair = {"image0": "eqbenag/V1/p1/1.png", "caption0": ["a person opens a door", "x"],
            "image1": "eqbenag/V1/p1/2.png", "caption1": ["a person closes a door"]}  # fmt: skip
    nested = {
        "V1": {"p1": [pair, {**pair, "caption1": []}], "p2": "frames"},
        "V2": 7,
        "V3": {"p1": [{**pair, "image0": "elsewhere.png", "caption0": "a door"}]},
    }
    text = json.dumps(nested)[:-1] + ', "V2": []}'  # a repeated video key
    path = _write(tmp_path / "ag" / "eqbenag_annotation.json", text)
    summary, items, rejected, _ = _run_two(tmp_path, "eqben", {"files": [str(path)]})
    assert items["item_id"].to_list() == [
        "eqben/eqbenag_annotation/V1/p1/0",
        "eqben/eqbenag_annotation/V3/p1/0",
    ]
    first = items.row(0, named=True)
    assert (first["caption_0"], first["caption_1"]) == ("a person opens a door",
                                                        "a person closes a door")  # fmt: skip
    assert first["provenance"].endswith(";subset=eqbenag;captions=2,1")
    assert items["family"].to_list() == ["ag", "eqben"]  # no known subset folder: eqben
    assert _reasons(rejected) == [
        ("key=V1/p1/1", "caption1 is an empty list"),
        ("key=V1/p2", "expected a list of pairs"),
        ("key=V2", "expected a list of pairs or an object of lists"),
        ("key=V2", "duplicate key"),
    ]
    video_lists = _write(
        tmp_path / "yc" / "youcook2.json",
        json.dumps({"vid": [{**pair, "image0": "eqbenyoucook2/vid/0.npy",
                             "image1": "eqbenyoucook2/vid/1.npy"}]}),
    )  # fmt: skip
    _, items, _, _ = _run_two(tmp_path, "eqben", {"files": [str(video_lists)]})
    assert items["item_id"].to_list() == ["eqben/youcook2/vid/0"]
    with pytest.raises(ImportFormatError, match="expected a JSON list of pairs or an object"):
        _run_two(tmp_path, "eqben", {"files": [str(_write(tmp_path / "n" / "x.json", "3"))]})


# --- file kinds -----------------------------------------------------------------------------


def test_new_formats_refuse_files_of_the_wrong_kind(tmp_path):
    csv_file = _write(tmp_path / "f" / "existence.csv", "a,b\n1,2\n")
    with pytest.raises(ImportFormatError, match="VALSE files are JSON"):
        read_valse_file(csv_file)
    with pytest.raises(ImportFormatError, match="MMVP-VLM questions are a CSV file"):
        read_mmvp_file(_write(tmp_path / "f" / "Questions.json", "[]"))
    with pytest.raises(ImportFormatError, match="the COLA multi-object file is JSON"):
        read_cola_file(csv_file)
    with pytest.raises(ImportFormatError, match="EqBen annotations are JSON files"):
        _run_two(tmp_path, "eqben", {"files": [str(csv_file)]})


def test_an_import_without_items_stops_and_says_why(tmp_path):
    sample = {"image_file": "a.jpg", "caption": "A dog runs.", "foil": "A dog sleeps.",
              "mturk": {"foil": 1, "caption": 1, "other": 1}}  # fmt: skip
    path = _write(tmp_path / "v" / "relations.json", json.dumps({"s0": sample, "s1": sample}))
    with pytest.raises(
        ImportFormatError,
        match=r"bench \(valse\): no item in .*: 2 records rejected "
        r"\(not validated \(mturk caption votes < 2\): 2 \(first at v/relations\.json#key=s0\)\)",
    ):
        _run(tmp_path, "valse", {"files": [str(path)]})
    cola = _write(tmp_path / "c" / "COLA_multiobjects_matching_benchmark.json", "[[1, 2]]")
    with pytest.raises(ImportFormatError, match=r"bench \(cola\): no item in .*: 1 records"):
        _run_two(tmp_path, "cola", {"files": [str(cola)]})
