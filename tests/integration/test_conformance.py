"""The workflow on files written from the datasets' published formats, **with default
settings**: Visual Genome v1.2 files (region graphs without attributes, inflected
predicates; ``tests/fixtures/conformance``) over real photographs from the scikit-image
wheel, and FACTUAL's real VG region captions (``../shared/data/factual_sg/train.csv``) as
the training corpus. No grid, min_count or filter is set: what a new user gets.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from PIL import Image

from tests.conftest import SHARED, needs_shared
from tests.integration.test_user_data import save_random_checkpoint
from tests.integration.test_workflow import snakemake

pytestmark = [pytest.mark.integration, needs_shared(SHARED / "data" / "factual_sg" / "train.csv")]

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "conformance"
FACTUAL_TRAIN = SHARED / "data" / "factual_sg" / "train.csv"
PHOTOS = {
    1: "astronaut.png",
    2: "chelsea.png",
    3: "coffee.png",
    5: "motorcycle_left.png",
    6: "horse.png",
}


def conformance_config(root: Path) -> dict:
    from skimage import data as skimage_data  # real photographs shipped in the wheel

    vg = root / "vg"
    shutil.copytree(FIX / "vg_v1_2", vg)
    sample_dir = Path(skimage_data.__file__).parent
    for image_id, name in PHOTOS.items():
        target = vg / "images" / "VG_100K" / f"{image_id}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        with Image.open(sample_dir / name) as photo:
            photo.convert("RGB").save(target, quality=95)
    checkpoint = root / "model" / "random_init.pt"
    save_random_checkpoint(checkpoint)
    return {
        "eval_sets": {
            "vg": {"format": "visual_genome", "dir": str(vg), "images": str(vg / "images")},
        },
        "corpora": {"factual": {"format": "text_csv", "inputs": [str(FACTUAL_TRAIN)]}},
        "models": {
            "mine": {
                "open_clip": "vlcomp-world-vit",
                "checkpoint": str(checkpoint),
                "training_corpora": ["factual"],
            }
        },
        "benchmarks": {
            "my_crepe": {"kind": "crepe_systematicity", "eval_set": "vg", "corpora": ["factual"]},
            "my_pairs": {"kind": "pairs", "eval_set": "vg", "corpora": ["factual"]},
        },
        "evaluate": {"models": ["mine"]},
        # MiniLM's index over all 37,000 captions would take minutes here: a sample
        "scorers": {"minilm": {"sample": 2000}},
        "parser_quality": {"factual_csv": None, "limit": 20},
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("conformance")
    workdir = root / "work"
    workdir.mkdir()
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump(conformance_config(root / "files")))
    result = snakemake(workdir, config=config, timeout=1500)
    assert result.returncode == 0, result.stderr[-6000:]
    return workdir


def test_items_keep_their_attributes(run: Path) -> None:
    items = pl.read_parquet(run / "results/eval_sets/vg/items.parquet")
    summary = json.loads((run / "results/eval_sets/vg/items_summary.json").read_text())
    assert items.height == 8
    assert summary["items_with_attributes"] == 7 == (items["attributes"].list.len() > 0).sum()
    assert summary["rejected_by_reason"] == {"invalid_box": 1}
    assert summary["warnings"] == []


def test_no_unseen_atom_from_inflection(run: Path) -> None:
    """Every predicate and name of the fixture is in FACTUAL in some inflection ("wear",
    "have", "sit on", "park on", "man"): none may make an item UA."""
    splits = pl.read_parquet(run / "results/splits/vg/factual.parquet")
    unseen = {(a["kind"], a["value"]) for atoms in splits["unseen_atoms"].to_list() for a in atoms}
    inflected = {"wearing", "has", "sitting on", "parked on", "wheels", "eyes", "ON", "Cup"}
    assert not {value for _, value in unseen} & inflected, unseen
    assert not {v for kind, v in unseen if kind == "relation"}, unseen
    # every atom of these regions occurs in FACTUAL: no item may be UA at all
    assert (splits["crepe_split"] == "UA").sum() == 0, unseen


def test_bindsplit_sees_the_bindings(run: Path) -> None:
    splits = pl.read_parquet(run / "results/splits/vg/factual.parquet")
    with_binding = splits.filter(pl.col("pos_bindings").list.len() > 0)
    assert with_binding.height == 7
    assert with_binding["split_loose"].null_count() == 0
    assert set(with_binding["split_loose"]) <= {"seen", "mixed", "unseen"}


def test_reports_name_the_benchmark_and_count_what_was_lost(run: Path) -> None:
    summary = (run / "results/metrics/summary.md").read_text()
    assert "## my_crepe" in summary and "## my_pairs" in summary
    assert "crepe_systematicity" in summary  # the kind, in its own column
    # the region whose box leaves its image, by reason, for each benchmark on the set
    rejected = [line for line in summary.splitlines() if "invalid_box" in line]
    assert len(rejected) == 2 and all(line.rstrip().endswith("| 1 |") for line in rejected)
