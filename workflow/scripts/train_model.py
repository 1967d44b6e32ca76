import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.evaluate.jobs import train_world_model

with job_log(snakemake.log[0]) as log:
    train_world_model(
        model_entry=snakemake.params.model,
        corpus_dir=snakemake.input.corpus,
        corpus_format=snakemake.params.corpus_format,
        checkpoint=snakemake.output.checkpoint,
        history=snakemake.output.history,
        info=snakemake.output.info,
        log=log,
    )
