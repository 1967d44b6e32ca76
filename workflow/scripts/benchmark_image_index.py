import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.splits import run_benchmark

# 1,000 photo-like JPEGs, the unit the report speaks in; other sizes and thread counts:
# python -m vlcomp_dev.bench.splits --help.
with job_log(snakemake.log[0]) as log:
    result = run_benchmark(n_images=1000, threads=snakemake.threads, repeats=3, log=log)
    write_json(result, snakemake.output[0])
