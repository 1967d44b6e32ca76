import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp.wordnet_setup import check_wordnet, ensure_wordnet

with job_log(snakemake.log[0]) as log:
    nltk_data = Path(snakemake.params.nltk_data)
    origin = ensure_wordnet(nltk_data)
    version = check_wordnet(nltk_data)
    write_json(
        {"nltk_data": str(nltk_data), "version": version, "origin": origin}, snakemake.output[0]
    )
    log(f"WordNet {version} at {nltk_data} ({origin})")
