import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.retrieval_sets import evaluate_candidate_sets

with job_log(snakemake.log[0]) as log:
    evaluate_candidate_sets(
        model_key=snakemake.wildcards.model,
        model_entry=snakemake.params.model,
        checkpoint=snakemake.params.checkpoint,
        settings=snakemake.params.settings,
        candidates=snakemake.input.candidates,
        images_dir=snakemake.input.images,
        cache_dir=snakemake.params.cache,
        predictions_out=snakemake.output.predictions,
        metrics_out=snakemake.output.metrics,
        boxes=snakemake.input.boxes,
        splits=snakemake.input.get("splits"),
        split_column=snakemake.params.get("split_column", "split"),
        log=log,
    )
