"""Mirrored training pairs (``train.mirror``): spatial words rewritten with the image, and
hard negative images that only where things are tells apart."""

import json
from pathlib import Path

import numpy as np
import open_clip
import polars as pl
import pytest
import torch
from PIL import Image

from vlcomp.contracts import CAPTIONS_SCHEMA
from vlcomp.negatives.lexicon import mirror_text, relation_axis
from vlcomp.train import Mirroring, TrainSettings, train_model_job

RGB = {"red": (220, 30, 30), "blue": (30, 30, 220)}


@pytest.mark.parametrize(
    ("text", "axis", "mirrored"),
    [
        ("a red circle to the left of a star", "horizontal", "a red circle to the right of a star"),
        ("Left of the cross, a square; right of it a star", "horizontal",
         "Right of the cross, a square; left of it a star"),
        ("leftover paint on the right side of the bowl", "horizontal",
         "leftover paint on the left side of the bowl"),
        ("a circle above a square", "vertical", "a circle below a square"),
        ("Beneath the star, a cat is over a mat", "vertical",
         "Above the star, a cat is under a mat"),
        ("a lamp on top of a desk, underneath a shelf", "vertical",
         "a lamp under a desk, above a shelf"),
        ("a circle above a square", "horizontal", "a circle above a square"),
        ("a circle left of a square", "vertical", "a circle left of a square"),
    ],
)  # fmt: skip
def test_mirror_text_rewrites_the_axis_spatial_words(text, axis, mirrored):
    assert mirror_text(text, axis) == mirrored


def test_horizontal_mirroring_is_its_own_inverse():
    text = "On the left of a red star there is a cube, and right of it a cross"
    assert mirror_text(mirror_text(text, "horizontal"), "horizontal") == text


@pytest.mark.parametrize(
    ("caption", "negative", "axis"),
    [
        ("a red circle left of a star", "a red circle right of a star", "horizontal"),
        ("To the right of a star, a circle", "To the left of a star, a circle", "horizontal"),
        ("a circle above a square", "a circle below a square", "vertical"),
        ("a star beneath a cross", "a star above a cross", "vertical"),
        ("a lamp on top of a desk", "a lamp under a desk", "vertical"),
        ("a red circle left of a star", "a blue circle left of a star", None),
        ("a red circle left of a star", "a blue circle right of a star", None),
        ("a red circle and a star", "a star and a red circle", None),
        ("a circle above a square", "a circle above a square", None),
    ],
)
def test_relation_axis_names_the_axis_a_negative_mirrors(caption, negative, axis):
    assert relation_axis(caption, negative) == axis


def two_squares(left: str, right: str, vertical: bool = False, size: int = 16) -> np.ndarray:
    """A ``left`` square left of (or, vertical, above) a ``right`` square."""
    image = np.full((size, size, 3), 255, dtype=np.uint8)
    first = (slice(2, 6), slice(2, 6))
    second = (slice(2, 6), slice(10, 14)) if not vertical else (slice(10, 14), slice(2, 6))
    image[first] = RGB[left]
    image[second] = RGB[right]
    return image


def centre(image: torch.Tensor, colour: str) -> tuple[float, float]:
    """(row, column) of the pixels of ``colour`` in a 3 x H x W tensor of 0-255 values."""
    mask = (image.permute(1, 2, 0) == torch.tensor(RGB[colour], dtype=image.dtype)).all(-1)
    rows, cols = mask.nonzero(as_tuple=True)
    return float(rows.float().mean()), float(cols.float().mean())


def test_a_mirrored_pair_stays_true_and_its_hard_image_makes_it_false():
    """Pixels and words move together: after mirroring, the rewritten caption states where
    the squares are; the hard negative image puts them the other way round."""
    tokenizer = open_clip.get_tokenizer("vlcomp-world-vit")
    texts = [
        "a red square left of a blue square",
        "a red square beneath a blue square",
        "a red square and a blue square",
    ]
    negatives = [
        ["a red square right of a blue square", "a blue square left of a blue square"],
        ["a red square above a blue square"],
        ["a blue square and a blue square"],
    ]
    mirroring = Mirroring(("horizontal", "vertical"), texts, negatives, tokenizer, seed=0)
    assert mirroring.hard_axis == ["horizontal", "vertical", None]
    assert mirroring.combos == [(), ("horizontal",), ("vertical",), ("horizontal", "vertical")]
    images = torch.from_numpy(
        np.stack([two_squares("red", "blue"), two_squares("blue", "red", vertical=True),
                  two_squares("red", "blue")])
    ).permute(0, 3, 1, 2).float()  # fmt: skip
    idx = torch.tensor([0, 1, 2])
    drawn = torch.tensor([1, 2, 3])  # horizontal, vertical, both
    mirrored = mirroring.images(images, drawn)
    assert torch.equal(mirrored[0], images[0].flip(-1))
    assert torch.equal(mirrored[1], images[1].flip(-2))
    assert torch.equal(mirrored[2], images[2].flip(-1).flip(-2))
    # the rewritten captions are true of the mirrored images ...
    tokens = mirroring.text_tokens[drawn, idx]
    assert torch.equal(tokens[0], tokenizer(["a red square right of a blue square"])[0])
    assert torch.equal(tokens[1], tokenizer(["a red square above a blue square"])[0])
    assert torch.equal(tokens[2], tokenizer([texts[2]])[0])
    assert centre(mirrored[0], "red")[1] > centre(mirrored[0], "blue")[1]  # "right of"
    assert centre(mirrored[1], "red")[0] < centre(mirrored[1], "blue")[0]  # "above"
    # ... and false of their hard negative images (the pair without a relation has none)
    hard = mirroring.hard_images(mirrored, idx)
    assert hard.shape[0] == 2
    assert centre(hard[0], "red")[1] < centre(hard[0], "blue")[1]
    assert centre(hard[1], "red")[0] > centre(hard[1], "blue")[0]
    # a relation negative along the mirrored axis becomes the caption itself: "above"
    # against "beneath" turns into "beneath" against "above" (mirroring the negative's
    # words would give "below", and "beneath" would never be a negative); others are
    # mirrored with their pair
    negative = {
        (combo, row): mirroring.negative_tokens[combo, row]
        for combo in range(4)
        for row in (0, 1, 2)
    }
    expected = {
        (0, 2): "a red square above a blue square",
        (2, 2): "a red square beneath a blue square",
        (3, 2): "a red square beneath a blue square",
        (1, 0): "a red square left of a blue square",
        (3, 0): "a red square left of a blue square",
        (1, 1): "a blue square right of a blue square",
        (2, 1): "a blue square left of a blue square",
    }
    for (combo, row), text in expected.items():
        assert torch.equal(negative[(combo, row)], tokenizer([text])[0]), (combo, row, text)


