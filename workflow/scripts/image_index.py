import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.splits.items import image_index_job

with job_log(snakemake.log[0]) as log:
    image_index_job(
        snakemake.params.format,
        snakemake.params.source,
        list(snakemake.input.references),
        snakemake.output[0],
        log,
        cache=snakemake.params.cache,
        threads=snakemake.threads,
    )
