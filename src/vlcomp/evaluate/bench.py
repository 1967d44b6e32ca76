"""Evaluation throughput: our batched + cached path against a batch-size-1 loop.

The reference loop follows the shape of SugarCrepe's ``main_eval.py``: for each item, open
and preprocess its one image, encode it alone, then encode each candidate text alone (one
tokenizer and one ``encode_text`` call per text), with no cache. Our path is
``retrieval_sets.score_candidates`` + ``rank_sets``: unique images and texts encoded in
batches, through the content-hash ``EmbeddingCache``; it is timed with an empty cache
(cold: every embedding computed and written) and again on the filled cache (warm: a rerun,
or another benchmark sharing the texts). Each path runs ``repeats`` times, interleaved, after
an untimed warm-up; the median is reported (the CPUs may be shared).

All three run in the same process, on the same model weights, the same items and the same
thread count, and must agree on every similarity (checked). The data are generated: 64 px
images of two coloured shapes and 1 + ``negatives`` captions per item, each negative one
word away from the positive. A randomly initialised ``vlcomp-world-vit`` is enough for
timing.

    python -m vlcomp.evaluate.bench --items 300 --out results/bench/eval_throughput.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from PIL import Image, ImageDraw

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.evaluate.embed import EmbeddingCache
from vlcomp.evaluate.models import LoadedModel, ModelSpec, load_model
from vlcomp.evaluate.retrieval_sets import rank_sets, score_candidates
from vlcomp.io import write_json

Log = Callable[[str], None]

COLOURS = {
    "red": (220, 30, 30), "green": (30, 180, 60), "blue": (40, 60, 220), "yellow": (230, 210, 30),
    "purple": (140, 50, 170), "orange": (240, 140, 20), "pink": (240, 120, 180),
    "brown": (130, 80, 40),
}  # fmt: skip
SHAPES = ("circle", "square")
RELATIONS = ("left of", "right of", "above", "below")


def _draw(draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int], rgb) -> None:
    if shape == "circle":
        draw.ellipse(box, fill=rgb)
    else:
        draw.rectangle(box, fill=rgb)


def make_bench_data(
    out_dir: str | Path, n_items: int = 300, negatives: int = 4, size: int = 64, seed: int = 0
) -> pl.DataFrame:
    """Write ``images/<i>.png`` under ``out_dir``; return CANDIDATES_SCHEMA rows."""
    rng = np.random.default_rng(seed)
    images = Path(out_dir) / "images"
    images.mkdir(parents=True, exist_ok=True)
    colours = list(COLOURS)
    rows = []
    for i in range(n_items):
        c1, c2 = (str(c) for c in rng.choice(colours, 2, replace=False))
        s1, s2 = (str(s) for s in rng.choice(SHAPES, 2))
        relation = str(rng.choice(RELATIONS))
        image = Image.new("RGB", (size, size), (235, 235, 235))
        draw = ImageDraw.Draw(image)
        q = size // 4
        _draw(draw, s1, (q // 2, q, q // 2 + q, 2 * q), COLOURS[c1])
        _draw(draw, s2, (size - q - q // 2, 2 * q, size - q // 2, 3 * q), COLOURS[c2])
        image.save(images / f"{i}.png")
        words = [c1, s1, relation, c2, s2]
        texts = {f"a {c1} {s1} {relation} a {c2} {s2}"}
        positive = next(iter(texts))
        rows.append((str(i), positive, True))
        while len(texts) < negatives + 1:
            slot = int(rng.integers(0, 5))
            pool = {0: colours, 1: SHAPES, 2: RELATIONS, 3: colours, 4: SHAPES}[slot]
            changed = list(words)
            changed[slot] = str(rng.choice(pool))
            text = "a {} {} {} a {} {}".format(*changed)
            if text not in texts:
                texts.add(text)
                rows.append((str(i), text, False))
    frame = pl.DataFrame(rows, schema=["item_id", "text", "is_positive"], orient="row")
    return frame.with_columns(
        benchmark=pl.lit("throughput"), image=pl.col("item_id"), family=pl.lit("replace"),
        target=pl.lit(None, pl.String), generator=pl.lit("eval_bench"),
        provenance=pl.lit(f"seed={seed}"),
    ).select([pl.col(c).cast(t) for c, t in CANDIDATES_SCHEMA.items()])  # fmt: skip


@torch.no_grad()
def batch1_loop(
    loaded: LoadedModel, candidates: pl.DataFrame, images_dir: str | Path
) -> dict[tuple[str, str], float]:
    """Per item: one image, then one text at a time; no batching, no cache.
    Returns (item_id, text) -> similarity."""
    model, device = loaded.model, next(loaded.model.parameters()).device
    out: dict[tuple[str, str], float] = {}
    for (item_id,), group in candidates.group_by(["item_id"], maintain_order=True):
        path = Path(images_dir) / f"{group['image'][0]}.png"  # make_bench_data's names
        with Image.open(path) as image:
            pixels = loaded.preprocess(image.convert("RGB")).unsqueeze(0).to(device)
        image_vec = model.encode_image(pixels)
        image_vec = image_vec / image_vec.norm(dim=-1, keepdim=True)
        for text in group["text"].to_list():
            text_vec = model.encode_text(loaded.tokenizer([text]).to(device))
            text_vec = text_vec / text_vec.norm(dim=-1, keepdim=True)
            out[(str(item_id), text)] = float((image_vec @ text_vec.T).item())
    return out


def run_benchmark(
    n_items: int = 300,
    negatives: int = 4,
    threads: int = 2,
    batch_size: int = 256,
    seed: int = 0,
    device: str = "cpu",
    repeats: int = 3,
    arch: str = "vlcomp-world-vit",
    log: Log = print,
) -> dict[str, Any]:
    """Time the three paths on the same data and model; print and return the numbers."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    import open_clip

    with tempfile.TemporaryDirectory(prefix="vlcomp-eval-bench-") as tmp:
        root = Path(tmp)
        checkpoint = root / "random.pt"
        torch.save(open_clip.create_model(arch).state_dict(), checkpoint)
        loaded = load_model(ModelSpec("bench", arch, checkpoint=str(checkpoint)), device=device)
        candidates = make_bench_data(root, n_items, negatives, seed=seed)
        images_dir = root / "images"
        images = {name: str(images_dir / f"{name}.png") for name in set(candidates["image"])}
        n_texts = candidates.height

        # Untimed warm-up of both paths (lazy initialisation in torch and PIL).
        few = candidates.filter(pl.col("item_id").is_in(["0", "1", "2"]))
        batch1_loop(loaded, few, images_dir)
        score_candidates("bench", loaded, few, images, batch_size=batch_size)

        times: dict[str, list[float]] = {"loop": [], "cold": [], "warm": []}
        loop: dict[tuple[str, str], float] = {}
        scored = None
        for r in range(repeats):  # interleaved, so that load changes hit every path alike
            start = time.perf_counter()
            loop = batch1_loop(loaded, candidates, images_dir)
            times["loop"].append(time.perf_counter() - start)
            for label in ("cold", "warm"):
                start = time.perf_counter()
                scored = score_candidates(
                    "bench", loaded, candidates, images, batch_size=batch_size,
                    image_cache=EmbeddingCache(root / f"cache{r}", "image"),
                    text_cache=EmbeddingCache(root / f"cache{r}", "text"),
                )  # fmt: skip
                rank_sets(scored)
                times[label].append(time.perf_counter() - start)
        assert scored is not None
        ours = scored["similarity"].to_numpy()
        reference = np.array(
            [loop[(i, t)] for i, t in zip(candidates["item_id"], candidates["text"], strict=True)]
        )
        max_diff = float(np.abs(ours - reference).max())
        if max_diff > 1e-4:
            raise AssertionError(f"batched and batch-1 similarities differ by {max_diff}")

    result: dict[str, Any] = {
        "model": f"{arch} (random init)",
        "device": device,
        "threads": threads,
        "batch_size": batch_size,
        "items": n_items,
        "candidates_per_item": negatives + 1,
        "texts": n_texts,
        "repeats": repeats,
        "seconds_all_repeats": times,
        "max_abs_similarity_diff": max_diff,
    }
    lines = [
        f"{n_texts} candidate texts ({n_items} items x {negatives + 1}), {threads} threads, "
        f"{device}, {repeats} repeats (median | best):"
    ]
    names = {"loop": "batch-1 loop (SugarCrepe style)", "cold": "batched, cold cache",
             "warm": "batched, warm cache"}  # fmt: skip
    for stat, reduce in (("median", np.median), ("best", np.min)):
        seconds = {path: float(reduce(values)) for path, values in times.items()}
        for path, value in seconds.items():
            result[f"{path}_{stat}_s"] = value
            result[f"{path}_{stat}_texts_per_s"] = n_texts / value
            result[f"{path}_{stat}_speedup"] = seconds["loop"] / value
    for path, name in names.items():
        lines.append(
            f"  {name:32s} "
            + " | ".join(
                f"{result[f'{path}_{stat}_texts_per_s']:8.0f} texts/s "
                f"(x{result[f'{path}_{stat}_speedup']:.1f})"
                for stat in ("median", "best")
            )
        )
    lines.append(f"  max |similarity difference|: {max_diff:.2e}")
    log("\n".join(lines))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arch", default="vlcomp-world-vit", help="open_clip architecture")
    parser.add_argument("--out", help="write the numbers as JSON here")
    args = parser.parse_args(argv)
    result = run_benchmark(
        args.items,
        args.negatives,
        args.threads,
        args.batch_size,
        args.seed,
        args.device,
        args.repeats,
        args.arch,
    )
    if args.out:
        write_json(result, args.out)


if __name__ == "__main__":
    main()
