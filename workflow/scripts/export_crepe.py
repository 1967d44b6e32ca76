import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.negatives.crepe_export import export_crepe_csv

with job_log(snakemake.log[0]) as log:
    paths = export_crepe_csv(
        Path(snakemake.input.candidates),
        Path(snakemake.input.regions),
        Path(snakemake.input.splits),
        Path(snakemake.output.summary).parent,
        snakemake.wildcards.corpus,
        summary_out=Path(snakemake.output.summary),
    )
    log(f"wrote {sorted(map(str, paths.values()))}")
