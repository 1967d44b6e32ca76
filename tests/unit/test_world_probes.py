"""Linear probes (vlcomp.world.checks.probes) on synthetic features whose answer is known."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vlcomp.world.checks.probes import (
    RELATIONS,
    ProbeSettings,
    binding_items,
    binding_queries,
    changed_words,
    fit_probe,
    pairwise_text_probe,
    relation_items,
    relation_queries,
    scene_interval,
)

COLOURS = ["red", "green", "blue", "yellow"]
SHAPES = ["circle", "square", "star"]
SETTINGS = ProbeSettings(pca_dims=16, resamples=200, seed=0)


def scenes_table(rows):
    return pl.DataFrame(
        rows,
        schema=["image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h"],
        orient="row",
    )


def test_relation_items_name_unique_objects_and_their_relation():
    scenes = scenes_table(
        [
            (1, 0, "circle", "red", "small", 0, 20, 10, 10),  # left of the square
            (1, 1, "square", "blue", "small", 40, 22, 10, 10),
            (2, 0, "star", "green", "small", 20, 0, 10, 10),  # above the other star...
            (2, 1, "star", "green", "small", 20, 40, 10, 10),  # ...a duplicate: not nameable
            (2, 2, "circle", "red", "small", 50, 45, 10, 10),
        ]
    )
    items = relation_items(scenes)
    assert items.rows() == [
        (1, "red", "circle", "blue", "square", "left of"),
        (1, "blue", "square", "red", "circle", "right of"),
    ]


def test_binding_items_ask_with_the_scene_s_own_other_shape():
    scenes = scenes_table(
        [
            (1, 0, "circle", "red", "small", 0, 0, 10, 10),
            (1, 1, "square", "blue", "small", 40, 0, 10, 10),
            (2, 0, "star", "green", "small", 0, 0, 10, 10),  # only one shape: no question
        ]
    )
    assert binding_items(scenes).rows() == [
        (1, "red", "circle", "yes"),
        (1, "red", "square", "no"),
        (1, "blue", "square", "yes"),
        (1, "blue", "circle", "no"),
    ]


def test_bad_scenes_table_names_the_problem():
    with pytest.raises(ValueError, match="probe scenes: not a world scenes table"):
        relation_items(pl.DataFrame({"image_id": [1]}), "probe scenes")
    bad = scenes_table([(7, 0, "circle", "red", "small", 0, 0, 0, 0)])
    with pytest.raises(ValueError, match="image 7, object 0: box width 0"):
        binding_items(bad)


def synthetic_relations(n: int, rng: np.random.Generator, informative: bool):
    """Relation items with random names; features carry the relation (one-hot plus noise)
    when ``informative``, else noise only."""
    items = pl.DataFrame(
        {
            "image_id": np.arange(n) // 2,
            "s_colour": rng.choice(COLOURS, n),
            "s_shape": rng.choice(SHAPES, n),
            "o_colour": rng.choice(COLOURS, n),
            "o_shape": rng.choice(SHAPES, n),
            "label": rng.choice(RELATIONS, n),
        }
    )
    features = rng.normal(size=(n, 12))
    if informative:
        for k, relation in enumerate(RELATIONS):
            features[:, k] += 3.0 * (items["label"] == relation).to_numpy()
    return items, features


@pytest.mark.parametrize("informative", [True, False])
def test_relation_probe_reads_a_linear_code_and_nothing_else(informative):
    rng = np.random.default_rng(0)
    train, train_x = synthetic_relations(800, rng, informative)
    test, test_x = synthetic_relations(400, rng, informative)
    args = (
        train_x,
        relation_queries(train, COLOURS, SHAPES),
        train["label"].to_list(),
        test_x,
        relation_queries(test, COLOURS, SHAPES),
        test["label"].to_list(),
        test["image_id"].to_numpy(),
        SETTINGS,
    )
    result = fit_probe(*args, ("synthetic", str(informative)))
    shuffled = fit_probe(*args, ("synthetic", str(informative), "shuffled"), shuffle=True)
    assert result.n_train == 800 and result.n_test == 400
    assert 0.25 <= result.chance < 0.35  # the most frequent of four balanced labels
    assert result.ci_low <= result.accuracy <= result.ci_high
    if informative:
        assert result.accuracy > 0.9
    else:
        assert result.accuracy < result.chance + 0.1
    assert shuffled.accuracy < shuffled.chance + 0.1


def test_binding_probe_needs_the_conjunction():
    """The question "is the <colour> object the <shape>": features say which colour sits
    with which shape (a one-hot of the scene's true pairs); the probe reads it, the query
    alone cannot."""
    rng = np.random.default_rng(1)
    rows, features = [], []
    pairs = [(c, s) for c in COLOURS for s in SHAPES]
    for scene in range(600):
        (c1, s1), (c2, s2) = (pairs[k] for k in rng.choice(len(pairs), 2, replace=False))
        if c1 == c2 or s1 == s2:
            continue
        code = np.zeros(len(pairs))
        code[pairs.index((c1, s1))] = code[pairs.index((c2, s2))] = 1.0
        for colour, shape, label in ((c1, s1, "yes"), (c1, s2, "no")):
            rows.append((scene, colour, shape, label))
            features.append(code + 0.1 * rng.normal(size=len(pairs)))
    items = pl.DataFrame(rows, schema=["image_id", "colour", "shape", "label"], orient="row")
    x, q = np.array(features), binding_queries(items, COLOURS, SHAPES)
    y, groups = items["label"].to_list(), items["image_id"].to_numpy()
    half = len(y) // 2
    settings = ProbeSettings(pca_dims=len(pairs), resamples=200)
    with_image = fit_probe(
        x[:half],
        q[:half],
        y[:half],
        x[half:],
        q[half:],
        y[half:],
        groups[half:],
        settings,
        ("binding",),
    )
    query_only = fit_probe(
        None,
        q[:half],
        y[:half],
        None,
        q[half:],
        y[half:],
        groups[half:],
        settings,
        ("binding", "query"),
    )
    assert with_image.accuracy > 0.9
    assert query_only.accuracy < 0.65


def test_fit_probe_refuses_a_single_label():
    q = np.eye(3)
    with pytest.raises(ValueError, match="single label"):
        fit_probe(None, q, ["a"] * 3, None, q, ["a"] * 3, np.arange(3), SETTINGS, ("x",))


def test_pairwise_text_probe_separates_only_texts_that_differ():
    rng = np.random.default_rng(2)
    words = ["above", "below", "left", "right"]
    n = 300
    pos_w, neg_w = rng.choice(words, n), rng.choice(words, n)
    neg_w = np.where(pos_w == neg_w, np.roll(words, 1)[[words.index(w) for w in pos_w]], neg_w)

    def embed(w):
        return np.eye(4)[[words.index(x) for x in w]] * 2 + 0.3 * rng.normal(size=(len(w), 4))

    fp, fn = embed(pos_w), embed(neg_w)
    groups = np.arange(n)
    tr, te = slice(0, 200), slice(200, n)
    args = (fp[te], fn[te], list(pos_w[te]), list(neg_w[te]), groups[te], SETTINGS, ("t",))
    order_aware = pairwise_text_probe(
        np.vstack([fp[tr], fn[tr]]), list(pos_w[tr]) + list(neg_w[tr]), *args
    )
    assert order_aware.accuracy > 0.95 and order_aware.chance == 0.5
    # A bag of words: the caption and its negative embed identically (ties count as wrong).
    same = fp.copy()
    blind = pairwise_text_probe(
        np.vstack([same[tr], same[tr]]),
        list(pos_w[tr]) + list(neg_w[tr]),
        same[te],
        same[te],
        list(pos_w[te]),
        list(neg_w[te]),
        groups[te],
        SETTINGS,
        ("b",),
    )
    assert blind.accuracy <= 0.5


def test_changed_words():
    assert changed_words("a red circle above a star.", "a red circle below a star.") == (
        "above",
        "below",
    )
    assert changed_words("Two blue stars", "two blue stars") is None


def test_scene_interval_resamples_whole_scenes():
    correct = np.array([1, 1, 0, 0, 1, 0], dtype=float)
    groups = np.array([1, 1, 2, 2, 3, 3])
    low, high = scene_interval(correct, groups, 500, 0.95, np.random.default_rng(0))
    assert low <= correct.mean() <= high
    assert np.isnan(scene_interval(correct, groups, 0, 0.95, np.random.default_rng(0))[0])


def test_probes_job_end_to_end_on_rendered_scenes(tmp_path):
    """A random-init tower on a few rendered scenes: every probe runs and is written."""
    import json

    import open_clip
    import torch

    from vlcomp.models import loading  # noqa: F401  (registers world configs)
    from vlcomp.world.checks.probes import image_features, probes_job
    from vlcomp.world.render import write_png
    from vlcomp.world.scenes import Scene, SceneObject

    rng = np.random.default_rng(3)
    tables = {}
    for split, first in (("train", 1), ("test", 1000)):
        folder = tmp_path / split
        folder.mkdir()
        rows = []
        for image_id in range(first, first + 30):
            (c1, c2), (s1, s2) = rng.choice(COLOURS, 2, False), rng.choice(SHAPES, 2, False)
            a, b = rng.integers(2, 20, 2), rng.integers(36, 50, 2)
            if image_id % 2:  # left / right, else above / below
                a[1] = b[1] = 20
            objects = (SceneObject(s1, c1, "large", *a, 12), SceneObject(s2, c2, "large", *b, 12))
            write_png(Scene(objects), 64, folder / f"{image_id}.png")
            for k, o in enumerate(objects):
                rows.append((image_id, k, o.shape, o.colour, "large", o.x, o.y, 12, 12))
        tables[split] = tmp_path / f"{split}.parquet"
        scenes_table(rows).write_parquet(tables[split])
    pairs = []
    for k in range(24):
        image = str(1000 + k)
        pairs += [(f"{k}/rel", image, "a red circle above a star", True, "replace", "rel"),
                  (f"{k}/rel", image, "a red circle below a star", False, "replace", "rel"),
                  (f"{k}/swap", image, f"a red circle and a blue {SHAPES[k % 3]}", True,
                   "swap", "att"),
                  (f"{k}/swap", image, f"a blue circle and a red {SHAPES[k % 3]}", False,
                   "swap", "att")]  # fmt: skip
    candidates = tmp_path / "candidates.parquet"
    pl.DataFrame(
        pairs, schema=["item_id", "image", "text", "is_positive", "family", "target"],
        orient="row",
    ).write_parquet(candidates)  # fmt: skip
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"vocab": {"colours": COLOURS, "shapes": SHAPES}}))
    model, _, preprocess = open_clip.create_model_and_transforms("vlcomp-world-rn")
    checkpoint = tmp_path / "model.pt"
    torch.save(model.state_dict(), checkpoint)
    out, report = tmp_path / "probes.parquet", tmp_path / "probes.md"
    probes_job(
        {"m": {"open_clip": "vlcomp-world-rn"}}, {"m": str(checkpoint)},
        str(tables["train"]), str(tmp_path / "train"), str(tables["test"]),
        str(tmp_path / "test"), str(candidates), str(manifest),
        {"bootstrap_resamples": 50, "pca_dims": 8}, str(out), str(report), log=lambda m: None,
    )  # fmt: skip
    table = pl.read_parquet(out)
    assert table.filter(pl.col("metric") == "accuracy").height == 12
    assert set(table["probe"]) == {"relation", "binding", "text_replace_rel", "text_swap_att"}
    assert table.filter(pl.col("metric") == "accuracy")["value"].is_between(0, 1).all()
    assert "| m | relation | map |" in report.read_text()
    # The pre-pool map is the ResNet's last 2 x 2 map (512 channels at width 16).
    features = image_features(model, preprocess, [str(tmp_path / "test" / "1000.png")])
    assert features["pooled"].shape == (1, 64) and features["map"].shape == (1, 512 * 2 * 2)
    vit, _, vit_pre = open_clip.create_model_and_transforms("vlcomp-world-vit8")
    vit_features = image_features(vit.eval(), vit_pre, [str(tmp_path / "test" / "1000.png")])
    assert vit_features["map"].shape == (1, 65 * 128)  # class token + 8 x 8 patches
