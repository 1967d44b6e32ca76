import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from vlcomp.joblog import job_log
from vlcomp.scorers.trained import train_scorer

with job_log(snakemake.log[0]) as log:
    settings = snakemake.params.settings
    name = snakemake.wildcards.get("scorer", "tiny_gpt2")
    if name == "tiny_gpt2":
        threads = {"threads": snakemake.threads}
        settings = {**settings, "tiny_gpt2": {**settings["tiny_gpt2"], "settings": {
            **threads, **settings["tiny_gpt2"]["settings"]}}}  # fmt: skip
    train_scorer(name, list(snakemake.input), snakemake.output[0], settings, log)
