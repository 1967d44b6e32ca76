"""Importers against the layouts of the real releases (issue 32, item 6): image references that
name no file (BiVLC's results CSV), SugarCrepe's own folder names, VL-CheckList's authors'
protocol, CREPE's productivity folders and ARO's macro accuracy. Fixtures are in each release's
shape (tests/fixtures/importers/README.md names the sources); real files are read from
/work/shared/data where they exist."""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.unit.test_importers_more import _run, _run_two, _write
from vlcomp import config as config_module
from vlcomp.importers import (
    ARO_MACRO_EXCLUDED_RELATIONS,
    FORMATS,
    ImportFormatError,
    RecordError,
    aro_item_groups,
    aro_macro_accuracy,
    crepe_folder_files,
    match_refined,
    read_aro_file,
    read_bivlc_file,
    read_cola_file,
    read_crepe_csv,
    read_sugarcrepe_dir,
    read_sugarcrepe_file,
    read_sugarcrepe_pp_file,
    read_valse_file,
    read_vl_checklist_file,
    sugarcrepe_variant,
)
from vlcomp.importers.common import image_reference, not_a_file_reference

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
RELEASES = SHARED / "releases"
BIVLC_CSV = RELEASES / "IMirandaM+BiVLC" / "results" / "BiVLC_ViT-B-32.csv"
PIL_TEXT = "<PIL.JpegImagePlugin.JpegImageFile image mode=RGB size=640x480 at 0x7F00AA001100>"
OBJECT_TEXT = "is not an image file name or path (Python object text"
REFUSED = re.escape(OBJECT_TEXT)


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real release file {path} is missing (shared data not mounted)")
    return path


# --- image references that name no file ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (PIL_TEXT, "Python object text"),
        ("<PIL.PngImagePlugin.PngImageFile image mode=RGBA size=8x8 at 0x1A2B>", "Python object"),
        ("<object object at 0x7f3a2c1e0f50>", "Python object text"),
        ("nan", "a missing value written as text"),
        ("None", "a missing value written as text"),
        ("{'bytes': b'\\x89PNG', 'path': None}", "a mapping written as text"),
        ("b'\\x89PNG\\r\\n'", "bytes written as text"),
        ("data:image/png;base64,iVBORw0KGgo=", "an inline data URI"),
        ("images/a\nb.jpg", "control characters"),
        ("x" * 256 + ".jpg", "a path component longer than 255 bytes"),
    ],
)
def test_text_that_names_no_file_is_refused_with_its_column_and_why(value, problem):
    assert problem in not_a_file_reference(value)
    with pytest.raises(RecordError) as error:
        image_reference(value, "negative_image", "results.csv, row 7")
    assert str(error.value).startswith("results.csv, row 7: negative_image is not an image file")
    assert problem in error.value.reason


@pytest.mark.parametrize(
    "value",
    [
        "000000565045.jpg",  # SugarCrepe, COCO val2017
        "ex_0_img_0",  # Winoground: a stem
        "2339876",  # CREPE: a Visual Genome id
        "vg/VG_100K_2/2385955.jpg",
        "Camera Perspective",  # MMVP-VLM: a type folder with a space
        "https://cs-people.bu.edu/array/data/vg_gqa_images/2414605.jpg",
        "/data/coco/val2017/000000000139.jpg",
        "My Photo (1) <copy>.jpg",
        "<draft>.png",
    ],
)
def test_file_names_paths_and_urls_are_accepted(value):
    assert not_a_file_reference(value) is None
    assert image_reference(value, "image", "f.json, key '0'") == value
    assert image_reference({"bytes": None, "path": value}, "image", "f.parquet, row 0") == value


def test_bivlc_results_csv_is_refused_naming_file_column_and_row(tmp_path):
    path = FIXTURES / "bivlc_results" / "BiVLC_ViT-B-32.csv"
    with pytest.raises(RecordError, match=rf"BiVLC_ViT-B-32\.csv, row 0: image {REFUSED}"):
        read_bivlc_file(path)
    rejected = read_bivlc_file(path, on_error="reject").rejected
    assert rejected["location"].to_list() == ["key=0", "key=1", "key=2"]
    assert all(OBJECT_TEXT in reason for reason in rejected["reason"])
    with pytest.raises(ImportFormatError) as error:
        _run_two(tmp_path, "bivlc", {"files": [str(path)]})
    message = str(error.value)
    assert "bench (bivlc): no item in" in message and "3 records rejected" in message
    assert "(first at bivlc_results/BiVLC_ViT-B-32.csv#key=0)" in message


