import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.report.figures_crepe import metrics_markdown

with job_log(snakemake.log[0]) as log:
    metrics_markdown(
        list(snakemake.input.tables),
        snakemake.output[0],
        crossover=snakemake.input.get("crossover"),
        benchmarks=snakemake.params.benchmarks,
        oracles=snakemake.params.oracles,
        attacks=list(snakemake.input.attacks),
    )
    log(f"wrote {snakemake.output[0]}")
