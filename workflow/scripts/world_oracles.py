import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.world.checks.oracle_evaluation import oracle_job

with job_log(snakemake.log[0]) as log:
    oracle_job(
        parts=snakemake.params.parts,
        scenes=snakemake.input.scenes,
        world=snakemake.params.world,
        settings=snakemake.params.settings,
        metrics_out=snakemake.output.metrics,
        false_negatives_out=snakemake.output.false_negatives,
        unreadable_out=snakemake.output.unreadable,
        log=log,
    )
