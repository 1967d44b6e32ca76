"""Split composition and matched split contrasts."""

from __future__ import annotations

import polars as pl
import pytest

from vlcomp.contracts import EVAL_ITEMS_SCHEMA
from vlcomp.evaluate.composition import composition_job, composition_tables, item_features


def _eval_item(item_id, text, lemmas, values, relations=()):
    return {
        "item_id": item_id, "source": "vg_regions", "image_id": "1", "region_id": item_id,
        "text": text, "x": 0, "y": 0, "width": 10, "height": 20,
        "objects": [{"idx": i, "name": n, "lemma": n} for i, n in enumerate(lemmas)],
        "attributes": [{"obj": o, "value": v} for o, v in values],
        "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in relations],
    }  # fmt: skip


def _fixture():
    # Circles are easy, stars hard; "unseen" items are mostly circles.
    items, boxes, predictions = [], [], []
    plan = [  # (split, lemma, correct) per item
        *[("seen", "circle", k < 9) for k in range(10)],
        *[("seen", "star", k < 3) for k in range(30)],
        *[("unseen", "circle", k < 18) for k in range(20)],
        *[("unseen", "star", k < 1) for k in range(4)],
    ]
    for k, (split, lemma, correct) in enumerate(plan):
        eid = f"e{k}"
        items.append(
            _eval_item(eid, f"a red {lemma} above a blue square", [lemma, "square"],
                       [(0, "red"), (1, "blue")], [(0, "above", 1)])
        )  # fmt: skip
        boxes.append({"item_id": f"{eid}/x", "eval_item_id": eid})
        predictions.append(
            {"model": "m", "part": "c", "item_id": f"{eid}/x", "family": "comp_att",
             "split": split, "correct": correct}
        )  # fmt: skip
    return (
        pl.DataFrame(items, schema=EVAL_ITEMS_SCHEMA),
        pl.DataFrame(boxes).with_columns(part=pl.lit("c")),
        pl.DataFrame(predictions),
    )


def test_matching_on_objects_removes_a_composition_gap():
    items, boxes, predictions = _fixture()
    composition, shares, matched = composition_tables(predictions, item_features(items, boxes))
    unseen = composition.filter(pl.col("split") == "unseen").row(0, named=True)
    assert unseen["n"] == 24 and unseen["accuracy"] == pytest.approx(19 / 24)
    assert unseen["objects"] == 2 and unseen["relations"] == 1 and unseen["words"] == 7
    assert unseen["area"] == 200
    circle = shares.filter(
        (pl.col("split") == "unseen") & (pl.col("kind") == "object") & (pl.col("atom") == "circle")
    )
    assert circle["share"].to_list() == [pytest.approx(20 / 24)]
    raw = matched.filter(pl.col("matched_on") == "none").row(0, named=True)
    by_objects = matched.filter(pl.col("matched_on") == "objects").row(0, named=True)
    assert raw["reference"] == "seen" and raw["gap"] == pytest.approx(19 / 24 - 12 / 40)
    # Standardised to the unseen split's objects: seen circles 0.9, seen stars 0.1.
    assert by_objects["accuracy_reference"] == pytest.approx((20 * 0.9 + 4 * 0.1) / 24)
    assert abs(by_objects["gap"]) < 0.05 and by_objects["coverage"] == 1.0


