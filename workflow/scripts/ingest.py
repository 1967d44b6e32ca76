import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.ingest import ingest
from vlcomp.io import write_json
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    fmt, inputs, options = snakemake.params.source
    summary = ingest(
        fmt,
        [Path(p) for p in inputs],
        snakemake.params.corpus,
        Path(snakemake.output.rejected).parent,
        snakemake.params.n_shards,
        options,
        progress=log,
        part=snakemake.wildcards.get("part"),
    )
    write_json(summary.as_dict(), snakemake.output.summary)
