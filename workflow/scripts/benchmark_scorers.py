import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.joblog import job_log
from vlcomp_dev.bench.scorers import main

with job_log(snakemake.log[0]):
    sugarcrepe = sorted(Path(snakemake.input.sugarcrepe, "unrefined").glob("*.json"))
    main(
        [
            "--train", snakemake.input.train,
            "--train-column", snakemake.params.column,
            "--eval", *map(str, sugarcrepe),
            "--n", str(snakemake.params.texts), "--threads", "1",
            "--out", snakemake.output[0],
            *(["--train-limit", str(snakemake.params.train_captions)]
              if snakemake.params.train_captions else []),
        ]
    )  # fmt: skip
