import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.world.checks.heldout import heldout_retrieval_job

with job_log(snakemake.log[0]) as log:
    heldout_retrieval_job(
        ranks=list(snakemake.input.ranks),
        holdout=snakemake.input.holdout,
        training_corpus=snakemake.params.training_corpus,
        settings=snakemake.params.settings,
        out=snakemake.output.metrics,
        log=log,
    )
