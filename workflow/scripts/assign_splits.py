import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.splits.assign import assign_splits

with job_log(snakemake.log[0]) as log:
    assign_splits(
        Path(snakemake.input.eval_items),
        Path(snakemake.input.counts[0]).parent,
        Path(snakemake.output.splits),
        Path(snakemake.output.summary),
        snakemake.wildcards.corpus,
        min_count=snakemake.params.min_count,
    )
    log(f"wrote {snakemake.output.splits}")
