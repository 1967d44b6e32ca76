"""Two-image (Winoground) and SugarCrepe++ evaluation: exact scores from hand-built
similarities (ties count as wrong), chance values, seeded intervals, and both jobs end to end
on a tiny random model with generated images (missing and broken images are excluded)."""

from itertools import permutations

import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from vlcomp.contracts import CANDIDATES_SCHEMA, TWO_IMAGE_SCHEMA
from vlcomp.evaluate.embed import embed_image_refs, embed_texts
from vlcomp.evaluate.images import EXCLUDED_SCHEMA, IMAGE_INDEX_SCHEMA, ImageRef
from vlcomp.evaluate.jobs import evaluate_sugarcrepe_pp_job, evaluate_two_image_job
from vlcomp.evaluate.metrics import METRIC_SCHEMA, EvalSettings
from vlcomp.evaluate.two_image import (
    SUGARCREPE_PP_CHANCE,
    SUGARCREPE_PP_PREDICTIONS_SCHEMA,
    TWO_IMAGE_PREDICTIONS_SCHEMA,
    WINOGROUND_CHANCE,
    itt_correct,
    sugarcrepe_pp_metric_table,
    sugarcrepe_pp_predictions,
    sugarcrepe_pp_triples,
    tot_correct,
    two_image_metric_table,
    two_image_predictions,
    winoground_correct,
)
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model
from vlcomp.vocabulary import TIE_POLICY

# similarity[i, j] = s(caption_i, image_j)
MATRICES = {
    "perfect": ([[0.9, 0.1], [0.2, 0.8]], (True, True, True)),
    "text_only": ([[0.5, 0.6], [0.4, 0.7]], (True, False, False)),
    "image_only": ([[0.5, 0.4], [0.6, 0.7]], (False, True, False)),
    "neither": ([[0.1, 0.9], [0.8, 0.2]], (False, False, False)),
    "all_tied": ([[0.5, 0.5], [0.5, 0.5]], (False, False, False)),
    "image_tie": ([[0.5, 0.5], [0.4, 0.6]], (True, False, False)),  # s00 == s01
    "text_tie": ([[0.5, 0.1], [0.5, 0.9]], (False, True, False)),  # s00 == s10
}


def test_winoground_scores_from_hand_built_matrices():
    similarity = np.array([m for m, _ in MATRICES.values()])
    text, image, group = winoground_correct(similarity)
    expected = np.array([e for _, e in MATRICES.values()])
    assert text.tolist() == expected[:, 0].tolist()
    assert image.tolist() == expected[:, 1].tolist()
    assert group.tolist() == expected[:, 2].tolist()
    with pytest.raises(ValueError, match="shape"):
        winoground_correct(np.zeros((2, 3, 2)))


def test_sugarcrepe_pp_scores_with_ties():
    # columns: s(I,P1), s(I,P2), s(I,N); the last two rows tie with the negative
    image = np.array([[0.9, 0.8, 0.7], [0.9, 0.4, 0.5], [0.5, 0.5, 0.5], [0.5, 0.6, 0.5]])
    assert itt_correct(*image.T).tolist() == [True, False, False, False]
    # columns: cos(P1,P2), cos(P1,N), cos(P2,N); rows 2 and 3 tie
    text = np.array([[0.9, 0.8, 0.1], [0.9, 0.9, 0.2], [0.7, 0.6, 0.7], [0.7, 0.8, 0.1]])
    assert tot_correct(*text.T).tolist() == [True, False, False, False]


def test_chance_values_are_exact_under_exchangeable_similarities():
    """Every strict ordering of the similarities is equally likely: count the winners."""
    orders = np.array(list(permutations(range(4))), dtype=np.float64).reshape(-1, 2, 2)
    text, image, group = winoground_correct(orders)
    assert text.mean() == WINOGROUND_CHANCE["text_score"] == 0.25
    assert image.mean() == WINOGROUND_CHANCE["image_score"] == 0.25
    assert group.mean() == pytest.approx(WINOGROUND_CHANCE["group_score"]) and group.sum() == 4
    triples = np.array(list(permutations(range(3))), dtype=np.float64)
    assert itt_correct(*triples.T).mean() == pytest.approx(SUGARCREPE_PP_CHANCE["itt_accuracy"])
    assert tot_correct(*triples.T).mean() == pytest.approx(SUGARCREPE_PP_CHANCE["tot_accuracy"])


