"""World grammar reader, ground-truth oracles and false-negative rates."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vlcomp.evaluate.metrics import EvalSettings
from vlcomp.world import SceneSampler, alt_text_caption, clean_caption, parse_world_config
from vlcomp.world.captions import eval_captions
from vlcomp.world.checks.grammar import RelationReading, Unreadable, WorldVocab, read_caption
from vlcomp.world.checks.oracle_evaluation import oracle_tables, score_part, wilson
from vlcomp.world.checks.oracles import (
    APART,
    OracleScene,
    bag_of_words_score,
    holds,
    objects_only_score,
    truth_score,
    visible,
)
from vlcomp.world.scenes import SceneObject, relations_apart
from vlcomp.world.vocab import DEFAULT_WORLD_CONFIG, SURFACE_TO_PREDICATE

VOCAB = WorldVocab.from_config(DEFAULT_WORLD_CONFIG)


def graph(text: str):
    r = read_caption(text, VOCAB)
    nodes = [(n.shape, n.count, n.attributes, n.negated) for n in r.nodes]
    rels = [(x.subj, x.pred, x.obj, x.negated) for x in r.relations]
    return nodes, rels


# Scene (64 px): a large red circle top left, a small blue square top right, a small blue
# circle bottom left (below the red circle).
RED_CIRCLE = SceneObject("circle", "red", "large", 2, 2, 20)
BLUE_SQUARE = SceneObject("square", "blue", "small", 45, 5, 11)
BLUE_CIRCLE = SceneObject("circle", "blue", "small", 6, 45, 11)
SCENE = OracleScene((RED_CIRCLE, BLUE_SQUARE, BLUE_CIRCLE))


# ------------------------------------------------------------------------------- reader


@pytest.mark.parametrize("surface", sorted(SURFACE_TO_PREDICATE))
def test_every_relation_phrase(surface):
    nodes, rels = graph(f"a red circle is {surface} a blue square")
    assert [n[0] for n in nodes] == ["circle", "square"]
    assert rels == [(0, SURFACE_TO_PREDICATE[surface], 1, False)]


@pytest.mark.parametrize(
    ("text", "rels"),
    [
        ("Above the blue square there is a red circle.", [(1, "above", 0, False)]),
        ("a blue square with a red circle above it", [(1, "above", 0, False)]),
        ("two blue squares have a red circle beneath them", [(1, "below", 0, False)]),
        ("a red circle sits left of a blue square", [(0, "left of", 1, False)]),
        ("there is a red circle under a blue square", [(0, "below", 1, False)]),
        (
            "A red circle is above a blue square and to the right of a green star.",
            [(0, "above", 1, False), (0, "right of", 2, False)],
        ),
        (
            "a star. Left of the red circle there is also a blue square",
            [(2, "left of", 1, False)],
        ),
    ],
)
def test_clean_word_orders(text, rels):
    assert graph(text)[1] == rels


def test_plurals_counts_and_alt_text_frames():
    nodes, rels = graph(
        "Vector Illustration Of 2 Red Circles Left Of Three Blue Squares Icon 123456"
    )
    assert nodes == [("circle", 2, ("red",), ()), ("square", 3, ("blue",), ())]
    assert rels == [(0, "left of", 1, False)]
    nodes, _ = graph("a picture of two large orange hexagons, a star and one purple heart.")
    assert nodes == [
        ("hexagon", 2, ("large", "orange"), ()),
        ("star", 1, (), ()),
        ("heart", 1, ("purple",), ()),
    ]
    assert graph("red circle & blue square / star - stock photo")[0][2][0] == "star"


def test_template_references_and_negation():
    nodes, rels = graph(
        "a circle above another circle and the first circle that is not left of a not red star"
    )
    assert nodes == [("circle", 1, (), ()), ("circle", 1, (), ()), ("star", 1, (), ("red",))]
    assert rels == [(0, "above", 1, False), (0, "left of", 2, True)]
    nodes, rels = graph(
        "a hexagon left of a purple hexagon and the hexagon below the purple hexagon"
    )
    assert len(nodes) == 2 and rels[1] == (0, "below", 1, False)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("two large orange purples and a star", "unknown word"),
        ("a yellow purple left of a star", "noun phrase without an object word"),
        ("two square circles", "count and noun disagree"),
        ("a circle above", "relation without an object"),
        ("a drawing of", "no object word"),
        ("a circle and another circle and the circle", "ambiguous reference"),
        ("a star left of the second star", "unresolved reference"),
        ("a star above it", "pronoun without an antecedent"),
        ("a star and above a circle", "relation without a subject"),
    ],
)
def test_unreadable_reasons(text, reason):
    with pytest.raises(Unreadable) as caught:
        read_caption(text, VOCAB)
    assert caught.value.reason == reason


def test_reader_matches_the_world_graphs_of_both_styles():
    spec = parse_world_config(DEFAULT_WORLD_CONFIG)
    sampler = SceneSampler(spec)
    rng = np.random.default_rng(7)
    allowed = frozenset(spec.relations)
    for _ in range(150):
        scene = sampler.sample(rng)
        captions = [
            clean_caption(scene, rng, allowed),
            alt_text_caption(scene, rng, allowed),
            *eval_captions(scene, rng, allowed, 2),
        ]
        for cap in captions:
            reading = read_caption(cap.text, VOCAB)
            assert [n.shape for n in reading.nodes] == [lem for _, _, lem in cap.objects]
            mine = sorted((k, a) for k, n in enumerate(reading.nodes) for a in n.attributes)
            assert mine == sorted(cap.attributes), cap.text
            assert sorted((r.subj, r.pred, r.obj) for r in reading.relations) == sorted(
                cap.relations
            ), cap.text
            # self-check: every caption of a scene holds in it
            assert truth_score(reading, OracleScene(scene.objects)) == 1.0, cap.text


# ------------------------------------------------------------------------------- oracles


def scores(text: str, scene: OracleScene = SCENE) -> tuple[float, float, float]:
    r = read_caption(text, VOCAB)
    return truth_score(r, scene), bag_of_words_score(r, scene), objects_only_score(r, scene)


def test_binding_is_what_only_truth_sees():
    assert scores("a red circle and a blue square") == (1.0, 1.0, 1.0)
    truth, bow, objects = scores("a blue circle and a red square")  # attributes swapped
    assert truth < 1.0 and bow == 1.0 and objects == 1.0
    truth, bow, _ = scores("a large blue circle")  # large and blue, on different circles
    assert truth < 1.0 and bow == 1.0


def test_relations_and_counts():
    assert scores("a blue circle below a red circle")[0] == 1.0
    truth, bow, _ = scores("a blue circle above a red circle")
    assert truth < 1.0 and bow == 1.0  # "above" holds for another pair
    assert scores("two circles")[0] == 1.0
    assert scores("two circles left of a square")[0] < 1.0  # the blue one is below it
    assert scores("three circles")[0] < 1.0
    assert scores("a blue circle that is not above the red circle")[0] == 1.0
    assert scores("a not red circle below a blue square")[0] == 1.0
    assert scores("a not blue circle below a blue square")[0] < 1.0
    assert scores("a red circle and another red circle")[0] < 1.0


def test_objects():
    truth, bow, objects = scores("a red star")
    assert truth < 1.0 and bow == 0.5 and objects == 0.0
    assert scores("a red circle and a star")[2] == 0.5


def test_crop_keeps_overlapping_objects():
    crop = visible(SCENE.objects, (0, 0, 30, 30))
    assert [o.shape for o in crop.objects] == ["circle"]
    assert not holds(read_caption("a blue square", VOCAB), crop)
    assert holds(read_caption("a blue square", VOCAB), visible(SCENE.objects, (40, 0, 8, 8)))


def test_relation_reading_holds_by_member_pairs():
    r = read_caption("two circles left of a blue square", VOCAB)
    assert r.relations == (RelationReading(0, "left of", 1),)
    square = SceneObject("square", "blue", "small", 45, 25, 11)
    left = [SceneObject("circle", c, "small", 5, y, 11) for c, y in (("red", 20), ("green", 30))]
    assert holds(r, OracleScene((*left, square)))
    below = SceneObject("circle", "red", "small", 45, 50, 11)
    assert holds(r, OracleScene((left[0], below, square, left[1])))  # two of three will do
    assert not holds(r, OracleScene((left[0], below, square)))


def test_the_second_reading_of_the_spatial_words():
    # the blue square (45..56, 5..16) is right of the red circle (2..22, 2..22), its top
    # higher: dominant axis "right of" only; apart only along x (the y extents overlap)
    assert SCENE.relations(1, 0) == {"right of"}
    apart = OracleScene(SCENE.objects, APART)
    assert apart.relations(1, 0) == {"right of"}
    diagonal = SceneObject("square", "blue", "small", 30, 30, 11)  # right of and below it
    assert relations_apart(diagonal, RED_CIRCLE) == {"right of", "below"}
    assert OracleScene((RED_CIRCLE, diagonal)).relations(1, 0) == {"below"}  # dy > dx
    r = read_caption("a blue square right of a red circle", VOCAB)
    assert not holds(r, OracleScene((RED_CIRCLE, diagonal)))
    assert holds(r, OracleScene((RED_CIRCLE, diagonal), APART))
    overlapping = SceneObject("square", "blue", "small", 15, 24, 11)  # extents overlap in x
    assert relations_apart(overlapping, RED_CIRCLE) == {"below"}


# ------------------------------------------------------------------------ false negatives


def candidates(rows):
    return pl.DataFrame(
        rows,
        schema=["benchmark", "item_id", "image", "text", "is_positive", "family", "target",
                "generator"],
        orient="row",
    )  # fmt: skip


def test_planted_false_negative_is_counted_and_tied():
    scenes = {"1": list(SCENE.objects)}
    frame = candidates([
        ("b", "i1", "1", "a red circle above a blue circle", True, "replace", "rel", "t"),
        ("b", "i1", "1", "a red circle below a blue circle", False, "replace", "rel", "t"),
        ("b", "i2", "1", "a red circle left of a blue square", True, "replace", "rel", "t"),
        # planted: true of the scene (the blue circle is below the red one)
        ("b", "i2", "1", "a blue circle below a red circle", False, "replace", "rel", "t"),
        ("b", "i3", "1", "a red circle and a blue square", True, "swap", "att", "t"),
        ("b", "i3", "1", "a blue circle and a red square", False, "swap", "att", "t"),
        # an unreadable negative: its item forms no set, its other negative is checked
        ("b", "i4", "1", "a red circle and a blue square", True, "swap", "att", "t"),
        ("b", "i4", "1", "a purples", False, "swap", "att", "t"),
        ("b", "i4", "1", "a blue square and a red circle", False, "swap", "att", "t"),
    ])  # fmt: skip
    part = score_part(frame, scenes, VOCAB)
    assert part.unreadable["reason"].to_list() == ["unknown word"]
    metrics, predictions, fn = oracle_tables([(None, part)], EvalSettings(resamples=20))
    rel = fn.filter(pl.col("family") == "replace_rel").row(0, named=True)
    assert (rel["n_negatives"], rel["n_true"], rel["false_negative_rate"]) == (2, 1, 0.5)
    assert rel["ci_low"] < 0.5 < rel["ci_high"]
    assert rel["bag_of_words_accuracy"] == 0.0  # both relation words are in the scene
    # apart, the red circle is also left of the blue circle: no extra negative holds, and
    # no positive becomes false (each pair is apart along its dominant axis)
    assert (rel["n_true_apart"], rel["n_positives"], rel["n_positives_false_apart"]) == (1, 2, 0)
    att = fn.filter(pl.col("family") == "swap_att").row(0, named=True)
    assert (att["n_negatives"], att["n_true"], att["n_unreadable"]) == (2, 1, 1)
    assert (att["n_sets"], att["truth_accuracy"], att["bag_of_words_accuracy"]) == (1, 1.0, 0.0)
    # the swap changes no word: its word prior is a guess
    assert att["word_prior_accuracy"] == 0.5 and 0.0 <= rel["word_prior_accuracy"] <= 1.0
    truth = predictions.filter(pl.col("model") == "oracle:truth").sort("item_id")
    assert truth["correct"].to_list() == [True, False, True]  # the tie counts as wrong
    assert truth["tied"].to_list() == [False, True, False]
    row = metrics.filter(
        (pl.col("model") == "oracle:truth") & (pl.col("metric") == "accuracy_micro")
    ).row(0, named=True)
    assert row["value"] == pytest.approx(2 / 3) and row["n_tied"] == 1
    assert {"chance", "oracle:bag_of_words", "oracle:objects_only"} <= set(metrics["model"])


def test_summary_shows_oracles_beside_models(tmp_path):
    from vlcomp.io import write_parquet
    from vlcomp.report.figures_crepe import metrics_markdown

    frame = candidates([
        ("b", "i1", "1", "a red circle above a blue circle", True, "replace", "rel", "t"),
        ("b", "i1", "1", "a blue circle above a red circle", False, "replace", "rel", "t"),
    ])  # fmt: skip
    part = score_part(frame, {"1": list(SCENE.objects)}, VOCAB)
    metrics, _, fn = oracle_tables([(None, part)], EvalSettings(resamples=0))
    model = metrics.with_columns(model=pl.col("model").str.replace("oracle:", "model_"))
    paths = {name: tmp_path / f"{name}.parquet" for name in ("b", "oracles", "fn")}
    for name, table in (("b", model), ("oracles", metrics), ("fn", fn)):
        write_parquet(table, paths[name])
    out = tmp_path / "summary.md"
    oracles = {"b": {"metrics": paths["oracles"], "false_negatives": paths["fn"]}}
    metrics_markdown([paths["b"]], out, oracles=oracles)
    text = out.read_text()
    assert "| model_truth |" in text and "| oracle:truth |" in text
    assert "| t | replace_rel | 0/1 | 0.000 |" in text


def test_job_fails_on_a_rejected_or_unreadable_positive(tmp_path):
    from vlcomp.io import write_parquet
    from vlcomp.world.checks.oracle_evaluation import oracle_job

    scenes = pl.DataFrame(
        [(1, k, o.shape, o.colour, o.size, o.x, o.y, o.side, o.side)
         for k, o in enumerate(SCENE.objects)],
        schema=["image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h"],
        orient="row",
    )  # fmt: skip
    write_parquet(scenes, tmp_path / "scenes.parquet")
    outs = [str(tmp_path / f"{n}.parquet") for n in ("m", "fn", "u")]
    for positive, message in (("a red square", "rejects 1 positive"), ("a purples", "read")):
        frame = candidates([
            ("b", "i1", "1", positive, True, "replace", "obj", "t"),
            ("b", "i1", "1", "a green star", False, "replace", "obj", "t"),
        ])  # fmt: skip
        write_parquet(frame, tmp_path / "c.parquet")
        parts = [{"candidates": str(tmp_path / "c.parquet"), "boxes": None, "label": None}]
        with pytest.raises(ValueError, match=message):
            oracle_job(parts, str(tmp_path / "scenes.parquet"), DEFAULT_WORLD_CONFIG, {}, *outs)


def test_wilson():
    low, high = wilson(0, 100)
    assert low == 0.0 and 0.03 < high < 0.04
    assert wilson(7, 7)[1] == 1.0
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
