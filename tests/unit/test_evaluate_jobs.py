"""The evaluation jobs end to end on a tiny random model and a few generated images: one
benchmark job for retrieval sets of any size (pairs included), image<->text retrieval, the
image index with its excluded items, the world's held-in / held-out re-split, figures."""

import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from vlcomp.contracts import CANDIDATES_SCHEMA, PREDICTION_FLAGS_SCHEMA
from vlcomp.evaluate.embed import embed_image_refs
from vlcomp.evaluate.images import (
    EXCLUDED_SCHEMA,
    IMAGE_INDEX_SCHEMA,
    ImageRef,
    lookup_images,
    read_image_index,
)
from vlcomp.evaluate.jobs import evaluate_benchmark_job, retrieval_job
from vlcomp.evaluate.metrics import METRIC_SCHEMA, RANKS_SCHEMA
from vlcomp.evaluate.retrieval_sets import SET_PREDICTIONS_SCHEMA
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model

COLOURS = {"red": (220, 30, 30), "green": (30, 180, 60), "blue": (40, 60, 220),
           "yellow": (230, 210, 30)}  # fmt: skip
SETTINGS = {
    "device": "cpu", "threads": 1, "batch_size": 3, "recall_at": [1, 2], "set_recall_at": [1, 2],
    "bootstrap_resamples": 50, "bootstrap_seed": 0,
}  # fmt: skip
MODEL = {"open_clip": "vlcomp-world-vit"}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    import open_clip

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "random.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), path)
    return str(path)


@pytest.fixture()
def data(tmp_path):
    """Images 0-3 ok, 4 listed as missing, 5 ok in the index but not an image, 6 not listed."""
    folder = tmp_path / "pics"
    folder.mkdir()
    rows = []
    for i, (name, rgb) in enumerate(COLOURS.items()):
        image = Image.new("RGB", (64, 64), (235, 235, 235))
        image.paste(rgb, (8 + 4 * i, 8, 40 + 4 * i, 40))
        image.save(folder / f"{name}.png")
        rows.append((str(i), str(folder / f"{name}.png"), "ok", None))
    rows.append(("4", None, "missing", "no file blue.jpg under pics"))
    (folder / "broken.png").write_bytes(b"not a png at all")
    rows.append(("5", str(folder / "broken.png"), "ok", None))
    index = tmp_path / "images.parquet"
    pl.DataFrame(rows, schema=IMAGE_INDEX_SCHEMA, orient="row").write_parquet(index)
    return tmp_path, str(index)


def candidates(items: dict[str, tuple[str, list[str]]], family="swap", target="att"):
    """item_id -> (image, [positive, negatives...])."""
    rows = [
        ("bench", item, image, text, j == 0, family, target, "test", "")
        for item, (image, texts) in items.items()
        for j, text in enumerate(texts)
    ]
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA, orient="row")


PAIRS = {
    f"p{i}": (str(i % 4), [f"a {c} square", f"a {d} square"])
    for i, (c, d) in enumerate(
        [("red", "green"), ("green", "blue"), ("blue", "yellow"), ("yellow", "red")] * 2
    )
}  # fmt: skip


def test_image_index_lookup(data):
    _, index_path = data
    index = read_image_index(index_path)
    usable, problems = lookup_images(["0", "4", "6", None, "0"], index)
    assert set(usable) == {"0"}
    assert problems["4"] == ("missing", "no file blue.jpg under pics")
    assert problems["6"] == ("missing", "not in the image index")
    assert problems[None][0] == "missing"


def test_unreadable_image_is_recorded_not_raised(data, checkpoint):
    folder, index_path = data
    loaded = load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=checkpoint), device="cpu")
    refs = [ImageRef(str(folder / "pics/red.png")), ImageRef(str(folder / "pics/broken.png")),
            ImageRef(str(folder / "pics/gone.png"))]  # fmt: skip
    failed: dict[ImageRef, str] = {}
    vectors, computed = embed_image_refs(loaded, refs, batch_size=2, failed=failed)
    assert set(failed) == set(refs[1:]) and computed == 1
    assert np.isfinite(vectors[0]).all() and np.isnan(vectors[1:]).all()
    with pytest.raises(Exception, match="cannot identify|broken"):
        embed_image_refs(loaded, refs[:2])