def two_image_items(rows):
    """rows: (item_id, image_0, image_1, caption_0, caption_1, family, target)."""
    return pl.DataFrame(
        [("wino", *row, "imported:test", "") for row in rows],
        schema=TWO_IMAGE_SCHEMA,
        orient="row",
    )


def test_two_image_predictions_and_metric_table():
    names = list(MATRICES)
    families = [("swap", "obj"), ("swap", "rel")] * 3 + [(None, None)]
    items = two_image_items([(f"i{k}", "a", "b", "x", "y", *fam) for k, fam in enumerate(families)])
    similarity = np.array([MATRICES[n][0] for n in names])
    predictions = two_image_predictions("m", items, similarity)
    assert predictions.schema == pl.Schema(TWO_IMAGE_PREDICTIONS_SCHEMA)
    assert predictions["family"].to_list()[:3] == ["swap_obj", "swap_rel", "swap_obj"]
    assert predictions["family"][6] == "unlabelled" and set(predictions["split"]) == {"all"}
    assert predictions["part"].null_count() == 7
    assert predictions.select("sim_c0_i1", "sim_c1_i0").row(1) == (0.6, 0.4)
    assert predictions["group_correct"].to_list() == [e[2] for _, e in MATRICES.values()]

    settings = EvalSettings(resamples=200, seed=3)
    metrics = two_image_metric_table(predictions, settings)
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert set(metrics["tie_policy"]) == {TIE_POLICY}
    assert metrics["complexity"].null_count() == metrics.height
    value = {(r["model"], r["family"], r["metric"]): r for r in metrics.iter_rows(named=True)}
    # text correct: perfect, text_only, image_tie = 3 of 7; per family: swap_obj items
    # 0, 2, 4 (perfect, image_only, all_tied) -> 1/3; swap_rel 1, 3, 5 (text_only, neither,
    # image_tie) -> 2/3; unlabelled 6 (text_tie) -> 0
    assert value["m", "all", "text_score_micro"]["value"] == pytest.approx(3 / 7)
    assert value["m", "swap_obj", "text_score"]["value"] == pytest.approx(1 / 3)
    assert value["m", "swap_rel", "text_score"]["value"] == pytest.approx(2 / 3)
    assert value["m", "unlabelled", "image_score"]["value"] == 1.0  # a text tie: image ok
    assert value["m", "unlabelled", "text_score"]["value"] == 0.0
    assert value["m", "all", "text_score_macro"]["value"] == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)
    assert value["m", "all", "group_score_micro"]["value"] == pytest.approx(1 / 7)
    assert value["m", "all", "group_score_micro"]["n"] == 7
    for metric, chance in WINOGROUND_CHANCE.items():
        for suffix in ("_micro", "_macro"):
            row = value["chance", "all", metric + suffix]
            assert row["value"] == pytest.approx(chance) and row["ci_low"] == row["ci_high"]
        assert value["chance", "swap_obj", metric]["value"] == pytest.approx(chance)
    for row in metrics.filter(pl.col("model") == "m").iter_rows(named=True):
        assert row["ci_low"] <= row["value"] + 1e-12 <= row["ci_high"] + 2e-12
    # seeded: the same seed gives the same table, another seed other intervals
    assert two_image_metric_table(predictions, settings).equals(metrics)
    other = two_image_metric_table(predictions, EvalSettings(resamples=200, seed=4))
    assert other["value"].to_list() == metrics["value"].to_list()
    assert other["ci_low"].to_list() != metrics["ci_low"].to_list()
    no_ci = two_image_metric_table(predictions, EvalSettings(resamples=0))
    assert no_ci["ci_low"].null_count() == no_ci.height


