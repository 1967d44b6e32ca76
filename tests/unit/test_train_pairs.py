"""Training reads a corpus's ingested caption shards: image ids resolved to files, the rest
rejected with a reason; the training job writes reproducible outputs."""

import json
from pathlib import Path

import polars as pl
import pytest
from PIL import Image

from vlcomp.contracts import CAPTIONS_SCHEMA
from vlcomp.train import train_model_job, training_pairs

COLOURS = ["red", "green", "blue", "yellow"]
RGB = {
    "red": (220, 30, 30),
    "green": (30, 200, 30),
    "blue": (30, 30, 220),
    "yellow": (230, 220, 20),
}


def write_png(path: Path, colour: str, size: int = 16) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), RGB[colour]).save(path)
    return path


def write_shard(path: Path, rows: list[tuple[str, str | None, str]], corpus: str = "c") -> str:
    frame = pl.DataFrame(
        {
            "caption_id": [r[0] for r in rows],
            "corpus": [corpus] * len(rows),
            "image_id": [r[1] for r in rows],
            "text": [r[2] for r in rows],
        },
        schema=CAPTIONS_SCHEMA,
    )
    frame.write_parquet(path)
    return str(path)


def truncated_png(path: Path) -> Path:
    """A PNG whose header PIL reads but whose pixel data is cut off."""
    write_png(path, "red", size=64)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def test_image_ids_resolve_or_are_rejected_with_a_reason(tmp_path):
    root = tmp_path / "corpus"
    write_png(root / "images" / "a.png", "red")
    write_png(root / "b.jpg", "green")
    absolute = write_png(tmp_path / "elsewhere" / "c.png", "blue")
    (root / "images" / "bad.png").write_bytes(b"<html>not an image</html>")
    shard = write_shard(
        tmp_path / "captions-0-of-1.parquet",
        [
            ("c0", "images/a.png", "a red square"),  # relative to the images folder
            ("c1", "b", "a green square"),  # no extension: b.jpg
            ("c2", str(absolute), "a blue square"),  # absolute: used as is
            ("c3", "https://example.org/x.jpg", "a url"),
            ("c4", None, "text only"),
            ("c5", "images/gone.png", "missing"),
            ("c6", "images/bad.png", "not an image"),
            ("c7", "images/a.png", "the red square again"),
            ("c8", str(tmp_path / "elsewhere" / "nope.png"), "absolute but missing"),
            ("c9", "images/a", "extensionless in a subfolder"),
        ],
    )
    pairs, rejected = training_pairs([shard], root)
    assert pairs.columns == ["caption_id", "image", "text"]
    assert pairs["caption_id"].to_list() == ["c0", "c1", "c2", "c7", "c9"]
    assert pairs["image"].to_list() == [
        str(root / "images" / "a.png"),
        str(root / "b.jpg"),
        str(absolute),
        str(root / "images" / "a.png"),
        str(root / "images" / "a.png"),
    ]
    assert pairs["text"][1] == "a green square"
    assert rejected.columns == ["caption_id", "image_id", "reason"]
    assert rejected.rows() == [
        ("c3", "https://example.org/x.jpg", "url not downloaded"),
        ("c4", None, "no image id"),
        ("c5", "images/gone.png", "image missing"),
        ("c6", "images/bad.png", "image unreadable"),
        ("c8", str(tmp_path / "elsewhere" / "nope.png"), "image missing"),
    ]


def test_shard_order_is_kept_and_no_images_folder(tmp_path):
    absolute = write_png(tmp_path / "x.png", "red")
    first = write_shard(tmp_path / "s1.parquet", [("b1", str(absolute), "one")])
    second = write_shard(
        tmp_path / "s0.parquet", [("a1", str(absolute), "two"), ("a2", "rel.png", "three")]
    )
    pairs, rejected = training_pairs([first, second], None)
    assert pairs["caption_id"].to_list() == ["b1", "a1"]
    assert rejected.rows() == [("a2", "rel.png", "no images folder")]
    pairs, _ = training_pairs([second, first], None)
    assert pairs["caption_id"].to_list() == ["a1", "b1"]


