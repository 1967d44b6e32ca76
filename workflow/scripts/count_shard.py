import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.counts.counts import count_shard
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    count_shard(Path(snakemake.input[0]), Path(snakemake.output[0]).parent)
    log(f"counted {snakemake.input[0]}")
