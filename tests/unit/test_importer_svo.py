"""SVO-Probes: the reader on the fixture written from the published format (records read,
rejected by reason), the import job, image selection on hand-made similarities (known
answers, ties wrong, chance), and the evaluation job on a tiny random model."""

from itertools import permutations
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from tests.unit.test_importers_more import _write
from vlcomp.contracts import IMAGE_SELECTION_SCHEMA, REJECTED_SCHEMA
from vlcomp.evaluate.images import EXCLUDED_SCHEMA, IMAGE_INDEX_SCHEMA
from vlcomp.evaluate.metrics import METRIC_SCHEMA, EvalSettings
from vlcomp.evaluate.two_image import (
    IMAGE_SELECTION_CHANCE,
    IMAGE_SELECTION_PREDICTIONS_SCHEMA,
    image_selection_correct,
    image_selection_metric_table,
    image_selection_predictions,
)
from vlcomp.importers.common import ImportFormatError, RecordError
from vlcomp.importers.jobs import import_two_image_job
from vlcomp.importers.registry import FORMATS, IMAGE_SELECTION
from vlcomp.importers.svo_probes import read_svo_probes_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "svo_probes"
CSV = FIXTURE / "svo_probes.csv"
HEADER = (
    "index,sentence,pos_triplet,neg_triplet,subj_neg,verb_neg,obj_neg,pos_url,pos_image_id,"
    "neg_url,neg_image_id\n"
)
EXPECTED_REJECTED = {
    "not exactly one negative type (subj_neg, verb_neg, obj_neg)": 2,
    "images are equal": 1,
    "pos_image_id is not an integer": 1,
    "duplicate id": 1,
    "obj_neg is not a boolean": 1,
    "sentence is empty": 1,
}


def test_fixture_items_and_rejections_by_reason():
    imported = read_svo_probes_file(CSV, on_error="reject")
    items, rejected = imported.items, imported.rejected
    assert items.schema == pl.Schema(IMAGE_SELECTION_SCHEMA)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert items.select("item_id", "image_0", "image_1", "family").rows() == [
        ("svo_probes/0", "101.jpg", "102.jpg", "subject"),
        ("svo_probes/1", "101.jpg", "103.jpg", "verb"),
        ("svo_probes/2", "104.jpg", "105.jpg", "object"),
        ("svo_probes/3", "106.jpg", "107.jpg", "verb"),
        ("svo_probes/4", "108.jpg", "109.jpg", "subject"),
    ]
    assert items["caption"][0] == "A man sits on the grass."
    assert items["target"].is_null().all() and set(items["generator"]) == {"imported:svo_probes"}
    # the triplets stay in the provenance, the list-shaped one as published
    assert "neg_triplet=['child,feed,horse']" in items["provenance"][3]
    counts = dict(rejected.group_by("reason").len().iter_rows())
    assert counts == EXPECTED_REJECTED
    # the repeated index 4 is rejected, its first occurrence kept; located by key
    assert ("key=4", "duplicate id") in rejected.select("location", "reason").rows()
    with pytest.raises(RecordError, match="not exactly one negative type"):
        read_svo_probes_file(CSV)  # on_error="raise": the first malformed row stops it


def test_image_name_from_the_url_and_a_bad_template(tmp_path):
    imported = read_svo_probes_file(CSV, on_error="reject", image_name="{url_name}")
    assert imported.items["image_0"][0] == "man-sitting-grass-01.jpg"
    assert imported.items["image_1"][1] == "man lying grass.jpg"  # unquoted
    with pytest.raises(ValueError, match="image_name"):
        read_svo_probes_file(CSV, image_name="images/fixed.jpg")
    no_url = _write(tmp_path / "svo.csv", HEADER + "0,A cat.,a,b,True,False,False,,1,,2\n")
    rejected = read_svo_probes_file(no_url, on_error="reject", image_name="{url_name}").rejected
    assert rejected["reason"].to_list() == ["pos_url is empty (image_name uses {url_name})"]


def test_without_index_the_row_is_the_key_and_bad_files_raise(tmp_path):
    rows = 'A cat sleeps.,"cat,sleep,bed","dog,sleep,bed",1,0,0,u,7,v,8\n'
    path = _write(tmp_path / "svo_probes.csv", HEADER.split(",", 1)[1] + rows)
    items = read_svo_probes_file(path).items
    assert items.select("item_id", "family").rows() == [("svo_probes/0", "subject")]
    bad = _write(tmp_path / "other.csv", "sentence,pos_image_id\nA cat.,1\n")
    with pytest.raises(ImportFormatError, match=r"missing \['neg_image_id'"):
        read_svo_probes_file(bad)
    with pytest.raises(ImportFormatError, match="CSV file"):
        read_svo_probes_file(_write(tmp_path / "svo.json", "[]"))


def test_import_job_on_the_folder(tmp_path):
    out = tmp_path / "out"
    lines: list[str] = []
    summary = import_two_image_job(
        "svo_probes", {"files": [str(FIXTURE)]}, "svo", str(out / "items.parquet"),
        str(out / "rejected.parquet"), lines.append,
    )  # fmt: skip
    items = pl.read_parquet(out / "items.parquet")
    assert items.schema == pl.Schema(IMAGE_SELECTION_SCHEMA)
    assert set(items["benchmark"]) == {"svo"}
    assert summary["items"] == 5 and summary["rejected"] == 7
    assert summary["items_per_type"] == {"subject": 2, "verb": 2, "object": 1}
    assert summary["rejected_per_reason"] == EXPECTED_REJECTED
    assert summary["images"] == 9
    assert summary["key_gaps"] == {"svo_probes/svo_probes.csv": ["9"]}
    assert [m["metric"] for m in summary["authors_metrics"]] == ["accuracy"]
    assert any("accuracy (chance 0.5)" in line for line in lines)
    assert FORMATS["svo_probes"].shape == IMAGE_SELECTION