def test_benchmark_job_pairs_parts_and_excluded(data, checkpoint):
    folder, index_path = data
    one = {**PAIRS, "m4": ("4", ["a blue square", "a red square"]),
           "b5": ("5", ["a red square", "a blue square"]),
           "u6": ("6", ["a red square", "a blue square"])}  # fmt: skip
    candidates(one).write_parquet(folder / "one.parquet")
    candidates(dict(list(PAIRS.items())[:4])).write_parquet(folder / "two.parquet")
    pl.DataFrame({"item_id": ["p0", "p1"], "split": ["seen", "unseen"]}).write_parquet(
        folder / "splits.parquet"
    )
    parts = [
        {"candidates": str(folder / "one.parquet"), "boxes": None,
         "splits": str(folder / "splits.parquet"), "split_column": "split", "label": "c1"},
        {"candidates": str(folder / "two.parquet"), "boxes": None, "splits": None,
         "split_column": "split", "label": "c2"},
    ]  # fmt: skip
    out = {k: str(folder / f"{k}.parquet") for k in ("predictions", "metrics", "excluded")}
    lines: list[str] = []
    evaluate_benchmark_job("w", MODEL, checkpoint, SETTINGS, parts, index_path,
                           str(folder / "cache"), out["predictions"], out["metrics"],
                           out["excluded"], lines.append)  # fmt: skip
    predictions = pl.read_parquet(out["predictions"])
    metrics = pl.read_parquet(out["metrics"])
    excluded = pl.read_parquet(out["excluded"])
    assert predictions.schema == pl.Schema({**SET_PREDICTIONS_SCHEMA, **PREDICTION_FLAGS_SCHEMA})
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert excluded.schema == pl.Schema(EXCLUDED_SCHEMA)
    assert not predictions["indistinguishable"].any()
    assert excluded.select("part", "item_id", "image_id", "status").rows() == [
        ("c1", "b5", "5", "unreadable"), ("c1", "m4", "4", "missing"),
        ("c1", "u6", "6", "missing"),
    ]  # fmt: skip
    assert any("excluded 3 of 15 items" in line for line in lines)
    assert predictions.group_by("part").len().sort("part").rows() == [("c1", 8), ("c2", 4)]
    assert set(predictions["n_candidates"]) == {2}
    c1 = predictions.filter(pl.col("part") == "c1")
    assert c1.filter(pl.col("item_id") == "p0")["split"][0] == "seen"
    assert c1.filter(pl.col("item_id") == "p2")["split"][0] == "not_in_splits"
    assert predictions.filter(pl.col("part") == "c2")["split"].null_count() == 4
    assert predictions["image"].to_list()[:2] == ["0", "1"]
    # the set path's accuracy is the direct count (strictly above; a tie is wrong)
    for part in ("c1", "c2"):
        rows = predictions.filter(pl.col("part") == part)
        direct = float((rows["pos_score"] > rows["neg_score"]).mean())
        cell = metrics.filter(
            (pl.col("model") == "w") & (pl.col("part") == part) & (pl.col("split") == "all")
            & (pl.col("metric") == "accuracy_micro") & pl.col("complexity").is_null()
        )  # fmt: skip
        assert cell["value"].to_list() == [pytest.approx(direct)]
    assert set(metrics["split"]) == {"all", "seen", "unseen", "not_in_splits"}
    assert metrics.filter(pl.col("model") == "chance")["value"].unique().to_list() == [0.5]
    # a rerun takes every embedding from the cache and writes the same bytes
    again = str(folder / "again.parquet")
    evaluate_benchmark_job("w", MODEL, checkpoint, SETTINGS, parts, index_path,
                           str(folder / "cache"), str(folder / "p2.parquet"), again,
                           str(folder / "e2.parquet"), lines.append)  # fmt: skip
    assert pl.read_parquet(again).equals(metrics)
    assert any("embedded 0/4 images or crops and 0/" in line for line in lines)


