import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world import write_manifest

with job_log(snakemake.log[0]) as log:
    write_manifest(snakemake.params.world, Path(snakemake.output[0]))
    log(f"wrote {snakemake.output[0]}")
