import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp_dev.bench.attacks import SIZES, benchmark_attacks

# A seeded synthetic 1+1 table at each of SIZES pairs, the certificate's default settings
# (a minute or so on 2 CPU cores). Other sizes: python -m vlcomp_dev.bench.attacks --help.
with job_log(snakemake.log[0]) as log:
    result = benchmark_attacks(SIZES, repeats=3, log=log)
    write_json(result, snakemake.output[0])
