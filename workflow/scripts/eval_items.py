import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.splits.items import eval_items_job

with job_log(snakemake.log[0]) as log:
    eval_items_job(
        snakemake.params.format,
        snakemake.params.source,
        snakemake.params.parse,
        snakemake.output.eval_items,
        snakemake.output.rejected,
        log,
        summary_out=snakemake.output.summary,
    )
