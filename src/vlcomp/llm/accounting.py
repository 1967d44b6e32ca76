"""Accounting: the budget, the spend ledger and the counters of one client, for both modes.

Every HTTP call to the chat endpoint (a first try, a retry, a structured-output step down,
a malformed answer asked again) is charged to the spend ledger (``ledger.py``) before it is
sent (``reserve_call``, by the transport), its usage when it returns (``charge_usage``), so
``llm.budget`` limits are totals over all runs through the cache folder. Batch lines are
charged as calls when written (``BatchAllowance``, ``charge_batch_written``), again each time
their batch is created again (``reserve_call(n, source="batch")``), and their usage when
imported (``charge_batch_import``). Once a limit is reached ``exhausted`` names it and no new
call starts. The counters (cache hits, retries, failures by reason, ...) are the client's
``stats``; this module only counts, it never talks to an endpoint.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from vlcomp.llm.cache import CacheEntry
from vlcomp.llm.ledger import Spend, SpendLedger
from vlcomp.llm.settings import Budget, LLMSettings, Price

logger = logging.getLogger("vlcomp.llm")


def budget_refusal(budget: Budget, spent: Spend, calls: int = 1) -> str | None:
    """The limit that leaves no room for ``calls`` more calls after ``spent``
    (``max_calls=10``), None while all have room."""
    b = budget
    if b.max_calls is not None and spent.calls + calls > b.max_calls:
        return f"max_calls={b.max_calls}"
    if b.max_tokens is not None and spent.tokens >= b.max_tokens:
        return f"max_tokens={b.max_tokens}"
    if b.max_cost_usd is not None and spent.cost_usd >= b.max_cost_usd:
        return f"max_cost_usd={b.max_cost_usd}"
    return None


class BatchAllowance:
    """What a batch may still write within the budget: starts from the ledger's totals over
    all runs and takes each line's estimated tokens and cost (at batch prices)."""

    def __init__(self, budget: Budget, spent: Spend, price: Price | None) -> None:
        self.budget, self.price = budget, price
        self.calls, self.tokens, self.cost = spent.calls, spent.tokens, spent.cost_usd

    def take(self, prompt_tokens: int, completion_tokens: int) -> bool:
        """Count one more line; False (and nothing counted) when it would pass a limit."""
        b, pt, ct = self.budget, prompt_tokens, completion_tokens
        c = self.price.cost(pt, ct, batch=True) if self.price is not None else 0.0
        if (
            (b.max_calls is not None and self.calls + 1 > b.max_calls)
            or (b.max_tokens is not None and self.tokens + pt + ct > b.max_tokens)
            or (b.max_cost_usd is not None and self.cost + c > b.max_cost_usd)
        ):
            return False
        self.calls, self.tokens, self.cost = self.calls + 1, self.tokens + pt + ct, self.cost + c
        return True


