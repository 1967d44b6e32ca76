import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.parse.jobs import parse_captions

with job_log(snakemake.log[0]) as log:
    settings = snakemake.params.parse
    parse_captions(
        snakemake.input[0],
        snakemake.output[0],
        backend=settings["backend"],
        n_process=settings["n_process"],
        batch_size=settings["batch_size"],
        predicate_map=settings["predicate_map"],
        model=settings["model"],
        numerals=settings["numerals"],
        strip_verbs=settings["strip_verbs"],
        progress=log,
    )