def test_real_bivlc_results_csv_is_refused(tmp_path):
    path = _need(BIVLC_CSV)
    rejected = read_bivlc_file(path, on_error="reject").rejected
    assert rejected.height == 2933
    assert rejected["reason"].n_unique() == 1 and OBJECT_TEXT in rejected["reason"][0]
    with pytest.raises(RecordError, match=rf"csv, row 0: image {REFUSED}.*size=500x332 at"):
        read_bivlc_file(path)
    with pytest.raises(ImportFormatError, match=r"2933 records rejected .*: 2933 \(first at"):
        _run_two(tmp_path, "bivlc", {"files": [str(path)]})


def _json_first(path: Path, out: Path, set_image) -> Path:
    data = json.loads(path.read_text())
    first = data[next(iter(data))] if isinstance(data, dict) else data[0]
    set_image(first)
    return _write(out, json.dumps(data))


def _csv_rows(path: Path, out: Path, column: str, rows: int = 1) -> Path:
    table = list(csv.DictReader(io.StringIO(path.read_text(), newline="")))
    for row in table[:rows]:
        row[column] = PIL_TEXT
    handle = io.StringIO()
    writer = csv.DictWriter(handle, fieldnames=list(table[0]))
    writer.writeheader()
    writer.writerows(table)
    return _write(out, handle.getvalue())


def _jsonl_first(path: Path, out: Path, field: str) -> Path:
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first[field] = PIL_TEXT
    return _write(out, "\n".join([json.dumps(first), *lines[1:]]) + "\n")


def _set(field: str):
    def set_image(record: dict) -> None:
        record[field] = PIL_TEXT

    return set_image


def _first_item(record: list) -> None:
    record[0] = PIL_TEXT


# format -> (fixture, where the copy goes under tmp_path, how the first record changes, options)
EVERY_FORMAT = {
    "sugarcrepe": ("sugarcrepe/refined/swap_att.json", "refined/swap_att.json", _set("filename")),
    "sugarcrepe_pp": ("sugarcrepe_pp/swap_att.json", "scpp/swap_att.json", _set("filename")),
    "aro": ("aro/visual_genome_relation.json", "aro/vg.json", _set("image_path")),
    "aro_order": ("aro_order/coco_order.json", "aro/coco_order.json", _set("image")),
    "crepe_csv": ("crepe/syst_vg_hard_negs_seen_compounds_in_cc12m.csv", "c.csv", "image_id"),
    "valse": ("valse/existence.json", "valse/existence.json", _set("image_file")),
    "vl_checklist": (
        "vl_checklist/data/Attribute/vg/color.json",
        "data/Attribute/vg/color.json",
        _first_item,
    ),
    "winoground": ("winoground/examples.jsonl", "w/examples.jsonl", "image_0"),
    "bivlc": ("bivlc/bivlc_test.jsonl", "b/test.jsonl", "negative_image"),
    "vismin": ("vismin/vismin_bench.csv", "v/bench.csv", "image_1"),
    "cola": (
        "cola/COLA_multiobjects_matching_benchmark.json",
        "cola/COLA_multiobjects_matching_benchmark.json",
        _first_item,
    ),
    "colorswap": ("colorswap/test.json", "cs/test.json", _set("image_2")),
    "mmvp_vlm": ("mmvp_vlm/Questions.csv", "m/Questions.csv", "Type"),
    "eqben": ("eqben/eqben_subset_10percent_final.json", "e/eqben.json", _set("image0")),
    "svo_probes": ("svo_probes/svo_probes.csv", "s/svo_probes.csv", "pos_url"),
}


@pytest.mark.parametrize("fmt", sorted(EVERY_FORMAT))
def test_every_importer_refuses_object_text_in_its_image_column(tmp_path, fmt):
    fixture, target, change = EVERY_FORMAT[fmt]
    source, out = FIXTURES / fixture, tmp_path / target
    if callable(change):
        path = _json_first(source, out, change)
    elif source.suffix == ".jsonl":
        path = _jsonl_first(source, out, change)
    else:  # MMVP-VLM pairs two rows of one type
        path = _csv_rows(source, out, change, rows=2 if fmt == "mmvp_vlm" else 1)
    if fmt in ("aro", "aro_order"):
        task = "vg_relation" if fmt == "aro" else "coco_order"
        rejected = read_aro_file(path, task, on_error="reject").rejected
    elif fmt == "crepe_csv":
        rejected = read_crepe_csv(path, on_error="reject").rejected
    else:
        options = {"image_name": "{url_name}"} if fmt == "svo_probes" else {}
        rejected = FORMATS[fmt].reader(path, on_error="reject", **options).rejected
    refused = rejected.filter(pl.col("reason").str.contains(OBJECT_TEXT, literal=True))
    assert refused.height == 1, rejected.rows()


