"""Logging for workflow jobs: stderr (tracebacks, tqdm progress) and the library's
``logging`` records go to the rule's log."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def job_log(path: str | Path) -> Iterator[Callable[[str], None]]:
    """Send stderr and ``logging`` (INFO and above) to ``path`` for the duration of a job;
    yield a timestamped line logger."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(path, "w", buffering=1) as handle:
        previous = sys.stderr
        sys.stderr = handle
        handler = logging.StreamHandler(handle)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        previous_level = root.level
        root.addHandler(handler)
        root.setLevel(min(previous_level or logging.INFO, logging.INFO))

        def log(message: str) -> None:
            print(f"[{time.perf_counter() - started:8.1f} s] {message}", file=handle)

        try:
            yield log
        except BaseException:
            import traceback

            traceback.print_exc(file=handle)
            raise
        finally:
            root.removeHandler(handler)
            root.setLevel(previous_level)
            sys.stderr = previous
