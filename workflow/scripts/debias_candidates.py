import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.refine.jobs import AttackSettings, debias_stage
from vlcomp.settings import settings_from

settings, output = snakemake.params.settings, snakemake.output
with job_log(snakemake.log[0]) as log:
    debias_stage(
        snakemake.input[0],
        candidates_out=output.candidates,
        types_out=output.types,
        dropped_out=output.dropped,
        settings=settings_from(AttackSettings, settings, "attacks"),
        log=log,
    )
    log(f"wrote {output.candidates}")
