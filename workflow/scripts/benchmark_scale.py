import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.scale import run_scale

with job_log(snakemake.log[0]) as log:
    if not snakemake.params.corpora:
        raise ValueError("scale benchmark: no corpus gives n_captions (config `corpora`)")
    result = run_scale(
        snakemake.params.corpora,
        Path("results/benchmarks/scale"),
        snakefile=Path(snakemake.params.snakefile),
        cores=snakemake.threads,
        parse=snakemake.params.parse,
        captions_per_shard=snakemake.params.captions_per_shard,
        echo=log,
    )
    write_json(result, snakemake.output[0])