def sc_candidates(items, benchmark="scpp"):
    """item_id -> (image, p1, p2, [(negative, family, target), ...])."""
    rows = []
    for item, (image, p1, p2, negatives) in items.items():
        rows += [(benchmark, item, image, p1, True, "swap", "att", "imported:t", ""),
                 (benchmark, item, image, p2, True, "swap", "att", "imported:t", "")]  # fmt: skip
        rows += [(benchmark, item, image, neg, False, fam, tgt, "imported:t", "")
                 for neg, fam, tgt in negatives]  # fmt: skip
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA, orient="row")


def test_sugarcrepe_pp_triples_predictions_and_metrics():
    frame = sc_candidates({
        "b": ("1", "p1b", "p2b", [("nb", "replace", "obj")]),
        "a": ("0", "p1a", "p2a", [("na", "swap", "att"), ("na2", "replace", None)]),
    })  # fmt: skip
    triples = sugarcrepe_pp_triples(frame)
    assert triples.rows() == [
        ("scpp", "a", "0", "replace", "p1a", "p2a", "na2"),
        ("scpp", "a", "0", "swap_att", "p1a", "p2a", "na"),
        ("scpp", "b", "1", "replace_obj", "p1b", "p2b", "nb"),
    ]
    image_sims = np.array([[0.9, 0.8, 0.1], [0.5, 0.4, 0.4], [0.3, 0.6, 0.2]])
    text_sims = np.array([[0.9, 0.1, 0.2], [0.8, 0.8, 0.1], [0.2, 0.5, 0.1]])
    predictions = sugarcrepe_pp_predictions("m", triples, image_sims, text_sims)
    assert predictions.schema == pl.Schema(SUGARCREPE_PP_PREDICTIONS_SCHEMA)
    assert predictions["itt_correct"].to_list() == [True, False, True]
    assert predictions["tot_correct"].to_list() == [True, False, False]
    metrics = sugarcrepe_pp_metric_table(predictions, EvalSettings(resamples=50))
    value = {
        (r["model"], r["family"], r["metric"]): r["value"] for r in metrics.iter_rows(named=True)
    }
    assert value["m", "all", "itt_accuracy_micro"] == pytest.approx(2 / 3)
    assert value["m", "all", "tot_accuracy_macro"] == pytest.approx(1 / 3)
    assert value["chance", "all", "itt_accuracy_micro"] == pytest.approx(1 / 3)
    assert value["chance", "replace_obj", "tot_accuracy"] == pytest.approx(1 / 3)

    bad = {
        "one positive": frame.filter(~((pl.col("item_id") == "b") & (pl.col("text") == "p2b"))),
        "more than one negative": pl.concat([frame, frame.filter(pl.col("text") == "nb")]),
        "no negative": frame.filter(pl.col("text") != "nb"),
    }
    with pytest.raises(ValueError, match="exactly two positives"):
        sugarcrepe_pp_triples(bad["one positive"])
    with pytest.raises(ValueError, match="more than one negative"):
        sugarcrepe_pp_triples(bad["more than one negative"])
    with pytest.raises(ValueError, match="with no negative, e.g. 'b'"):
        sugarcrepe_pp_triples(bad["no negative"])


# --------------------------------------------------------------------------- jobs end to end

COLOURS = {"red": (220, 30, 30), "green": (30, 180, 60), "blue": (40, 60, 220),
           "yellow": (230, 210, 30)}  # fmt: skip
SETTINGS = {"device": "cpu", "threads": 1, "batch_size": 3, "bootstrap_resamples": 50,
            "bootstrap_seed": 0}  # fmt: skip
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


