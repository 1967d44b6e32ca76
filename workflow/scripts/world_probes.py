import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.world.checks.probes import probes_job

with job_log(snakemake.log[0]) as log:
    models = snakemake.params.models
    probes_job(
        models=models,
        checkpoints=dict(zip(models, snakemake.input.checkpoints, strict=True)),
        train_scenes=f"{snakemake.input.corpus}/scenes.parquet",
        train_images=f"{snakemake.input.corpus}/images",
        test_scenes=snakemake.input.eval_scenes,
        test_images=snakemake.input.eval_images,
        candidates=snakemake.input.candidates[0],
        manifest=snakemake.input.manifest,
        settings=snakemake.params.settings,
        out=snakemake.output.table,
        report=snakemake.output.report,
        log=log,
    )
