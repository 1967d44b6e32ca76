import os
import sys

os.environ["OMP_NUM_THREADS"] = "1"  # per-core numbers
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

import polars as pl

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.parse import throughput

with job_log(snakemake.log[0]) as log:
    texts = pl.concat(pl.read_parquet(p, columns=["text"]) for p in snakemake.input.captions)
    texts = texts["text"].to_list()
    if snakemake.input.factual:
        texts += pl.read_csv(snakemake.input.factual, columns=["caption"])["caption"].to_list()
    n = snakemake.params.captions
    result = throughput(
        texts[:n],
        model=snakemake.params.model,
        sng_limit=max(1, n // 5),
        processes=snakemake.threads,
        echo=log,
    )
    write_json(result, snakemake.output[0])
