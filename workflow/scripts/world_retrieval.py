import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.jobs import world_retrieval

with job_log(snakemake.log[0]) as log:
    world_retrieval(
        model_key=snakemake.wildcards.model,
        images=snakemake.input.images,
        texts=snakemake.input.texts,
        holdout=snakemake.input.holdout,
        training_corpus=snakemake.params.training_corpus,
        ks=snakemake.params.recall_at,
        metrics_out=snakemake.output.metrics,
        ranks_out=snakemake.output.ranks,
        log=log,
    )
