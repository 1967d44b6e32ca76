import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from vlcomp.evaluate.embed import embed_image_refs
from vlcomp.evaluate.images import EmbeddingCache, ImageRef, crop, crop_key, image_key
from vlcomp.evaluate.metrics import METRIC_SCHEMA, EvalSettings
from vlcomp.evaluate.retrieval_sets import (
    SET_METRIC_SCHEMA,
    attach_splits,
    rank_sets,
    set_metric_table,
    split_keys,
)
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model

SetEvalSettings = EvalSettings


def scores_frame(sets: dict[str, tuple[str, str, list[float]]], model: str = "m") -> pl.DataFrame:
    """item_id -> (family, target, [positive similarity, negative similarities...])."""
    rows = []
    for item, (family, target, sims) in sets.items():
        for j, sim in enumerate(sims):
            rows.append((model, "b", item, family, target, j == 0, None, f"{item}-{j}", sim))
    return pl.DataFrame(
        rows,
        schema=["model", "benchmark", "item_id", "family", "target", "is_positive", "complexity",
                "text_key", "similarity"],
        orient="row",
    )  # fmt: skip


SETS = {
    "i1": ("atom", "obj", [0.9, 0.1, 0.2, 0.3, 0.4]),  # rank 0
    "i2": ("atom", "obj", [0.5, 0.5, 0.1, 0.1, 0.1]),  # tie -> rank 1
    "i3": ("atom", "obj", [0.2, 0.9, 0.8, 0.7, 0.1]),  # rank 3
    "i4": ("comp", "att", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]),  # rank 6 (1 + 6)
}


def metric(table: pl.DataFrame, name: str, family: str = "all", model: str = "m", split="all"):
    cell = table.filter(
        (pl.col("model") == model) & (pl.col("metric") == name) & (pl.col("family") == family)
        & (pl.col("split") == split) & pl.col("complexity").is_null()
    )  # fmt: skip
    assert cell.height == 1, (name, family, model, split)
    return cell.row(0, named=True)


def test_ranks_count_ties_as_wrong():
    pred = rank_sets(scores_frame(SETS))
    assert pred["rank"].to_list() == [0, 1, 3, 6]
    assert pred["correct"].to_list() == [True, False, False, False]
    assert pred["n_candidates"].to_list() == [5, 5, 5, 7]
    assert pred["family"].to_list() == ["atom_obj"] * 3 + ["comp_att"]
    assert pred.filter(pl.col("item_id") == "i3")["neg_text_key"][0] == "i3-1"


def test_recall_mean_recall_micro_macro():
    table = set_metric_table(rank_sets(scores_frame(SETS)), SetEvalSettings(resamples=0))
    assert table.schema == pl.Schema(SET_METRIC_SCHEMA) == pl.Schema(METRIC_SCHEMA)
    assert table["part"].null_count() == table.height
    atom = {k: metric(table, f"R@{k}", "atom_obj")["value"] for k in (1, 3, 5)}
    assert atom == pytest.approx({1: 1 / 3, 3: 2 / 3, 5: 1.0})
    assert metric(table, "mean_R@K", "atom_obj")["value"] == pytest.approx((1 / 3 + 2 / 3 + 1) / 3)
    assert metric(table, "R@1_micro")["value"] == pytest.approx(0.25)
    assert metric(table, "R@5_micro")["value"] == pytest.approx(0.75)
    assert metric(table, "R@5_macro")["value"] == pytest.approx((1.0 + 0.0) / 2)
    assert metric(table, "R@1_micro")["n"] == 4
    assert metric(table, "R@1_micro")["ci_low"] is None


def test_chance_rows():
    table = set_metric_table(rank_sets(scores_frame(SETS)), SetEvalSettings(resamples=0))
    chance = {k: metric(table, f"R@{k}", "atom_obj", model="chance")["value"] for k in (1, 3, 5)}
    assert chance == pytest.approx({1: 1 / 5, 3: 3 / 5, 5: 1.0})
    comp = metric(table, "R@3", "comp_att", model="chance")["value"]
    assert comp == pytest.approx(3 / 7)
    micro = metric(table, "R@1_micro", model="chance")["value"]
    assert micro == pytest.approx((3 * (1 / 5) + 1 / 7) / 4)


def test_pairs_report_accuracy():
    pairs = {"a": ("swap", "att", [0.6, 0.5]), "b": ("swap", "att", [0.5, 0.5])}
    table = set_metric_table(rank_sets(scores_frame(pairs)), SetEvalSettings(resamples=0))
    assert metric(table, "accuracy", "swap_att")["value"] == 0.5
    assert metric(table, "accuracy", "swap_att", model="chance")["value"] == 0.5
    assert not table["metric"].str.starts_with("R@").any()


