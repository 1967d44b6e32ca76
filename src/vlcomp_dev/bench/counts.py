"""Throughput of the counting stage (``count_shard`` on every shard + ``merge_counts``)
against a Python loop over rows that states the same definitions.

``python -m vlcomp_dev.bench.counts GRAPHS WORK_DIR [--rows N] [--shards K] [--vocab V]``
replicates a graphs table (parser output or a world ``truth.parquet``) to N rows in K
shards, then counts and merges them in a fresh one-thread child process, whose peak
resident memory (``VmHWM``) is therefore that of the counting alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from vlcomp.counts.counts import TABLE_KEYS, TABLES, count_shard, merge_counts, read_counts
from vlcomp.counts.units import MAX_NODES
from vlcomp.io import write_parquet
from vlcomp.text import normalise_or_none


def python_loop_counts(graphs: Path) -> dict[str, pl.DataFrame]:
    """The counting stage as a plain Python loop over rows: the baseline of the benchmark
    and an independent statement of the definitions (``counts.units``) that tests compare
    the columnar path with. Same tables, same order."""
    atoms: Counter[tuple[str, str]] = Counter()
    compounds: Counter[tuple[str, tuple[str, ...]]] = Counter()
    bindings: Counter[tuple[str, str, bool]] = Counter()
    names = pq.ParquetFile(graphs).schema_arrow.names
    columns = ["objects", "attributes", "relations", *(["ok"] if "ok" in names else [])]
    for row in pl.read_parquet(graphs, columns=columns).iter_rows(named=True):
        if not row.get("ok", True):
            continue
        row_atoms: set[tuple[str, str]] = set()
        row_compounds: set[tuple[str, tuple[str, ...]]] = set()
        nodes: dict[int, tuple[str, str]] = {}
        for obj in row["objects"] or []:
            if obj is None:
                continue
            atom = normalise_or_none(obj["lemma"]) or normalise_or_none(obj["name"])
            if atom is None:
                continue
            row_atoms.add(("object", atom))
            idx = obj["idx"]
            if idx is not None and 0 <= idx < MAX_NODES:
                nodes.setdefault(idx, (atom, atom))
        values: dict[int, set[str]] = {}
        for attr in row["attributes"] or []:
            value = normalise_or_none(attr["value"]) if attr else None
            if value is None:
                continue
            row_atoms.add(("attribute", value))
            if attr["obj"] in nodes:
                row_compounds.add(("attr_obj", (value, nodes[attr["obj"]][0])))
                values.setdefault(attr["obj"], set()).add(value)
        for rel in row["relations"] or []:
            pred = normalise_or_none(rel["pred"]) if rel else None
            if pred is None:
                continue
            row_atoms.add(("relation", pred))
            if rel["subj"] in nodes and rel["obj"] in nodes:
                parts = (nodes[rel["subj"]][0], pred, nodes[rel["obj"]][0])
                row_compounds.add(("obj_rel_obj", parts))
        atoms.update(row_atoms)
        compounds.update(row_compounds)
        bindings.update(
            {(v, nodes[idx][1], len(vs) == 1) for idx, vs in values.items() for v in vs}
        )
    pairs = {(a, o) for a, o, _ in bindings}
    tables = {
        "atoms": pl.DataFrame(
            [(k, v, n) for (k, v), n in atoms.items()], schema=TABLES["atoms"], orient="row"
        ),
        "compounds": pl.DataFrame(
            [(k, list(p), n) for (k, p), n in compounds.items()],
            schema=TABLES["compounds"],
            orient="row",
        ),
        "bindings": pl.DataFrame(
            [(a, o, bindings[(a, o, True)], bindings[(a, o, False)]) for a, o in pairs],
            schema=TABLES["bindings"],
            orient="row",
        ),
    }
    return {name: frame.sort(TABLE_KEYS[name]) for name, frame in tables.items()}


def replicate_graphs(
    truth: Path, n_rows: int, n_shards: int, out_dir: Path, vocab: int = 1
) -> list[Path]:
    """Write ``n_rows`` graph rows (copies of ``truth``) as ``n_shards`` Parquet shards.

    Caption ids are made unique; with ``vocab`` > 1 object names and lemmas get one of
    ``vocab`` suffixes (by copy), multiplying the vocabulary like a real corpus's long tail.
    Rows carry ``parser`` and ``ok`` (every 100th row not ok) like parser output, and are
    written as the parse stage writes them (dictionary-encoded).
    """
    base = pl.read_parquet(truth).select("caption_id", "objects", "attributes", "relations")
    copies = -(-n_rows // base.height)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    per_shard = -(-n_rows // n_shards)
    frames = []
    for k in range(copies):
        frame = base.with_columns(pl.col("caption_id") + f"#{k}")
        if vocab > 1:
            suffix = f"{k % vocab}" if k % vocab else ""
            frame = frame.with_columns(
                pl.col("objects").list.eval(
                    pl.struct(
                        pl.element().struct.field("idx"),
                        pl.element().struct.field("name") + suffix,
                        pl.element().struct.field("lemma") + suffix,
                    )
                )
            )
        frames.append(frame)
    table = pl.concat(frames).head(n_rows).with_row_index("_i")
    table = table.with_columns(
        pl.lit("bench/world-truth").alias("parser"), (pl.col("_i") % 100 != 99).alias("ok")
    ).drop("_i")
    for s in range(n_shards):
        path = out_dir / f"shard-{s:04d}.parquet"
        write_parquet(table.slice(s * per_shard, per_shard), path, dictionary=True)
        paths.append(path)
    return paths


def _count_and_merge(shards: list[Path], work_dir: Path) -> dict[str, float]:
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    partials = []
    for shard in shards:
        part = work_dir / "partial" / shard.stem
        count_shard(shard, part)
        partials.append(part)
    t1 = time.perf_counter()
    merge_counts(partials, work_dir / "merged")
    t2 = time.perf_counter()
    cpu = time.process_time() - cpu0
    return {"count_s": t1 - t0, "merge_s": t2 - t1, "cpu_s": cpu, "peak_rss_mib": peak_rss_mib()}


def peak_rss_mib() -> float:
    """Peak resident memory of this process: VmHWM, which starts afresh at exec (ru_maxrss
    keeps the high-water mark of the process that forked it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(shards: list[Path], work_dir: Path) -> dict[str, float]:
    """Count + merge in a fresh process (one thread), whose peak RSS is the counting's."""
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "vlcomp_dev.bench.counts", "--child", str(work_dir),
               *map(str, shards)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"counting child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def benchmark_counting(
    graphs: Path,
    work_dir: Path,
    n_rows: int = 2_000_000,
    n_shards: int = 4,
    vocab: int = 1,
    baseline_rows: int = 50_000,
) -> dict[str, Any]:
    """Counting throughput on one core: the columnar ``count_shard`` + ``merge_counts`` on
    ``n_rows`` rows (copies of ``graphs``) in ``n_shards`` shards, in a child process, and
    on a quarter of them (peak memory must not grow with the rows); the Python loop
    (``python_loop_counts``) on ``baseline_rows`` of them. Both give the same tables."""
    work_dir = Path(work_dir)
    shards = replicate_graphs(Path(graphs), n_rows, n_shards, work_dir / "graphs", vocab)
    small = replicate_graphs(Path(graphs), n_rows // 4, n_shards, work_dir / "small", vocab)
    full = _child(shards, work_dir / "full")
    quarter = _child(small, work_dir / "quarter")
    baseline_rows = min(baseline_rows, n_rows)
    baseline = replicate_graphs(Path(graphs), baseline_rows, 1, work_dir / "baseline", vocab)[0]
    start, cpu0 = time.perf_counter(), time.process_time()
    reference = python_loop_counts(baseline)
    loop_s, loop_cpu = time.perf_counter() - start, time.process_time() - cpu0
    count_shard(baseline, work_dir / "baseline_counts")
    ours = read_counts(work_dir / "baseline_counts")
    agree = all(ours[t].equals(reference[t]) for t in TABLES)
    if not agree:
        raise AssertionError("columnar counts differ from the Python loop's")
    total = full["count_s"] + full["merge_s"]
    rate = n_rows / total if total else float("inf")
    loop_rate = baseline_rows / loop_s
    return {
        "rows": n_rows,
        "shards": n_shards,
        "vocab": vocab,
        **full,
        "captions_per_s": rate,
        "captions_per_cpu_s": n_rows / full["cpu_s"],
        "python_loop_rows": baseline_rows,
        "python_loop_captions_per_s": loop_rate,
        "python_loop_captions_per_cpu_s": baseline_rows / loop_cpu,
        "ours_vs_python_loop": rate / loop_rate,
        "same_tables_as_python_loop": agree,
        "quarter_rows": n_rows // 4,
        "quarter_peak_rss_mib": quarter["peak_rss_mib"],
        "quarter_captions_per_s": (n_rows // 4) / (quarter["count_s"] + quarter["merge_s"]),
        "threads": 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("paths", type=Path, nargs="+", help="graphs file and work dir")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=1)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_count_and_merge(args.paths, args.child)))
        return 0
    graphs, work_dir = args.paths
    result = benchmark_counting(graphs, work_dir, args.rows, args.shards, args.vocab)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
