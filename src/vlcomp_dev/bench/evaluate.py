"""Evaluation throughput: our batched + cached path against a batch-size-1 loop and against
the speed at which the images can be decoded at all.

The data look like a CREPE / Visual Genome evaluation: photo-like JPEGs (640x480, quality
90: a smooth background, blurred shapes and sensor noise) and items that are *crops*
(region boxes) of them, ``crops_per_image`` per image, each with one positive caption and
``negatives`` captions one word away from it. Four paths run on the same model weights,
the same items, the same device, precision and thread count:

(a) ``loop``: the shape of SugarCrepe's ``main_eval.py``: for each item, open its image,
    crop, preprocess, encode it alone, then encode each candidate text alone (one tokenizer
    and one ``encode_text`` call per text), no cache, no worker processes;
(b) ``cold``: our path, ``scoring.score_candidates`` + ``rank_sets`` with an empty
    ``EmbeddingCache``: images decoded by ``workers`` DataLoader processes, unique crops and
    texts encoded in batches, every embedding computed and written;
(c) ``warm``: the same on the filled cache (a rerun, or another benchmark sharing them);
(d) ``decode``: the decode ceiling: the same DataLoader (same workers, batch size, crops,
    preprocessing, pinning on CUDA, copy to the device) with no model: how fast (b) could
    go if the model were free;
(e) ``encode``: the image-encode ceiling: every crop, decoded beforehand (untimed), through
    ``encode_image`` in batches and nothing else: how fast any path that encodes each crop
    once could go if decoding and texts were free. ``encode / loop`` bounds what batching
    can gain over the loop at this precision.

Each path runs ``repeats`` times, interleaved, after an untimed warm-up; medians are
reported (the CPUs may be shared). Ratios: ``loop / cold`` (speedup over the batch-1 loop;
the issue's goal on CPU: >= 10) and ``cold / decode`` (how far from the decode ceiling; the
goal on a GPU: <= 1.5). Paths (a) and (b) must agree on every similarity (within 1e-4 in
fp32; in bf16 / fp16 the difference is reported). Weights are random (no download):
throughput does not depend on them.

    python -m vlcomp_dev.bench.evaluate --model ViT-B-32 --device cuda --precision fp16 \\
        --items 2000 --workers 8 --out results/bench/eval_vitb32_fp16.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from PIL import Image, ImageDraw, ImageFilter

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.evaluate.embed import decode_batches
from vlcomp.evaluate.images import Box, EmbeddingCache, ImageRef, crop
from vlcomp.evaluate.retrieval_sets import item_boxes, rank_sets
from vlcomp.evaluate.scoring import score_candidates, scorer_of
from vlcomp.io import write_json
from vlcomp.machine import cpu_name
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import create_open_clip, load_model
from vlcomp.models.parts import LoadedModel
from vlcomp.models.versions import library_versions

Log = Callable[[str], None]

COLOURS = {
    "red": (220, 30, 30), "green": (30, 180, 60), "blue": (40, 60, 220), "yellow": (230, 210, 30),
    "purple": (140, 50, 170), "orange": (240, 140, 20), "pink": (240, 120, 180),
    "brown": (130, 80, 40), "white": (245, 245, 240), "black": (20, 20, 25),
}  # fmt: skip
SHAPES = ("circle", "square", "triangle")
RELATIONS = ("left of", "right of", "above", "below", "near", "behind")
# Tolerance of |batched - batch-1| similarity per precision (fp32: summation order only).
AGREEMENT = {"fp32": 1e-4}


def _photo(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    """A photo-like picture: gradient background, blurred shapes, noise."""
    top, bottom = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    ramp = np.linspace(0.0, 1.0, height)[:, None, None]
    background = (top * (1 - ramp) + bottom * ramp) * np.ones((1, width, 1))
    image = Image.fromarray(background.astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(6, 14))):
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        w, h = int(rng.integers(20, width // 3)), int(rng.integers(20, height // 3))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            draw.ellipse((x, y, x + w, y + h), fill=colour)
        elif kind == 1:
            draw.rectangle((x, y, x + w, y + h), fill=colour)
        else:
            draw.polygon([(x, y + h), (x + w // 2, y), (x + w, y + h)], fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(1.5))
    noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, (height, width, 3))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def make_bench_data(
    out_dir: str | Path,
    n_items: int = 120,
    negatives: int = 4,
    crops_per_image: int = 3,
    size: tuple[int, int] = (640, 480),
    quality: int = 90,
    seed: int = 0,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, str]]:
    """Write ``images/<k>.jpg`` under ``out_dir``; return CANDIDATES_SCHEMA rows, the boxes
    (item_id, x, y, width, height: one region per item) and image id -> file."""
    rng = np.random.default_rng(seed)
    folder = Path(out_dir) / "images"
    folder.mkdir(parents=True, exist_ok=True)
    width, height = size
    colours = list(COLOURS)
    pools = {0: colours, 1: SHAPES, 2: RELATIONS, 3: colours, 4: SHAPES}
    images: dict[str, str] = {}
    rows, boxes = [], []
    for i in range(n_items):
        name = str(i // crops_per_image)
        if name not in images:
            images[name] = str(folder / f"{name}.jpg")
            _photo(rng, width, height).save(images[name], quality=quality)
        w, h = int(rng.integers(64, width // 2)), int(rng.integers(48, height // 2))
        x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
        item_id = f"{name}-{i % crops_per_image}"
        boxes.append((item_id, x, y, w, h))
        c1, c2 = (str(c) for c in rng.choice(colours, 2, replace=False))
        s1, s2 = (str(s) for s in rng.choice(SHAPES, 2))
        words = [c1, s1, str(rng.choice(RELATIONS)), c2, s2]
        positive = "a {} {} {} a {} {}".format(*words)
        texts = {positive}
        rows.append((item_id, name, positive, True))
        while len(texts) < negatives + 1:
            slot = int(rng.integers(0, 5))
            changed = list(words)
            changed[slot] = str(rng.choice(pools[slot]))
            text = "a {} {} {} a {} {}".format(*changed)
            if text not in texts:
                texts.add(text)
                rows.append((item_id, name, text, False))
    frame = pl.DataFrame(rows, schema=["item_id", "image", "text", "is_positive"], orient="row")
    candidates = frame.with_columns(
        benchmark=pl.lit("throughput"), family=pl.lit("replace"),
        target=pl.lit(None, pl.String), generator=pl.lit("eval_bench"),
        provenance=pl.lit(f"seed={seed}"),
    ).select([pl.col(c).cast(t) for c, t in CANDIDATES_SCHEMA.items()])  # fmt: skip
    box_frame = pl.DataFrame(
        boxes, schema=["item_id", "x", "y", "width", "height"], orient="row"
    ).cast({c: pl.Int64 for c in ("x", "y", "width", "height")})
    return candidates, box_frame, images


def bench_data(
    data_dir: str | Path, n_items: int, negatives: int, crops_per_image: int, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, str]]:
    """``make_bench_data`` kept under ``data_dir`` (one subfolder per setting): made once,
    read back by later calls (several precisions or devices on the same items)."""
    folder = Path(data_dir) / f"items{n_items}-neg{negatives}-crops{crops_per_image}-seed{seed}"
    files = [folder / name for name in ("candidates.parquet", "boxes.parquet", "images.json")]
    if all(f.exists() for f in files):
        images = json.loads(files[2].read_text())
        return pl.read_parquet(files[0]), pl.read_parquet(files[1]), images
    candidates, boxes, images = make_bench_data(
        folder, n_items, negatives, crops_per_image, seed=seed
    )
    candidates.write_parquet(files[0])
    boxes.write_parquet(files[1])
    files[2].write_text(json.dumps(images))
    return candidates, boxes, images


@torch.inference_mode()
def batch1_loop(
    loaded: LoadedModel,
    candidates: pl.DataFrame,
    images: Mapping[str, str],
    box_of: Mapping[str, Box | None],
) -> dict[tuple[str, str], float]:
    """Per item: open, crop and preprocess its image, encode it alone, then one text at a
    time; no batching, no cache, no workers. Returns (item_id, text) -> similarity."""
    model, device = loaded.model, loaded.device
    out: dict[tuple[str, str], float] = {}
    for (item_id,), group in candidates.group_by(["item_id"], maintain_order=True):
        with Image.open(images[group["image"][0]]) as image:
            region = crop(image.convert("RGB"), box_of.get(str(item_id)))
        pixels = loaded.preprocess(region).unsqueeze(0).to(device)
        with loaded.autocast():
            image_vec = model.encode_image(pixels).float()
        image_vec = image_vec / image_vec.norm(dim=-1, keepdim=True)
        for text in group["text"].to_list():
            with loaded.autocast():
                text_vec = model.encode_text(loaded.tokenizer([text]).to(device)).float()
            text_vec = text_vec / text_vec.norm(dim=-1, keepdim=True)
            out[(str(item_id), text)] = float((image_vec @ text_vec.T).item())
    return out


def decode_only(loaded: LoadedModel, refs: list[ImageRef], batch_size: int, workers: int) -> int:
    """The decode ceiling: every ref decoded, cropped, preprocessed (and copied to the
    device) through the embedding DataLoader, no model. Returns the count prepared."""
    done = 0
    for positions, pixels, _ in decode_batches(loaded, refs, batch_size, workers):
        if pixels is not None:
            pixels.to(loaded.device, non_blocking=loaded.device.type == "cuda")
        done += len(positions)
    if loaded.device.type == "cuda":
        torch.cuda.synchronize(loaded.device)
    return done


@torch.inference_mode()
def encode_only(loaded: LoadedModel, pixels: torch.Tensor, batch_size: int) -> None:
    """The image-encode ceiling: prepared crops through ``encode_image`` in batches."""
    for start in range(0, len(pixels), batch_size):
        with loaded.autocast():
            loaded.model.encode_image(pixels[start : start + batch_size])
    if loaded.device.type == "cuda":
        torch.cuda.synchronize(loaded.device)


def machine_info(loaded: LoadedModel) -> dict[str, Any]:
    """What the numbers were measured on."""
    device = loaded.device
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "device_name": name,
        "precision": loaded.precision,
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        **library_versions(),
    }


def bench_model(
    model: str, root: Path, device: str, precision: str, seed: int, checkpoint: str | None = None
) -> LoadedModel:
    """``model`` (an open_clip architecture) with random weights, saved once under ``root``
    (or ``checkpoint``, e.g. real weights), loaded on ``device`` in ``precision``."""
    if checkpoint is None:
        path = root / f"{model}-seed{seed}.pt"
        if not path.exists():
            torch.manual_seed(seed)
            torch.save(create_open_clip(model)[0].state_dict(), path)
        checkpoint = str(path)
    return load_model(ModelSpec("bench", model, checkpoint=checkpoint), device, precision)


def run_benchmark(
    n_items: int = 120,
    negatives: int = 4,
    threads: int = 2,
    batch_size: int = 256,
    seed: int = 0,
    device: str = "cpu",
    repeats: int = 3,
    model: str = "vlcomp-world-vit",
    precision: str = "auto",
    workers: int = 2,
    crops_per_image: int = 3,
    checkpoint: str | None = None,
    loop_items: int | None = None,
    data_dir: str | Path | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Time the four paths on the same data and model; log and return the numbers.

    ``loop_items``: run the (slow) batch-1 loop on the first that many items only; its
    items/s stand for all (its cost per item does not depend on the others).
    ``data_dir``: keep the generated JPEGs and random weights there for later runs."""
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory(prefix="vlcomp-eval-bench-") as tmp:
        root = Path(tmp)
        keep = Path(data_dir) if data_dir else root
        keep.mkdir(parents=True, exist_ok=True)
        loaded = bench_model(model, keep, device, precision, seed, checkpoint)
        loaded.workers = workers
        candidates, boxes, images = bench_data(keep, n_items, negatives, crops_per_image, seed)
        box_of = item_boxes(boxes)
        item_image = candidates.select("item_id", "image").unique(maintain_order=True)
        refs = [ImageRef(images[name], box_of[i]) for i, name in item_image.iter_rows()]

        def ours(cache: Path | None) -> pl.DataFrame:
            scored = score_candidates(
                "bench", loaded, candidates, images, boxes=boxes, batch_size=batch_size,
                image_cache=EmbeddingCache(cache, "image") if cache else None,
                text_cache=EmbeddingCache(cache, "text") if cache else None,
            )  # fmt: skip
            rank_sets(scored)
            return scored

        # Untimed warm-up of every path (lazy initialisation in torch, cuDNN and PIL).
        first = item_image["item_id"].head(min(8, n_items)).to_list()
        few = candidates.filter(pl.col("item_id").is_in(first))
        batch1_loop(loaded, few, images, box_of)
        score_candidates("bench", loaded, few, images, boxes=boxes, batch_size=batch_size)
        decode_only(loaded, refs[: len(first)], batch_size, workers)
        pixels = torch.cat(
            [p for _, p, _ in decode_batches(loaded, refs, batch_size, 0) if p is not None]
        ).to(loaded.device)
        encode_only(loaded, pixels[: len(first)], batch_size)

        n_loop = min(loop_items or n_items, n_items)
        in_loop = item_image["item_id"].head(n_loop).to_list()
        loop_candidates = candidates.filter(pl.col("item_id").is_in(in_loop))
        times: dict[str, list[float]] = {
            "loop": [], "cold": [], "warm": [], "decode": [], "encode": []
        }  # fmt: skip
        loop: dict[tuple[str, str], float] = {}
        scored = None
        for r in range(repeats):  # interleaved, so that load changes hit every path alike
            start = time.perf_counter()
            loop = batch1_loop(loaded, loop_candidates, images, box_of)
            times["loop"].append(time.perf_counter() - start)
            for label in ("cold", "warm"):
                start = time.perf_counter()
                scored = ours(root / f"cache{r}")
                times[label].append(time.perf_counter() - start)
            start = time.perf_counter()
            decoded = decode_only(loaded, refs, batch_size, workers)
            times["decode"].append(time.perf_counter() - start)
            assert decoded == len(refs)
            start = time.perf_counter()
            encode_only(loaded, pixels, batch_size)
            times["encode"].append(time.perf_counter() - start)
        assert scored is not None
        keys = list(zip(candidates["item_id"], candidates["text"], strict=True))  # scored's
        in_both = [k for k, key in enumerate(keys) if key in loop]
        ours_sim = scored["similarity"].to_numpy()[in_both]
        reference = np.array([loop[keys[k]] for k in in_both])
        max_diff = float(np.abs(ours_sim - reference).max())
        tolerance = AGREEMENT.get(loaded.precision)
        if tolerance is not None and max_diff > tolerance:
            raise AssertionError(f"batched and batch-1 similarities differ by {max_diff}")
        info = machine_info(loaded)

    seconds = {path: float(np.median(values)) for path, values in times.items()}
    per_s = {path: (n_loop if path == "loop" else n_items) / t for path, t in seconds.items()}
    result: dict[str, Any] = {
        "model": f"{model} (random init)" if checkpoint is None else f"{model} ({checkpoint})",
        "device": device,
        "precision": info["precision"],
        "threads": threads,
        "workers": workers,
        "batch_size": batch_size,
        "items": n_items,
        "loop_items": n_loop,
        "images": len(images),
        "crops_per_image": crops_per_image,
        "image_size": "640x480 JPEG q90",
        "candidates_per_item": negatives + 1,
        "texts": candidates.height,
        "unique_texts": candidates["text"].n_unique(),
        "repeats": repeats,
        "seconds_all_repeats": times,
        "median_s": seconds,
        "items_per_s": per_s,
        "speedup_cold_over_loop": per_s["cold"] / per_s["loop"],
        "speedup_warm_over_loop": per_s["warm"] / per_s["loop"],
        "cold_over_decode_ceiling": per_s["decode"] / per_s["cold"],
        "encode_ceiling_over_loop": per_s["encode"] / per_s["loop"],
        "max_abs_similarity_diff": max_diff,
        "machine": info,
    }
    if loaded.device.type == "cuda":
        result["goal"] = "cold within 1.5x of the decode ceiling"
        result["goal_met"] = result["cold_over_decode_ceiling"] <= 1.5
    else:
        result["goal"] = "cold >= 10x the batch-1 loop"
        result["goal_met"] = result["speedup_cold_over_loop"] >= 10
    log(summary(result))
    return result


