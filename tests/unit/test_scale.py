"""The scale run's bookkeeping: its config is a valid workflow config, benchmark records are
read as Snakemake writes them, and the extrapolation follows the stated model."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlcomp.config import validate_config
from vlcomp_dev.scale import STAGES, extrapolate, scale_config, stage_numbers

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def record(path: Path, seconds: float, rss: float, cpu: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def test_scale_config_is_a_valid_workflow_config(tmp_path: Path) -> None:
    (tmp_path / "c.tsv").write_text("u\ta red circle\n")
    corpora = {"big": {"format": "cc12m_tsv", "inputs": [tmp_path / "c.tsv"], "n_captions": 25}}
    config = validate_config(scale_config(corpora, {"n_process": 1}, 10))
    assert config["corpora"]["big"]["n_captions"] == 25
    assert config["ingest"]["captions_per_shard"] == 10
    assert config["benchmarks"] == {} and config["evaluate"]["models"] == []


def test_stage_numbers_read_every_job_record(tmp_path: Path) -> None:
    # Records as Snakemake's benchmark: directive writes them; the values are data, not
    # timings of this test: what matters is that every job's record is summed per stage.
    record(tmp_path / "benchmarks/ingest/a.tsv", 10, 100, 9)
    parse_records = {"0-of-2": 40, "1-of-2": 60}
    for shard, seconds in parse_records.items():
        record(tmp_path / f"benchmarks/parse/a/{shard}.tsv", seconds, 800 + seconds, seconds)
        record(tmp_path / f"benchmarks/atoms/a/partial/{shard}.tsv", 1, 300, 1)
    record(tmp_path / "benchmarks/atoms/a/merge.tsv", 0.5, 200, 0.5)
    stages = stage_numbers(tmp_path, {"a": 1000})
    parse = stages["parse"]
    assert list(stages) == [s for s in STAGES if s != "gather"]
    # The records' "s" column, aggregated over the stage's jobs: the sum (not the mean) and
    # the largest; rss: the largest job's peak. These are the file's values, not a clock.
    column_s = list(parse_records.values())
    expected = {
        "jobs": 2,
        "job_seconds": sum(column_s),
        "max_job_seconds": max(column_s),
        "captions_per_job_second": 1000 / sum(column_s),
        "peak_rss_mib": 800 + max(column_s),
    }
    assert {key: parse[key] for key in expected} == expected
    assert stages["ingest"]["captions_per_job_second"] == 1000 / 10
    assert "gather" not in stages  # no corpus came in parts
    # corpus b in two files, a job each, then a gather job per shard
    ingest_cpu_column = {"a": 9.0}  # each ingest record's cpu_time value, as written
    for part in ("0-of-2", "1-of-2"):
        ingest_cpu_column[f"b/{part}"] = 2.0
        record(tmp_path / f"benchmarks/ingest/b/{part}.tsv", 3, 90, ingest_cpu_column[f"b/{part}"])
        record(tmp_path / f"benchmarks/ingest/b/gather/{part}.tsv", 0.5, 60, 0.25)
        record(tmp_path / f"benchmarks/parse/b/{part}.tsv", 10, 700, 10)
        record(tmp_path / f"benchmarks/atoms/b/partial/{part}.tsv", 1, 300, 1)
    record(tmp_path / "benchmarks/atoms/b/merge.tsv", 0.5, 200, 0.5)
    both = stage_numbers(tmp_path, {"a": 1000, "b": 500})
    assert list(both) == list(STAGES)
    # The ingest stage aggregates a's record and b's two part records (not the gathers).
    expected_ingest = {
        "jobs": len(ingest_cpu_column),
        "cpu_seconds": sum(ingest_cpu_column.values()),
    }
    assert {key: both["ingest"][key] for key in expected_ingest} == expected_ingest
    assert both["gather"]["jobs"] == 2 and both["gather"]["captions"] == 500
    with pytest.raises(FileNotFoundError, match="no benchmark record of ingest for c"):
        stage_numbers(tmp_path, {"a": 1000, "c": 5})


def test_extrapolation_model() -> None:
    stages = {
        "ingest": {"captions_per_job_second": 100_000.0, "captions_per_cpu_second": 120_000.0},
        "parse": {"job_seconds": 900.0, "cpu_seconds": 500.0, "jobs": 2},
        "count": {"job_seconds": 1.0, "cpu_seconds": 0.0, "jobs": 4},
        "merge": {"startup_seconds": 1.5, "seconds_per_partial": 0.5},
    }
    wall = extrapolate(stages, n_captions=12_000_000, cores=32, captions_per_shard=500_000)
    assert wall["shards"] == 24  # 24 shards fit one wave on 32 cores
    assert wall["ingest"] == pytest.approx(100.0)  # one job reads the whole corpus
    assert wall["gather"] == 0.0
    assert wall["parse"] == pytest.approx(250.0)  # one shard job per core, mean CPU time
    assert wall["count"] == pytest.approx(0.25)  # no CPU time recorded: wall time
    assert wall["merge"] == pytest.approx(1.5 + 0.5 * 24)
    assert wall["total"] == pytest.approx(100 + 250 + 0.25 + 13.5)
    slower = extrapolate(stages, n_captions=12_000_000, cores=8, captions_per_shard=500_000)
    assert slower["parse"] == pytest.approx(3 * 250.0)  # 24 shards in 3 waves of 8
    # Without a measured gather stage, a corpus of many files is still read by one job.
    assert extrapolate(stages, 12_000_000, 8, 500_000, files=6)["files"] == 1
    parted = {**stages, "gather": {"job_seconds": 2.0, "cpu_seconds": 1.0, "jobs": 4}}
    six = extrapolate(parted, 12_000_000, 4, 500_000, files=6)
    assert six["files"] == 6
    assert six["ingest"] == pytest.approx(2 * 2_000_000 / 120_000)  # 6 files, 2 waves of 4
    assert six["gather"] == pytest.approx(6 * 0.25)  # 24 shards in 6 waves of 4
