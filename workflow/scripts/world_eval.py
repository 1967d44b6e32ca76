import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.world import build_eval_set

with job_log(snakemake.log[0]) as log:
    out_dir = Path(snakemake.output.coco).parent
    build_eval_set(snakemake.params.world, out_dir)
    log(f"wrote the evaluation set to {out_dir}")
