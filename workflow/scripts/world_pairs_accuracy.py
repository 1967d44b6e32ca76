import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.jobs import evaluate_pairs

with job_log(snakemake.log[0]) as log:
    evaluate_pairs(
        model_key=snakemake.wildcards.model,
        model_entry=snakemake.params.model,
        checkpoint=snakemake.params.checkpoint,
        settings=snakemake.params.evaluate,
        candidates=snakemake.input.candidates,
        images_dir=snakemake.input.images,
        holdout=snakemake.input.holdout,
        training_corpus=snakemake.params.training_corpus,
        cache_dir=snakemake.params.cache,
        predictions_out=snakemake.output.predictions,
        metrics_out=snakemake.output.metrics,
        log=log,
    )
