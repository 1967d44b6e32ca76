"""Pack the default run's cc12m training captions, their hard negatives, images and the
pairs benchmark (with cc12m's held-in / held-out flags) into DATA (default .gpu/) for
sweep.py, which needs neither polars nor the workflow on the GPU machine:

    .venv/bin/python tools/world_control_sweep/pack.py [DATA]
"""

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
from PIL import Image

R = "results"
OUT = sys.argv[1] if len(sys.argv) > 1 else ".gpu"
Path(OUT).mkdir(parents=True, exist_ok=True)
cap = pl.read_parquet(f"{R}/captions/cc12m/captions-*.parquet").sort("caption_id")
neg = pl.read_parquet(f"{R}/negatives/training/cc12m.parquet")
negs = neg.group_by("caption_id", maintain_order=True).agg(pl.col("negative"), pl.col("target"))
cap = cap.join(negs, on="caption_id", how="left")
names = sorted(set(cap["image_id"]))
index = {n: i for i, n in enumerate(names)}
imgs = np.stack(
    [np.asarray(Image.open(f"{R}/world/corpora/cc12m/{n}").convert("RGB")) for n in names]
)
hold = pl.read_parquet(f"{R}/world/eval/holdout.parquet").filter(pl.col("corpus") == "cc12m")
held_out = set(hold["image_id"].cast(pl.String))
cand = pl.read_parquet(f"{R}/negatives/pairs/candidates.parquet")
eval_names = sorted(set(cand["image"]), key=int)
eimgs = np.stack(
    [np.asarray(Image.open(f"{R}/world/eval/images/{n}.png").convert("RGB")) for n in eval_names]
)
eidx = {n: i for i, n in enumerate(eval_names)}
items = []
for _, g in cand.group_by("item_id", maintain_order=True):
    pos = g.filter(pl.col("is_positive"))["text"].to_list()
    ng = g.filter(~pl.col("is_positive"))
    if len(pos) != 1 or ng.height == 0:
        continue
    t = ng.row(0, named=True)
    items.append(
        {
            "image": eidx[g["image"][0]],
            "pos": pos[0],
            "negs": ng["text"].to_list(),
            "type": f"{t['family']}_{t['target']}",
            "held_out": g["image"][0] in held_out,
        }
    )
meta = {
    "captions": cap["text"].to_list(),
    "image_index": [index[n] for n in cap["image_id"]],
    "negatives": [x if x is not None else [] for x in cap["negative"].to_list()],
    "items": items,
}
np.savez_compressed(f"{OUT}/images.npz", train=imgs, eval=eimgs)
Path(f"{OUT}/meta.json").write_text(json.dumps(meta))
print(imgs.shape, eimgs.shape, len(items))
