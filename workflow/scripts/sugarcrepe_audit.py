import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.refine.audit import sugarcrepe_audit
from vlcomp.refine.scores import resolve_scorer

with job_log(snakemake.log[0]) as log:
    settings = snakemake.params.refine
    scorers = [resolve_scorer(spec) for spec in snakemake.params.specs.values()]
    sugarcrepe_audit(
        snakemake.input.sugarcrepe,
        scorers,
        Path(snakemake.output[0]).parent,
        grid=settings["grid"],
        seed=settings["seed"],
        normalisation=tuple(settings["normalisation"]),
        scores_cache=snakemake.params.cache,
    )
    log(f"wrote {snakemake.output[0]}")
