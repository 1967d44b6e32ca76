import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.report.figures import plot_world_retrieval
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    plot_world_retrieval(snakemake.input[0], snakemake.output.png, snakemake.output.pdf)
    log(f"wrote {snakemake.output.png} and {snakemake.output.pdf}")
