import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.jobs import score_benchmark
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    score_benchmark(
        snakemake.input.candidates,
        snakemake.params.specs,
        snakemake.output[0],
        snakemake.params.cache,
        log,
    )
