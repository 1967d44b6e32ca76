"""Positive-control sweep (issue 23): NegCLIP-style training from scratch on the world's
cc12m corpus with all of a caption's hard negatives in every step, for several image and
text towers; held-in / held-out accuracy per negative type of the pairs benchmark every 10
epochs. An experiment tool (bf16 autocast, no determinism), not a workflow step; the data
comes from pack.py. On a GPU machine (torch there; open_clip, ftfy and wcwidth as wheels):

    python tools/world_control_sweep/sweep.py EPOCHS [VARIANT,...]   # DATA=.gpu OUT=.gpu

It runs on a CPU too (EVERY=5 evaluates every 5 epochs; OMP_NUM_THREADS=1 for one core).
"""

import copy
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import open_clip
import torch
import torch.nn.functional as F

sys.path.insert(0, "src")
from vlcomp.models.towers import with_grid_pool  # noqa: E402 (torch only)
from vlcomp.train.losses import negclip_loss  # noqa: E402 (torch and open_clip only)
from vlcomp.train.schedule import cosine_lr  # noqa: E402

# MIRROR=1: mirrored pairs and hard negative images (train.mirror: [horizontal, vertical]).
# vlcomp.train.mirroring needs polars too (through vlcomp.parse): carry its wheel on a GPU.
MIRROR = os.environ.get("MIRROR", "") == "1"
if MIRROR:
    from vlcomp.train.mirroring import Mirroring

DATA = os.environ.get("DATA", ".gpu")
OUT = os.environ.get("OUT", DATA)

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
dev = "cuda" if torch.cuda.is_available() else "cpu"
open_clip.add_model_config("src/vlcomp/models/model_configs")
data = np.load(f"{DATA}/images.npz")
meta = json.loads(Path(f"{DATA}/meta.json").read_text())
MEAN = torch.tensor(open_clip.OPENAI_DATASET_MEAN, device=dev).view(1, 3, 1, 1)
STD = torch.tensor(open_clip.OPENAI_DATASET_STD, device=dev).view(1, 3, 1, 1)


def to_tensor(a, size):
    x = torch.from_numpy(a).to(dev).permute(0, 3, 1, 2).float() / 255
    if size != x.shape[-1]:
        x = F.interpolate(x, size=(size, size), mode="bicubic", align_corners=False).clamp(0, 1)
    return (x - MEAN) / STD


BASE = json.loads(Path("src/vlcomp/models/model_configs/vlcomp-world-rn.json").read_text())
VIT = json.loads(Path("src/vlcomp/models/model_configs/vlcomp-world-vit8.json").read_text())


def variant(name, cfg):
    open_clip.factory._MODEL_CONFIGS[name] = cfg
    return name


def cfg(base, **vision):
    c = copy.deepcopy(base)
    c["vision_cfg"].update(vision)
    return c


VARIANTS = {
    "rn64": (variant("s-rn64", cfg(BASE)), 64),
    "rn128": (variant("s-rn128", cfg(BASE, image_size=128)), 128),
    "rn128w32": (variant("s-rn128w32", cfg(BASE, image_size=128, width=32)), 128),
    "vit8": (variant("s-vit8", cfg(VIT)), 64),
}


def text_cfg(c, **t):
    c = copy.deepcopy(c)
    c["text_cfg"].update(t)
    return c


VARIANTS["rn128t"] = (
    variant("s-rn128t", text_cfg(cfg(BASE, image_size=128), width=128, heads=4, layers=4)),
    128,
)
# A bidirectional text tower: every token sees the relation word, before or after it.
VARIANTS["rn64bi"] = (variant("s-rn64bi", text_cfg(cfg(BASE), no_causal_mask=True)), 64)
VARIANTS["rn64t"] = (variant("s-rn64t", text_cfg(cfg(BASE), width=128, heads=4, layers=4)), 64)
# GridPool variants (towers.with_grid_pool): the attention pool replaced by a layout-keeping one.
GRID = json.loads(Path("src/vlcomp/models/model_configs/vlcomp-world-rn-grid.json").read_text())
GRID_VARIANTS = {"grid", "grid128t"}
VARIANTS["grid"] = (variant("s-grid", cfg(GRID)), 64)  # the world_science preset's control
VARIANTS["grid128t"] = (
    variant("s-grid128t", text_cfg(cfg(GRID, image_size=128), width=128, heads=4, layers=4)),
    128,
)
if len(sys.argv) > 2:
    VARIANTS = {k: v for k, v in VARIANTS.items() if k in sys.argv[2].split(",")}
EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
caps, img_of, negs, items = meta["captions"], meta["image_index"], meta["negatives"], meta["items"]
if os.environ.get("SMOKE"):
    caps, img_of, negs, items = caps[:512], img_of[:512], negs[:512], items[:200]