def test_real_release_file_names_pass_the_image_check():
    """No file name of a real release is taken for text that names no file."""
    checked = 0
    for variant in ("refined", "unrefined"):
        folder = _need(SHARED / "sugarcrepe" / variant)
        imported = read_sugarcrepe_dir(folder, on_error="reject")
        assert imported.rejected.height == 0
        checked += imported.candidates["item_id"].n_unique()
    for path in sorted(_need(RELEASES / "Sri-Harsha+scpp" / "data").glob("*.json")):
        imported = read_sugarcrepe_pp_file(path, on_error="reject")
        assert "image file name" not in " ".join(imported.rejected["reason"])
        checked += imported.candidates["item_id"].n_unique()
    for path in sorted(_need(RELEASES / "Heidelberg-NLP+VALSE" / "data").glob("*.json")):
        imported = read_valse_file(path, on_error="reject", validated_only=False)
        assert "image file name" not in " ".join(imported.rejected["reason"])
        checked += imported.candidates["item_id"].n_unique()
    cola = RELEASES / "arijitray1993+COLA" / "data" / "COLA_multiobjects_matching_benchmark.json"
    imported = read_cola_file(_need(cola), on_error="reject")
    assert imported.rejected.height == 0
    checked += imported.items.height
    # 7,511 + 17,478 SugarCrepe, 4,754 SugarCrepe++, 8,758 VALSE (24 foils equal their
    # captions), 210 COLA
    assert checked == 7511 + 17478 + 4754 + 8758 + 210


# --- SugarCrepe's own folder names -----------------------------------------------------------


def test_sugarcrepe_release_folder_names_give_the_variant(tmp_path):
    release = FIXTURES / "sugarcrepe_release"
    assert sugarcrepe_variant(release / "data") == "refined"
    assert sugarcrepe_variant(release / "data_unrefined") == "unrefined"
    assert sugarcrepe_variant("refined") == "refined" and sugarcrepe_variant("mine") == "mine"
    refined = read_sugarcrepe_file(release / "data" / "replace_rel.json")
    unrefined = read_sugarcrepe_file(release / "data_unrefined" / "replace_rel.json")
    assert set(refined.candidates["benchmark"]) == {"sugarcrepe"}
    assert set(unrefined.candidates["benchmark"]) == {"sugarcrepe_unrefined"}
    assert refined.candidates["item_id"].unique(maintain_order=True).to_list() == [
        "sugarcrepe/refined/replace_rel/0",
        "sugarcrepe/refined/replace_rel/1",
    ]
    assert match_refined(refined.candidates, unrefined.candidates).rows() == [
        ("sugarcrepe/refined/replace_rel/0", "sugarcrepe/unrefined/replace_rel/3"),
        ("sugarcrepe/refined/replace_rel/1", "sugarcrepe/unrefined/replace_rel/4"),
    ]
    # the provenance keeps the folder as found
    assert refined.candidates["provenance"][0] == "data/replace_rel.json#key=0"


def test_sugarcrepe_release_folders_through_the_job_and_the_audit(tmp_path):
    from vlcomp.audit.variants import releases

    release = FIXTURES / "sugarcrepe_release"
    summary, tables, _ = _run(tmp_path / "r", "sugarcrepe", {"files": [str(release / "data")]})
    assert summary["items"] == 2 and summary["items_per_type"] == {"replace_rel": 2}
    assert releases(tables["candidates"]) == {"refined": 2}
    source = {"files": [str(release / "data_unrefined")]}
    summary, tables, _ = _run(tmp_path / "u", "sugarcrepe", source)
    assert releases(tables["candidates"]) == {"unrefined": 3}
    assert summary["key_gaps"] == {"data_unrefined/replace_rel.json": ["1-2"]}
    with pytest.raises(ImportFormatError, match=r"subfolder\(s\) \['data', 'data_unrefined'\]"):
        _run(tmp_path / "p", "sugarcrepe", {"files": [str(release)]})


