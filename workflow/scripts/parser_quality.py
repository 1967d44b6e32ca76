import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.parse.quality import parser_quality

with job_log(snakemake.log[0]) as log:
    parser_quality(
        snakemake.input.factual or None,
        # a gold entry is a graph table, or a folder holding one as truth.parquet
        [g if g.endswith(".parquet") else f"{g}/truth.parquet" for g in snakemake.input.gold],
        snakemake.output.table,
        backend=snakemake.params.parse["backend"],
        model=snakemake.params.parse["model"],
        with_sng=snakemake.params.with_sng,
        limit=snakemake.params.limit,
        batch_size=snakemake.params.parse["batch_size"],
        gold_predicate_map=snakemake.params.parse["predicate_map"],
        gold_strip_verbs=snakemake.params.parse["strip_verbs"],
        log=log,
    )