def test_two_image_job_end_to_end(data, checkpoint):
    folder, index_path = data
    names = list(COLOURS)
    pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)]
    rows = [(f"w{k}", str(a), str(b), f"a {names[a]} square", f"a {names[b]} square",
             ["swap", "replace"][k % 2], "att") for k, (a, b) in enumerate(pairs)]  # fmt: skip
    rows += [("x_missing", "0", "4", "a red square", "a blue square", "swap", "att"),
             ("x_both", "4", "6", "a red square", "a blue square", "swap", "att"),
             ("x_broken", "5", "1", "a red square", "a green square", "swap", "att")]  # fmt: skip
    items = folder / "two_image.parquet"
    two_image_items(rows).write_parquet(items)
    out = {k: str(folder / f"{k}.parquet") for k in ("predictions", "metrics", "excluded")}
    lines: list[str] = []
    evaluate_two_image_job("w", MODEL, checkpoint, SETTINGS, str(items), index_path,
                           str(folder / "cache"), out["predictions"], out["metrics"],
                           out["excluded"], lines.append)  # fmt: skip
    predictions = pl.read_parquet(out["predictions"])
    metrics = pl.read_parquet(out["metrics"])
    excluded = pl.read_parquet(out["excluded"])
    assert predictions.schema == pl.Schema(TWO_IMAGE_PREDICTIONS_SCHEMA)
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert excluded.schema == pl.Schema(EXCLUDED_SCHEMA)
    assert excluded.select("item_id", "image_id", "status").rows() == [
        ("x_both", "4", "missing"), ("x_broken", "5", "unreadable"),
        ("x_missing", "4", "missing"),
    ]  # fmt: skip
    assert excluded.filter(pl.col("item_id") == "x_both")["detail"][0].endswith(
        "image_1 '6' is missing too"
    )
    assert any("excluded 3 of 9 items" in line for line in lines)
    assert predictions["item_id"].to_list() == [f"w{k}" for k in range(6)]
    assert set(predictions["family"]) == {"swap_att", "replace_att"}

    # the similarities are the model's cosine similarities, and the scores follow from them
    loaded = load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=checkpoint), device="cpu")
    first = predictions.row(0, named=True)
    images, _ = embed_image_refs(
        loaded, [ImageRef(str(folder / "pics" / f"{n}.png")) for n in ("red", "green")]
    )
    texts, _ = embed_texts(loaded, ["a red square", "a green square"])
    direct = texts @ images.T
    assert [first[f"sim_c{i}_i{j}"] for i in (0, 1) for j in (0, 1)] == pytest.approx(
        direct.ravel().tolist(), abs=1e-5
    )
    sims = predictions.select("sim_c0_i0", "sim_c0_i1", "sim_c1_i0", "sim_c1_i1").to_numpy()
    text, image, group = winoground_correct(sims.reshape(-1, 2, 2))
    assert predictions["group_correct"].to_list() == group.tolist()
    micro = metrics.filter((pl.col("model") == "w") & (pl.col("family") == "all"))
    micro = dict(micro.select("metric", "value").rows())
    assert micro["text_score_micro"] == pytest.approx(text.mean())
    assert micro["image_score_micro"] == pytest.approx(image.mean())
    assert micro["group_score_micro"] == pytest.approx(group.mean())
    chance = metrics.filter(pl.col("model") == "chance")
    assert dict(chance.filter(pl.col("family") == "all").select("metric", "value").rows()) == {
        "text_score_micro": 0.25, "text_score_macro": 0.25, "image_score_micro": 0.25,
        "image_score_macro": 0.25, "group_score_micro": pytest.approx(1 / 6),
        "group_score_macro": pytest.approx(1 / 6),
    }  # fmt: skip
    # a rerun takes every embedding from the cache and writes the same table
    again = str(folder / "again.parquet")
    evaluate_two_image_job("w", MODEL, checkpoint, SETTINGS, str(items), index_path,
                           str(folder / "cache"), str(folder / "p2.parquet"), again,
                           str(folder / "e2.parquet"), lines.append)  # fmt: skip
    assert pl.read_parquet(again).equals(metrics)
    # 7 items reach the model: 5 images (x_broken's fails to decode) and the 4 distinct
    # captions of the other 6 items
    assert any("embedded 0/5 images or crops and 0/4 texts" in line for line in lines)


