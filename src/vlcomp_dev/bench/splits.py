"""Image index throughput: every file decoded whole (the index's check) against the
header-only check it replaced, and a rerun on the filled cache.

The images are photo-like JPEGs (quality 90; a smooth random background, blurred shapes,
sensor noise), their long side drawn from 256-640 px, written once before any timing, or
the image files of a folder (``--folder``: your own photos). They are read once before
any timing, so they sit in the OS page cache: what is measured is decoding, not disk
reads. Files that fail a check are counted per path (``unreadable``). Each path
builds the index of all of them through ``image_index`` on the same thread pool:

(a) ``header``: the old check, ``Image.open`` + ``verify``: it reads the header (for a
    JPEG, none of the compressed data) and so takes a truncated JPEG for a good one;
(b) ``cold``: the full decode (``check_image``) with an empty cache, which it fills and
    writes, as the first run of the index job does;
(c) ``warm``: the same on the cache that (b) wrote: one ``stat`` per file, no decode.

(a) and (b) also run on one thread (the cost per core). Every path runs ``repeats``
times, interleaved, after an untimed warm-up; medians are reported, as ms per image (and
so seconds per 1,000 images), with the ratio full decode / header check.

    python -m vlcomp_dev.bench.splits --images 1000 --threads 2 --out image_index.json
    python -m vlcomp_dev.bench.splits --folder ~/photos --images 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from vlcomp.io import write_json
from vlcomp.machine import cpu_name
from vlcomp.splits.items import IMAGE_SUFFIXES, ImageChecks, image_index, natural_key

Log = Callable[[str], None]
PATHS = ("header_1_thread", "cold_1_thread", "header", "cold", "warm")


def header_check(path: Path) -> tuple[str, str]:
    """The index's check before the full decode (the baseline): open and ``verify``."""
    try:
        with Image.open(path) as image:
            width, height = image.size
            image.verify()
    except Exception as err:
        return "unreadable", f"{path}: {type(err).__name__}: {err}"
    return "ok", f"{width}x{height}"


def make_images(folder: Path, n: int, seed: int = 0, quality: int = 90) -> list[str]:
    """Write ``n`` photo-like JPEGs ``<k>.jpg`` (long side 256-640 px); return their names."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for k in range(n):
        long = int(rng.integers(256, 641))
        short = int(long * rng.choice([0.5625, 0.667, 0.75, 1.0]))
        width, height = (long, short) if rng.random() < 0.7 else (short, long)
        base = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)
        image = Image.fromarray(base).resize((width, height), Image.Resampling.BICUBIC)
        draw = ImageDraw.Draw(image)
        for _ in range(int(rng.integers(4, 10))):
            x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
            w, h = int(rng.integers(10, width // 3)), int(rng.integers(10, height // 3))
            colour = tuple(int(c) for c in rng.integers(0, 256, 3))
            draw.ellipse((x, y, x + w, y + h), fill=colour)
        image = image.filter(ImageFilter.GaussianBlur(1.5))
        noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, (height, width, 3))
        Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
            folder / f"{k}.jpg", quality=quality
        )
        ids.append(f"{k}.jpg")
    return ids


def folder_images(folder: Path, n: int) -> list[str]:
    """Up to ``n`` image files under ``folder`` (by suffix), as ids relative to it."""
    files = (p for p in folder.rglob("*") if p.suffix.lower().lstrip(".") in IMAGE_SUFFIXES)
    ids = sorted((p.relative_to(folder).as_posix() for p in files), key=natural_key)[:n]
    if not ids:
        raise ValueError(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    return ids


def run_benchmark(
    n_images: int = 1000,
    threads: int = 2,
    repeats: int = 3,
    seed: int = 0,
    folder: str | Path | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Time the paths on the same images (``folder``'s, else generated ones); log and
    return the numbers."""
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    unreadable: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="vlcomp-image-bench-") as tmp:
        root = Path(tmp)
        if folder is None:
            images = root / "images"
            ids = make_images(images, n_images, seed)
            described = "photo-like JPEGs, quality 90, long side 256-640 px"
        else:
            images = Path(folder)
            ids = folder_images(images, n_images)
            described = f"files of {images}"
        source = {"images": str(images)}
        sizes = [(images / i).stat().st_size for i in ids]

        def index(checks: ImageChecks, n_threads: int, path: str | None = None) -> float:
            start = time.perf_counter()
            table = image_index("bench", source, ids, n_threads, checks)
            checks.save()
            seconds = time.perf_counter() - start
            if path is not None:
                times[path].append(seconds)
                unreadable[path] = table.filter(table["status"] != "ok").height
            return seconds

        cache = root / "cache.parquet"
        index(ImageChecks(check=header_check), threads)  # untimed warm-up of both checks
        index(ImageChecks(), threads)
        for _ in range(repeats):  # interleaved, so that load changes hit every path alike
            index(ImageChecks(check=header_check), 1, "header_1_thread")
            index(ImageChecks(), 1, "cold_1_thread")
            index(ImageChecks(check=header_check), threads, "header")
            cache.unlink(missing_ok=True)
            index(ImageChecks(cache), threads, "cold")
            warm = ImageChecks(cache)
            index(warm, threads, "warm")
            if warm.decoded:
                raise AssertionError(f"warm run decoded {warm.decoded} files")

    import PIL

    median = {path: float(np.median(values)) for path, values in times.items()}
    ms = {path: 1000 * s / len(ids) for path, s in median.items()}
    result: dict[str, Any] = {
        "images": len(ids),
        "described": described,
        "unreadable": unreadable,
        "mean_file_kib": float(np.mean(sizes)) / 1024,
        "threads": threads,
        "repeats": repeats,
        "seconds_all_repeats": times,
        "median_s": median,
        "ms_per_image": ms,
        "cold_over_header": ms["cold"] / ms["header"],
        "cold_over_header_1_thread": ms["cold_1_thread"] / ms["header_1_thread"],
        "warm_over_header": ms["warm"] / ms["header"],
        "machine": {
            "cpu": cpu_name(),
            "cpu_count": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "python": platform.python_version(),
            "pillow": PIL.__version__,
        },
    }
    log(summary(result))
    return result


def summary(result: dict[str, Any]) -> str:
    """The numbers of ``run_benchmark`` as a few lines."""
    names = {
        "header_1_thread": "(a) header check, 1 thread (old)",
        "cold_1_thread": "(b) full decode, 1 thread",
        "header": f"(a) header check, {result['threads']} threads (old)",
        "cold": f"(b) full decode, empty cache, {result['threads']} threads",
        "warm": f"(c) full decode, filled cache, {result['threads']} threads",
    }
    lines = [
        f"image index of {result['images']} {result['described']} (mean "
        f"{result['mean_file_kib']:.0f} KiB) on {result['machine']['cpu']}; median of "
        f"{result['repeats']}; not ok: {json.dumps(result['unreadable'])}"
    ]
    for path, name in names.items():
        lines.append(f"  {name:44s} {result['ms_per_image'][path]:8.3f} ms/image (s per 1,000)")
    lines.append(
        f"  full decode / header check: x{result['cold_over_header_1_thread']:.1f} on 1 "
        f"thread, x{result['cold_over_header']:.1f} on {result['threads']}; filled cache / "
        f"header check: x{result['warm_over_header']:.2f}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", help="time these images (default: generate --images)")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run_benchmark(
        args.images, args.threads, args.repeats, args.seed, args.folder,
        log=lambda line: print(line, file=sys.stderr),
    )  # fmt: skip
    print(json.dumps(result, indent=2))
    if args.out:
        write_json(result, args.out)


if __name__ == "__main__":
    main()
