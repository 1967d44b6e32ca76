import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.ingest.parts import merge_parts
from vlcomp.io import write_json
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]):
    summary = merge_parts(
        [Path(p) for p in snakemake.input.summaries],
        [Path(p) for p in snakemake.input.rejected],
        Path(snakemake.output.rejected),
    )
    write_json(summary.as_dict(), snakemake.output.summary)
