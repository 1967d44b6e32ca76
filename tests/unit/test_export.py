"""Exports of generated benchmarks: SugarCrepe JSON and Winoground JSONL with a manifest,
loaded back by our importers with the same texts, types and images."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from PIL import Image

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA
from vlcomp.evaluate.images import crop, open_rgb, read_image_index
from vlcomp.export import (
    MANIFEST,
    crepe_manifest_job,
    export_benchmark_job,
    verify_manifest,
)
from vlcomp.export.manifest import atomic_dir, generator_info, safe_stem
from vlcomp.importers.jobs import import_benchmark_job
from vlcomp.importers.sugarcrepe import SUGARCREPE_TYPES, read_sugarcrepe_file
from vlcomp.io import write_parquet
from vlcomp.negatives.pairs import pair_boxes, template_pairs
from vlcomp.splits.items import image_index_job

CONFIG = {"eval_set": "toy", "seed": 7, "generator": "template:graph-edit"}


# ------------------------------------------------------------------------- fixtures


def item(
    item_id: str,
    image_id: str,
    text: str,
    objects: list[str],
    attributes: list[tuple[int, str]] = (),  # type: ignore[assignment]
    relations: list[tuple[int, str, int]] = (),  # type: ignore[assignment]
    box: tuple[int, int, int, int] | None = None,
) -> dict[str, Any]:
    x, y, w, h = box if box is not None else (None, None, None, None)
    return {
        "item_id": item_id,
        "source": "coco" if box is None else "vg_regions",
        "image_id": image_id,
        "region_id": None if box is None else item_id,
        "text": text,
        "x": x,
        "y": y,
        "width": w,
        "height": h,
        "objects": [{"idx": i, "name": o, "lemma": o} for i, o in enumerate(objects)],
        "attributes": [{"obj": o, "value": v} for o, v in attributes],
        "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in relations],
    }


EVAL_ITEMS = [
    item(
        "c1",
        "street",
        "A red car is parked to the left of a blue truck.",
        ["car", "truck"],
        [(0, "red"), (1, "blue")],
        [(0, "left of", 1)],
    ),
    item(
        "c2",
        "street",
        "A man in a white shirt stands behind the red car.",
        ["man", "shirt", "car"],
        [(1, "white"), (2, "red")],
        [(0, "behind", 2)],
    ),
    item(
        "r1",
        "park",
        "a black dog on the green grass",
        ["dog", "grass"],
        [(0, "black"), (1, "green")],
        [(0, "on", 1)],
        box=(2, 3, 20, 16),
    ),
    item(
        "r2",
        "park",
        "a brown horse in front of a tree",
        ["horse", "tree"],
        [(0, "brown")],
        [(0, "in front of", 1)],
        box=(10, 5, 30, 20),
    ),
    item(
        "m1",
        "gone",  # no file: the export leaves its items out
        "a small cat right of a yellow chair",
        ["cat", "chair"],
        [(0, "small"), (1, "yellow")],
        [(0, "right of", 1)],
    ),
]


def noise(seed: int, size: tuple[int, int] = (64, 48)) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


@pytest.fixture()
def eval_set(tmp_path: Path) -> dict[str, Path]:
    """A generated pair benchmark on a tiny eval set: a PNG image (whole-image items), a
    JPEG image (region items) and an image id without a file."""
    images = tmp_path / "images"
    images.mkdir()
    noise(1).save(images / "street.png")
    noise(2).save(images / "park.jpg", quality=90)
    items = pl.DataFrame(EVAL_ITEMS, schema=EVAL_ITEMS_SCHEMA)
    paths = {
        "items": tmp_path / "items.parquet",
        "candidates": tmp_path / "candidates.parquet",
        "boxes": tmp_path / "boxes.parquet",
        "index": tmp_path / "images.parquet",
        "images": images,
    }
    write_parquet(items, paths["items"])
    candidates, _failures = template_pairs(items, 7, "toy_pairs")
    write_parquet(candidates, paths["candidates"])
    write_parquet(pair_boxes(candidates, items), paths["boxes"])
    image_index_job(
        "coco_captions",
        {"images": str(images)},
        [str(paths["items"])],
        str(paths["index"]),
        log=lambda m: None,
    )
    return paths


def export(paths: dict[str, Path], out: Path, **kw: Any) -> dict:
    return export_benchmark_job(
        "sugarcrepe",
        "toy_pairs",
        str(paths["candidates"]),
        str(paths["boxes"]),
        str(paths["index"]),
        CONFIG,
        str(out),
        log=lambda m: None,
        **kw,
    )


def pixels(image: Image.Image) -> str:
    return hashlib.sha256(f"{image.size}".encode() + image.tobytes()).hexdigest()


def sha(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def expected_pairs(paths: dict[str, Path]) -> tuple[Counter, Counter]:
    """(type, positive, negative, pixels of the image or region) of every pair whose image
    exists, and (type, positive, negative, file sha256) of the whole-image ones."""
    candidates = pl.read_parquet(paths["candidates"])
    boxes = {
        r["item_id"]: (None if r["x"] is None else (r["x"], r["y"], r["width"], r["height"]))
        for r in pl.read_parquet(paths["boxes"]).iter_rows(named=True)
    }
    index = read_image_index(paths["index"])
    seen, whole = Counter(), Counter()
    for (item_id,), rows in candidates.group_by(["item_id"], maintain_order=True):
        image = rows["image"][0]
        if index[image].status != "ok":
            continue
        kind = f"{rows['family'][0]}_{rows['target'][0]}"
        positive = rows.filter(pl.col("is_positive"))["text"][0]
        path = index[image].path
        for negative in rows.filter(~pl.col("is_positive"))["text"]:
            seen[(kind, positive, negative, pixels(crop(open_rgb(path), boxes[item_id])))] += 1
            if boxes[item_id] is None:
                whole[(kind, positive, negative, sha(path))] += 1
    return seen, whole


def imported_pairs(out: Path, tmp: Path) -> tuple[Counter, Counter, dict]:
    """Load an export with the import job and the image index, as a user would."""
    back = {k: tmp / f"back_{k}.parquet" for k in ("candidates", "boxes", "rejected", "index")}
    summary = import_benchmark_job(
        "sugarcrepe",
        {"files": [str(out)]},
        "toy_back",
        str(back["candidates"]),
        str(back["boxes"]),
        str(back["rejected"]),
        log=lambda m: None,
    )
    image_index_job(
        "sugarcrepe",
        {"images": str(out / "val2017")},
        [str(back["candidates"])],
        str(back["index"]),
        log=lambda m: None,
    )
    index = read_image_index(back["index"])
    candidates = pl.read_parquet(back["candidates"])
    seen, files = Counter(), Counter()
    for (_item,), rows in candidates.group_by(["item_id"], maintain_order=True):
        kind = f"{rows['family'][0]}_{rows['target'][0]}"
        positive = rows.filter(pl.col("is_positive"))["text"][0]
        path = index[rows["image"][0]].path
        assert path is not None
        for negative in rows.filter(~pl.col("is_positive"))["text"]:
            seen[(kind, positive, negative, pixels(open_rgb(path)))] += 1
            files[(kind, positive, negative, sha(path))] += 1
    return seen, files, summary


# ------------------------------------------------------------------------- SugarCrepe


def test_sugarcrepe_round_trip_identical_content(eval_set, tmp_path):
    out = tmp_path / "export" / "toy_pairs"
    manifest = export(eval_set, out)
    want, whole = expected_pairs(eval_set)
    got, files, summary = imported_pairs(out, tmp_path)
    assert want and whole
    assert got == want  # texts, types and what a model sees of every image / region
    assert not whole - files  # whole images come back byte for byte
    assert summary["rejected"] == 0
    assert summary["items_per_type"] == {
        t: n["records"] for t, n in manifest["counts"]["per_type"].items()
    }
    assert set(manifest["counts"]["per_type"]) <= set(SUGARCREPE_TYPES)
    assert manifest["counts"]["records"] == sum(want.values())


def test_sugarcrepe_file_layout_and_keys(eval_set, tmp_path):
    out = tmp_path / "out"
    export(eval_set, out)
    data = json.loads((out / "replace_att.json").read_text())
    assert list(data) == [str(i) for i in range(len(data))]
    assert all(set(v) == {"filename", "caption", "negative_caption"} for v in data.values())
    names = {v["filename"] for v in data.values()}
    assert "street.png" in names  # a whole image keeps its name
    assert "park_x2_y3_w20_h16.png" in names  # a region is cut out as PNG
    # read_sugarcrepe_file takes one file as it is, keys in order
    imported = read_sugarcrepe_file(out / "replace_att.json", variant="toy")
    assert imported.candidates["item_id"].unique(maintain_order=True).to_list() == [
        f"sugarcrepe/toy/replace_att/{k}" for k in data
    ]
    keys = pl.read_csv(out / "keys.csv", infer_schema=False)
    att = keys.filter(pl.col("file") == "replace_att.json")
    assert att["key"].to_list() == list(data)
    assert set(att["item_id"]) == {
        "c1/replace_att",
        "c2/replace_att",
        "r1/replace_att",
        "r2/replace_att",
    }


def test_clip_benchmark_loader_reads_the_export(eval_set, tmp_path):
    """CLIP_benchmark 1.6.2's own ``sugar_crepe/<type>`` loader with ``root`` at the export
    gives every record's image (as evaluation sees it), caption and negative."""
    from clip_benchmark.datasets.builder import build_dataset

    root = tmp_path / "out"
    manifest = export(eval_set, root)
    seen, _ = expected_pairs(eval_set)
    loaded = Counter()
    for task in manifest["counts"]["per_type"]:
        dataset = build_dataset(
            f"sugar_crepe/{task}", root=str(root), split="test", task="image_caption_selection"
        )
        assert len(dataset) == manifest["counts"]["per_type"][task]["records"]
        for image, (caption, negative) in dataset:
            loaded[(task, caption, negative, pixels(image.convert("RGB")))] += 1
    assert loaded == seen


