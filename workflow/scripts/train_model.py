import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.train.jobs import train_model_job

with job_log(snakemake.log[0]) as log:
    train_model_job(
        model_key=snakemake.wildcards.model,
        model_entry=snakemake.params.model,
        caption_shards=list(snakemake.input.captions),
        images_root=snakemake.params.images,
        checkpoint=snakemake.output.checkpoint,
        history=snakemake.output.history,
        info=snakemake.output.info,
        rejected_out=snakemake.output.rejected,
        log=log,
        hard_negatives=snakemake.input.get("negatives"),
        start_from=snakemake.input.get("start_from"),
    )
