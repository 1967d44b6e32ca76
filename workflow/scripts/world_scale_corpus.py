import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world.build import scale_corpus

with job_log(snakemake.log[0]) as log:
    path = scale_corpus(
        snakemake.params.world,
        snakemake.wildcards.corpus,
        snakemake.params.n_captions,
        Path(snakemake.output[0]),
    )
    log(f"wrote part of {snakemake.params.n_captions} captions to {path}")