def predictions_of(export_dir: Path, scores: dict[str, tuple[float, float]]) -> pl.DataFrame:
    """Predictions (``SET_PREDICTIONS_SCHEMA`` columns tie_table reads) of every exported
    item: (pos_score, neg_score) from ``scores`` by item_id, else (0.9, 0.1)."""
    keys = pl.read_csv(export_dir / "keys.csv", infer_schema=False)
    rows = []
    for item_id, file in keys.select("item_id", "file").unique(maintain_order=True).iter_rows():
        pos, neg = scores.get(item_id, (0.9, 0.1))
        rows.append({
            "model": "m", "benchmark": "toy_pairs", "part": None, "item_id": item_id,
            "family": file.removesuffix(".json"), "n_candidates": 2, "n_positives": 1,
            "rank": int(neg >= pos), "correct": pos > neg, "pos_score": pos, "neg_score": neg,
        })  # fmt: skip
    return pl.DataFrame(rows, schema_overrides={"part": pl.String})


def test_tie_table_counts_ties_per_type(eval_set, tmp_path):
    from vlcomp.export.clip_benchmark import format_ties, tie_table

    out = tmp_path / "out"
    export(eval_set, out)
    predictions = tmp_path / "predictions.parquet"
    scores = {
        "c1/replace_att": (0.5, 0.5),  # a tie
        "r1/replace_att": (0.2, 0.3),  # wrong
        "c2/replace_obj": (0.4, 0.4),
        "r2/replace_obj": (0.4000001, 0.4),  # indistinguishable, one ulp up: counted right
    }
    frame = predictions_of(out, scores).with_columns(
        indistinguishable=pl.col("item_id") == "r2/replace_obj"
    )
    frame.write_parquet(predictions)
    table = tie_table(out, predictions)
    att = table.filter(pl.col("type") == "replace_att").row(0, named=True)
    assert (att["records"], att["vlcomp_correct"], att["ties"], att["decided"]) == (4, 2, 1, 2)
    assert att["tie_items"] == ["c1/replace_att"]
    keys = pl.read_csv(out / "keys.csv", infer_schema=False)
    assert att["tie_keys"] == keys.filter(pl.col("item_id") == "c1/replace_att")["key"].to_list()
    assert att["vlcomp_accuracy"] == 0.5
    assert (att["clip_benchmark_min"], att["clip_benchmark_max"]) == (0.5, 0.75)
    obj = table.filter(pl.col("type") == "replace_obj").row(0, named=True)
    assert obj["tie_items"] == ["c2/replace_obj", "r2/replace_obj"]
    assert (obj["vlcomp_correct"], obj["decided"], obj["ties"]) == (
        obj["records"] - 1,
        obj["records"] - 2,
        2,
    )
    text = format_ties(table, {"replace_att": 0.75})
    assert "replace_att        4  0.5000     1   0.5000-0.7500   0.7500" in text
    assert "replace_rel        3  1.0000     0          1.0000" in text
    assert "ties in replace_att.json, key (item): " in text and "(c1/replace_att)" in text
    # without the flag, an unequal pair is not a tie
    frame.drop("indistinguishable").write_parquet(predictions)
    assert tie_table(out, predictions).filter(pl.col("type") == "replace_obj")["ties"][0] == 1


