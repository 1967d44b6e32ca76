"""The workflow on a real SLURM cluster through profiles/slurm.

Runs where `sinfo` answers (CI starts a single-node cluster with
tests/slurm/start_local_slurm.sh). With VLCOMP_REQUIRE_SLURM=1 a missing cluster is a
failure, not a skip, so CI cannot pass without really running it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import polars as pl
import pytest

from tests.conftest import REPO
from tests.integration.test_workflow import SMALL_CONFIG, SNAKEMAKE

pytestmark = pytest.mark.integration


def slurm_available() -> bool:
    if not shutil.which("sinfo"):
        return False
    result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return result.returncode == 0 and any(
        state in result.stdout for state in ("idle", "mix", "alloc")
    )


@pytest.fixture(scope="module")
def cluster():
    if not slurm_available():
        if os.environ.get("VLCOMP_REQUIRE_SLURM") == "1":
            pytest.fail("VLCOMP_REQUIRE_SLURM=1 but no SLURM cluster answers sinfo")
        pytest.skip("no SLURM cluster (run tests/slurm/start_local_slurm.sh as root)")


def test_workflow_runs_through_slurm(cluster, tmp_path):
    command = [
        SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
        "--configfile", str(SMALL_CONFIG), "--profile", str(REPO / "profiles" / "slurm"),
        "--jobs", "4",
        # A representative slice: every stage kind from world to metrics, not every figure.
        "results/metrics/retrieval.parquet",
        "results/splits/world_vg/cc12m_agreement.json",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    # Every job went through sbatch: the plugin reports a SLURM job id per submission.
    submitted = [line for line in output.splitlines() if "SLURM jobid" in line]
    assert len(submitted) >= 8, output[-3000:]
    table = pl.read_parquet(tmp_path / "results/metrics/retrieval.parquet")
    assert {"world_cc12m", "chance"} <= set(table["model"])
