import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.refine.jobs import refine_stage

with job_log(snakemake.log[0]) as log:
    settings = snakemake.params.refine
    refine_stage(
        snakemake.input.candidates,
        snakemake.input.scores,
        tuple(snakemake.params.scorers),
        items_out=snakemake.output.refine_items,
        refined_out=snakemake.output.refined,
        counts_out=snakemake.output.counts,
        accuracy_out=snakemake.output.accuracy,
        figure_png=snakemake.output.png,
        figure_pdf=snakemake.output.pdf,
        grid=settings["grid"],
        seed=settings["seed"],
        normalisation=tuple(settings["normalisation"]),
        log=log,
    )
    log(f"wrote {snakemake.output.refined}")