def test_tie_table_refuses_what_it_cannot_compare(eval_set, tmp_path):
    from vlcomp.export.clip_benchmark import tie_table

    out = tmp_path / "out"
    export(eval_set, out)
    frame = predictions_of(out, {})
    path = tmp_path / "p.parquet"
    frame.filter(pl.col("item_id") != "r2/replace_rel").write_parquet(path)
    keys = pl.read_csv(out / "keys.csv", infer_schema=False)
    line = keys["item_id"].to_list().index("r2/replace_rel") + 2
    with pytest.raises(ValueError, match=f"keys.csv line {line}: item 'r2/replace_rel'"):
        tie_table(out, path)
    frame.with_columns(
        n_candidates=pl.when(pl.col("item_id") == "c1/replace_att").then(3).otherwise(2)
    ).write_parquet(path)
    with pytest.raises(ValueError, match="'c1/replace_att' was scored among 3 candidates"):
        tie_table(out, path)
    pl.concat([frame, frame.with_columns(part=pl.lit("laion"))]).write_parquet(path)
    with pytest.raises(ValueError, match="several parts"):
        tie_table(out, path)
    assert tie_table(out, path, part="laion")["records"].sum() == keys.height
    with pytest.raises(FileNotFoundError, match="no keys.csv"):
        tie_table(tmp_path, path)


