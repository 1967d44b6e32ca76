"""The evaluation throughput benchmark and the precision check (no timing is asserted)."""

import json

import numpy as np
import polars as pl
import pytest
from PIL import Image

from vlcomp_dev.bench.evaluate import make_bench_data, run_benchmark
from vlcomp_dev.precision_check import (
    Run,
    check,
    compare,
    metric_differences,
    write_report,
)


def test_bench_data_are_jpeg_crops(tmp_path):
    candidates, boxes, images = make_bench_data(tmp_path, n_items=7, negatives=2, seed=3)
    assert len(images) == 3  # three crops per image
    with Image.open(next(iter(images.values()))) as image:
        assert (image.format, image.size) == ("JPEG", (640, 480))
    assert boxes.height == 7 and candidates.height == 21
    assert (
        candidates.group_by("item_id").agg(pl.col("is_positive").sum())["is_positive"].to_list()
        == [1] * 7
    )
    inside = boxes.filter(
        (pl.col("x") + pl.col("width") <= 640) & (pl.col("y") + pl.col("height") <= 480)
    )
    assert inside.height == 7


def test_benchmark_reports_every_path_and_agrees(tmp_path):
    result = run_benchmark(
        n_items=6, negatives=2, threads=1, batch_size=4, repeats=1, workers=1,
        loop_items=2, data_dir=tmp_path, log=lambda _: None,
    )  # fmt: skip
    assert set(result["median_s"]) == {"loop", "cold", "warm", "decode", "encode"}
    assert (result["items"], result["loop_items"]) == (6, 2)
    assert any(tmp_path.glob("*/images/*.jpg"))  # kept for the next run
    assert result["precision"] == "fp32" and result["machine"]["precision"] == "fp32"
    assert result["max_abs_similarity_diff"] <= 1e-4
    for key in (
        "speedup_cold_over_loop",
        "speedup_warm_over_loop",
        "cold_over_decode_ceiling",
        "encode_ceiling_over_loop",
    ):
        assert result[key] > 0
    assert {"cpu_count", "torch_threads", "torch", "open_clip", "device_name"} <= set(
        result["machine"]
    )


def _items() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "item_id": ["a", "a", "a", "b", "b", "b"],
            "is_positive": [True, False, False, True, False, False],
        }
    )


def test_compare_counts_flipped_pair_and_set_decisions():
    reference = np.array([0.5, 0.4, 0.3, 0.2, 0.6, 0.1])  # a: right; b: wrong (argmax row 4)
    other = np.array([0.5, 0.55, 0.3, 0.2, 0.6, 0.1])  # a: one pair flips, argmax -> row 1
    out = compare(_items(), reference, other, tolerance=1e-4)
    assert out["pair_decisions"] == 4 and out["pair_decisions_changed"] == 1
    assert out["set_decisions"] == 2 and out["set_argmax_changed"] == 1
    assert out["set_correct_changed"] == 1
    assert out["max_abs_diff"] == pytest.approx(0.15)
    assert out["within_tolerance"] is False
    same = compare(_items(), reference, reference + 1e-6, tolerance=1e-4)
    assert same["within_tolerance"] and same["pair_decisions_changed"] == 0


def test_runs_are_parsed():
    assert Run.parse("cpu:fp32") == Run("cpu", "fp32", 2)
    assert Run.parse("cuda:1:fp16:4") == Run("cuda:1", "fp16", 4)
    with pytest.raises(ValueError):
        Run.parse("cuda")


def test_check_of_two_cpu_runs_passes_with_no_change():
    result = check(
        [Run("cpu", "fp32", 0), Run("cpu", "auto", 1)],
        model="vlcomp-world-vit",
        n_items=6,
        log=lambda _: None,
        batch_size=4,
        threads=1,
    )
    (comparison,) = result["comparisons"].values()
    assert result["passed"] and comparison["within_tolerance"]
    assert comparison["max_abs_diff"] == 0.0 and comparison["pair_decisions_changed"] == 0


def test_metric_differences(tmp_path):
    for run, value in (("cpu", 0.5), ("gpu", 0.75)):
        folder = tmp_path / run / "m"
        folder.mkdir(parents=True)
        pl.DataFrame(
            {"metric": ["R@1", "R@5"], "split": ["all", "all"], "value": [value, 1.0]}
        ).write_parquet(folder / "pairs.parquet")
    out = metric_differences(tmp_path / "cpu", tmp_path / "gpu")
    table = out["tables"]["m/pairs.parquet"]
    assert table["rows_differing"] == 1 and table["max_abs_value_diff"] == pytest.approx(0.25)
    assert not out["identical"]
    assert metric_differences(tmp_path / "cpu", tmp_path / "cpu")["identical"]


def test_report_of_a_dry_run_folder(tmp_path):
    (tmp_path / "plan.txt").write_text("would run: bench --device cuda\n")
    compare_out = {"reference": "a", "other": "a", "identical": True, "tables": {}}
    (tmp_path / "metrics_compare.json").write_text(json.dumps(compare_out))
    text = write_report(tmp_path)
    assert "would run: bench --device cuda" in text and "identical" in text
    assert (tmp_path / "report.json").exists()
