import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.export.jobs import export_benchmark_job
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    export_benchmark_job(
        snakemake.params.format,
        snakemake.wildcards.benchmark,
        snakemake.input.candidates,
        snakemake.input.get("boxes"),
        snakemake.input.image_index,
        snakemake.params.config_section,
        snakemake.output[0],  # the folder is replaced whole
        log,
    )
