"""The all-benchmarks preset (config/presets/all_benchmarks.yaml) run on every importer's
fixture (tests/fixtures/importers/, copied to a temporary folder) with one tiny random
open_clip model: every imported benchmark is evaluated, an absent one is skipped with its
line, and summary.md and the figure put every benchmark side by side.

The fixtures name images that are not shipped: each image they reference is generated (a
flat-colour picture large enough for every region box on it) under the eval set's images
folder, from the same import the workflow runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from PIL import Image

from tests.integration.test_user_data import save_random_checkpoint
from tests.integration.test_workflow import snakemake
from vlcomp.importers.jobs import (
    IMAGE_SELECTION_FORMATS,
    TWO_IMAGE_FORMATS,
    import_benchmark_job,
    import_two_image_job,
)
from vlcomp.splits.items import referenced_image_ids

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PRESET = REPO / "config" / "presets" / "all_benchmarks.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "importers"
# eval set of the preset -> its fixture (file or folder under FIXTURES)
FIXTURE_OF = {
    "sugarcrepe": "sugarcrepe/refined",
    "sugarcrepe_pp": "sugarcrepe_pp",
    "aro_vg": "aro",
    "crepe_files": "crepe",
    "winoground": "winoground/examples.jsonl",
    "bivlc": "bivlc/bivlc_test.jsonl",
    "vismin": "vismin/vismin_bench.csv",
    "valse": "valse",
    "vl_checklist": "vl_checklist",
    "cola": "cola/COLA_multiobjects_matching_benchmark.json",
    "colorswap": "colorswap/test.json",
    "mmvp_vlm": "mmvp_vlm/Questions.csv",
    "eqben": "eqben/eqben_subset_10percent_final.json",
    "svo_probes": "svo_probes/svo_probes.csv",
}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
# One eval set of each shape is present (candidates, two positives, two images, image
# selection); the others point at missing files and are skipped with their line, as on a
# machine that holds only some sets. Every importer's records are checked by its unit tests;
# VLCOMP_ALL_BENCHMARKS=1 runs the preset on every fixture (about 11 min on 2 cores).
PRESENT = (
    tuple(FIXTURE_OF)
    if os.environ.get("VLCOMP_ALL_BENCHMARKS") == "1"
    else ("valse", "sugarcrepe_pp", "cola", "svo_probes")
)


def _copy_fixture(name: str, root: Path) -> Path:
    source = FIXTURES / FIXTURE_OF[name]
    target = root / name / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    return target


def _write_images(fmt: str, source: dict, folder: Path, scratch: Path) -> int:
    """Generate every image the eval set's import references; returns how many."""
    scratch.mkdir(parents=True)
    extent: dict[str, int] = {}
    if fmt in (*TWO_IMAGE_FORMATS, *IMAGE_SELECTION_FORMATS):
        import_two_image_job(fmt, source, "b", str(scratch / "items.parquet"),
                             str(scratch / "rejected.parquet"), log=lambda line: None)  # fmt: skip
        references = [scratch / "items.parquet"]
    else:
        import_benchmark_job(fmt, source, "b", str(scratch / "items.parquet"),
                             str(scratch / "boxes.parquet"), str(scratch / "rejected.parquet"),
                             log=lambda line: None)  # fmt: skip
        references = [scratch / "items.parquet"]
        boxes = pl.read_parquet(scratch / "boxes.parquet").join(
            pl.read_parquet(scratch / "items.parquet").select("item_id", "image").unique(),
            on="item_id",
        )
        for row in boxes.drop_nulls("x").iter_rows(named=True):
            size = max(row["x"] + row["width"], row["y"] + row["height"])
            extent[row["image"]] = max(extent.get(row["image"], 0), size)
    ids = referenced_image_ids(references)
    for image_id in ids:
        name = image_id if image_id.lower().endswith(IMAGE_SUFFIXES) else f"{image_id}.png"
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shade = int(hashlib.sha256(image_id.encode()).hexdigest()[:6], 16)
        colour = (shade >> 16 & 255, shade >> 8 & 255, shade & 255)
        Image.new("RGB", (max(64, extent.get(image_id, 0) + 1),) * 2, colour).save(path)
    return len(ids)