def test_bootstrap_ci_contains_estimate_and_is_seeded():
    rng = np.random.default_rng(0)
    sets = {
        f"i{i:03d}": ("atom", "obj", rng.normal(size=5).tolist()) for i in range(120)
    }  # fmt: skip
    pred = rank_sets(scores_frame(sets))
    settings = SetEvalSettings(resamples=400, seed=7)
    first = set_metric_table(pred, settings)
    assert first.equals(set_metric_table(pred, settings))
    assert not first.equals(set_metric_table(pred, SetEvalSettings(resamples=400, seed=8)))
    for row in first.filter(pl.col("model") == "m").iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row
    r1 = metric(first, "R@1", "atom_obj")
    assert r1["ci_high"] - r1["ci_low"] > 0.05
    chance = metric(first, "R@1", "atom_obj", model="chance")
    assert chance["ci_low"] == chance["ci_high"] == pytest.approx(0.2)


def test_splits_and_complexity():
    frame = scores_frame(SETS).with_columns(
        complexity=pl.when(pl.col("item_id").is_in(["i1", "i2"])).then(4).otherwise(5)
    )
    splits = pl.DataFrame({"item_id": ["i1", "i2", "i3"], "crepe_split": ["SC", "UC", None]})
    pred = attach_splits(rank_sets(frame), splits, "crepe_split")
    # i3 has no compound (a null crepe_split), i4 is not in the table at all
    assert pred["split"].to_list() == ["SC", "UC", "no_compound", "not_in_splits"]
    table = set_metric_table(pred, SetEvalSettings(resamples=0))
    assert set(table["split"]) == {"all", "SC", "UC", "no_compound", "not_in_splits"}
    loose = splits.rename({"crepe_split": "split_loose"})
    assert attach_splits(rank_sets(frame), loose, "split_loose")["split"][2] == "no_binding"
    assert attach_splits(rank_sets(frame), splits.rename({"crepe_split": "s"}), "s")[
        "split"
    ].to_list()[2:] == ["no_split", "not_in_splits"]
    at4 = table.filter(
        (pl.col("model") == "m") & (pl.col("complexity") == 4) & (pl.col("split") == "all")
        & (pl.col("metric") == "R@1_micro")
    )  # fmt: skip
    assert at4["value"].to_list() == [0.5] and at4["n"].to_list() == [2]


def test_splits_keyed_by_eval_item():
    pred = rank_sets(scores_frame({"e1/atom": SETS["i1"], "e1/comp": SETS["i4"]}))
    regions = pl.DataFrame({"item_id": ["e1/atom", "e1/comp"], "eval_item_id": ["e1", "e1"]})
    splits = pl.DataFrame({"item_id": ["e1"], "split": ["UC"]})
    assert attach_splits(pred, splits, key_of=split_keys(regions))["split"].to_list() == ["UC"] * 2
    assert attach_splits(pred, splits)["split"].to_list() == ["not_in_splits"] * 2


def test_items_without_negatives_are_an_error():
    frame = scores_frame({"i1": ("atom", "obj", [0.9])})
    with pytest.raises(ValueError, match="no negative"):
        rank_sets(frame)


def test_crop_keys_are_distinct_per_box():
    sha = "ab" * 32
    keys = {crop_key(sha, None), crop_key(sha, (0, 0, 8, 8)), crop_key(sha, (0, 0, 8, 9)),
            crop_key(sha, (1, 0, 8, 8))}  # fmt: skip
    assert len(keys) == 4
    assert crop_key(sha, None) == sha
    image = Image.new("RGB", (64, 64))
    assert crop(image, (60, 60, 10, 10)).size == (4, 4)
    with pytest.raises(ValueError):
        crop(image, (70, 0, 5, 5))


@pytest.fixture(scope="module")
def world_model(tmp_path_factory):
    import open_clip

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "ckpt.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), path)
    return load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=str(path)), device="cpu")


def test_crop_embeddings_are_cached_per_box(world_model, tmp_path):
    path = tmp_path / "scene.png"
    image = Image.new("RGB", (64, 64), (20, 20, 20))
    image.paste((250, 0, 0), (0, 0, 32, 32))
    image.paste((0, 0, 250), (32, 32, 64, 64))
    image.save(path)
    refs = [ImageRef(str(path)), ImageRef(str(path), (0, 0, 32, 32)),
            ImageRef(str(path), (32, 32, 32, 32)), ImageRef(str(path), (0, 0, 32, 32))]  # fmt: skip
    cache = EmbeddingCache(tmp_path / "cache", "image")
    vectors, computed = embed_image_refs(world_model, refs, cache=cache)
    assert computed == 3
    assert np.array_equal(vectors[1], vectors[3])
    assert not np.allclose(vectors[1], vectors[2])
    assert image_key(path) in cache
    again, computed = embed_image_refs(
        world_model, refs, cache=EmbeddingCache(tmp_path / "cache", "image")
    )
    assert computed == 0 and np.array_equal(vectors, again)