def test_manifest_gives_the_clip_benchmark_command(eval_set, tmp_path, monkeypatch):
    """The manifest's command names the export's SugarCrepe types, turns amp off, and parses
    with CLIP_benchmark's own argument parser."""
    import shlex

    from clip_benchmark import cli

    manifest = export(eval_set, tmp_path / "out")
    section = manifest["layout"]["clip_benchmark"]
    assert section["version"] == "1.6.2"
    types = sorted(manifest["counts"]["per_type"])
    assert "swap_att" in types and set(types) <= set(SUGARCREPE_TYPES)
    assert section["datasets"] == [f"sugar_crepe/{t}" for t in types]
    args = shlex.split(section["command"])
    assert args[:4] == ["python", "-m", "vlcomp.export.clip_benchmark", "eval"]
    monkeypatch.setattr("sys.argv", ["clip_benchmark", *args[3:]])
    _, parsed = cli.get_parser_args()
    assert parsed.amp is False and parsed.dataset == section["datasets"]
    assert parsed.dataset_root == "<this_folder>"
    assert "fp32" in section["precision"] and "bf16" in section["precision"]
    assert "(decided + ties) / records" in section["ties"]
    assert "differ only on tied items" in manifest["tie_policy"]["note"]


def test_clip_benchmark_without_our_types_has_no_command():
    from vlcomp.export.sugarcrepe import clip_benchmark_section

    section = clip_benchmark_section(["neg", "replace_obj"])
    assert section["datasets"] == ["sugar_crepe/replace_obj"]
    assert clip_benchmark_section(["neg"])["command"] is None


