"""`snakemake benchmarks` on the small world: every benchmark runs, against its baseline,
and one report holds them all, with numbers that match the JSON each benchmark wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, needs_shared
from tests.integration.test_workflow import SMALL_CONFIG, snakemake

pytestmark = pytest.mark.integration
SHARED = REPO.parent / "shared" / "data"
THROUGHPUT = {
    "parser_captions": 200,
    "counting_rows": 20_000,
    "scorer_texts": 100,
    "scorer_train_captions": 300,
    "scale_captions": 2_000,
    "scale_captions_per_shard": 500,
    "attack_pairs": [200, 400, 800],
}


@needs_shared(SHARED / "factual_sg" / "train.csv")
@needs_shared(SHARED / "sugarcrepe" / "unrefined")
def test_benchmarks_write_one_report(tmp_path: Path) -> None:
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    config["throughput"] = THROUGHPUT
    config["audit"] = {
        "training_csv": str(SHARED / "factual_sg" / "train.csv"),
        "sugarcrepe_dir": str(SHARED / "sugarcrepe"),
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "benchmarks", config=tmp_path / "config.yaml", timeout=1200)
    assert result.returncode == 0, result.stderr[-4000:]

    bench = tmp_path / "results" / "benchmarks"
    report = (bench / "report.md").read_text()
    for section in ("## Parsing", "## Counting", "## Text-only scorers", "## Embedding",
                    "## Image index", "## Scale run"):  # fmt: skip
        assert section in report, section

    counting = json.loads((bench / "counting.json").read_text())
    assert counting["same_tables_as_python_loop"] is True
    assert f"| {counting['ours_vs_python_loop']:.1f} |" in report

    parser = json.loads((bench / "parser.json").read_text())
    assert parser["components"] == ["tok2vec", "tagger", "parser"]
    assert f"| {parser['ours_vs_raw']:.2f} |" in report
    assert parser["processes"] == 2 and parser["scaling_captions"] >= 200

    scale = json.loads((bench / "scale.json").read_text())
    stages = scale["stages"]
    assert scale["captions"] == 2_000
    assert set(stages) == {"ingest", "gather", "parse", "count", "merge"}
    # 1,000 captions per world corpus in shards of 500: two parse and two count jobs each;
    # the LAION-style corpus comes in 4 files, ingested a file per job, then gathered.
    assert stages["parse"]["jobs"] == 4 and stages["count"]["jobs"] == 4
    assert stages["ingest"]["jobs"] == 1 + 4 and stages["gather"]["jobs"] == 2
    assert stages["merge"]["jobs"] == 2
    assert all(s["peak_rss_mib"] > 0 for s in stages.values())
    laion = scale["extrapolations"]["LAION-400M on 512 cores (SLURM)"]
    assert laion["shards"] == 800_000 and laion["files"] == 32
    assert laion["total"] > laion["parse"] > 0 and laion["gather"] > 0
    assert scale["extrapolations"]["CC12M on 32 cores"]["gather"] == 0

    evaluation = json.loads((bench / "evaluation.json").read_text())
    assert evaluation["max_abs_similarity_diff"] < 1e-4

    images = json.loads((bench / "image_index.json").read_text())
    assert images["images"] == 1000 and not any(images["unreadable"].values())
    assert f"| {images['ms_per_image']['cold']:.3f} |" in report