def test_twins_match_each_item_with_the_same_region_of_the_other_image():
    """Image pairs: an unseen item is compared with the item of the same box in its twin
    image (same negative type); items off pairs, or without a counterpart, are left out."""
    rows, boxes, predictions = [], [], []
    plan = [  # image, box x, split, correct
        ("1", 0, "unseen", True), ("2", 0, "seen", False),  # a pair, one region
        ("1", 5, "unseen", True), ("2", 5, "seen", True),  # same pair, another region
        ("3", 0, "unseen", False), ("4", 0, "seen", True),  # images 3, 4: not a pair
        ("5", 0, "unseen", False), ("6", 9, "seen", True),  # a pair, boxes differ
        ("7", 0, "seen", True),
    ]  # fmt: skip
    for k, (image, x, split, correct) in enumerate(plan):
        item = _eval_item(f"e{k}", "a red circle", ["circle"], [(0, "red")])
        rows.append({**item, "image_id": image, "x": x})
        boxes.append({"item_id": f"e{k}/x", "eval_item_id": f"e{k}"})
        predictions.append(
            {"model": "m", "part": "c", "item_id": f"e{k}/x", "family": "comp_att",
             "split": split, "correct": correct}
        )  # fmt: skip
    items = pl.DataFrame(rows, schema=EVAL_ITEMS_SCHEMA)
    boxes = pl.DataFrame(boxes).with_columns(part=pl.lit("c"))
    pairs = pl.DataFrame({"image_id": [1, 6], "twin_image_id": [2, 5]})  # ids as integers
    features = item_features(items, boxes, pairs)
    assert features["twins_key"].to_list()[:2] == ["1~2|0|0|10|20"] * 2
    assert features["twins_key"][4] is None
    _, _, matched = composition_tables(pl.DataFrame(predictions), features)
    twins = matched.filter(pl.col("matched_on") == "twins").row(0, named=True)
    assert (twins["n"], twins["n_reference"], twins["coverage"]) == (2, 2, 0.5)
    assert (twins["accuracy"], twins["accuracy_reference"]) == (1.0, 0.5)
    # without pairs, no twins row
    _, _, plain = composition_tables(pl.DataFrame(predictions), item_features(items, boxes))
    assert "twins" not in plain["matched_on"].to_list()


def test_job_writes_tables_and_report_and_names_unmatched_items(tmp_path):
    items, boxes, predictions = _fixture()
    items.write_parquet(tmp_path / "items.parquet")
    boxes.drop("part").write_parquet(tmp_path / "regions.parquet")
    predictions.write_parquet(tmp_path / "p.parquet")
    out = {k: tmp_path / f"{k}.out" for k in ("composition_out", "matched_out", "markdown_out")}
    composition_job(
        [tmp_path / "p.parquet"], tmp_path / "items.parquet", {"c": tmp_path / "regions.parquet"},
        "bench", **out, log=lambda m: None,
    )  # fmt: skip
    report = out["markdown_out"].read_text()
    assert "## m on the splits of c" in report and "| unseen vs seen | objects |" in report
    predictions.with_columns(part=pl.lit("other")).write_parquet(tmp_path / "p.parquet")
    with pytest.raises(ValueError, match="have no eval item, e.g. e0/x"):
        composition_job(
            [tmp_path / "p.parquet"], tmp_path / "items.parquet",
            {"c": tmp_path / "regions.parquet"}, "bench", **out,
        )  # fmt: skip
    pl.DataFrame({"image_id": [1]}).write_parquet(tmp_path / "twins.parquet")
    with pytest.raises(ValueError, match=r"twins.parquet: image pairs need .*twin_image_id"):
        composition_job(
            [tmp_path / "p.parquet"], tmp_path / "items.parquet",
            {"c": tmp_path / "regions.parquet"}, "bench", **out, pairs=tmp_path / "twins.parquet",
        )  # fmt: skip


def test_twin_novelty_is_own_gap_minus_other_gap_on_twin_regions():
    """Two models on corpus c's splits: own (trained on c) gains nothing on unseen items of
    twin pairs, other (trained on d) gains 0.5; novelty = 0 - 0.5 with a bootstrap interval
    over the image pairs; a model of unknown corpus is left out."""
    from vlcomp.evaluate.composition import twin_novelty

    rows = []
    for pair in range(6):
        key = f"{pair}~{pair + 100}|0|0|10|20"
        for model, unseen, seen in (("own", 1, 1), ("other", 1, pair % 2), ("x", 0, 0)):
            rows.append((model, "c", f"u{pair}", "comp_att", "UC", bool(unseen), key))
            rows.append((model, "c", f"s{pair}", "comp_att", "SC", bool(seen), key))
        rows.append(("own", "c", f"far{pair}", "comp_att", "SC", False, None))
    frame = pl.DataFrame(
        rows,
        schema=["model", "part", "item_id", "family", "split", "correct", "twins_key"],
        orient="row",
    )
    table = twin_novelty(frame, {"own": "c", "other": "d", "x": None}, resamples=200)
    assert table.height == 1
    row = table.row(0, named=True)
    assert (row["model_own"], row["model_other"], row["split"]) == ("own", "other", "UC")
    assert (row["pairs"], row["n"], row["gap_own"], row["gap_other"]) == (6, 6, 0.0, 0.5)
    assert row["novelty"] == -0.5 and row["novelty_low"] < -0.5 < row["novelty_high"] <= 0
    again = twin_novelty(frame, {"own": "c", "other": "d", "x": None}, resamples=200)
    assert again.equals(table)  # seeded
