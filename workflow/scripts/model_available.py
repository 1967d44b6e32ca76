import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.models.loading import availability_job

with job_log(snakemake.log[0]) as log:
    availability_job(snakemake.wildcards.model, snakemake.params.model, snakemake.output[0], log)
