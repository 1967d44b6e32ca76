import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.evaluate.composition import composition_job
from vlcomp.joblog import job_log

with job_log(snakemake.log[0]) as log:
    composition_job(
        predictions=list(snakemake.input.predictions),
        items=snakemake.input.eval_items,
        boxes=snakemake.params.boxes,
        benchmark=snakemake.wildcards.table,
        composition_out=snakemake.output.composition,
        matched_out=snakemake.output.matched,
        markdown_out=snakemake.output.markdown,
        pairs=snakemake.input.get("pairs") or None,
        model_corpus=snakemake.params.model_corpus,
        settings=snakemake.params.settings,
        novelty_out=snakemake.output.novelty,
        log=log,
    )
