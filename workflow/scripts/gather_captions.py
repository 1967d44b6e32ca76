import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.ingest.parts import gather_shard
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    rows = gather_shard([Path(p) for p in snakemake.input], Path(snakemake.output[0]))
    log(f"{snakemake.output[0]}: {rows} captions from {len(snakemake.input)} parts")