def summary(result: Mapping[str, Any]) -> str:
    """The numbers of ``run_benchmark`` as a few lines."""
    names = {"loop": "(a) batch-1 loop (SugarCrepe style)", "cold": "(b) ours, cold cache",
             "warm": "(c) ours, warm cache", "decode": "(d) decode ceiling (no model)",
             "encode": "(e) image-encode ceiling (no decode)"}  # fmt: skip
    machine = result["machine"]
    lines = [
        f"{result['model']} on {machine['device_name']} ({result['device']}, "
        f"{result['precision']}), {result['threads']} threads, {result['workers']} workers, "
        f"batch {result['batch_size']}: {result['items']} crops of {result['images']} JPEGs "
        f"(loop: first {result['loop_items']}), "
        f"{result['texts']} texts ({result['unique_texts']} distinct); median of "
        f"{result['repeats']}:"
    ]
    for path, name in names.items():
        lines.append(
            f"  {name:38s} {result['median_s'][path]:8.2f} s {result['items_per_s'][path]:9.1f}"
            " items/s"
        )
    lines.append(
        f"  cold vs loop x{result['speedup_cold_over_loop']:.2f}, warm vs loop "
        f"x{result['speedup_warm_over_loop']:.1f}, cold / decode ceiling "
        f"{result['cold_over_decode_ceiling']:.2f}, image-encode ceiling vs loop "
        f"x{result['encode_ceiling_over_loop']:.1f}; goal ({result['goal']}): "
        f"{'met' if result['goal_met'] else 'not met'}"
    )
    lines.append(f"  max |similarity difference|: {result['max_abs_similarity_diff']:.2e}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- model families

FAMILY_COST = {
    "open_clip": "1 image pass per distinct image or crop + 1 text pass per distinct text; "
    "every candidate a dot product",
    "transformers dual encoder": "as open_clip",
    "matching head (BLIP ITM)": "1 vision pass per distinct image or crop + 1 fused "
    "text-encoder pass per (image, text) pair: K per set of K candidates",
    "vqascore (LLaVA)": "1 full pass (vision tower + language model) per (image, text) pair: "
    "K per set of K candidates",
}


def family_models(root: Path, device: str, seed: int) -> dict[str, LoadedModel]:
    """One tiny random model of each family (``tiny_models``; open_clip's tiny world ViT),
    saved under ``root`` and loaded through the config path."""
    from vlcomp.models.tiny_models import save_tiny_blip_itm, save_tiny_clip, save_tiny_llava

    savers = {
        "transformers dual encoder": ("dual_encoder", save_tiny_clip),
        "matching head (BLIP ITM)": ("matching_head", save_tiny_blip_itm),
        "vqascore (LLaVA)": ("vqascore", save_tiny_llava),
    }
    models = {"open_clip": bench_model("vlcomp-world-vit", root, device, "fp32", seed)}
    for family, (kind, save) in savers.items():
        folder = root / kind
        if not (folder / "config.json").exists():
            save(folder, seed=seed)
        entry = {"transformers": {"id": str(folder), "kind": kind}}
        models[family] = load_model(ModelSpec.from_config(kind, entry), device, "fp32")
    return models


def run_family_benchmark(
    n_items: int = 24,
    negatives: int = 4,
    threads: int = 1,
    batch_size: int = 64,
    seed: int = 0,
    device: str = "cpu",
    repeats: int = 3,
    crops_per_image: int = 3,
    data_dir: str | Path | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Items/s of a tiny model of each family (open_clip, transformers dual encoder,
    matching head, VQAScore) through ``score_candidates`` + ``rank_sets`` on the same crops
    and candidate sets (no cache, images decoded in this process), and the forward passes
    each item cost (pair scorers count theirs: ``scoring.Scorer.counts``)."""
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory(prefix="vlcomp-family-bench-") as tmp:
        keep = Path(data_dir) if data_dir else Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        candidates, boxes, images = bench_data(keep, n_items, negatives, crops_per_image, seed)
        models = family_models(keep, device, seed)
        first = candidates["item_id"].unique(maintain_order=True).head(4).to_list()
        few = candidates.filter(pl.col("item_id").is_in(first))
        results: dict[str, Any] = {}
        for family, loaded in models.items():
            loaded.workers = 0
            score_candidates("bench", loaded, few, images, boxes=boxes, batch_size=batch_size)
            scorer = scorer_of(loaded)
            times, counts = [], {}
            for _ in range(repeats):
                before = scorer.counts()
                start = time.perf_counter()
                rank_sets(
                    score_candidates(
                        "bench", loaded, candidates, images, boxes=boxes, batch_size=batch_size
                    )
                )
                times.append(time.perf_counter() - start)
                counts = {k: v - before.get(k, 0) for k, v in scorer.counts().items()}
            median = float(np.median(times))
            results[family] = {
                "model": loaded.fingerprint,
                "details": {k: v for k, v in loaded.details.items() if k != "weights_sha256"},
                "seconds_all_repeats": times,
                "median_s": median,
                "items_per_s": n_items / median,
                "pairs_per_s": candidates.height / median,
                "forward_passes_per_item": {k: v / n_items for k, v in sorted(counts.items())},
                "cost_model": FAMILY_COST[family],
            }
        info = machine_info(next(iter(models.values())))
    result = {
        "items": n_items,
        "candidates_per_item": negatives + 1,
        "crops_per_image": crops_per_image,
        "image_size": "640x480 JPEG q90",
        "batch_size": batch_size,
        "threads": threads,
        "repeats": repeats,
        "device": device,
        "families": results,
        "machine": info,
    }
    log(family_summary(result))
    return result


def family_summary(result: Mapping[str, Any]) -> str:
    """The numbers of ``run_family_benchmark`` as a few lines."""
    lines = [
        f"{result['items']} items (crops of 640x480 JPEGs) x {result['candidates_per_item']} "
        f"candidates, batch {result['batch_size']}, {result['threads']} thread(s) on "
        f"{result['machine']['device_name']}; median of {result['repeats']}:"
    ]
    for family, numbers in result["families"].items():
        passes = ", ".join(f"{v:g} {k}" for k, v in numbers["forward_passes_per_item"].items())
        lines.append(
            f"  {family:28s} {numbers['items_per_s']:9.1f} items/s "
            f"({numbers['pairs_per_s']:.1f} pairs/s)"
            + (f"; forward passes per item: {passes}" if passes else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", "--arch", default="vlcomp-world-vit", help="open_clip name")
    parser.add_argument("--checkpoint", help="weights to load (default: random init)")
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--crops-per-image", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop-items", type=int, help="batch-1 loop on this many items only")
    parser.add_argument("--data", help="keep the generated JPEGs and weights here, for reuse")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run_benchmark(
        n_items=args.items,
        negatives=args.negatives,
        threads=args.threads,
        batch_size=args.batch_size,
        seed=args.seed,
        device=args.device,
        repeats=args.repeats,
        model=args.model,
        precision=args.precision,
        workers=args.workers,
        crops_per_image=args.crops_per_image,
        checkpoint=args.checkpoint,
        loop_items=args.loop_items,
        data_dir=args.data,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(json.dumps(result, indent=2))
    if args.out:
        write_json(result, args.out)


if __name__ == "__main__":
    main()