def test_benchmark_job_with_sets_and_boxes(data, checkpoint):
    folder, index_path = data
    sets = {f"s{i}": (str(i), ["a red square", "a green square", "a blue square", "a sky"])
            for i in range(4)}  # fmt: skip
    candidates(sets, "atom", "obj").write_parquet(folder / "sets.parquet")
    pl.DataFrame({"item_id": ["s0", "s1", "s2", "s3"], "x": [0, None, 8, 8],
                  "y": [0, None, 8, 8], "width": [32, None, 40, 40],
                  "height": [32, None, 40, 40], "complexity": [4, 4, 5, 5]}).write_parquet(
        folder / "boxes.parquet")  # fmt: skip
    part = {"candidates": str(folder / "sets.parquet"), "boxes": str(folder / "boxes.parquet"),
            "splits": None, "split_column": "split", "label": None}  # fmt: skip
    out = [str(folder / f"{k}.parquet") for k in ("pred", "met", "exc")]
    evaluate_benchmark_job("w", MODEL, checkpoint, SETTINGS, [part], index_path,
                           str(folder / "cache"), *out, log=lambda line: None)  # fmt: skip
    metrics = pl.read_parquet(out[1])
    assert {"R@1", "R@2", "mean_R@K", "R@1_micro"} <= set(metrics["metric"])
    assert set(metrics["complexity"].drop_nulls()) == {4, 5}
    assert metrics["part"].null_count() == metrics.height
    assert pl.read_parquet(out[2]).height == 0
    assert pl.read_parquet(out[0])["n_candidates"].to_list() == [4] * 4


def test_benchmark_job_flags_what_the_tokenizer_cannot_tell_apart(data, checkpoint):
    """vlcomp-world-vit reads 32 tokens: a negative that changes only the 40th word reads
    exactly as its positive (flagged indistinguishable, counted per metric cell and always
    wrong); one that changes the 3rd word does not."""
    folder, index_path = data
    tail = " and a circle" * 12
    sets = {
        "late": ("0", [f"a red square{tail} and a star", f"a red square{tail} and a heart"]),
        "early": ("1", [f"a green square{tail}", f"a blue square{tail}"]),
        "case": ("2", ["a blue square", "a BLUE square"]),  # the tokenizer lower-cases
    }
    candidates(sets, "replace", "obj").write_parquet(folder / "long.parquet")
    part = {"candidates": str(folder / "long.parquet"), "boxes": None, "splits": None,
            "split_column": "split", "label": None}  # fmt: skip
    out = [str(folder / f"{k}.parquet") for k in ("pred", "met", "exc")]
    lines: list[str] = []
    evaluate_benchmark_job("w", MODEL, checkpoint, SETTINGS, [part], index_path,
                           str(folder / "cache"), *out, log=lines.append)  # fmt: skip
    predictions = pl.read_parquet(out[0]).sort("item_id")
    assert predictions.select("item_id", "indistinguishable").rows() == [
        ("case", True), ("early", False), ("late", True)
    ]  # fmt: skip
    assert not predictions.filter(pl.col("indistinguishable"))["correct"].any()
    assert not predictions["tied"].any()
    metrics = pl.read_parquet(out[1])
    model = metrics.filter(pl.col("model") == "w")
    assert model["n_indistinguishable"].unique().to_list() == [2]
    assert model["n_tied"].unique().to_list() == [0]
    chance = metrics.filter(pl.col("model") == "chance")
    assert chance.height and chance["n_indistinguishable"].null_count() == chance.height
    assert pl.read_parquet_metadata(out[0])["tokenizer_context_length"] == "32"
    assert any("2 indistinguishable to the tokenizer within its 32 tokens" in x for x in lines)


def test_benchmark_job_stops_when_no_image_is_usable(data, checkpoint):
    folder, index_path = data
    candidates({"m": ("4", ["a", "b"]), "u": ("6", ["a", "b"])}).write_parquet(
        folder / "bad.parquet"
    )
    part = {"candidates": str(folder / "bad.parquet"), "boxes": None, "splits": None,
            "split_column": "split", "label": None}  # fmt: skip
    with pytest.raises(ValueError, match="none of the 2 items has a usable image"):
        evaluate_benchmark_job("w", MODEL, checkpoint, SETTINGS, [part], index_path,
                               str(folder / "cache"), *(str(folder / f"{k}") for k in "pme"),
                               log=lambda line: None)  # fmt: skip