def test_real_sugarcrepe_under_the_release_folder_names(tmp_path):
    for shared, own, count in (("refined", "data", 7511), ("unrefined", "data_unrefined", 17478)):
        folder = _need(SHARED / "sugarcrepe" / shared)
        (tmp_path / own).symlink_to(folder, target_is_directory=True)
        as_release = read_sugarcrepe_dir(tmp_path / own, on_error="reject").candidates
        as_copy = read_sugarcrepe_dir(folder, on_error="reject").candidates
        assert as_release["item_id"].n_unique() == count
        assert as_release.drop("provenance").equals(as_copy.drop("provenance"))


# --- VL-CheckList: the authors' protocol -----------------------------------------------------

COLOR = FIXTURES / "vl_checklist" / "corpus" / "v1" / "Attribute" / "color" / "vg.yaml"


def test_vl_checklist_default_protocol_is_unchanged():
    assert FORMATS["vl_checklist"].options == {"protocol": "vlcomp", "max_num": 2000}
    default = read_vl_checklist_file(COLOR, on_error="reject")
    assert default.candidates["item_id"].n_unique() == 3
    assert default.rejected.select("location", "reason").rows() == [
        ("record=3", "negative equals the positive")
    ]


def test_vl_checklist_authors_protocol_keeps_equal_texts_as_ties(tmp_path):
    imported = read_vl_checklist_file(COLOR, on_error="reject", protocol="authors")
    assert imported.rejected.height == 0
    tie = imported.candidates.filter(pl.col("item_id") == "vl_checklist/attribute/color/vg/3")
    assert tie["text"].to_list() == ["black stripes", "black stripes"]
    assert tie["is_positive"].to_list() == [True, False]
    assert tie["provenance"][0] == "Attribute/vg/color.json#record=3;corpus=vg;tie=equal_texts"
    source = {"files": [str(COLOR)], "protocol": "authors"}
    summary, tables, text = _run(tmp_path, "vl_checklist", source)
    assert summary["items"] == 4 and summary["rejected"] == 0
    assert "keeps the first 1000 entries (MAX_NUM 2000 / 2)" in text
    assert "1 items whose first negative equals the first positive are kept" in text


@pytest.mark.parametrize(("max_num", "kept"), [(4, 2), (5, 2), (2, 1), (0, 4), (2000, 4)])
def test_vl_checklist_authors_cap_keeps_the_first_max_num_halves(max_num, kept):
    imported = read_vl_checklist_file(COLOR, on_error="reject", protocol="authors", max_num=max_num)
    ids = imported.candidates["item_id"].unique(maintain_order=True).to_list()
    assert ids == [f"vl_checklist/attribute/color/vg/{i}" for i in range(kept)]
    reason = f"beyond the authors' cap (the first {max_num // 2} entries: MAX_NUM {max_num} / 2)"
    assert imported.rejected.select("location", "reason").rows() == [
        (f"record={i}", reason) for i in range(kept, 4)
    ]
    # the default protocol has no cap
    assert read_vl_checklist_file(COLOR, on_error="reject", max_num=max_num).rejected.height == 1


def test_vl_checklist_protocol_options_are_checked(tmp_path):
    for options, message in (
        ({"protocol": "paper"}, "protocol must be one of"),
        ({"max_num": -2}, "max_num must be a non-negative integer"),
        ({"max_num": True}, "max_num must be a non-negative integer"),
        ({"max_num": "2000"}, "max_num must be a non-negative integer"),
    ):
        with pytest.raises(ValueError, match=message):
            read_vl_checklist_file(COLOR, **options)
    (tmp_path / "images").mkdir()
    config = {
        "eval_sets": {
            "v": {
                "format": "vl_checklist",
                "files": [str(COLOR)],
                "images": str(tmp_path / "images"),
                "options": {"protocol": "authors", "max_num": 1000},
            }
        },
        "models": {"m": {"open_clip": "ViT-B-32-quickgelu", "pretrained": "openai"}},
        "benchmarks": {"vlc": {"kind": "imported", "eval_set": "v"}},
        "evaluate": {"models": ["m"]},
    }
    validated = config_module.validate_config(config)
    assert validated["eval_sets"]["v"]["options"] == {"protocol": "authors", "max_num": 1000}
    config["eval_sets"]["v"]["options"] = {"protocol": "paper"}
    with pytest.raises(config_module.ConfigError, match="protocol"):
        config_module.validate_config(config)


