import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.ingest import eval_items_from_vg
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    summary = eval_items_from_vg(
        Path(snakemake.input[0]),
        Path(snakemake.output.eval_items),
        Path(snakemake.output.rejected),
        snakemake.params.filters,
    )
    log(str(summary))
