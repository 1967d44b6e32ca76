import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.scorers.trained import embed_minilm_queries

with job_log(snakemake.log[0]) as log:
    embed_minilm_queries(snakemake.input[0], snakemake.output[0], log)
