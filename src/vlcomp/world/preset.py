"""The world as a data preset: where its files go and the names they are registered under.

The world writes an evaluation set (Visual Genome JSON, a COCO captions JSON and images) and
training corpora in their native formats. ``register`` adds them to the configuration as
ordinary ``eval_sets`` and ``corpora`` entries, so every later rule treats them exactly like
a user's files; only the ground-truth checks (``world.smk``) know where they came from.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .config import parse_world_config

ROOT = "results/world"
EVAL_DIR = f"{ROOT}/eval"
MANIFEST = f"{ROOT}/manifest.json"
EVAL_SETS = {"vg": "world_vg", "coco": "world_coco"}
CORPUS_GLOB = {"cc12m_tsv": "captions.tsv", "laion_parquet": "part-*.parquet"}
# The world's images are 64 px: CREPE's 40,000 px region minimum would drop every region.
REGIONS = {"min_area": 0}


def corpus_dir(corpus: str) -> str:
    return f"{ROOT}/corpora/{corpus}"


def eval_sets() -> dict[str, dict[str, Any]]:
    images = f"{EVAL_DIR}/images"
    return {
        EVAL_SETS["vg"]: {
            "format": "visual_genome",
            "dir": f"{EVAL_DIR}/vg",
            "images": images,
            "regions": dict(REGIONS),
            "options": {},
            "ground_truth": MANIFEST,
        },
        EVAL_SETS["coco"]: {
            "format": "coco_captions",
            "captions": f"{EVAL_DIR}/coco_captions.json",
            "images": images,
            "regions": {},
            "options": {},
            "ground_truth": MANIFEST,
        },
    }


def corpora(world_cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: {
            "format": entry["format"],
            "inputs": [corpus_dir(name)],
            "options": {"glob": CORPUS_GLOB[entry["format"]]},
            "images": corpus_dir(name),
        }
        for name, entry in world_cfg["corpora"].items()
    }


# Parquet files of a LAION-style scale corpus: LAION-400M ships as 32 files, each
# ingested by a job of its own (files_per_job: 1); CC12M as one TSV, read by one job.
SCALE_LAION_FILES = 4


def scale_files(fmt: str) -> list[str]:
    """The files a scale corpus of this format is written to (``build.scale_corpus``)."""
    if fmt == "cc12m_tsv":
        return ["captions.tsv"]
    return [f"part-{k:05d}.parquet" for k in range(SCALE_LAION_FILES)]


def scale_corpora(world_cfg: Mapping[str, Any], n_captions: int) -> dict[str, dict[str, Any]]:
    """The scale benchmark's corpora: ``n_captions`` split over the world's corpora, each in
    its corpus's format and caption style (``build.scale_corpus``), named ``scale_<corpus>``;
    a corpus of several files is ingested a file per job."""
    share = n_captions // len(world_cfg["corpora"])
    out = {}
    for name, entry in world_cfg["corpora"].items():
        files = scale_files(entry["format"])
        out[f"scale_{name}"] = {
            "format": entry["format"],
            "inputs": [f"{ROOT}/scale/{name}/{file}" for file in files],
            "options": {},
            "n_captions": share,
            "files_per_job": 1 if len(files) > 1 else None,
        }
    return out


def register(config: dict[str, Any]) -> dict[str, Any]:
    """Validate the world section and add its eval sets and corpora; raise ValueError
    ("key: message") on a semantic error or a name the user already took."""
    parse_world_config(config["world"])
    out = copy.deepcopy(config)
    for section, entries in (("eval_sets", eval_sets()), ("corpora", corpora(config["world"]))):
        clashes = sorted(set(entries) & set(out[section]))
        if clashes:
            raise ValueError(f"{section}: names also registered by the world: {clashes}")
        out[section] = {**entries, **out[section]}
    return out


def shared_settings(world_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """What the evaluation set and the manifest depend on: the scene settings and every
    corpus's hold-out, not a corpus's size, caption style or seed (changing those reruns
    only that corpus's chain)."""
    out = {k: copy.deepcopy(v) for k, v in world_cfg.items() if k != "corpora"}
    out["corpora"] = {
        name: {"format": entry["format"], "n_images": 1, "holdout": entry.get("holdout", {})}
        for name, entry in world_cfg["corpora"].items()
    }
    return out


def corpus_settings(world_cfg: Mapping[str, Any], corpus: str) -> dict[str, Any]:
    """What one corpus's files depend on: the scene settings and that corpus's entry."""
    out = {k: copy.deepcopy(v) for k, v in world_cfg.items() if k != "corpora"}
    out["corpora"] = {corpus: copy.deepcopy(world_cfg["corpora"][corpus])}
    return out
