import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.evaluate import run_family_benchmark

# Tiny random models (seconds on one CPU thread): 24 crops of 8 JPEGs, 5 candidates each.
SETTINGS = {"n_items": 24, "negatives": 4, "device": "cpu", "threads": 1, "repeats": 3}

with job_log(snakemake.log[0]) as log:
    result = run_family_benchmark(**SETTINGS, log=log)
    write_json(result, snakemake.output[0])
