import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.parse.quality import parser_quality

with job_log(snakemake.log[0]) as log:
    parser_quality(
        snakemake.input.factual or None,
        [snakemake.input.world],
        snakemake.output.table,
        backend=snakemake.params.parse["backend"],
        limit=snakemake.params.limit,
        batch_size=snakemake.params.parse["batch_size"],
        log=log,
    )
