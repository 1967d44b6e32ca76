import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world import write_predicate_map

with job_log(snakemake.log[0]) as log:
    write_predicate_map(Path(snakemake.output[0]))
    log(f"wrote {snakemake.output[0]}")
