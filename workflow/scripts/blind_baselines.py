import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.refine.jobs import blind_stage

with job_log(snakemake.log[0]) as log:
    blind_stage(snakemake.input.candidates, snakemake.input.scores, snakemake.output[0])
    log(f"wrote {snakemake.output[0]}")
