import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.crossover import crossover_job
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    crossover_job(
        predictions=snakemake.params.tables,
        model_corpus=snakemake.params.model_corpus,
        settings=snakemake.params.settings,
        alpha=snakemake.params.alpha,
        out=snakemake.output[0],
        log=log,
    )
