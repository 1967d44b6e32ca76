import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.jobs import embed_eval_set

with job_log(snakemake.log[0]) as log:
    embed_eval_set(
        model_key=snakemake.wildcards.model,
        model_entry=snakemake.params.model,
        checkpoint=snakemake.params.checkpoint,
        settings=snakemake.params.evaluate,
        images_dir=snakemake.input.images,
        truth=snakemake.input.truth,
        cache_dir=snakemake.params.cache,
        images_out=snakemake.output.images,
        texts_out=snakemake.output.texts,
        log=log,
    )