def test_figures_are_written_deterministically(tmp_path):
    from vlcomp.report.figures_crepe import (
        plot_complexity,
        plot_split_accuracy,
        plot_splits_by_type,
    )

    rng = np.random.default_rng(1)
    kinds = [("comp", "att"), ("atom", "obj")]
    sets = {f"i{i:03d}": (*kinds[i % 2], rng.normal(size=5).tolist()) for i in range(60)}
    frames = [scores_frame(sets, model) for model in ("m1", "m2")]
    frame = pl.concat(frames).with_columns(
        complexity=pl.col("item_id").str.slice(1).cast(pl.Int64) % 3 + 4
    )
    items = sorted(sets)
    splits = pl.DataFrame(
        {"item_id": items, "split": [["SC", "UC", "UA"][i % 3] for i in range(60)]}
    )
    table = set_metric_table(attach_splits(rank_sets(frame), splits), SetEvalSettings(resamples=50))
    table.write_parquet(tmp_path / "metrics.parquet")
    bs_table = table.with_columns(
        pl.col("split").replace({"SC": "seen", "UC": "mixed", "UA": "unseen"})
    )
    bs_table.write_parquet(tmp_path / "bs.parquet")
    for run in ("a", "b"):
        plot_splits_by_type(
            tmp_path / "metrics.parquet", tmp_path / f"f4{run}.png", tmp_path / f"f4{run}.pdf"
        )
        plot_complexity(
            tmp_path / "metrics.parquet", tmp_path / f"f5{run}.png", tmp_path / f"f5{run}.pdf"
        )
        plot_split_accuracy(
            tmp_path / "bs.parquet", tmp_path / f"b{run}.png", tmp_path / f"b{run}.pdf"
        )
    for stem in ("f4", "f5", "b"):
        for ext in ("png", "pdf"):
            first = (tmp_path / f"{stem}a.{ext}").read_bytes()
            assert first and first == (tmp_path / f"{stem}b.{ext}").read_bytes()


def test_pairs_through_the_set_path_match_a_direct_count():
    """A 1 + 1 pair is a retrieval set of two: its accuracy is the share of items whose
    positive scores strictly above the negative (a tie is wrong), per type, micro and macro."""
    rng = np.random.default_rng(5)
    kinds = [("swap", "att"), ("replace", "obj"), ("add", None)]
    sims = rng.integers(0, 4, size=(90, 2)) / 4  # coarse values: many ties
    pairs = {f"p{i:02d}": (*kinds[i % 3], sims[i].tolist()) for i in range(90)}
    table = set_metric_table(rank_sets(scores_frame(pairs)), SetEvalSettings(resamples=100))
    assert not table["metric"].str.starts_with("R@").any()
    direct = {}
    for family, target in kinds:
        name = family if target is None else f"{family}_{target}"
        rows = [i for i in range(90) if kinds[i % 3] == (family, target)]
        direct[name] = float(np.mean([sims[i, 0] > sims[i, 1] for i in rows]))
        assert metric(table, "accuracy", name)["value"] == pytest.approx(direct[name])
        assert metric(table, "accuracy", name, model="chance")["value"] == 0.5
    assert (sims[:, 0] == sims[:, 1]).sum() > 10
    micro = float(np.mean(sims[:, 0] > sims[:, 1]))
    assert metric(table, "accuracy_micro")["value"] == pytest.approx(micro)
    assert metric(table, "accuracy_macro")["value"] == pytest.approx(np.mean(list(direct.values())))
    row = metric(table, "accuracy_micro")
    assert row["n"] == 90 and row["ci_low"] < row["value"] < row["ci_high"]


def test_parts_are_ranked_and_reported_apart():
    one = scores_frame({"i1": SETS["i1"], "i2": SETS["i2"]}).with_columns(part=pl.lit("c1"))
    two = scores_frame({"i1": SETS["i3"], "i2": SETS["i2"]}).with_columns(part=pl.lit("c2"))
    pred = rank_sets(pl.concat([one, two]))
    assert pred.select("part", "item_id", "rank").rows() == [
        ("c1", "i1", 0), ("c1", "i2", 1), ("c2", "i1", 3), ("c2", "i2", 1)
    ]  # fmt: skip
    table = set_metric_table(pred, SetEvalSettings(resamples=0))
    r1 = table.filter(
        (pl.col("model") == "m") & (pl.col("metric") == "R@1_micro") & (pl.col("split") == "all")
    )  # fmt: skip
    assert dict(r1.select("part", "value").rows()) == {"c1": 0.5, "c2": 0.0}
