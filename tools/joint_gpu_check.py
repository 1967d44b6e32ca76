"""GPU check of the joint scorers (matching head, VQAScore) next to the embedding families:
the same (image, text) pairs scored on the CPU in fp32 and on CUDA in fp32 and bf16 (max
|difference| against the CPU), then ``vlcomp_dev.bench.evaluate.run_family_benchmark`` on CUDA
(items/s and peak GPU memory per family). Tiny random models
(``vlcomp.models.tiny_models``); without a CUDA device only the CPU part runs.

    python tools/joint_gpu_check.py --out results/gpu_check/joint.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vlcomp.evaluate.embed import embed_image_refs, embed_texts  # noqa: E402
from vlcomp.evaluate.images import ImageRef  # noqa: E402
from vlcomp.evaluate.joint_scoring import score_pairs
from vlcomp.models.catalogue import ModelSpec  # noqa: E402
from vlcomp.models.joint import PairScorer  # noqa: E402
from vlcomp.models.loading import load_model
from vlcomp.models.tiny_models import (  # noqa: E402
    save_tiny_blip_itm,
    save_tiny_clip,
    save_tiny_llava,
)
from vlcomp_dev.bench.evaluate import run_family_benchmark  # noqa: E402

TEXTS = ["a red circle left of a blue square", "a blue circle", "two stars above a heart"]


def scores(loaded, refs):
    if isinstance(loaded.model, PairScorer):
        values, _ = score_pairs(loaded, [(r, t) for r in refs for t in TEXTS], batch_size=8)
        return values
    images, _ = embed_image_refs(loaded, refs, batch_size=8)
    texts, _ = embed_texts(loaded, TEXTS, batch_size=8)
    return (images @ texts.T).reshape(-1).astype(np.float64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    result: dict = {"cuda": torch.cuda.get_device_name(0) if cuda else None, "agreement": {}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rng = np.random.default_rng(0)
        refs = []
        for i in range(6):
            path = root / f"{i}.png"
            Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(path)
            refs.append(ImageRef(str(path)))
        kinds = {"dual_encoder": save_tiny_clip, "matching_head": save_tiny_blip_itm,
                 "vqascore": save_tiny_llava}  # fmt: skip
        for kind, save in kinds.items():
            entry = {"transformers": {"id": str(save(root / kind)), "kind": kind}}
            spec = ModelSpec.from_config(kind, entry)
            reference = scores(load_model(spec, "cpu", "fp32"), refs)
            row = {"cpu_fp32_spread": float(reference.std())}
            for precision in ("fp32", "bf16") if cuda else ():
                other = scores(load_model(spec, "cuda", precision), refs)
                row[f"cuda_{precision}_max_abs_diff"] = float(np.abs(other - reference).max())
            result["agreement"][kind] = row
            print(kind, row, flush=True)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            result["families_cuda"] = run_family_benchmark(
                n_items=48, threads=4, device="cuda", data_dir=root / "bench"
            )
            result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        result["families_cpu"] = run_family_benchmark(
            n_items=48, threads=4, device="cpu", data_dir=root / "bench"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
