import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.negatives.llm.jobs import llm_productivity_job

with job_log(snakemake.log[0]) as log:
    llm_productivity_job(
        vg_dir=snakemake.input.vg,
        productivity_settings=snakemake.params.settings,
        settings=snakemake.params.llm,
        seed=snakemake.params.seed,
        cache_dir=snakemake.params.cache,
        template_candidates=snakemake.input.candidates,
        template_items=snakemake.input.boxes,
        candidates_out=snakemake.output.generated,
        items_out=snakemake.output.boxes,
        rejections_out=snakemake.output.rejections,
        stats_out=snakemake.output.stats,
        log=log,
        parse_settings=snakemake.params.parse,
        template_summary=snakemake.input.summary,
        summary_out=snakemake.output.summary,
        context_length=snakemake.params.context_length,
    )
