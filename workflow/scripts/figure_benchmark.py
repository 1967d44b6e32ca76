import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.report.jobs import plot_benchmark

with job_log(snakemake.log[0]) as log:
    plot_benchmark(
        snakemake.params.kind, snakemake.input[0], snakemake.output.png, snakemake.output.pdf
    )
    log(f"wrote {snakemake.output.png} and {snakemake.output.pdf}")