def test_an_item_with_equal_texts_is_a_tie_counted_wrong():
    from vlcomp.evaluate.retrieval_sets import rank_sets

    candidates = read_vl_checklist_file(COLOR, protocol="authors").candidates
    tie = candidates.filter(pl.col("item_id") == "vl_checklist/attribute/color/vg/3")
    scores = tie.select(
        "benchmark", "item_id", "family", "target", "is_positive",
        model=pl.lit("m"), text_key=pl.col("text"), similarity=pl.lit(0.31),
    )  # fmt: skip
    ranked = rank_sets(scores)
    assert ranked["correct"].to_list() == [False] and ranked["rank"].to_list() == [1]


# --- CREPE productivity folders --------------------------------------------------------------

PRODUCTIVITY = FIXTURES / "crepe_prod" / "prod_hard_negatives"


def test_crepe_productivity_release_folder_reads_every_type_and_complexity(tmp_path):
    files, skipped = crepe_folder_files(PRODUCTIVITY)
    assert [str(p.relative_to(PRODUCTIVITY)) for p in files] == [
        "atom/prod_vg_hard_negs_atom_complexity_4.csv",
        "atom/prod_vg_hard_negs_atom_complexity_5.csv",
        "negate/prod_vg_hard_negs_negate_complexity_4.csv",
        "swap/prod_vg_hard_negs_swap_complexity_4.csv",
        "swap/prod_vg_hard_negs_swap_complexity_10.csv",
    ]
    assert skipped == []
    summary, tables, _ = _run(tmp_path, "crepe_csv", {"files": [str(PRODUCTIVITY)]})
    assert summary["items"] == 6 and summary["rejected"] == 0
    assert summary["items_per_type"] == {
        "prod_vg_hard_negs_atom_complexity_4/atom": 2,
        "prod_vg_hard_negs_atom_complexity_5/atom": 1,
        "prod_vg_hard_negs_negate_complexity_4/neg": 1,
        "prod_vg_hard_negs_swap_complexity_4/swap": 1,
        "prod_vg_hard_negs_swap_complexity_10/swap": 1,
    }
    complexity = dict(tables["boxes"].select("item_id", "complexity").iter_rows())
    assert complexity["crepe/prod_vg_hard_negs_swap_complexity_10/0/swap"] == 10
    assert complexity["crepe/prod_vg_hard_negs_atom_complexity_5/0/atom"] == 5
    first = tables["candidates"].filter(
        pl.col("item_id") == "crepe/prod_vg_hard_negs_atom_complexity_4/0/atom"
    )
    assert first["image"][0] == "2344001" and first.height == 4  # the caption and 3 negatives


def test_crepe_productivity_folder_skips_files_of_another_layout(tmp_path):
    root = tmp_path / "crepe" / "prod_hard_negatives"
    shutil.copytree(PRODUCTIVITY, root)
    shutil.copy(root / "atom" / "prod_vg_hard_negs_atom_complexity_4.csv", root / "swap")
    _write(root / "prod_vg_hard_negs_swap_all.csv", "image_id,caption,hard_negs\n")
    files, skipped = crepe_folder_files(root)
    assert len(files) == 5
    assert [(p.relative_to(root).as_posix(), why) for p, why in skipped] == [
        ("prod_vg_hard_negs_swap_all.csv", "not a productivity file of one complexity"),
        (
            "swap/prod_vg_hard_negs_atom_complexity_4.csv",
            "not a swap productivity file (prod_vg_hard_negs_swap_complexity_<n>.csv)",
        ),
    ]
    summary, _, text = _run(tmp_path, "crepe_csv", {"files": [str(root)]})
    assert summary["items"] == 6 and len(summary["skipped_files"]) == 2
    assert "prod_vg_hard_negs_swap_all.csv: not a productivity file of one complexity" in text
    _write(tmp_path / "crepe" / "syst_hard_negatives" / "x.csv", "")
    with pytest.raises(ImportFormatError, match=r"syst_hard_negatives/: name one of them"):
        _run(tmp_path, "crepe_csv", {"files": [str(tmp_path / "crepe")]})


# --- ARO macro accuracy ----------------------------------------------------------------------

ARO_MACRO = FIXTURES / "aro_macro"


