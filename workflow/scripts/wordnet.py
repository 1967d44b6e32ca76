import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp.wordnet_setup import check_wordnet, ensure_wordnet

with job_log(snakemake.log[0]) as log:
    nltk_data = Path(snakemake.output[0]).parents[2]
    origin = ensure_wordnet(nltk_data)
    log(f"WordNet at {nltk_data} ({origin}); {check_wordnet(nltk_data)} noun synsets")
