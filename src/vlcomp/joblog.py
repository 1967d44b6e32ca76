"""Logging for workflow jobs: stderr (tracebacks, tqdm progress) and the library's
``logging`` records go to the rule's log, with registered secrets redacted
(``vlcomp.redact``). A planned stop (``vlcomp.errors.JobStop``) ends the job with one line and
its exit code instead of a traceback."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from vlcomp.errors import JobStop
from vlcomp.redact import RedactingStream, redact


@contextmanager
def job_log(path: str | Path) -> Iterator[Callable[[str], None]]:
    """Send stderr and ``logging`` (INFO and above) to ``path`` for the duration of a job;
    yield a timestamped line logger."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(path, "w", buffering=1) as raw:
        handle = RedactingStream(raw)
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
        except JobStop as stop:
            line = redact(f"{type(stop).__name__} (exit {stop.exit_code}): {stop}")
            log(line)
            print(f"{line} [log: {path}]", file=previous, flush=True)
            raise SystemExit(stop.exit_code) from None
        except BaseException as error:
            import traceback

            traceback.print_exc(file=handle)
            message = str(error)
            if redact(message) != message:  # never let a secret reach Snakemake's own log
                raise RuntimeError(f"{type(error).__name__}: {redact(message)}") from None
            raise
        finally:
            handle.flush()
            root.removeHandler(handler)
            root.setLevel(previous_level)
            sys.stderr = previous
