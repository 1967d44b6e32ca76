"""The scale run: ingest -> parse -> count of large corpora through the workflow's own rules.

``run_scale`` writes a config naming the given corpora (and nothing to evaluate), runs
Snakemake on it in a work directory, and reads the ``benchmark:`` records every job of
those rules leaves (wall seconds, CPU seconds, peak resident memory). From them it gives
captions per second of each stage per job-second (one core per job: the rules run one
process each) and extrapolates the wall time of a corpus of N captions on P cores.

The extrapolation assumes what the workflow does: one ingest job per corpus (it reads the
corpus's files in order, so it does not spread over cores; its time scales with the
captions), then shards of the measured size (``captions_per_shard``) parsed and counted in
parallel, one job per core, each taking the measured mean CPU time of a shard job
(start-up included; what a core of its own gives, on a busy machine too), then one merge:
its start-up (the merge job's time less an in-process re-merge of the same partial tables)
plus a read and sum per shard (that re-merge's time per partial table). Cluster queueing
and file-system contention are not modelled. Run it with the shard size you will use.

    python -m vlcomp.scale --help
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

STAGES = ("ingest", "parse", "count", "merge")
# Where each stage's rules leave their benchmark records, under the work directory.
_RECORDS = {
    "ingest": "benchmarks/ingest/{corpus}.tsv",
    "parse": "benchmarks/parse/{corpus}/*.tsv",
    "count": "benchmarks/atoms/{corpus}/partial/*.tsv",
    "merge": "benchmarks/atoms/{corpus}/merge.tsv",
}
# Corpora whose wall time the report extrapolates: (name, captions, cores).
TARGETS = (
    ("CC12M on 32 cores", 12_000_000, 32),
    ("YFCC15M on 32 cores", 15_000_000, 32),
    ("LAION-400M on 512 cores (SLURM)", 400_000_000, 512),
)


def scale_config(
    corpora: Mapping[str, Mapping[str, Any]],
    parse: Mapping[str, Any],
    captions_per_shard: int,
) -> dict[str, Any]:
    """The inner run's config: the corpora (format, inputs, n_captions), the parse
    settings, shards of ``captions_per_shard`` captions, no benchmark, no model."""
    return {
        "corpora": {
            name: {
                "format": entry["format"],
                "inputs": [str(Path(p).resolve()) for p in entry["inputs"]],
                "options": dict(entry.get("options", {})),
                "n_captions": int(entry["n_captions"]),
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
    job-second and the largest peak RSS of one job (MiB)."""
    out: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        jobs: list[dict[str, float]] = []
        captions = 0
        for corpus, n in corpora.items():
            found = _records(work_dir / _RECORDS[stage].format(corpus=corpus))
            if not found:
                raise FileNotFoundError(f"{work_dir}: no benchmark record of {stage} for {corpus}")
            jobs += found
            captions += n
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


def extrapolate(
    stages: Mapping[str, Mapping[str, float]],
    n_captions: int,
    cores: int,
    captions_per_shard: int,
) -> dict[str, float]:
    """Wall seconds of each stage, and in all, for one corpus of ``n_captions`` on
    ``cores`` cores, in shards of the measured size (see the module docstring)."""
    shards = max(1, math.ceil(n_captions / captions_per_shard))
    waves = math.ceil(shards / cores)  # rounds of parallel shard jobs
    # A shard job on a core of its own: its CPU seconds (its wall seconds where the record
    # has none); the wall seconds of a run on a busy machine would overstate it.
    per_shard = {
        s: (stages[s]["cpu_seconds"] or stages[s]["job_seconds"]) / max(1, stages[s]["jobs"])
        for s in ("parse", "count")
    }
    merge = stages["merge"]
    wall = {
        "ingest": n_captions / stages["ingest"]["captions_per_job_second"],
        "parse": waves * per_shard["parse"],
        "count": waves * per_shard["count"],
        # A merge job: its start-up, then a read and sum of every partial table.
        "merge": merge["startup_seconds"] + merge["seconds_per_partial"] * shards,
    }
    return {**wall, "total": sum(wall.values()), "shards": shards}


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
            name: {"captions": n, "cores": p, **extrapolate(stages, n, p, captions_per_shard)}
            for name, n, p in TARGETS
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