def test_clip_benchmark_eval_registers_our_architectures(eval_set, tmp_path, capsys):
    """`python -m vlcomp.export.clip_benchmark eval ...` runs CLIP_benchmark's CLI with our
    architecture (a random vlcomp-world-rn here) and reports vlcomp's accuracy: the job
    layer's evaluation of the same items (no ties with random weights)."""
    import open_clip
    import torch

    from vlcomp.evaluate.jobs import evaluate_benchmark_job
    from vlcomp.export.clip_benchmark import amp_warning, main, register_architectures, tie_table

    assert register_architectures() == [
        "vlcomp-world-rn",
        "vlcomp-world-rn-grid",
        "vlcomp-world-vit",
        "vlcomp-world-vit8",
    ]
    assert amp_warning(["--no_amp"]) is None and "bf16" in amp_warning([])
    torch.manual_seed(0)
    checkpoint = tmp_path / "rn.pt"
    torch.save(open_clip.create_model("vlcomp-world-rn").state_dict(), checkpoint)
    out = tmp_path / "out"
    manifest = export(eval_set, out)
    predictions = tmp_path / "predictions.parquet"
    evaluate_benchmark_job(
        "rn", {"open_clip": "vlcomp-world-rn"}, str(checkpoint),
        {"device": "cpu", "threads": 1, "batch_size": 8, "precision": "fp32", "workers": 0,
         "bootstrap_resamples": 0},
        [{"candidates": str(eval_set["candidates"]), "boxes": str(eval_set["boxes"])}],
        str(eval_set["index"]), str(tmp_path / "cache"), str(predictions),
        str(tmp_path / "metrics.parquet"), str(tmp_path / "excluded.parquet"), log=lambda _: None,
    )  # fmt: skip
    table = tie_table(out, predictions)
    main([
        "eval", "--dataset", *manifest["layout"]["clip_benchmark"]["datasets"],
        "--dataset_root", str(out), "--model", "vlcomp-world-rn", "--pretrained",
        str(checkpoint), "--no_amp", "--num_workers", "0", "--quiet",
        "--output", str(tmp_path / "{dataset}.json"),
    ])  # fmt: skip
    with pytest.raises(SystemExit, match="vlcomp-world-rn-grid: its image pool is vlcomp's"):
        main(["eval", "--model", "vlcomp-world-rn-grid", "--pretrained", str(checkpoint)])
    assert table["ties"].sum() == 0
    for row in table.iter_rows(named=True):
        result = json.loads((tmp_path / f"sugar_crepe_{row['type']}.json").read_text())
        assert result["model"] == "vlcomp-world-rn"
        assert round(result["metrics"]["acc"] * row["records"]) == row["vlcomp_correct"], row
    assert "warning" not in capsys.readouterr().err


def test_manifest_contents(eval_set, tmp_path):
    out = tmp_path / "out"
    manifest = export(eval_set, out)
    on_disk = json.loads((out / MANIFEST).read_text())
    assert on_disk["files"] == manifest["files"]
    assert verify_manifest(out) == []
    listed = {f["path"] for f in manifest["files"]}
    assert {"replace_att.json", "keys.csv", "val2017/street.png"} <= listed
    assert all(len(f["sha256"]) == 64 and f["size"] > 0 for f in manifest["files"])
    assert manifest["config"] == CONFIG
    assert manifest["benchmark"] == "toy_pairs" and manifest["format"] == "sugarcrepe"
    assert {"vlcomp", "torch", "open_clip", "polars", "pillow"} <= set(manifest["versions"])
    assert manifest["generation"]["generators"] == {"template:graph-edit": 17}
    assert manifest["generation"]["seeds"] == ["7"]
    assert "tie" in manifest["tie_policy"]["note"]
    assert manifest["inputs"]["candidates_or_items"]["sha256"] == sha(eval_set["candidates"])
    # the eval item with no image file: its three pair items, counted and listed
    left = manifest["left_out"]
    assert left["per_reason"] == {"image missing": 3}
    assert {r["item_id"] for r in left["items"]} == {
        "m1/replace_att",
        "m1/replace_obj",
        "m1/replace_rel",
    }
    assert manifest["layout"]["images"] == {"crop": 2, "hardlink": 1}
    # a changed file is caught
    (out / "keys.csv").write_text("changed\n")
    (out / "extra.txt").write_text("x")
    assert verify_manifest(out) == [
        "extra.txt: not in the manifest",
        "keys.csv: sha256/size differ from the manifest",
    ]


def test_same_inputs_same_files(eval_set, tmp_path):
    first = export(eval_set, tmp_path / "a", link=False)
    second = export(eval_set, tmp_path / "b", link=False)
    assert first["files"] == second["files"]
    assert first["layout"]["images"] == {"copy": 1, "crop": 2}
    assert (tmp_path / "a" / MANIFEST).read_bytes() == (tmp_path / "b" / MANIFEST).read_bytes()


