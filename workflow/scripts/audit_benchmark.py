import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.audit import audit_job
from vlcomp.joblog import job_log

# input: candidates, scores (one or more), counts (files of the reference corpus's merged
# counts folder), optional refined (refined candidates) and metrics (model metric tables);
# output: report (<out>/audit.md); params: reference (name), parse, optional min_count.


def paths(value):
    return [value] if isinstance(value, str) else list(value or [])


with job_log(snakemake.log[0]) as log:
    inputs, params = snakemake.input, snakemake.params
    audit_job(
        snakemake.wildcards.benchmark,
        inputs.candidates,
        paths(inputs.scores),
        inputs.get("refined") or None,
        str(Path(inputs.counts[0]).parent),
        params.reference,
        params.parse,
        paths(inputs.get("metrics")),
        str(Path(snakemake.output.report).parent),
        log,
        min_count=params.get("min_count") or 1,
        certificate=inputs.get("certificate") or None,
    )
