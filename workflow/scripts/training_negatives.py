import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.negatives.jobs import training_negatives_job

with job_log(snakemake.log[0]) as log:
    training_negatives_job(
        caption_shards=list(snakemake.input.captions),
        graph_shards=list(snakemake.input.graphs),
        seed=snakemake.params.seed,
        corpus=snakemake.wildcards.corpus,
        out=snakemake.output[0],
        log=log,
    )