def test_empty_and_malformed_shards(tmp_path):
    pairs, rejected = training_pairs([], tmp_path)
    assert pairs.height == 0 and rejected.height == 0
    assert pairs.schema == {"caption_id": pl.String, "image": pl.String, "text": pl.String}
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"caption_id": ["x"], "text": ["t"]}).write_parquet(bad)
    with pytest.raises(ValueError, match="bad.parquet: not a captions table"):
        training_pairs([bad], tmp_path)


MODEL_ENTRY = {
    "open_clip": "vlcomp-world-vit",
    "train": {
        "corpus": "c",
        "epochs": 1,
        "batch_size": 8,
        "lr": 0.001,
        "weight_decay": 0.1,
        "warmup_steps": 1,
        "seed": 0,
        "threads": 1,
    },
}


def corpus_with_problems(tmp_path: Path) -> tuple[list[str], Path]:
    """16 trainable captions over 2 shards, plus a URL, a missing file, a file that is not an
    image and a truncated PNG (header fine, decoding fails: caught while loading)."""
    root = tmp_path / "corpus"
    rows = []
    for i in range(16):
        colour = COLOURS[i % 4]
        write_png(root / "images" / f"{i}.png", colour)
        rows.append((f"c{i}", f"images/{i}.png", f"a {colour} square number {i}"))
    (root / "images" / "junk.png").write_bytes(b"junk")
    truncated_png(root / "images" / "cut.png")
    rows += [
        ("u", "http://example.org/u.jpg", "a url"),
        ("m", "images/missing.png", "a missing image"),
        ("j", "images/junk.png", "not an image"),
        ("t", "images/cut.png", "a truncated image"),
    ]
    shards = [
        write_shard(tmp_path / "captions-0-of-2.parquet", rows[:10]),
        write_shard(tmp_path / "captions-1-of-2.parquet", rows[10:]),
    ]
    return shards, root


def run_job(shards: list[str], root: Path, out: Path) -> dict[str, Path]:
    paths = {
        name: out / file
        for name, file in [
            ("checkpoint", "checkpoint.pt"),
            ("history", "history.parquet"),
            ("info", "info.json"),
            ("rejected_out", "rejected.parquet"),
        ]
    }
    train_model_job(
        "tiny",
        MODEL_ENTRY,
        shards,
        str(root),
        **{name: str(path) for name, path in paths.items()},
        log=lambda message: None,
    )
    return paths


def test_train_model_job_end_to_end_is_reproducible(tmp_path):
    shards, root = corpus_with_problems(tmp_path)
    pairs, rejected = training_pairs(shards, root)
    # The truncated PNG passes the header check; it is caught when decoded for training.
    assert pairs.height == 17 and rejected.height == 3

    first = run_job(shards, root, tmp_path / "run1")
    for path in first.values():
        assert path.is_file()
    info = json.loads(first["info"].read_text())
    assert info["arch"] == "vlcomp-world-vit"
    assert info["n_pairs"] == 16
    assert info["n_rejected"] == 4
    assert info["rejected_reasons"] == {
        "image missing": 1,
        "image unreadable": 2,
        "url not downloaded": 1,
    }
    assert info["train"] == MODEL_ENTRY["train"]
    assert set(info) >= {"final_loss", "checkpoint_sha256", "versions"}
    history = pl.read_parquet(first["history"])
    assert history["epoch"].to_list() == [1] and history["steps"].to_list() == [2]
    rejected_table = pl.read_parquet(first["rejected_out"])
    assert rejected_table.rows() == [
        ("u", "http://example.org/u.jpg", "url not downloaded"),
        ("m", "images/missing.png", "image missing"),
        ("j", "images/junk.png", "image unreadable"),
        ("t", "images/cut.png", "image unreadable"),
    ]

    second = run_job(shards, root, tmp_path / "run2")
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_train_model_job_without_usable_pairs_names_the_shards(tmp_path):
    shard = write_shard(
        tmp_path / "captions-0-of-1.parquet",
        [("a", "https://example.org/a.jpg", "x"), ("b", None, "y")],
    )
    with pytest.raises(ValueError, match=r"no usable \(image, caption\) pair.*captions-0-of-1"):
        run_job([shard], tmp_path, tmp_path / "out")
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