def test_mirror_setting_keeps_the_axis_order_and_defaults_to_none():
    base = {"epochs": 1, "batch_size": 8, "lr": 0.001, "weight_decay": 0.1,
            "warmup_steps": 1, "seed": 0, "threads": 1}  # fmt: skip
    assert TrainSettings.from_config(base).mirror == ()
    mirrored = TrainSettings.from_config({**base, "mirror": ["vertical", "horizontal"]})
    assert mirrored.mirror == ("horizontal", "vertical")


def spatial_corpus(tmp_path: Path) -> tuple[list[str], Path, Path]:
    """16 images of a red and a blue square side by side or stacked, captions that say so,
    and each caption's converse as its hard negative."""
    root = tmp_path / "corpus"
    (root / "images").mkdir(parents=True)
    rows, negatives = [], []
    for i in range(16):
        vertical = i % 2 == 1
        a, b = ("red", "blue") if i % 4 < 2 else ("blue", "red")
        Image.fromarray(two_squares(a, b, vertical)).save(root / "images" / f"{i}.png")
        relation, converse = ("above", "below") if vertical else ("left of", "right of")
        rows.append((f"c{i}", f"images/{i}.png", f"a {a} square {relation} a {b} square"))
        negatives.append((f"c{i}", f"a {a} square {converse} a {b} square"))
    shard = tmp_path / "captions-0-of-1.parquet"
    pl.DataFrame(
        {"caption_id": [r[0] for r in rows], "corpus": ["c"] * 16,
         "image_id": [r[1] for r in rows], "text": [r[2] for r in rows]},
        schema=CAPTIONS_SCHEMA,
    ).write_parquet(shard)  # fmt: skip
    table = tmp_path / "negatives.parquet"
    pl.DataFrame(
        {"caption_id": [n[0] for n in negatives], "family": ["replace"] * 16,
         "target": ["rel"] * 16, "negative": [n[1] for n in negatives]}
    ).write_parquet(table)  # fmt: skip
    return [str(shard)], root, table


def test_mirrored_training_is_reproducible_and_recorded(tmp_path):
    shards, root, table = spatial_corpus(tmp_path)
    train = {"corpus": "c", "epochs": 2, "batch_size": 8, "lr": 0.001, "weight_decay": 0.1,
             "warmup_steps": 1, "seed": 0, "threads": 1, "hard_negatives": "template"}  # fmt: skip
    checkpoints = {}
    for run, mirror in [("a", ["horizontal", "vertical"]), ("b", ["horizontal", "vertical"]),
                        ("plain", [])]:  # fmt: skip
        out = tmp_path / run
        paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
                 ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
        logged: list[str] = []
        entry = {"open_clip": "vlcomp-world-vit", "train": {**train, "mirror": mirror}}
        train_model_job(
            "m", entry, shards, str(root), **paths, log=logged.append, hard_negatives=str(table)
        )
        checkpoints[run] = Path(paths["checkpoint"]).read_bytes()
        info = json.loads(Path(paths["info"]).read_text())
        assert info["train"]["mirror"] == mirror
        if mirror:
            assert any(
                "mirroring pairs along horizontal, vertical; 16 of 16 pairs bring a hard "
                "negative image" in line
                for line in logged
            )
    assert checkpoints["a"] == checkpoints["b"]
    assert checkpoints["a"] != checkpoints["plain"]


def test_mirroring_without_hard_negatives_only_augments(tmp_path):
    shards, root, _ = spatial_corpus(tmp_path)
    train = {"corpus": "c", "epochs": 1, "batch_size": 8, "lr": 0.001, "weight_decay": 0.1,
             "warmup_steps": 1, "seed": 0, "threads": 1, "mirror": ["horizontal"]}  # fmt: skip
    out = tmp_path / "aug"
    paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
             ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
    logged: list[str] = []
    train_model_job("m", {"open_clip": "vlcomp-world-vit", "train": train}, shards, str(root),
                    **paths, log=logged.append)  # fmt: skip
    assert any("0 of 16 pairs bring a hard negative image" in line for line in logged)
    assert Path(paths["checkpoint"]).exists()
