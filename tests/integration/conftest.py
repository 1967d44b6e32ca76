"""What the integration tests share: one run of the small workflow (tests/config/small.yaml)
that every test only reading its outputs uses, so that the suite runs it once."""

from __future__ import annotations

import pytest
import yaml

from tests.integration.test_workflow import FACTUAL_DEV, SMALL_CONFIG, snakemake


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """The small workflow, with FACTUAL's gold graphs where the shared data is present."""
    workdir = tmp_path_factory.mktemp("run")
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    if FACTUAL_DEV.exists():
        config["parser_quality"]["factual_csv"] = str(FACTUAL_DEV)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, config=workdir / "config.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir
