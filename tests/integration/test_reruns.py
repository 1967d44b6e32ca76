"""What a config change reruns: moving an imported eval set's image folder reruns the jobs
that look at images (image index, embedding, metrics, figures), not the import or the
text-only jobs after it (scorers, MiniLM queries, blind baselines, refinement).

Every job's outputs are stood in by empty files and marked done (``--touch --forceall``,
which records the jobs' params); a dry run after the change then lists what would rerun.
Nothing is computed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.integration.test_workflow import snakemake

pytestmark = pytest.mark.integration

TEXT_ONLY = {
    "import_benchmark", "import_two_image", "ingest_txt", "parse_shard", "count_shard",
    "merge_counts", "train_scorer", "score_benchmark", "minilm_queries", "blind_baselines",
    "refine_benchmark",
}  # fmt: skip
_JOB_ROW = re.compile(r"^(\w+)\s+(\d+)$")


def write_files(root: Path) -> None:
    for folder in ("photos", "photos_moved", "sugarcrepe", "sugarcrepe_more", "model"):
        (root / folder).mkdir(parents=True)
    pairs = {
        "0": {"filename": "a.png", "caption": "an orange cat", "negative_caption": "a blue cat"},
        "2": {"filename": "b.png", "caption": "a cup of coffee", "negative_caption": "a cup"},
    }
    (root / "sugarcrepe" / "replace_att.json").write_text(json.dumps(pairs))
    (root / "sugarcrepe_more" / "replace_att.json").write_text(json.dumps(pairs))
    wino = {"id": 0, "image_0": "a", "image_1": "b", "caption_0": "a cat",
            "caption_1": "a cup", "tag": "Object", "secondary_tag": "", "num_main_preds": 1,
            "collapsed_tag": "Object"}  # fmt: skip
    (root / "winoground.jsonl").write_text(json.dumps(wino) + "\n")
    captions = [f"a {c} cat next to a {o}" for c in ("red", "blue") for o in ("cup", "tree")]
    (root / "corpus.csv").write_text("caption\n" + "\n".join(captions * 5) + "\n")
    (root / "model" / "weights.pt").write_bytes(b"never read by a dry run")


def config(root: Path, images: str = "photos", files: str = "sugarcrepe") -> dict:
    return {
        "eval_sets": {
            "pairs": {
                "format": "sugarcrepe",
                "files": [str(root / files)],
                "images": str(root / images),
            },
            "wino": {
                "format": "winoground",
                "files": [str(root / "winoground.jsonl")],
                "images": str(root / images),
            },
        },
        "corpora": {"txt": {"format": "text_csv", "inputs": [str(root / "corpus.csv")]}},
        "models": {
            "mine": {"open_clip": "vlcomp-world-vit", "checkpoint": str(root / "model/weights.pt")}
        },
        "benchmarks": {
            "published": {"kind": "imported", "eval_set": "pairs", "corpora": ["txt"]},
            "published_wino": {"kind": "imported", "eval_set": "wino"},
        },
        "evaluate": {"models": ["mine"]},
        "parser_quality": {"factual_csv": None},
    }


def would_run(work: Path, cfg: dict) -> dict[str, int]:
    """Jobs a dry run would run with this config: rule -> count."""
    path = work / "changed.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = snakemake(work, "-n", "--quiet", "rules", config=path)
    assert result.returncode == 0, result.stderr[-4000:]
    if "Nothing to be done" in result.stdout + result.stderr:
        return {}
    stats = result.stdout.split("Job stats:")[1]
    jobs = {}
    for line in stats.splitlines()[3:]:
        match = _JOB_ROW.match(line.strip())
        if match is None or match.group(1) == "total":
            break
        jobs[match.group(1)] = int(match.group(2))
    return jobs


@pytest.fixture(scope="module")
def done(tmp_path_factory) -> tuple[Path, Path]:
    """A working directory in which every job of the base config is marked done."""
    root = tmp_path_factory.mktemp("reruns")
    files, work = root / "files", root / "work"
    write_files(files)
    work.mkdir()
    base = work / "config.yaml"
    base.write_text(yaml.safe_dump(config(files)))
    summary = snakemake(work, "--summary", config=base)
    assert summary.returncode == 0, summary.stderr[-4000:]
    outputs = [line.split("\t")[0] for line in summary.stdout.splitlines()[1:] if line]
    assert len(outputs) > 20
    for output in outputs:
        (work / output).parent.mkdir(parents=True, exist_ok=True)
        (work / output).touch()
    touched = snakemake(work, "--touch", "--forceall", config=base)
    assert touched.returncode == 0, touched.stderr[-4000:]
    assert would_run(work, config(files)) == {}
    return files, work


def test_moving_the_images_reruns_only_image_jobs(done) -> None:
    files, work = done
    jobs = would_run(work, config(files, images="photos_moved"))
    print("rerun after moving the images:", jobs)
    assert {"image_index", "evaluate_benchmark", "evaluate_two_image", "collect_metrics"} <= set(
        jobs
    )
    assert not set(jobs) & TEXT_ONLY, sorted(set(jobs) & TEXT_ONLY)
    assert jobs["image_index"] == 2  # one per eval set


def test_other_benchmark_files_rerun_the_import_and_its_text_jobs(done) -> None:
    files, work = done
    jobs = would_run(work, config(files, files="sugarcrepe_more"))
    assert {"import_benchmark", "score_benchmark", "blind_baselines", "refine_benchmark"} <= set(
        jobs
    )
    assert "import_two_image" not in jobs