def preset_on_fixtures(root: Path) -> dict:
    raw = yaml.safe_load(PRESET.read_text())
    for name, entry in raw["eval_sets"].items():
        if name not in PRESENT:
            entry["files"] = [str(root / "nowhere" / name / Path(FIXTURE_OF[name]).name)]
            entry["images"] = str(root / "nowhere" / name)
            continue
        entry["files"] = [str(_copy_fixture(name, root / "files"))]
        entry["images"] = str(root / "images" / name)
        source = {"files": entry["files"], **entry.get("options", {})}
        assert _write_images(entry["format"], source, Path(entry["images"]),
                             root / "scratch" / name), name  # fmt: skip
    # one benchmark whose files are not there: skipped with a line, the rest still run
    raw["eval_sets"]["absent_set"] = {
        "format": "svo_probes",
        "files": [str(root / "nowhere" / "svo_probes.csv")],
        "images": str(root / "nowhere"),
        "optional": True,
    }
    raw["benchmarks"]["absent"] = {"kind": "imported", "eval_set": "absent_set"}
    checkpoint = root / "model" / "random_init.pt"
    save_random_checkpoint(checkpoint)
    raw["models"] = {"tiny": {"open_clip": "vlcomp-world-vit", "checkpoint": str(checkpoint)}}
    raw["evaluate"] = {
        "models": ["tiny"],
        "bootstrap_resamples": 50,
        "batch_size": 32,
        "threads": 1,
    }
    return raw


@pytest.fixture(scope="module")
def preset_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("all_benchmarks")
    workdir = root / "work"
    workdir.mkdir()
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump(preset_on_fixtures(root)))
    started = time.perf_counter()
    # the two outputs that need every benchmark's import and evaluation (not the
    # per-benchmark figures)
    targets = ("results/metrics/summary.md", "results/figures/all_benchmarks.png")
    result = snakemake(workdir, *targets, config=config, timeout=1500)
    print(f"all-benchmarks preset on the fixtures: {time.perf_counter() - started:.0f} s")
    assert result.returncode == 0, result.stderr[-6000:]
    return workdir, result.stderr


def test_absent_benchmark_is_skipped_with_its_line(preset_run):
    workdir, stderr = preset_run
    assert "skipping benchmark 'absent' (eval set 'absent_set'): not found: " in stderr
    assert not (workdir / "results" / "metrics" / "absent.parquet").exists()
    for name in set(FIXTURE_OF) - set(PRESENT):
        assert f"skipping benchmark '{name}' (eval set '{name}'): not found: " in stderr
        assert not (workdir / "results" / "metrics" / f"{name}.parquet").exists()


def test_every_imported_benchmark_is_evaluated(preset_run):
    workdir, _ = preset_run
    for name in PRESENT:
        table = pl.read_parquet(workdir / "results" / "metrics" / f"{name}.parquet")
        assert table.filter(pl.col("model") == "tiny").height, name
        assert table.filter(pl.col("model") == "chance").height, name
        items = pl.read_parquet(
            workdir / "results" / "metrics" / "tiny" / f"{name}_excluded.parquet"
        )
        assert items.height == 0, (name, items.rows()[:3])  # every fixture image was generated


def test_svo_probes_accuracy_per_negative_type(preset_run):
    workdir, _ = preset_run
    table = pl.read_parquet(workdir / "results" / "metrics" / "svo_probes.parquet")
    model = table.filter(pl.col("model") == "tiny", pl.col("split") == "all")
    assert set(model.filter(pl.col("metric") == "accuracy")["family"]) == {
        "subject", "verb", "object",
    }  # fmt: skip
    micro = model.filter(pl.col("metric") == "accuracy_micro").row(0, named=True)
    assert micro["n"] == 5
    predictions = pl.read_parquet(workdir / "results" / "metrics" / "tiny" /
                                  "svo_probes_predictions.parquet")  # fmt: skip
    assert micro["value"] == pytest.approx(predictions["correct"].mean())
    chance = table.filter(pl.col("model") == "chance", pl.col("metric") == "accuracy_micro")
    assert chance["value"].to_list() == [0.5]
    rejected = pl.read_parquet(
        workdir / "results" / "negatives" / "svo_probes" / "rejected.parquet"
    )
    assert rejected.height == 7


def test_one_table_and_one_figure_over_every_benchmark(preset_run):
    workdir, _ = preset_run
    summary = (workdir / "results" / "metrics" / "summary.md").read_text()
    section = summary.split("## All benchmarks")[1].split("\n## ")[0]
    print(section)
    header = next(line for line in section.splitlines() if line.startswith("| model |"))
    row = next(line for line in section.splitlines() if line.startswith("| tiny |"))
    for name in yaml.safe_load(PRESET.read_text())["benchmarks"]:
        assert (f"| {name} " in header) == (name in PRESENT), name
    assert "absent" not in header
    assert row.count("|") == header.count("|") and "—" not in row
    assert "svo_probes accuracy (chance 0.500)" in header
    assert (workdir / "results" / "figures" / "all_benchmarks.png").stat().st_size > 0
