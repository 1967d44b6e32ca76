import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.negatives.llm.review import apply_review_job

with job_log(snakemake.log[0]) as log:
    apply_review_job(
        snakemake.input.candidates,
        snakemake.input.decisions or None,  # none: everything generated is kept
        snakemake.output.candidates,
        snakemake.output.summary,
        log,
    )
