import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.jobs import world_productivity

with job_log(snakemake.log[0]) as log:
    world_productivity(
        snakemake.params.world,
        snakemake.input[0],
        snakemake.params.settings,
        snakemake.params.seed,
        snakemake.output.candidates,
        snakemake.output.boxes,
        snakemake.output.failures,
        snakemake.output.summary,
        log,
    )
