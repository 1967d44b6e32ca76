import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # vlcomp, also in conda envs

from pathlib import Path

from vlcomp.io import write_json
from vlcomp.joblog import job_log
from vlcomp.negatives.crepe_export import export_productivity_csv

with job_log(snakemake.log[0]) as log:
    out_dir = Path(snakemake.output[0]).parent
    written = export_productivity_csv(
        Path(snakemake.input.candidates), Path(snakemake.input.boxes), out_dir
    )
    write_json({name: path.name for name, path in written.items()}, snakemake.output[0])
    log(f"wrote {len(written)} CSV files to {out_dir}")