def retrieval_items(folder):
    rows = [(f"c{i}{j}", str(i), f"a {name} square {j}") for i, name in enumerate(COLOURS)
            for j in range(2)]  # fmt: skip
    rows += [("c40", "4", "a blue thing"), ("c50", "5", "a red thing")]
    items = pl.DataFrame(rows, schema=["item_id", "image_id", "text"], orient="row")
    path = folder / "coco" / "items.parquet"
    path.parent.mkdir()
    items.write_parquet(path)
    return str(path)


def test_retrieval_job(data, checkpoint):
    folder, index_path = data
    items = retrieval_items(folder)
    out = {k: str(folder / f"{k}.parquet") for k in ("ranks", "metrics", "excluded")}
    retrieval_job("w", MODEL, checkpoint, SETTINGS, items, index_path, str(folder / "cache"),
                  out["ranks"], out["metrics"], out["excluded"], log=lambda line: None)  # fmt: skip
    ranks, metrics = pl.read_parquet(out["ranks"]), pl.read_parquet(out["metrics"])
    assert ranks.schema == pl.Schema(RANKS_SCHEMA) and metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert pl.read_parquet(out["excluded"]).select("item_id", "status").rows() == [
        ("c40", "missing"), ("c50", "unreadable")
    ]  # fmt: skip
    assert ranks.group_by("direction").len().sort("direction").rows() == [("i2t", 4), ("t2i", 8)]
    assert set(metrics["benchmark"]) == {"coco_retrieval"} and set(metrics["split"]) == {"all"}
    assert set(metrics["metric"]) == {"i2t_R@1", "i2t_R@2", "t2i_R@1", "t2i_R@2"}
    t2i = metrics.filter((pl.col("model") == "w") & (pl.col("metric") == "t2i_R@1"))
    assert t2i["value"][0] == pytest.approx(
        float((ranks.filter(pl.col("direction") == "t2i")["rank"] < 1).mean())
    )
    chance = metrics.filter((pl.col("model") == "chance") & (pl.col("metric") == "t2i_R@1"))
    assert chance["value"][0] == pytest.approx(1 / 4)


def test_heldout_resplits_predictions_and_ranks(data, checkpoint, tmp_path):
    from vlcomp.world.checks.heldout import (
        HELDOUT_METRIC_SCHEMA,
        heldout_metrics_job,
        heldout_retrieval_job,
    )

    folder, index_path = data
    candidates(PAIRS).write_parquet(folder / "pairs.parquet")
    part = {"candidates": str(folder / "pairs.parquet"), "boxes": None, "splits": None,
            "split_column": "split", "label": None}  # fmt: skip
    predictions = []
    for model in ("w", "v"):
        paths = [str(folder / f"{model}_{k}.parquet") for k in ("pred", "met", "exc")]
        evaluate_benchmark_job(model, MODEL, checkpoint, SETTINGS, [part], index_path,
                               str(folder / "cache"), *paths, log=lambda line: None)  # fmt: skip
        predictions.append(paths[0])
    holdout = folder / "holdout.parquet"
    pl.DataFrame(
        {"image_id": [0, 1, 2], "corpus": ["cc", "cc", "yf"], "kind": "binding", "value": "x"}
    ).write_parquet(holdout)
    out = str(folder / "heldout.parquet")
    heldout_metrics_job(
        predictions,
        str(holdout),
        {"w": "cc", "v": None},
        SETTINGS,
        out,
        log=lambda line: None,
        predictions_out=str(folder / "resplit.parquet"),
    )
    table = pl.read_parquet(out)
    assert table.schema == pl.Schema(HELDOUT_METRIC_SCHEMA)
    w = table.filter((pl.col("model") == "w") & (pl.col("metric") == "accuracy_micro"))
    assert dict(w.select("split", "n").rows()) == {"all": 8, "held_out": 4, "held_in": 4}
    v = table.filter(pl.col("model") == "v")
    assert set(v["split"]) == {"all"} and v["training_corpus"].null_count() == v.height
    resplit = pl.read_parquet(folder / "resplit.parquet").filter(pl.col("model") == "w")
    held = resplit.filter(pl.col("split") == "held_out")["image"].unique().sort().to_list()
    assert held == ["0", "1"]
    chance = table.filter((pl.col("model") == "chance") & (pl.col("training_corpus") == "cc"))
    assert set(chance["split"]) == {"all", "held_in", "held_out"}

    items = retrieval_items(tmp_path)
    paths = [str(folder / f"r_{k}.parquet") for k in ("ranks", "met", "exc")]
    retrieval_job("w", MODEL, checkpoint, SETTINGS, items, index_path, str(folder / "cache"),
                  *paths, log=lambda line: None)  # fmt: skip
    heldout_retrieval_job([paths[0]], str(holdout), {"w": "yf"}, SETTINGS,
                          str(folder / "r_held.parquet"), log=lambda line: None)  # fmt: skip
    recall = pl.read_parquet(folder / "r_held.parquet").filter(pl.col("model") == "w")
    n = {(r["split"], r["metric"]): r["n"] for r in recall.iter_rows(named=True)}
    assert n[("held_out", "i2t_R@1")] == 1 and n[("held_out", "t2i_R@1")] == 2
    assert n[("held_in", "t2i_R@1")] == 6 and n[("all", "t2i_R@1")] == 8