def candidate_rows(
    item_id: str, image: str, positive: str, negatives: list[str], family: str, target: str | None
) -> list[dict]:
    common = {
        "benchmark": "hand",
        "item_id": item_id,
        "image": image,
        "family": family,
        "target": target,
        "generator": "llm:toy",
        "provenance": "prompt version v3; seed 11",
    }
    return [
        {**common, "text": positive, "is_positive": True},
        *({**common, "text": n, "is_positive": False} for n in negatives),
    ]


def test_several_negatives_other_types_and_left_out(eval_set, tmp_path):
    rows = [
        *candidate_rows("a", "street", "two dogs", ["two cats", "three dogs"], "replace", "obj"),
        *candidate_rows("b", "park", "a dog runs", ["a dog does not run"], "neg", None),
        *candidate_rows("c", "park", "a tree", ["a bush"], "replace", "obj"),  # box outside
        *candidate_rows("d", "street", "a car", ["a car"], "replace", "obj"),  # no real negative
    ]
    candidates = tmp_path / "hand.parquet"
    boxes = tmp_path / "hand_boxes.parquet"
    write_parquet(pl.DataFrame(rows, schema=CANDIDATES_SCHEMA), candidates)
    write_parquet(
        pl.DataFrame(
            {
                "item_id": ["a", "c"],
                "x": [None, 500],
                "y": [None, 500],
                "width": [None, 5],
                "height": [None, 5],
            },
            schema={
                "item_id": pl.String,
                "x": pl.Int64,
                "y": pl.Int64,
                "width": pl.Int64,
                "height": pl.Int64,
            },
        ),
        boxes,
    )
    out = tmp_path / "hand"
    manifest = export_benchmark_job(
        "sugarcrepe",
        "hand",
        str(candidates),
        str(boxes),
        str(eval_set["index"]),
        {},
        str(out),
        log=lambda m: None,
    )
    data = json.loads((out / "replace_obj.json").read_text())
    assert data == {
        "0": {"filename": "street.png", "caption": "two dogs", "negative_caption": "two cats"},
        "1": {"filename": "street.png", "caption": "two dogs", "negative_caption": "three dogs"},
    }
    assert (
        json.loads((out / "neg.json").read_text())["0"]["negative_caption"] == "a dog does not run"
    )
    assert manifest["counts"]["items_with_several_negatives"] == 1
    assert manifest["counts"]["per_type"] == {
        "neg": {"items": 1, "records": 1},
        "replace_obj": {"items": 1, "records": 2},
    }
    assert manifest["layout"]["types_not_read_by_sugarcrepe_loaders"] == ["neg"]
    assert manifest["left_out"]["per_reason"] == {
        "box outside the image": 1,
        "negative equals positive": 1,
    }
    assert manifest["generation"]["prompt_versions"] == ["v3"]
    assert manifest["generation"]["seeds"] == ["11"]