def evaluate(model, tok, size):
    model.eval()
    with torch.no_grad():
        ie = F.normalize(model.encode_image(to_tensor(data["eval"], size)), dim=-1)
        texts = sorted({t for it in items for t in [it["pos"], *it["negs"]]})
        tix = {t: i for i, t in enumerate(texts)}
        te = torch.cat(
            [
                F.normalize(model.encode_text(tok(texts[i : i + 4096]).to(dev)), dim=-1)
                for i in range(0, len(texts), 4096)
            ]
        )
    out = {}
    for it in items:
        s = ie[it["image"]] @ te[[tix[it["pos"]]] + [tix[t] for t in it["negs"]]].T
        ok = bool(s[0] > s[1:].max())
        key = (it["type"], "held_out" if it["held_out"] else "held_in")
        out.setdefault(key, []).append(ok)
        if it["type"] == "replace_rel":  # by the positive's relation word: a word prior shows
            word = next((w for w in SPATIAL if re.search(rf"\b{w}\b", it["pos"].lower())), "?")
            out.setdefault(("rel_word", word), []).append(ok)
    model.train()
    return {f"{t}/{h}": round(float(np.mean(v)), 3) for (t, h), v in sorted(out.items())}


SPATIAL = ("left", "right", "above", "over", "underneath", "under", "beneath", "below")


def run(label, arch, size, lr, bs=256, epochs=EPOCHS, seed=0):
    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained=None)
    if label in GRID_VARIANTS:
        with_grid_pool(model)
    model = model.to(dev)
    tok = open_clip.get_tokenizer(arch)
    images = to_tensor(data["train"], size)
    tokens = tok(caps).to(dev)
    flat, rows = [], []
    for options in negs:
        rows.append(list(range(len(flat), len(flat) + len(options))))
        flat.extend(options)
    neg_tokens = tok(flat).to(dev)
    if MIRROR:  # the workflow's train.mirror: [horizontal, vertical]
        mirroring = Mirroring(("horizontal", "vertical"), caps, negs, tok, seed)
    img_idx = torch.tensor(img_of, device=dev)
    n = len(caps)
    steps = n // bs
    total = steps * epochs
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    started = time.time()
    step = 0
    curve = {}
    for epoch in range(1, epochs + 1):
        order = torch.randperm(n)
        for b in range(steps):
            idx = order[b * bs : (b + 1) * bs]
            for g in opt.param_groups:
                g["lr"] = cosine_lr(step, total, lr, warmup=100)
            picked = [r for i in idx.tolist() for r in rows[i]]
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev == "cuda"):
                if not MIRROR:
                    i_f, t_f, scale = model(images[img_idx[idx.to(dev)]], tokens[idx.to(dev)])
                    n_f = F.normalize(model.encode_text(neg_tokens[picked]), dim=-1)
                    hard_images = None
                else:
                    drawn = mirroring.draw(len(idx))
                    x = mirroring.images(images[img_idx[idx.to(dev)]], drawn)
                    t_tok = mirroring.text_tokens[drawn, idx].to(dev)
                    pair_rows = [rows[i] for i in idx.tolist()]
                    n_tok = mirroring.picked_negative_tokens(pair_rows, picked, drawn).to(dev)
                    hn = mirroring.hard_images(x, idx)
                    i_f, t_f, scale = model(x, t_tok)
                    n_f = F.normalize(model.encode_text(n_tok), dim=-1)
                    hard_images = F.normalize(model.encode_image(hn), dim=-1)
                # autocast computes the cross-entropies in float32
                loss = negclip_loss(i_f, t_f, n_f, scale, hard_images)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            step += 1
        if epoch % int(os.environ.get("EVERY", 10)) == 0 or epoch == epochs:
            curve[epoch] = evaluate(model, tok, size)
            print(
                label,
                "epoch",
                epoch,
                f"{time.time() - started:.0f}s",
                "loss",
                round(loss.item(), 3),
                json.dumps(curve[epoch]),
                flush=True,
            )
    return {
        "label": label + ("+mirror" if MIRROR else ""),
        "arch": arch,
        "size": size,
        "lr": lr,
        "epochs": epochs,
        "seconds": round(time.time() - started, 1),
        "curve": curve,
    }


results = []
for label, (arch, size) in VARIANTS.items():
    lr = 1e-3 if "vit" in label else 5e-3
    try:
        results.append(run(label, arch, size, lr))
    except Exception as error:  # keep the other variants
        print(label, "FAILED", repr(error), flush=True)
    Path(f"{OUT}/sweep.json").write_text(json.dumps(results, indent=1))
