import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.blind.jobs import AttackSettings
from vlcomp.joblog import job_log
from vlcomp.report.figures_crepe import metrics_markdown
from vlcomp.settings import settings_from

attack = settings_from(AttackSettings, snakemake.params.attack_bootstrap, "attacks")
with job_log(snakemake.log[0]) as log:
    metrics_markdown(
        list(snakemake.input.tables),
        snakemake.output[0],
        crossover=snakemake.input.get("crossover"),
        benchmarks=snakemake.params.benchmarks,
        oracles=snakemake.params.oracles,
        attacks=list(snakemake.input.attacks),
        predictions=list(snakemake.input.predictions),
        decisions=list(snakemake.input.decisions),
        attack_resamples=attack.bootstrap_resamples,
        attack_seed=attack.seed,
    )
    log(f"wrote {snakemake.output[0]}")
