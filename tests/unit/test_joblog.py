"""The job log collects the line logger, stderr and the library's logging records."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from vlcomp.joblog import job_log


def test_library_logging_reaches_the_job_log(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "job.log"
    with job_log(path) as log:
        log("started")
        logging.getLogger("vlcomp.negatives.systematicity").info("3 items failed: too few")
        print("progress 50%", file=sys.stderr)
    logging.getLogger("vlcomp.after").warning("not in the log")
    text = path.read_text()
    assert "started" in text
    assert "INFO vlcomp.negatives.systematicity: 3 items failed: too few" in text
    assert "progress 50%" in text
    assert "not in the log" not in text


def test_a_failing_job_logs_its_traceback(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    with pytest.raises(ValueError), job_log(path):
        raise ValueError("bad row 7 in captions.tsv")
    assert "bad row 7 in captions.tsv" in path.read_text()