def test_negclip_loss_is_clip_loss_without_negatives_and_rises_with_close_ones():
    import open_clip
    import torch

    from vlcomp.train import negclip_loss

    torch.manual_seed(0)
    images = torch.nn.functional.normalize(torch.randn(6, 8), dim=1)
    texts = torch.nn.functional.normalize(images + 0.3 * torch.randn(6, 8), dim=1)
    scale = torch.tensor(10.0)
    clip = open_clip.ClipLoss()(images, texts, scale)
    assert negclip_loss(images, texts, texts[:0], scale) == pytest.approx(float(clip))
    # A hard negative as close to the image as its caption makes the image side harder.
    close = torch.nn.functional.normalize(images + 0.3 * torch.randn(6, 8), dim=1)
    assert float(negclip_loss(images, texts, close, scale)) > float(clip) + 0.1


def test_negclip_training_reads_the_negatives_table_and_is_reproducible(tmp_path):
    shards, root = corpus_with_problems(tmp_path)
    negatives = tmp_path / "negatives.parquet"
    pl.DataFrame(
        {
            "caption_id": ["c0", "c0", "c1", "zz"],
            "family": ["replace"] * 4,
            "target": ["att"] * 4,
            "negative": ["a blue square number 0", "a red circle number 0", "a red square", "x"],
        }
    ).write_parquet(negatives)
    entry = {**MODEL_ENTRY, "train": {**MODEL_ENTRY["train"], "hard_negatives": "template"}}
    logs: list[str] = []
    outputs = []
    for run in ("a", "b"):
        out = tmp_path / run
        paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
                 ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
        train_model_job(
            "tiny", entry, shards, str(root), **paths, log=logs.append,
            hard_negatives=str(negatives),
        )  # fmt: skip
        outputs.append(Path(paths["checkpoint"]).read_bytes())
    assert outputs[0] == outputs[1]
    assert any("3 hard negatives" in m and "for 2 of 17 pairs" in m for m in logs)
    plain = tmp_path / "plain"
    run_job(shards, root, plain)
    assert (plain / "checkpoint.pt").read_bytes() != outputs[0]
    with pytest.raises(ValueError, match="hard_negatives is 'template' but no negatives table"):
        train_model_job("tiny", entry, shards, str(root), **paths, log=logs.append)


def test_fine_tuning_starts_from_the_given_checkpoint(tmp_path):
    shards, root = corpus_with_problems(tmp_path)
    base = run_job(shards, root, tmp_path / "base")
    entry = {**MODEL_ENTRY, "train": {**MODEL_ENTRY["train"], "lr": 1e-12, "warmup_steps": 1}}
    out = tmp_path / "tuned"
    paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
             ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
    train_model_job(
        "tuned", entry, shards, str(root), **paths, log=lambda m: None,
        start_from=str(base["checkpoint"]),
    )  # fmt: skip
    import torch

    before = torch.load(base["checkpoint"], weights_only=True)
    after = torch.load(paths["checkpoint"], weights_only=True)
    # A vanishing learning rate leaves the starting weights (not a fresh initialisation).
    for name, tensor in before.items():
        assert torch.allclose(tensor, after[name], atol=1e-6), name
    info = json.loads(Path(paths["info"]).read_text())
    assert info["start_from"] == json.loads(base["info"].read_text())["checkpoint_sha256"]


