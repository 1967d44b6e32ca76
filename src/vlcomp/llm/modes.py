"""How the uncached requests of ``complete_many`` are answered: ``answer_mode`` picks sync or
batch mode by ``llm.mode``. Both take the client through ``ClientContext`` and share its
transport, accounting and cache."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from vlcomp.llm.batch import BatchRunner
from vlcomp.llm.context import ClientContext
from vlcomp.llm.request import Request, Response
from vlcomp.llm.sync import SyncMode


class AnswerMode(Protocol):
    answers_into_cache: bool  # True: send returns nothing; the answers are read from the cache

    def send(self, pending: Sequence[tuple[str, Request]]) -> dict[str, Response]:
        """Answer the (key, request) pairs (none of them cached); key -> Response."""
        ...


class BatchMode:
    """Batch API files (``batch.py``): written, run or named, and imported into the cache;
    raises ``BatchPending`` while jobs are still running or waiting for ``run_batch``."""

    answers_into_cache = True

    def __init__(
        self, context: ClientContext, batch_dir: Path, batch_state: Path | None = None
    ) -> None:
        self.context, self.batch_dir, self.batch_state = context, batch_dir, batch_state

    def send(self, pending: Sequence[tuple[str, Request]]) -> dict[str, Response]:
        BatchRunner(self.context, self.batch_dir, self.batch_state).run([r for _, r in pending])
        return {}


def answer_mode(
    context: ClientContext, batch_dir: Path, batch_state: Path | None = None
) -> AnswerMode:
    if context.settings.mode == "batch":
        return BatchMode(context, batch_dir, batch_state)
    return SyncMode(context)
