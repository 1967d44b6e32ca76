import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.io import write_csv_copy
from vlcomp.joblog import job_log
from vlcomp.negatives.llm.jobs import llm_pairs_job

with job_log(snakemake.log[0]) as log:
    llm_pairs_job(
        eval_items=snakemake.input.eval_items,
        settings=snakemake.params.llm,
        seed=snakemake.params.seed,
        benchmark=snakemake.wildcards.benchmark,
        cache_dir=snakemake.params.cache,
        candidates_out=snakemake.output.generated,
        boxes_out=snakemake.output.boxes,
        rejections_out=snakemake.output.rejections,
        stats_out=snakemake.output.stats,
        log=log,
        parse_settings=snakemake.params.parse,
        families=snakemake.params.families or None,
        max_items=snakemake.params.max_items,
        context_length=snakemake.params.context_length,
    )
    write_csv_copy(snakemake.output.rejections, snakemake.output.rejections_csv)
