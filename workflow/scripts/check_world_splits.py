import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world.checks.groundtruth import check_world_splits

with job_log(snakemake.log[0]) as log:
    report = check_world_splits(
        Path(snakemake.input.eval_items),
        Path(snakemake.input.splits),
        Path(snakemake.input.manifest),
        snakemake.wildcards.corpus,
        Path(snakemake.output[0]),
    )
    log(str(report.as_dict()))
