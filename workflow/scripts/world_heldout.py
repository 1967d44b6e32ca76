import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.world.checks.heldout import heldout_metrics_job

with job_log(snakemake.log[0]) as log:
    heldout_metrics_job(
        predictions=list(snakemake.input.predictions),
        holdout=snakemake.input.holdout,
        training_corpus=snakemake.params.training_corpus,
        settings=snakemake.params.settings,
        out=snakemake.output.metrics,
        log=log,
        predictions_out=snakemake.output.get("predictions"),
    )
