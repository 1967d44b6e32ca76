import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.blind.jobs import AttackSettings, attacks_stage
from vlcomp.joblog import job_log
from vlcomp.settings import settings_from

params, output = snakemake.params, snakemake.output
with job_log(snakemake.log[0]) as log:
    attacks_stage(
        params.parts,
        params.shape,
        debiased=params.debiased,
        scores=params.scores,
        generators=params.generators,
        embeddings=snakemake.input.embeddings,
        table_out=output.table,
        predictions_out=output.predictions,
        figure_png=output.png,
        figure_pdf=output.pdf,
        settings=settings_from(AttackSettings, params.settings, "attacks"),
        log=log,
    )
    log(f"wrote {output.table}")
