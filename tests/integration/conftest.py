"""What the integration tests share: one run of the small workflow (tests/config/small.yaml)
that every test only reading its outputs uses, so that the suite runs it once (once for all
pytest-xdist workers too)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from tests.integration.test_workflow import FACTUAL_DEV, SMALL_CONFIG, snakemake


@pytest.fixture(scope="session")
def small_run(tmp_path_factory, worker_id):
    """The small workflow, with FACTUAL's gold graphs where the shared data is present. Made
    once per test run: under pytest-xdist the first worker that needs it runs it, holding a
    file lock, and the others wait and read the same folder (or its failure)."""
    if worker_id == "master":
        return _run_small(tmp_path_factory.mktemp("run"))
    shared = tmp_path_factory.getbasetemp().parent  # the workers' common base folder
    workdir, failed = shared / "small_run", shared / "small_run.failed"
    with FileLock(str(shared / "small_run.lock")):
        if failed.exists():
            pytest.fail(failed.read_text())
        if not (workdir / "done").exists():
            workdir.mkdir(exist_ok=True)
            try:
                _run_small(workdir)
            except BaseException as error:
                failed.write_text(f"the small run failed in another worker: {error}"[:4000])
                raise
            (workdir / "done").touch()
    return workdir


def _run_small(workdir: Path) -> Path:
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    if FACTUAL_DEV.exists():
        config["parser_quality"]["factual_csv"] = str(FACTUAL_DEV)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, config=workdir / "config.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir
