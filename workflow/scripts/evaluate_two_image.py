import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.jobs import evaluate_two_image_job
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    evaluate_two_image_job(
        model_key=snakemake.wildcards.model,
        model_entry=snakemake.params.model,
        checkpoint=snakemake.params.checkpoint,
        settings=snakemake.params.settings,
        items=snakemake.input.two_image,  # "items" is a reserved Namedlist name
        image_index=snakemake.input.images,
        cache_dir=snakemake.params.cache,
        predictions_out=snakemake.output.predictions,
        metrics_out=snakemake.output.metrics,
        excluded_out=snakemake.output.excluded,
        log=log,
        shape=snakemake.params.shape,
    )
