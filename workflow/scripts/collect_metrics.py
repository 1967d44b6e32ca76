import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.jobs import collect_metrics
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    collect_metrics(
        list(snakemake.input),
        snakemake.output.parquet,
        snakemake.output.csv,
        kind=snakemake.params.kind,
    )
    log(f"collected {len(snakemake.input)} metric tables")
