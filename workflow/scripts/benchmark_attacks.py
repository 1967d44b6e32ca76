import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.attacks import benchmark_attacks

# A seeded synthetic 1+1 table at each size (config throughput.attack_pairs), the
# certificate's default settings (about five minutes on 2 CPU cores at the default sizes).
with job_log(snakemake.log[0]) as log:
    result = benchmark_attacks(snakemake.params.sizes, repeats=3, log=log)
    write_json(result, snakemake.output[0])
