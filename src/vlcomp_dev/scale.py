"""The scale run: ingest -> parse -> count of large corpora through the workflow's own rules.

``run_scale`` writes a config naming the given corpora (and nothing to evaluate), runs
Snakemake on it in a work directory, and reads the ``benchmark:`` records every job of
those rules leaves (wall seconds, CPU seconds, peak resident memory). From them it gives
captions per second of each stage per job-second (one core per job: the rules run one
process each) and extrapolates the wall time of a corpus of N captions on P cores.

The extrapolation assumes what the workflow does with a corpus of F files ingested a file
per job (``files_per_job: 1``; F = 1 is one job reading the whole corpus): F ingest jobs
in waves over the cores, each at the measured captions per ingest CPU-second; when F > 1,
one gather job per shard at the measured mean CPU time of a gather job; then shards of the
measured size (``captions_per_shard``) parsed and counted in parallel, one job per core,
each taking the measured mean CPU time of a shard job (start-up included; what a core of
its own gives, on a busy machine too), then one merge: its start-up (the merge job's time
less an in-process re-merge of the same partial tables) plus a read and sum per shard
(that re-merge's time per partial table). Cluster queueing and file-system contention are
not modelled. Run it with the shard size you will use.

    python -m vlcomp_dev.scale --help
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

STAGES = ("ingest", "gather", "parse", "count", "merge")
# Where each stage's rules leave their benchmark records, under the work directory (a
# corpus ingested in parts: one record per part, and one per gathered shard).
_RECORDS = {
    "ingest": ("benchmarks/ingest/{corpus}.tsv", "benchmarks/ingest/{corpus}/*.tsv"),
    "gather": ("benchmarks/ingest/{corpus}/gather/*.tsv",),
    "parse": ("benchmarks/parse/{corpus}/*.tsv",),
    "count": ("benchmarks/atoms/{corpus}/partial/*.tsv",),
    "merge": ("benchmarks/atoms/{corpus}/merge.tsv",),
}
# Stages whose jobs only some corpora have (those ingested in parts).
_OPTIONAL = frozenset({"gather"})
# Corpora whose wall time the report extrapolates: (name, captions, cores, files as the
# corpus ships: CC12M and YFCC15M one TSV each, LAION-400M 32 Parquet files).
TARGETS = (
    ("CC12M on 32 cores", 12_000_000, 32, 1),
    ("YFCC15M on 32 cores", 15_000_000, 32, 1),
    ("LAION-400M on 512 cores (SLURM)", 400_000_000, 512, 32),
)


def scale_config(
    corpora: Mapping[str, Mapping[str, Any]],
    parse: Mapping[str, Any],
    captions_per_shard: int,
) -> dict[str, Any]:
    """The inner run's config: the corpora (format, inputs, n_captions, files_per_job),
    the parse settings, shards of ``captions_per_shard`` captions, no benchmark, no model."""
    return {
        "corpora": {
            name: {
                "format": entry["format"],
                "inputs": [str(Path(p).resolve()) for p in entry["inputs"]],
                "options": dict(entry.get("options", {})),
                "n_captions": int(entry["n_captions"]),
                "files_per_job": entry.get("files_per_job"),
            }
            for name, entry in corpora.items()
        },
        "ingest": {"captions_per_shard": int(captions_per_shard)},
        "parse": dict(parse),
        "benchmarks": {},
        "evaluate": {"models": []},
    }


def _records(path_glob: Path) -> list[dict[str, float]]:
    rows = []
    for path in sorted(path_glob.parent.glob(path_glob.name)):
        with path.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                rows.append({k: float(v) if v not in ("", "NA", "-") else 0.0
                             for k, v in row.items() if k != "h:m:s"})  # fmt: skip
    return rows


def stage_numbers(work_dir: Path, corpora: Mapping[str, int]) -> dict[str, dict[str, float]]:
    """Per stage, over all corpora: jobs, captions, job seconds, CPU seconds, captions per
    job-second and the largest peak RSS of one job (MiB). The gather stage is there only
    when some corpus was ingested in parts."""
    out: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        jobs: list[dict[str, float]] = []
        captions = 0
        for corpus, n in corpora.items():
            found = [
                row
                for pattern in _RECORDS[stage]
                for row in _records(work_dir / pattern.format(corpus=corpus))
            ]
            if not found and stage not in _OPTIONAL:
                raise FileNotFoundError(f"{work_dir}: no benchmark record of {stage} for {corpus}")
            if found:
                jobs += found
                captions += n
        if not jobs:
            continue
        seconds = sum(j["s"] for j in jobs)
        cpu = sum(j.get("cpu_time", 0.0) for j in jobs)
        out[stage] = {
            "jobs": len(jobs),
            "captions": captions,
            "job_seconds": seconds,
            "cpu_seconds": cpu,
            "captions_per_job_second": captions / seconds if seconds else math.inf,
            "captions_per_cpu_second": captions / cpu if cpu else math.inf,
            "max_job_seconds": max(j["s"] for j in jobs),
            "peak_rss_mib": max(j.get("max_rss", 0.0) for j in jobs),
        }
    return out


def _job_seconds(stage: Mapping[str, float]) -> float:
    """A job of the stage on a core of its own: its mean CPU seconds (wall seconds where
    the records have none); the wall seconds of a run on a busy machine would overstate it."""
    return (stage["cpu_seconds"] or stage["job_seconds"]) / max(1, stage["jobs"])


def extrapolate(
    stages: Mapping[str, Mapping[str, float]],
    n_captions: int,
    cores: int,
    captions_per_shard: int,
    files: int = 1,
) -> dict[str, float]:
    """Wall seconds of each stage, and in all, for one corpus of ``n_captions`` in
    ``files`` files (one ingest job each) on ``cores`` cores, in shards of the measured
    size (see the module docstring). Without a measured gather stage the corpus is
    ingested by one job."""
    if "gather" not in stages:
        files = 1
    shards = max(1, math.ceil(n_captions / captions_per_shard))
    waves = math.ceil(shards / cores)  # rounds of parallel shard jobs
    ingest = stages["ingest"]
    per_cpu_second = ingest.get("captions_per_cpu_second", math.inf)
    if not math.isfinite(per_cpu_second):
        per_cpu_second = ingest["captions_per_job_second"]
    merge = stages["merge"]
    wall = {
        "ingest": math.ceil(files / cores) * (n_captions / files) / per_cpu_second,
        "gather": waves * _job_seconds(stages["gather"]) if files > 1 else 0.0,
        "parse": waves * _job_seconds(stages["parse"]),
        "count": waves * _job_seconds(stages["count"]),
        # A merge job: its start-up, then a read and sum of every partial table.
        "merge": merge["startup_seconds"] + merge["seconds_per_partial"] * shards,
    }
    return {**wall, "total": sum(wall.values()), "shards": shards, "files": files}


def merge_costs(work_dir: Path, corpora: list[str], merge: Mapping[str, float]) -> dict[str, float]:
    """A merge job's start-up seconds and its seconds per partial table: the corpora's
    partial counts merged again in this process (no start-up), timed."""
    from vlcomp.counts.counts import merge_counts

    seconds, partials = 0.0, 0
    for corpus in corpora:
        parts = sorted((work_dir / "results" / "counts" / corpus / "partial").iterdir())
        start = time.perf_counter()
        merge_counts(parts, work_dir / "remerged" / corpus)
        seconds += time.perf_counter() - start
        partials += len(parts)
    shutil.rmtree(work_dir / "remerged")
    return {
        "seconds_per_partial": seconds / partials,
        "startup_seconds": max(0.0, (merge["job_seconds"] - seconds) / max(1, merge["jobs"])),
    }


def run_scale(
    corpora: Mapping[str, Mapping[str, Any]],
    work_dir: Path,
    *,
    snakefile: Path,
    cores: int,
    parse: Mapping[str, Any],
    captions_per_shard: int,
    echo: Any = print,
) -> dict[str, Any]:
    """Run ingest -> parse -> count on ``corpora`` with Snakemake in ``work_dir``; return
    the per-stage numbers and the extrapolations."""
    work_dir = Path(work_dir)
    if work_dir.exists():
        shutil.rmtree(work_dir)  # a fresh run: every job runs and leaves its record
    work_dir.mkdir(parents=True)
    config_path = work_dir / "config.yaml"
    config_path.write_text(yaml.safe_dump(scale_config(corpora, parse, captions_per_shard)))
    targets = [f"results/counts/{name}/atoms.parquet" for name in corpora]
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(snakefile),
        "--directory", str(work_dir), "--configfile", str(config_path),
        "--cores", str(cores), *targets,
    ]  # fmt: skip
    echo("scale run: " + " ".join(command))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"scale run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    sizes = {name: int(entry["n_captions"]) for name, entry in corpora.items()}
    stages = stage_numbers(work_dir, sizes)
    stages["merge"].update(merge_costs(work_dir, list(corpora), stages["merge"]))
    measured = sum(sizes.values())
    result: dict[str, Any] = {
        "captions": measured,
        "corpora": {
            name: {"format": e["format"], "captions": sizes[name]} for name, e in corpora.items()
        },  # fmt: skip
        "cores": cores,
        "captions_per_shard": captions_per_shard,
        "parse_settings": {
            k: parse[k] for k in ("backend", "model", "n_process", "batch_size") if k in parse
        },  # fmt: skip
        "wall_s": wall,
        "load_average_after": os.getloadavg()[0],
        "captions_per_s_end_to_end": measured / wall,
        "stages": stages,
        "extrapolations": {
            name: {
                "captions": n,
                "cores": p,
                **extrapolate(stages, n, p, captions_per_shard, files),
            }
            for name, n, p, files in TARGETS
        },  # fmt: skip
    }
    for stage, numbers in stages.items():
        echo(
            f"  {stage:7s} {numbers['jobs']:4.0f} jobs  "
            f"{numbers['captions_per_job_second']:12,.0f} captions/s per job  "
            f"peak RSS {numbers['peak_rss_mib']:8,.0f} MiB"
        )
    for name, numbers in result["extrapolations"].items():
        echo(f"  {name}: {numbers['total'] / 3600:.2f} h")
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work_dir", type=Path)
    parser.add_argument("--corpus", nargs=4, action="append", required=True,
                        metavar=("NAME", "FORMAT", "FILE", "N_CAPTIONS"))  # fmt: skip
    parser.add_argument("--snakefile", type=Path, default=Path("Snakefile"))
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--captions-per-shard", type=int, default=500_000)
    args = parser.parse_args(argv)
    corpora = {name: {"format": fmt, "inputs": [path], "n_captions": int(n)}
               for name, fmt, path, n in args.corpus}  # fmt: skip
    result = run_scale(
        corpora,
        args.work_dir,
        snakefile=args.snakefile,
        cores=args.cores,
        parse={},
        captions_per_shard=args.captions_per_shard,
    )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
