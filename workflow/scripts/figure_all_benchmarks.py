import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.report.all_benchmarks import plot_all_benchmarks

with job_log(snakemake.log[0]) as log:
    plot_all_benchmarks(
        list(snakemake.input),
        snakemake.output.png,
        snakemake.output.pdf,
        model_corpus=snakemake.params.model_corpus,
    )
    log(f"wrote {snakemake.output.png} and {snakemake.output.pdf}")
