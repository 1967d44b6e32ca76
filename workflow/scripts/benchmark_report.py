import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp_dev.bench.report import write_report

with job_log(snakemake.log[0]) as log:
    results = {Path(p).stem: Path(p) for p in snakemake.input}
    write_report(results, Path(snakemake.output[0]))
    log(f"wrote {snakemake.output[0]}")
