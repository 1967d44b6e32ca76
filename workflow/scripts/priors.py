import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.refine.jobs import prior_stage

with job_log(snakemake.log[0]) as log:
    settings = snakemake.params.priors
    prior_stage(
        snakemake.input.candidates,
        snakemake.input.scores,
        settings["lm_scorer"],
        snakemake.input.predictions,
        table_out=snakemake.output.table,
        heatmap_out=snakemake.output.heatmap,
        figure_png=snakemake.output.png,
        figure_pdf=snakemake.output.pdf,
        bins=settings["bins"],
        min_count=settings["min_count"],
        log=log,
    )
    log(f"wrote {snakemake.output.table}")
