"""The client's log lines: progress every ``progress_every`` calls (through the
``vlcomp.llm`` logger) and the summary of one ``complete_many`` (through the job's ``log``).
Both read a ``stats`` snapshot; nothing here counts."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger("vlcomp.llm")


def _cost(stats: Mapping[str, Any]) -> str:
    return "n/a" if stats["cost_usd"] is None else f"${stats['cost_usd']:.4f}"


def summary_line(model: str, requests: int, stats: Mapping[str, Any]) -> str:
    fails = ", ".join(f"{k} {v}" for k, v in sorted(stats["failures"].items())) or "none"
    return (
        f"llm {model}: {requests} requests; calls {stats['calls']}, cache hits "
        f"{stats['cache_hits']}, retries {stats['retries']}, tokens {stats['prompt_tokens']}+"
        f"{stats['completion_tokens']}, cost {_cost(stats)}; failures: {fails}"
    )


def log_progress(stats: Mapping[str, Any]) -> None:
    logger.info(
        "llm progress: %d calls, %d cache hits, %d retries, tokens %d+%d, cost %s",
        stats["calls"],
        stats["cache_hits"],
        stats["retries"],
        stats["prompt_tokens"],
        stats["completion_tokens"],
        _cost(stats),
    )