def test_failed_export_leaves_the_old_folder(eval_set, tmp_path, monkeypatch):
    out = tmp_path / "out"
    export(eval_set, out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("vlcomp.export.jobs.write_manifest", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        export(eval_set, out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []
    assert verify_manifest(out) == []


def test_rerun_replaces_the_folder(eval_set, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.json").write_text("{}")
    export(eval_set, out)
    assert not (out / "stale.json").exists()
    assert verify_manifest(out) == []


def test_nothing_to_export_says_why(eval_set, tmp_path):
    rows = candidate_rows("a", "gone", "two dogs", ["two cats"], "replace", "obj")
    candidates = tmp_path / "c.parquet"
    write_parquet(pl.DataFrame(rows, schema=CANDIDATES_SCHEMA), candidates)
    with pytest.raises(ValueError, match="image missing: 1"):
        export_benchmark_job(
            "sugarcrepe",
            "x",
            str(candidates),
            None,
            str(eval_set["index"]),
            {},
            str(tmp_path / "o"),
            log=lambda m: None,
        )
    assert not (tmp_path / "o").exists()


def test_bad_arguments(eval_set, tmp_path):
    with pytest.raises(ValueError, match="unknown export format"):
        export_benchmark_job("aro", "x", "c", None, "i", {}, str(tmp_path / "o"))
    rows = candidate_rows("a", "street", "x", ["y"], "replace", "obj")
    rows[1]["is_positive"] = True
    candidates = tmp_path / "c.parquet"
    write_parquet(pl.DataFrame(rows, schema=CANDIDATES_SCHEMA), candidates)
    with pytest.raises(ValueError, match="2 positives"):
        export_benchmark_job(
            "sugarcrepe",
            "x",
            str(candidates),
            None,
            str(eval_set["index"]),
            {},
            str(tmp_path / "o"),
            log=lambda m: None,
        )


# ------------------------------------------------------------------------- helpers


def test_safe_stem_and_atomic_dir(tmp_path):
    assert safe_stem("images/17.png") == "images_17.png"
    assert safe_stem("../a b") == "_a_b"
    assert len(safe_stem("x" * 500)) < 140
    with pytest.raises(KeyError), atomic_dir(tmp_path / "d") as tmp:
        (tmp / "f").write_text("x")
        raise KeyError("boom")
    assert list(tmp_path.iterdir()) == []


def test_generator_info_without_columns():
    assert generator_info(pl.DataFrame({"item_id": ["a"]})) == {
        "generators": {},
        "seeds": [],
        "prompt_versions": [],
    }


def test_crepe_manifest(tmp_path):
    folder = tmp_path / "crepe"
    folder.mkdir()
    (folder / "syst_vg_hard_negs_seen_compounds_in_cc.csv").write_text(
        "image_id,caption\n1,a\n2,b\n"
    )
    (folder / "summary.json").write_text(json.dumps({"left_out": {"no_region_box": 2}}))
    candidates = tmp_path / "c.parquet"
    write_parquet(
        pl.DataFrame(candidate_rows("a", "1", "a", ["b"], "atom", None), schema=CANDIDATES_SCHEMA),
        candidates,
    )
    manifest = crepe_manifest_job(
        "crepe_sys", str(candidates), str(folder), {"k": 1}, log=lambda m: None
    )
    assert manifest["counts"]["rows_per_file"] == {"syst_vg_hard_negs_seen_compounds_in_cc.csv": 2}
    assert manifest["left_out"]["count"] == 2
    assert verify_manifest(folder) == []


# ------------------------------------------------------------------------- Winoground


def two_image_rows(rows: list[tuple]) -> pl.DataFrame:
    from vlcomp.contracts import TWO_IMAGE_SCHEMA

    return pl.DataFrame(
        [
            {
                "benchmark": "toy_two",
                "item_id": item_id,
                "image_0": image_0,
                "image_1": image_1,
                "caption_0": caption_0,
                "caption_1": caption_1,
                "family": family,
                "target": target,
                "generator": "template:two-image",
                "provenance": "seed 3",
            }
            for item_id, image_0, image_1, caption_0, caption_1, family, target in rows
        ],
        schema=TWO_IMAGE_SCHEMA,
    )


TWO_IMAGE_ITEMS = [
    (
        "w1",
        "street",
        "park",
        "a red car and a blue truck",
        "a blue car and a red truck",
        "swap",
        "att",
    ),
    ("w2", "park", "yard", "a dog chases a cat", "a cat chases a dog", "swap", "obj"),
    ("w3", "yard", "street", "a mug in the grass", "grass in the mug", "swap", "rel"),
    ("w4", "street", "gone", "a man on a horse", "a horse on a man", "swap", "obj"),
    ("w5", "street", "park", "the same words", "the same words", "swap", "obj"),
]


@pytest.fixture()
def two_image_set(tmp_path: Path) -> dict[str, Path]:
    from vlcomp.splits.items import image_index

    images = tmp_path / "two_images"
    images.mkdir()
    noise(1).save(images / "street.png")
    noise(2).save(images / "park.jpg", quality=90)
    noise(3, (40, 30)).save(images / "yard.png")
    items = two_image_rows(TWO_IMAGE_ITEMS)
    paths = {"items": tmp_path / "two.parquet", "index": tmp_path / "two_index.parquet"}
    write_parquet(items, paths["items"])
    ids = sorted(set(items["image_0"]) | set(items["image_1"]))
    write_parquet(image_index("winoground", {"images": str(images)}, ids), paths["index"])
    return paths


def export_two(paths: dict[str, Path], out: Path) -> dict:
    return export_benchmark_job(
        "winoground",
        "toy_two",
        str(paths["items"]),
        None,
        str(paths["index"]),
        {"kind": "two-image"},
        str(out),
        log=lambda m: None,
    )


def test_winoground_layout(two_image_set, tmp_path):
    out = tmp_path / "wino"
    manifest = export_two(two_image_set, out)
    lines = (out / "examples.jsonl").read_text().splitlines()
    examples = [json.loads(line) for line in lines]
    assert [e["id"] for e in examples] == [0, 1, 2]
    assert all(
        set(e) == {"id", "caption_0", "caption_1", "image_0", "image_1", "tag"} for e in examples
    )
    assert [e["tag"] for e in examples] == ["att", "Object", "Relation"]
    assert examples[0]["image_0"] == "street"
    for e in examples:
        for slot in ("image_0", "image_1"):
            with Image.open(out / "images" / f"{e[slot]}.png") as image:
                assert image.format == "PNG"
    # a PNG keeps its bytes; a JPEG is decoded once and saved as PNG, same pixels
    index = read_image_index(two_image_set["index"])
    assert sha(out / "images" / "street.png") == sha(index["street"].path)
    assert pixels(open_rgb(out / "images" / "park.png")) == pixels(open_rgb(index["park"].path))
    assert manifest["layout"]["images"] == {"hardlink": 2, "png": 1}
    assert manifest["left_out"]["per_reason"] == {"captions equal": 1, "image missing": 1}
    assert manifest["counts"]["items_not_swap"] == 0
    assert verify_manifest(out) == []
    keys = pl.read_csv(out / "keys.csv", infer_schema=False)
    assert keys["item_id"].to_list() == ["w1", "w2", "w3"]
    assert keys["type"].to_list() == ["swap_att", "swap_obj", "swap_rel"]


def test_winoground_round_trip_identical_content(two_image_set, tmp_path):
    from vlcomp.importers.jobs import import_two_image_job
    from vlcomp.splits.items import image_index

    out = tmp_path / "wino"
    export_two(two_image_set, out)
    back_items, back_rejected = tmp_path / "back.parquet", tmp_path / "back_rej.parquet"
    summary = import_two_image_job(
        "winoground",
        {"files": [str(out)]},
        "toy_back",
        str(back_items),
        str(back_rejected),
        log=lambda m: None,
    )
    assert summary["rejected"] == 0
    back = pl.read_parquet(back_items)
    ids = sorted(set(back["image_0"]) | set(back["image_1"]))
    back_index = {
        r["image_id"]: r["path"]
        for r in image_index("winoground", {"images": str(out / "images")}, ids).iter_rows(
            named=True
        )
    }
    index = read_image_index(two_image_set["index"])

    def content(rows: pl.DataFrame, path_of) -> Counter:
        return Counter(
            (
                r["family"],
                r["target"],
                r["caption_0"],
                r["caption_1"],
                pixels(open_rgb(path_of(r["image_0"]))),
                pixels(open_rgb(path_of(r["image_1"]))),
            )
            for r in rows.iter_rows(named=True)
        )

    original = two_image_rows(TWO_IMAGE_ITEMS[:3])
    assert content(back, back_index.__getitem__) == content(original, lambda i: index[i].path)
    # PNG sources come back byte for byte
    png_back = {sha(p) for p in back_index.values()}
    assert {sha(index["street"].path), sha(index["yard"].path)} <= png_back


def test_winoground_other_family_counted(two_image_set, tmp_path):
    items = two_image_rows([("r1", "street", "yard", "a red car", "a blue car", "replace", "att")])
    write_parquet(items, two_image_set["items"])
    manifest = export_two(two_image_set, tmp_path / "o")
    assert manifest["counts"]["items_not_swap"] == 1
    keys = pl.read_csv(tmp_path / "o" / "keys.csv", infer_schema=False)
    assert keys["type"].to_list() == ["replace_att"]
    with pytest.raises(ValueError, match="no boxes table"):
        export_benchmark_job(
            "winoground",
            "x",
            str(two_image_set["items"]),
            "b.parquet",
            str(two_image_set["index"]),
            {},
            str(tmp_path / "p"),
            log=lambda m: None,
        )
