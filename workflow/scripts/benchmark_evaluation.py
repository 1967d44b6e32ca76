import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.evaluate import run_benchmark

# Small on purpose (seconds on 2 CPU cores): the tiny world model, 60 crops of 20 JPEGs.
# ViT-B-32, a GPU, other precisions: python -m vlcomp_dev.bench.evaluate --help.
SETTINGS = {
    "model": "vlcomp-world-vit",
    "n_items": 60,
    "device": "cpu",
    "precision": "fp32",
    "threads": 1,
    "workers": 1,
    "batch_size": 256,
    "repeats": 3,
}

with job_log(snakemake.log[0]) as log:
    result = run_benchmark(**SETTINGS, log=log)
    write_json(result, snakemake.output[0])
