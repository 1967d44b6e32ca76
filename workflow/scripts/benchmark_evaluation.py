import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.bench import run_benchmark
from vlcomp.io import write_json
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    result = run_benchmark(threads=1)
    log(str(result))
    write_json(result, snakemake.output[0])
