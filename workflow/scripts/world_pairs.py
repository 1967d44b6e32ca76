import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.negatives.world_pairs import world_pairs_job

with job_log(snakemake.log[0]) as log:
    world_pairs_job(
        world_cfg=snakemake.params.world,
        truth=snakemake.input.truth,
        scenes=snakemake.input.scenes,
        seed=snakemake.params.seed,
        candidates_out=snakemake.output.candidates,
        failures_out=snakemake.output.failures,
    )
    log(f"wrote {snakemake.output.candidates}")