def _aro_candidates() -> pl.DataFrame:
    relation = read_aro_file(ARO_MACRO / "visual_genome_relation.json", "vg_relation")
    attribution = read_aro_file(ARO_MACRO / "visual_genome_attribution.json", "vg_attribution")
    return pl.concat([relation.candidates, attribution.candidates])


def _predictions(correct: dict[str, bool], model: str = "m") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model": model,
            "benchmark": "aro",
            "item_id": list(correct),
            "correct": list(correct.values()),
        }
    )


def test_aro_macro_accuracy_as_the_authors_average(tmp_path):
    candidates = _aro_candidates()
    groups = aro_item_groups(candidates)
    assert groups.filter(pl.col("task") == "vg_relation")["group"].to_list() == [
        "on", "on", "on", "behind", "behind", "near", "of", "with",
    ]  # fmt: skip
    assert {"near", "of", "with"} <= set(ARO_MACRO_EXCLUDED_RELATIONS)
    assert len(ARO_MACRO_EXCLUDED_RELATIONS) == 157
    relation = [True, True, False, True, False, False, True, True]  # on 2/3, behind 1/2
    attribution = [i < 20 for i in range(25)] + [False, False]  # white_wooden 20/25
    correct = {f"aro_vg_relation/{i}": c for i, c in enumerate(relation)}
    correct |= {f"aro_vg_attribution/{i}": c for i, c in enumerate(attribution)}
    correct["aro_coco_order/0"] = True  # no group: left out
    per_group, macro = aro_macro_accuracy(_predictions(correct), candidates)
    assert per_group.select("task", "group", "n", "accuracy", "counted").rows() == [
        ("vg_attribution", "red_green", 2, 0.0, False),
        ("vg_attribution", "white_wooden", 25, 0.8, True),
        ("vg_relation", "behind", 2, 0.5, True),
        ("vg_relation", "near", 1, 0.0, False),
        ("vg_relation", "of", 1, 1.0, False),
        ("vg_relation", "on", 3, pytest.approx(2 / 3), True),
        ("vg_relation", "with", 1, 1.0, False),
    ]
    columns = ("task", "family", "metric", "value", "n", "groups", "groups_left_out")
    assert macro.select(columns).rows() == [
        ("vg_attribution", "swap_att", "accuracy_aro_macro", 0.8, 25, 1, 1),
        ("vg_relation", "swap_rel", "accuracy_aro_macro", pytest.approx(7 / 12), 5, 2, 3),
    ]
    # per model (and part); a tie is wrong before it gets here (correct is false)
    two = pl.concat([_predictions(correct, "a"), _predictions(dict.fromkeys(correct, True), "b")])
    _, both = aro_macro_accuracy(two, candidates)
    assert both.select("model", "task", "value").rows() == [
        ("a", "vg_attribution", 0.8),
        ("a", "vg_relation", pytest.approx(7 / 12)),
        ("b", "vg_attribution", 1.0),
        ("b", "vg_relation", 1.0),
    ]
    twice = pl.concat([_predictions(correct), _predictions(correct)])
    with pytest.raises(ValueError, match="several prediction rows"):
        aro_macro_accuracy(twice, candidates)


def test_aro_import_reports_the_macro_groups(tmp_path):
    summary, _, text = _run(tmp_path, "aro", {"files": [str(ARO_MACRO)]})
    assert summary["macro_groups"] == {
        "vg_attribution": {"groups": 2, "groups_counted": 1, "items_counted": 25},
        "vg_relation": {"groups": 5, "groups_counted": 2, "items_counted": 5},
    }
    assert "vg_relation: 5 groups, 2 counted by ARO's macro accuracy (5 items" in text


def test_the_evaluation_writes_aros_macro_rows():
    from vlcomp.evaluate.jobs import published_macro_rows
    from vlcomp.evaluate.metrics import METRIC_SCHEMA

    candidates = _aro_candidates()
    correct = dict.fromkeys(candidates["item_id"].unique().to_list(), True)
    predictions = _predictions(correct).with_columns(part=pl.lit(None, pl.String))
    rows = published_macro_rows(predictions, [(None, candidates)])
    assert rows.schema == pl.Schema(METRIC_SCHEMA)
    assert sorted(rows.select("family", "metric", "value").rows()) == [
        ("swap_att", "accuracy_aro_macro", 1.0),
        ("swap_rel", "accuracy_aro_macro", 1.0),
    ]
    other = candidates.with_columns(generator=pl.lit("imported:sugarcrepe"))
    assert published_macro_rows(predictions, [(None, other)]).is_empty()
