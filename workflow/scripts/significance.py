import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.stats import pairwise_significance
from vlcomp.io import write_csv_copy
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    pairwise_significance(
        list(snakemake.input),
        snakemake.output.tests,
        snakemake.output.flips,
        alpha=snakemake.params.alpha,
        per_family=True,
        split_pairs=None,  # every pair of the splits present, in canonical order
        log=log,
    )
    write_csv_copy(snakemake.output.tests, snakemake.output.tests_csv)