# --- evaluation ---------------------------------------------------------------------------


def _items(rows):
    """rows: (item_id, image_0, image_1, caption, family)."""
    return pl.DataFrame(
        [("svo", i, a, b, c, f, None, "imported:test", "") for i, a, b, c, f in rows],
        schema=IMAGE_SELECTION_SCHEMA,
        orient="row",
    )


def test_image_selection_known_answers_ties_wrong_and_chance():
    sims = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.7, 0.6]])
    assert image_selection_correct(sims[:, 0], sims[:, 1]).tolist() == [True, False, False, True]
    orders = np.array(list(permutations(range(2))), dtype=np.float64)
    assert image_selection_correct(*orders.T).mean() == IMAGE_SELECTION_CHANCE["accuracy"]
    assert FORMATS["svo_probes"].headline.chance == IMAGE_SELECTION_CHANCE["accuracy"]

    items = _items([("a", "1", "2", "x", "subject"), ("b", "3", "4", "y", "verb"),
                    ("c", "5", "6", "z", "verb"), ("d", "7", "8", "w", "object")])  # fmt: skip
    predictions = image_selection_predictions("m", items, sims)
    assert predictions.schema == pl.Schema(IMAGE_SELECTION_PREDICTIONS_SCHEMA)
    assert predictions["correct"].to_list() == [True, False, False, True]
    settings = EvalSettings.from_config({"bootstrap_resamples": 20, "bootstrap_seed": 0})
    metrics = image_selection_metric_table(predictions, settings)
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    value = {
        (r["model"], r["family"], r["metric"]): r["value"] for r in metrics.iter_rows(named=True)
    }
    assert value["m", "subject", "accuracy"] == 1.0
    assert value["m", "verb", "accuracy"] == 0.0  # one wrong, one tie
    assert value["m", "object", "accuracy"] == 1.0
    assert value["m", "all", "accuracy_micro"] == 0.5
    assert value["m", "all", "accuracy_macro"] == pytest.approx(2 / 3)
    assert value["chance", "all", "accuracy_micro"] == 0.5
    with pytest.raises(ValueError, match="non-finite"):
        image_selection_predictions("m", items, np.full((4, 2), np.nan))
    with pytest.raises(ValueError, match="shape"):
        image_selection_predictions("m", items, sims[:3])


def test_image_selection_job_end_to_end(tmp_path):
    import open_clip

    from vlcomp.evaluate.jobs import evaluate_two_image_job

    torch.manual_seed(0)
    checkpoint = tmp_path / "random.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), checkpoint)
    rows = []
    for i, rgb in enumerate([(220, 30, 30), (30, 180, 60), (40, 60, 220), (230, 210, 30)]):
        Image.new("RGB", (64, 64), rgb).save(tmp_path / f"{i}.png")
        rows.append((f"{i}.jpg", str(tmp_path / f"{i}.png"), "ok", None))
    rows.append(("9.jpg", None, "missing", "no file 9.jpg"))
    index = tmp_path / "images.parquet"
    pl.DataFrame(rows, schema=IMAGE_INDEX_SCHEMA, orient="row").write_parquet(index)
    items = tmp_path / "two_image.parquet"
    _items([("s0", "0.jpg", "1.jpg", "a red square", "subject"),
            ("s1", "2.jpg", "3.jpg", "a blue square", "verb"),
            ("s2", "1.jpg", "2.jpg", "a green square", "object"),
            ("s3", "0.jpg", "9.jpg", "a red square", "object")]).write_parquet(items)  # fmt: skip
    out = [str(tmp_path / f"{k}.parquet") for k in ("pred", "met", "exc")]
    settings = {"device": "cpu", "threads": 1, "batch_size": 3, "bootstrap_resamples": 20,
                "bootstrap_seed": 0}  # fmt: skip
    lines: list[str] = []
    evaluate_two_image_job("w", {"open_clip": "vlcomp-world-vit"}, str(checkpoint), settings,
                           str(items), str(index), str(tmp_path / "cache"), *out, lines.append,
                           shape="image_selection")  # fmt: skip
    predictions, metrics, excluded = (pl.read_parquet(p) for p in out)
    assert predictions.schema == pl.Schema(IMAGE_SELECTION_PREDICTIONS_SCHEMA)
    assert excluded.schema == pl.Schema(EXCLUDED_SCHEMA)
    assert excluded.select("item_id", "image_id", "status").rows() == [("s3", "9.jpg", "missing")]
    assert predictions["item_id"].to_list() == ["s0", "s1", "s2"]
    # the similarities are the model's: correct iff the positive scores strictly higher
    assert (
        predictions["correct"].to_list()
        == (predictions["sim_pos"] > predictions["sim_neg"]).to_list()
    )
    micro = metrics.filter(pl.col("model") == "w", pl.col("metric") == "accuracy_micro")
    assert micro["n"].to_list() == [3]
    assert micro["value"][0] == pytest.approx(predictions["correct"].mean())
    assert any("accuracy_micro" in line for line in lines)
