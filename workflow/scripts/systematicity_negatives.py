import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

import json
import os
from pathlib import Path

from vlcomp.io import write_csv_copy
from vlcomp.joblog import job_log
from vlcomp.negatives.systematicity import systematicity_negatives

with job_log(snakemake.log[0]) as log:
    os.environ["NLTK_DATA"] = json.loads(Path(snakemake.input.wordnet).read_text())["nltk_data"]
    systematicity_negatives(
        Path(snakemake.input.eval_items),
        Path(snakemake.input.atoms),
        Path(snakemake.input.ngram),
        Path(snakemake.output.candidates),
        Path(snakemake.output.failures),
        snakemake.params.settings,
        snakemake.params.seed,
        out_regions=Path(snakemake.output.regions),
        assignments=Path(snakemake.input.splits),
        benchmark=snakemake.wildcards.benchmark,
        context_length=snakemake.params.context_length,
    )
    write_csv_copy(snakemake.output.failures, snakemake.output.failures_csv)
    log(f"wrote {snakemake.output.candidates}")