class Accounting:
    """Budget checks against the ledger, usage charging, and the counters behind ``stats``
    (thread safe)."""

    def __init__(self, settings: LLMSettings, ledger: SpendLedger) -> None:
        self.settings = settings
        self.ledger = ledger
        self._lock = threading.Lock()
        self._exhausted: str | None = None  # which budget limit stopped the calls
        self._calls = 0
        self._done = 0
        self._counts: Counter[str] = Counter()
        self._failures: Counter[str] = Counter()
        self._malformed: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost = 0.0

    # -- the budget ------------------------------------------------------------------------
    @property
    def exhausted(self) -> str | None:
        """The budget limit that stopped the calls (or the batch writing), None if none."""
        return self._exhausted

    def mark_exhausted(self, reason: str) -> bool:
        """Record that the budget is spent (the first reason stays); True if it was not yet."""
        with self._lock:
            if self._exhausted is not None:
                return False
            self._exhausted = reason
            return True

    def reserve_call(self, calls: int = 1, source: str = "sync") -> bool:
        """Take ``calls`` calls from the budget (the ledger's totals over all runs, checked
        and charged under its lock); False (nothing charged) when a limit has no room."""
        if self._exhausted is not None:
            return False
        record = {"calls": calls, "model": self.settings.model, "source": source}
        reason, _ = self.ledger.reserve(
            lambda spent: budget_refusal(self.settings.budget, spent, calls), record
        )
        if reason is not None:
            if self.mark_exhausted(reason):
                logger.warning(
                    "llm budget reached (%s): no new calls; calls in flight finish and are cached",
                    reason,
                )
            return False
        with self._lock:
            if source == "sync":
                self._calls += calls
            else:
                self._counts["batch_resubmitted"] += calls
        return True

    def batch_allowance(self) -> BatchAllowance:
        """The room left for batch lines; a local vLLM run_batch costs no money."""
        s = self.settings
        price = None if s.batch_backend == "vllm" else s.price
        return BatchAllowance(s.budget, self.ledger.totals(), price)

    # -- charging --------------------------------------------------------------------------
    def charge_usage(
        self, pt: int, ct: int, batch: bool = False, source: str = "sync", priced: bool = True
    ) -> None:
        price = self.settings.price if priced else None
        cost = price.cost(pt, ct, batch=batch) if price is not None else 0.0
        self.ledger.record(
            {"prompt_tokens": pt, "completion_tokens": ct, "cost_usd": cost, "source": source}
        )
        with self._lock:
            self._prompt_tokens += pt
            self._completion_tokens += ct
            self._cost += cost

    def charge_batch_written(self, lines: int) -> None:
        """Charge batch lines as calls when their input file is written."""
        self.ledger.record({"calls": lines, "model": self.settings.model, "source": "batch"})
        self.count("batch_written", lines)

    def charge_batch_import(self, entries: Sequence[CacheEntry]) -> None:
        """Charge imported batch answers' usage (their calls were charged when written); a
        local vLLM run_batch costs no money."""
        priced = self.settings.batch_backend != "vllm"
        for e in entries:
            self.charge_usage(
                e.prompt_tokens, e.completion_tokens, batch=True, source="batch", priced=priced
            )
        self.count("batch_imported", len(entries))

    # -- counters --------------------------------------------------------------------------
    def count(self, name: str, n: int = 1) -> None:
        """Add to a plain counter: cache_hits, retries, format_fallbacks, usage_estimated,
        batch_written, batch_imported (``batch_resubmitted`` is counted by ``reserve_call``)."""
        with self._lock:
            self._counts[name] += n

    def count_failure(self, reason: str) -> None:
        """A request that got no call (budget, stop)."""
        with self._lock:
            self._failures[reason] += 1

    def count_malformed(self, reason: str) -> None:
        """An unusable answer (or body) that is asked again."""
        with self._lock:
            self._malformed[reason] += 1

    def finish_call(self, error: str | None) -> int:
        """A request done (answered, or failed with ``error``); returns how many are done."""
        with self._lock:
            self._done += 1
            if error is not None:
                self._failures[error] += 1
            return self._done

    def snapshot(self) -> dict[str, Any]:
        """The counters and the spend of this client (not the ledger's totals)."""
        with self._lock:
            return {
                "calls": self._calls,
                "cache_hits": self._counts["cache_hits"],
                "retries": self._counts["retries"],
                "format_fallbacks": self._counts["format_fallbacks"],
                "batch_written": self._counts["batch_written"],
                "batch_resubmitted": self._counts["batch_resubmitted"],
                "batch_imported": self._counts["batch_imported"],
                "prompt_tokens": self._prompt_tokens,
                "completion_tokens": self._completion_tokens,
                "cost_usd": self._cost if self.settings.price is not None else None,
                "failures": dict(self._failures),
                "malformed_retried": dict(self._malformed),
                "usage_estimated": self._counts["usage_estimated"],
                "budget_exhausted": self._exhausted,
            }

    # -- the ledger over all runs ----------------------------------------------------------
    def ledger_summary(self) -> dict:
        """Spent (all runs through this cache folder), the limits, and what remains."""
        spent = self.ledger.totals()
        b = self.settings.budget
        limits = {"calls": b.max_calls, "tokens": b.max_tokens, "cost_usd": b.max_cost_usd}
        used = {"calls": spent.calls, "tokens": spent.tokens, "cost_usd": spent.cost_usd}
        remaining = {
            k: None if lim is None else max(0, round(lim - used[k], 6)) for k, lim in limits.items()
        }
        return {
            "ledger": str(self.ledger.path),
            "spent": spent.as_dict(),
            "limits": limits,
            "remaining": remaining,
        }

    def spend_line(self) -> str:
        ledger = self.ledger_summary()
        parts = []
        for name, used in (
            ("calls", ledger["spent"]["calls"]),
            ("tokens", ledger["spent"]["prompt_tokens"] + ledger["spent"]["completion_tokens"]),
            ("cost_usd", ledger["spent"]["cost_usd"]),
        ):
            lim = ledger["limits"][name]
            shown = f"${used:.4f}" if name == "cost_usd" else f"{used}"
            if lim is not None:
                left = ledger["remaining"][name]
                shown += f" of {lim} ({left} left)"
            parts.append(f"{name} {shown}")
        return "spent over all runs: " + ", ".join(parts)