def test_figures_name_benchmark_models_and_splits(data, checkpoint, tmp_path):
    from vlcomp.evaluate.metrics import EvalSettings, retrieval_table
    from vlcomp.evaluate.retrieval_sets import rank_sets, set_metric_table
    from vlcomp.report.figures import (
        pair_accuracy_figure,
        plot_pair_accuracy,
        plot_retrieval,
        retrieval_figure,
    )

    rng = np.random.default_rng(2)
    rows = []
    for model in ("m1", "m2"):
        for i in range(40):
            family, target = [("swap", "att"), ("replace", "obj")][i % 2]
            for j, sim in enumerate(rng.normal(size=2)):
                rows.append((model, "world_pairs", f"i{i}", family, target, j == 0, None,
                             f"{i}-{j}", float(sim)))  # fmt: skip
    scores = pl.DataFrame(
        rows, orient="row",
        schema=["model", "benchmark", "item_id", "family", "target", "is_positive",
                "complexity", "text_key", "similarity"],
    )  # fmt: skip
    predictions = rank_sets(scores).with_columns(
        split=pl.when(pl.col("item_id").str.slice(1).cast(pl.Int64) < 20)
        .then(pl.lit("held_in"))
        .otherwise(pl.lit("held_out"))
    )
    pairs = set_metric_table(predictions, EvalSettings(resamples=50))
    pairs.write_parquet(tmp_path / "pairs.parquet")
    table, _ = retrieval_table(
        "m1", "coco_retrieval", ["1", "2", "3"], rng.normal(size=(3, 4)),
        ["a", "b", "c"], ["1", "2", "3"], rng.normal(size=(3, 4)),
        settings=EvalSettings(ks=(1, 2), resamples=50),
    )  # fmt: skip
    table.write_parquet(tmp_path / "retrieval.parquet")
    for run in ("a", "b"):
        plot_pair_accuracy(tmp_path / "pairs.parquet", tmp_path / f"p{run}.png",
                           tmp_path / f"p{run}.pdf")  # fmt: skip
        plot_retrieval(tmp_path / "retrieval.parquet", tmp_path / f"r{run}.png",
                       tmp_path / f"r{run}.pdf")  # fmt: skip
    for stem in ("p", "r"):
        for ext in ("png", "pdf"):
            first = (tmp_path / f"{stem}a.{ext}").read_bytes()
            assert first and first == (tmp_path / f"{stem}b.{ext}").read_bytes()
    figure = pair_accuracy_figure(pairs.filter(pl.col("metric") == "accuracy"))
    title = figure._suptitle.get_text()
    assert "world_pairs" in title and "m1, m2" in title and "held_in, held_out" in title
    figure = retrieval_figure(table.filter(pl.col("metric").str.contains("_R@")))
    title = figure._suptitle.get_text()
    assert "coco_retrieval" in title and "m1" in title and "split all" in title
