import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

import tempfile
from pathlib import Path

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.counts import benchmark_counting

with job_log(snakemake.log[0]) as log, tempfile.TemporaryDirectory() as work:
    result = benchmark_counting(Path(snakemake.input[0]), Path(work), snakemake.params.rows)
    log(str(result))
    write_json(result, snakemake.output[0])
