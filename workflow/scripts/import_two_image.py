import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.importers.jobs import import_two_image_job
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    import_two_image_job(
        snakemake.params.format,
        snakemake.params.source,
        snakemake.wildcards.benchmark,
        snakemake.output.two_image,
        snakemake.output.rejected,
        log,
    )
