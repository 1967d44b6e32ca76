import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.blind.jobs import AttackSettings, debias_stage
from vlcomp.joblog import job_log
from vlcomp.settings import settings_from

params, output = snakemake.params, snakemake.output
with job_log(snakemake.log[0]) as log:
    debias_stage(
        snakemake.input.candidates,
        scores=params.scores,
        generators=params.generators,
        part=params.part,
        candidates_out=output.candidates,
        types_out=output.types,
        dropped_out=output.dropped,
        settings=settings_from(AttackSettings, params.settings, "attacks"),
        log=log,
    )
    log(f"wrote {output.candidates}")