def test_two_image_job_stops_when_no_image_is_usable(data, checkpoint):
    folder, index_path = data
    items = folder / "bad.parquet"
    two_image_items([("m", "0", "4", "a", "b", "swap", None),
                     ("u", "6", "1", "a", "b", "swap", None)]).write_parquet(items)  # fmt: skip
    with pytest.raises(ValueError, match="none of the 2 items has a usable image"):
        evaluate_two_image_job("w", MODEL, checkpoint, SETTINGS, str(items), index_path,
                               str(folder / "cache"), *(str(folder / k) for k in "pme"),
                               log=lambda line: None)  # fmt: skip


def test_sugarcrepe_pp_job_end_to_end(data, checkpoint):
    folder, index_path = data
    items = {
        f"s{i}": (str(i), f"a {c} square", f"a square that is {c}",
                  [(f"a {d} square", "replace", "att")])
        for i, (c, d) in enumerate(
            [("red", "green"), ("green", "blue"), ("blue", "yellow"), ("yellow", "red")]
        )
    }  # fmt: skip
    items["s0"][3].append(("a red circle", "replace", "obj"))
    items["m4"] = ("4", "a blue square", "a square that is blue", [("a red square", "swap", "att")])
    items["b5"] = ("5", "a red square", "a square that is red", [("a blue square", "swap", "att")])
    candidates = folder / "scpp.parquet"
    sc_candidates(items).write_parquet(candidates)
    boxes = folder / "boxes.parquet"
    pl.DataFrame({"item_id": ["s0", "s1"], "x": [0, None], "y": [0, None],
                  "width": [32, None], "height": [32, None]}).write_parquet(boxes)  # fmt: skip
    out = [str(folder / f"{k}.parquet") for k in ("pred", "met", "exc")]
    lines: list[str] = []
    evaluate_sugarcrepe_pp_job("w", MODEL, checkpoint, SETTINGS, str(candidates), str(boxes),
                               index_path, str(folder / "cache"), *out, lines.append)  # fmt: skip
    predictions, metrics, excluded = (pl.read_parquet(p) for p in out)
    assert predictions.schema == pl.Schema(SUGARCREPE_PP_PREDICTIONS_SCHEMA)
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert excluded.select("item_id", "status").rows() == [("b5", "unreadable"),
                                                           ("m4", "missing")]  # fmt: skip
    assert any("excluded 2 of 6 items" in line for line in lines)
    assert predictions.select("item_id", "family").rows() == [
        ("s0", "replace_att"), ("s0", "replace_obj"), ("s1", "replace_att"),
        ("s2", "replace_att"), ("s3", "replace_att"),
    ]  # fmt: skip
    # the two triples of s0 share the image crop, P1 and P2
    s0 = predictions.filter(pl.col("item_id") == "s0")
    assert s0["sim_i_p1"].n_unique() == 1 and s0["cos_p1_p2"].n_unique() == 1
    loaded = load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=checkpoint), device="cpu")
    crop, _ = embed_image_refs(loaded, [ImageRef(str(folder / "pics/red.png"), (0, 0, 32, 32))])
    texts, _ = embed_texts(loaded, ["a red square", "a square that is red", "a green square"])
    row = s0.row(0, named=True)
    assert [row["sim_i_p1"], row["sim_i_p2"], row["sim_i_n"]] == pytest.approx(
        (texts @ crop[0]).tolist(), abs=1e-5
    )
    assert row["cos_p1_p2"] == pytest.approx(float(texts[0] @ texts[1]), abs=1e-5)
    itt = itt_correct(*predictions.select("sim_i_p1", "sim_i_p2", "sim_i_n").to_numpy().T)
    tot = tot_correct(*predictions.select("cos_p1_p2", "cos_p1_n", "cos_p2_n").to_numpy().T)
    value = dict(
        metrics.filter((pl.col("model") == "w") & (pl.col("family") == "all"))
        .select("metric", "value")
        .rows()
    )
    assert value["itt_accuracy_micro"] == pytest.approx(itt.mean())
    assert value["tot_accuracy_micro"] == pytest.approx(tot.mean())
    assert metrics.filter(pl.col("model") == "chance")["value"].to_list() == pytest.approx(
        [1 / 3] * metrics.filter(pl.col("model") == "chance").height
    )
