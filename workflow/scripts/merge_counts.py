import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.counts.counts import merge_counts
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    merge_counts([Path(p).parent for p in snakemake.input], Path(snakemake.output[0]).parent)
    log(f"merged {len(snakemake.input)} partial counts")