def test_bad_negatives_table_and_start_checkpoint_name_the_file(tmp_path):
    shards, root = corpus_with_problems(tmp_path)
    out = tmp_path / "out"
    paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
             ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
    table = tmp_path / "negatives.parquet"
    pl.DataFrame({"caption_id": ["c0"], "text": ["x"]}).write_parquet(table)
    entry = {**MODEL_ENTRY, "train": {**MODEL_ENTRY["train"], "hard_negatives": "template"}}
    with pytest.raises(ValueError, match=r"negatives.parquet: not a training negatives table"):
        train_model_job("m", entry, shards, str(root), **paths, hard_negatives=str(table))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"junk.pt: not a checkpoint of vlcomp-world-vit"):
        train_model_job("m", MODEL_ENTRY, shards, str(root), **paths, start_from=str(junk))
    assert not out.exists() or not any(out.iterdir())  # nothing half-written


def test_pick_negatives_draws_per_pair_without_replacement():
    import numpy as np

    from vlcomp.train import pick_negatives

    rows = [[0, 1, 2], [], [3], [4, 5, 6, 7]]
    one = pick_negatives(rows, 1, np.random.default_rng(0))
    assert len(one) == 3 and one[0] in rows[0] and one[1] == 3 and one[2] in rows[3]
    assert pick_negatives(rows, 0, np.random.default_rng(0)) == [0, 1, 2, 3, 4, 5, 6, 7]
    two = pick_negatives(rows, 2, np.random.default_rng(0))
    assert len(two) == 5 and two[2] == 3
    assert set(two[:2]) <= set(rows[0]) and len(set(two[:2])) == 2
    assert set(two[3:]) <= set(rows[3]) and len(set(two[3:])) == 2
    again = pick_negatives(rows, 2, np.random.default_rng(0))
    assert again == two


def test_all_negatives_per_pair_train_differently_and_reproducibly(tmp_path):
    shards, root = corpus_with_problems(tmp_path)
    negatives = tmp_path / "negatives.parquet"
    pl.DataFrame(
        {
            "caption_id": ["c0", "c0", "c1"],
            "family": ["replace", "swap", "replace"],
            "target": ["att", "att", "rel"],
            "negative": ["a blue square number 0", "a red circle number 0", "a red square"],
        }
    ).write_parquet(negatives)
    outputs = {}
    for per_pair in (1, 0, 0):
        train = {**MODEL_ENTRY["train"], "hard_negatives": "template"}
        if per_pair != 1:
            train["negatives_per_pair"] = per_pair
        out = tmp_path / f"run{len(outputs)}"
        paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
                 ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
        train_model_job(
            "tiny", {**MODEL_ENTRY, "train": train}, shards, str(root), **paths,
            log=lambda message: None, hard_negatives=str(negatives),
        )  # fmt: skip
        outputs[len(outputs)] = Path(paths["checkpoint"]).read_bytes()
    assert outputs[1] == outputs[2]
    assert outputs[0] != outputs[1]


def test_grid_pool_architecture_trains_reproducibly_and_loads(tmp_path):
    """vlcomp-world-rn-grid (a GridPool in place of the attention pool) trains through the
    same job, byte-identically twice, and its checkpoint loads through the common loader."""
    from vlcomp.models.catalogue import ModelSpec
    from vlcomp.models.loading import load_model
    from vlcomp.models.towers import GridPool

    shards, root = corpus_with_problems(tmp_path)
    entry = {**MODEL_ENTRY, "open_clip": "vlcomp-world-rn-grid"}
    checkpoints = []
    for run in ("a", "b"):
        out = tmp_path / run
        paths = {n: str(out / f) for n, f in [("checkpoint", "c.pt"), ("history", "h.parquet"),
                 ("info", "i.json"), ("rejected_out", "r.parquet")]}  # fmt: skip
        train_model_job("grid", entry, shards, str(root), **paths, log=lambda message: None)
        checkpoints.append(Path(paths["checkpoint"]))
    assert checkpoints[0].read_bytes() == checkpoints[1].read_bytes()
    loaded = load_model(
        ModelSpec("grid", "vlcomp-world-rn-grid", checkpoint=str(checkpoints[0])), device="cpu"
    )
    assert isinstance(loaded.model.visual.attnpool, GridPool)
