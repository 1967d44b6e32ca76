"""The spend ledger: what every run has spent through one cache folder, so that
``llm.budget`` limits are totals across runs (and across jobs running at the same time).

``<cache_dir>/ledger.jsonl`` holds one JSON record per event, appended under an exclusive
``fcntl`` lock (held only for the read-check-append) and fsync'ed::

    {"calls": 1, "model": "gpt-4o-mini", "source": "sync"}                       # a call starts
    {"prompt_tokens": 812, "completion_tokens": 95, "cost_usd": 0.00018, ...}      # its usage

Totals are the sums over all records. Cached answers cost nothing and write nothing. Every
HTTP call to the chat endpoint (a first try, each retry, a structured-output step down, a
malformed answer asked again) is counted before it is sent, so the ledger's calls are the
calls the server received and concurrent jobs can never exceed ``max_calls`` together; its
tokens and cost when its answer arrives (so token and money limits can be overshot by what
the calls in flight use). Batch requests count as calls when their input file is written
(and again if their batch is created again) and their usage when their output is imported.

To give a run more room, raise the limit in ``llm.budget`` (it is a total). To start counting
from zero, ``python -m vlcomp.llm.ledger reset <cache_dir>`` renames the ledger to
``ledger-<UTC time>.jsonl.reset`` (kept for the record); ``show`` prints the totals.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

LEDGER_NAME = "ledger.jsonl"


@dataclass(frozen=True)
class Spend:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus(self, record: dict) -> Spend:
        return Spend(
            self.calls + int(record.get("calls") or 0),
            self.prompt_tokens + int(record.get("prompt_tokens") or 0),
            self.completion_tokens + int(record.get("completion_tokens") or 0),
            self.cost_usd + float(record.get("cost_usd") or 0.0),
        )

    def as_dict(self) -> dict:
        d = asdict(self)
        d["cost_usd"] = round(d["cost_usd"], 6)
        return d


_PATH_LOCKS: dict[Path, threading.Lock] = {}
_PATH_LOCKS_GUARD = threading.Lock()


def _path_lock(path: Path) -> threading.Lock:
    """One lock per ledger file in this process: ``fcntl`` locks exclude other processes
    only, so ledgers of the same file in one process (two clients) take this one first."""
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(path.resolve(), threading.Lock())


class SpendLedger:
    """The ledger of one cache folder; safe across threads and processes."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.path = Path(cache_dir) / LEDGER_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._thread_lock = _path_lock(self.path)
        self._offset = 0
        self._total = Spend()
        self.torn_lines = 0

    @contextmanager
    def _locked(self) -> Iterator:
        with self._thread_lock, open(self.path, "a+b") as fh:
            fcntl.lockf(fh, fcntl.LOCK_EX)
            try:
                self._catch_up(fh)
                yield fh
            finally:
                fcntl.lockf(fh, fcntl.LOCK_UN)

    def _catch_up(self, fh) -> None:
        """Add the records appended since the last read (by any process) to the totals."""
        size = os.fstat(fh.fileno()).st_size
        if size < self._offset:  # reset under our feet: count again from the start
            self._offset, self._total = 0, Spend()
        if size == self._offset:
            return
        fh.seek(self._offset)
        data = fh.read(size - self._offset)
        end = data.rfind(b"\n") + 1  # a torn last line (kill -9 mid-write) is left unread
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            try:
                self._total = self._total.plus(json.loads(raw))
            except (ValueError, TypeError, AttributeError):
                self.torn_lines += 1
        self._offset += end

    def _append(self, fh, record: dict) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        if self._offset < os.fstat(fh.fileno()).st_size:  # a torn line: end it first
            line = b"\n" + line
        fh.seek(0, os.SEEK_END)
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
        self._catch_up(fh)

    def totals(self) -> Spend:
        with self._locked():
            return self._total

    def reserve(self, refuse, record: dict) -> tuple[str | None, Spend]:
        """Under the lock: ``refuse(totals)`` says why no call may start (or None), else the
        record (``calls`` >= 1) is appended. Returns (reason, totals after)."""
        with self._locked() as fh:
            reason = refuse(self._total)
            if reason is None:
                self._append(fh, {**record, "time": _now()})
            return reason, self._total

    def record(self, record: dict) -> Spend:
        with self._locked() as fh:
            self._append(fh, {**record, "time": _now()})
            return self._total


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def reset(cache_dir: str | Path) -> Path | None:
    """Rename the ledger aside (``ledger-<UTC time>.jsonl.reset``); None if there is none."""
    path = Path(cache_dir) / LEDGER_NAME
    if not path.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"ledger-{stamp}.jsonl.reset")
    os.replace(path, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vlcomp.llm.ledger",
        description="Show or reset the LLM spend ledger of a cache folder "
        "(the workflow's is results/cache/llm).",
    )
    parser.add_argument("action", choices=["show", "reset"])
    parser.add_argument("cache_dir", nargs="?", default="results/cache/llm")
    args = parser.parse_args(argv)
    if args.action == "show":
        if not (Path(args.cache_dir) / LEDGER_NAME).exists():
            print(f"no ledger in {args.cache_dir}: nothing spent")
            return 0
        print(json.dumps(SpendLedger(args.cache_dir).totals().as_dict(), sort_keys=True))
        return 0
    moved = reset(args.cache_dir)
    print(f"ledger reset: kept as {moved}" if moved else f"no ledger in {args.cache_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
