import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.negatives.llm.review import review_sheet_job

with job_log(snakemake.log[0]) as log:
    review_sheet_job(
        snakemake.input.candidates,
        snakemake.input.get("boxes"),  # optional: benchmarks without boxes show whole images
        snakemake.input.images,
        snakemake.output[0],
        snakemake.wildcards.benchmark,
        log,
    )
