import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_csv_copy
from vlcomp.joblog import job_log
from vlcomp.negatives.jobs import productivity_job

with job_log(snakemake.log[0]) as log:
    productivity_job(
        snakemake.input.vg,
        snakemake.params.settings,
        snakemake.params.seed,
        snakemake.wildcards.benchmark,
        snakemake.output.candidates,
        snakemake.output.boxes,
        snakemake.output.failures,
        snakemake.output.summary,
        log,
        context_length=snakemake.params.context_length,
    )
    write_csv_copy(snakemake.output.summary, snakemake.output.summary_csv)
