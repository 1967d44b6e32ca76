"""The evaluation jobs write each model's score kind (``metrics.with_score_kind`` from
``scoring.Scorer.score_kind``) on its metric rows and in the outputs' metadata: a dual
encoder's cosine, a matching head's ITM log-odds (its retrieval: BLIP's ITM logit + ITC
cosine), SugarCrepe++'s text-only accuracy cosine; chance rows have none."""

from __future__ import annotations

import polars as pl

from tests.unit.test_evaluate_jobs import (  # noqa: F401
    MODEL,
    PAIRS,
    SETTINGS,
    candidates,
    checkpoint,
    data,
    retrieval_items,
)
from tests.unit.test_hf_joint import entry, folders  # noqa: F401
from tests.unit.test_two_image import sc_candidates
from vlcomp.evaluate.jobs import (
    evaluate_benchmark_job,
    evaluate_sugarcrepe_pp_job,
    evaluate_two_image_job,
    retrieval_job,
)
from vlcomp.evaluate.metrics import METRIC_SCHEMA
from vlcomp.vocabulary import CHANCE


def kinds(metrics_path: str) -> dict[tuple[str, str], str | None]:
    """(model, metric) -> score kind, one kind per pair."""
    table = pl.read_parquet(metrics_path)
    assert table.schema == pl.Schema(METRIC_SCHEMA)
    pairs = table.select("model", "metric", "score_kind").unique()
    assert not pairs.select("model", "metric").is_duplicated().any()
    return {(model, metric): kind for model, metric, kind in pairs.rows()}


def run(job, model_key, model, checkpoint, inputs, folder, name):  # noqa: F811
    out = [str(folder / f"{name}_{k}.parquet") for k in ("per_item", "metrics", "excluded")]
    job(model_key, model, checkpoint, SETTINGS, *inputs, str(folder / "cache"), *out,
        lambda line: None)  # fmt: skip
    return out


def test_benchmark_and_retrieval_jobs_record_the_kind(data, checkpoint, folders):  # noqa: F811
    folder, index = data
    candidates(PAIRS).write_parquet(folder / "pairs.parquet")
    part = {"candidates": str(folder / "pairs.parquet"), "boxes": None, "splits": None,
            "split_column": "split", "label": None}  # fmt: skip
    blip = entry(folders["blip"], "matching_head", rerank_top_k=2)
    for key, model, weights, kind in (("w", MODEL, checkpoint, "cosine"),
                                      ("blip", blip, None, "itm_log_odds")):  # fmt: skip
        out = run(evaluate_benchmark_job, key, model, weights, [[part], index], folder, key)
        assert kinds(out[1]) == {(key, "accuracy"): kind, (key, "accuracy_micro"): kind,
                                 (key, "accuracy_macro"): kind, (CHANCE, "accuracy"): None,
                                 (CHANCE, "accuracy_micro"): None,
                                 (CHANCE, "accuracy_macro"): None}  # fmt: skip
        for path in out:
            assert pl.read_parquet_metadata(path)["score_kind"] == kind
    items = retrieval_items(folder)
    out = run(retrieval_job, "blip", blip, None, [items, index], folder, "retrieval")
    found = kinds(out[1])
    assert {kind for (model, _), kind in found.items() if model == "blip"} == {
        "itm_logit_plus_cosine"
    }
    assert {kind for (model, _), kind in found.items() if model == CHANCE} == {None}
    assert pl.read_parquet_metadata(out[1])["score_kind"] == "itm_logit_plus_cosine"


def test_pair_jobs_record_the_kind_and_text_only_accuracy_is_cosine(data, folders):  # noqa: F811
    folder, index = data
    blip = entry(folders["blip"], "matching_head", rerank_top_k=2)
    two = pl.DataFrame(
        {"benchmark": "wino", "item_id": ["w0", "w1"], "caption_0": ["a red square"] * 2,
         "caption_1": ["a green square", "a blue square"], "image_0": ["0", "0"],
         "image_1": ["1", "2"], "family": ["swap", "swap"], "target": ["att", "att"],
         "generator": "test", "provenance": ""}
    )  # fmt: skip
    two.write_parquet(folder / "two.parquet")
    out = run(evaluate_two_image_job, "blip", blip, None, [str(folder / "two.parquet"), index],
              folder, "two")  # fmt: skip
    found = kinds(out[1])
    assert {kind for (model, _), kind in found.items() if model == "blip"} == {"itm_log_odds"}
    assert {kind for (model, _), kind in found.items() if model == CHANCE} == {None}
    sc_candidates({
        "s0": ("0", "a red square", "a square that is red", [("a green square", "swap", "att")]),
        "s1": ("1", "a green square", "a square that is green",
               [("a blue square", "swap", "att")]),
    }).write_parquet(folder / "scpp.parquet")  # fmt: skip
    out = run(evaluate_sugarcrepe_pp_job, "blip", blip, None,
              [str(folder / "scpp.parquet"), None, index], folder, "scpp")  # fmt: skip
    found = kinds(out[1])
    for (model, metric), kind in found.items():
        expected = None if model == CHANCE else "cosine" if metric.startswith("tot") else (
            "itm_log_odds"
        )  # fmt: skip
        assert kind == expected, (model, metric)
    assert pl.read_parquet_metadata(out[1])["score_kind"] == "itm_log_odds"
