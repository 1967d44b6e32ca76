import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world import build_corpus

with job_log(snakemake.log[0]) as log:
    build_corpus(snakemake.params.world, snakemake.wildcards.corpus, Path(snakemake.output[0]))
    log(f"wrote corpus {snakemake.wildcards.corpus} to {snakemake.output[0]}")
