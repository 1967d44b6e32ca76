import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

import polars as pl

from vlcomp.io import write_parquet
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    column = snakemake.params.column
    frame = pl.read_csv(snakemake.input[0], columns=[column]).rename({column: "text"})
    write_parquet(frame.drop_nulls("text"), snakemake.output[0])
    log(f"{frame.height} captions from {snakemake.input[0]}")
