"""Sync mode: the uncached requests are sent at once, at most ``max_concurrency`` at a time
(threads), each one charged to the budget before it is sent. A malformed answer (empty,
not JSON, off its schema) is asked again up to ``malformed_retries`` times and never cached;
every other answer is cached before it is used."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from vlcomp.llm.cache import CacheEntry
from vlcomp.llm.context import ClientContext
from vlcomp.llm.report import log_progress
from vlcomp.llm.request import MALFORMED, Request, Response, response_from_entry

logger = logging.getLogger("vlcomp.llm")


class SyncMode:
    """Answers come back from ``send`` (and are in the cache)."""

    answers_into_cache = False

    def __init__(self, context: ClientContext) -> None:
        self.context = context

    def send(self, pending: Sequence[tuple[str, Request]]) -> dict[str, Response]:
        """One call (and its retries) per (key, request), in threads; key -> Response."""
        self.context.transport.api()  # no key, no calls: MissingAPIKey before any thread
        workers = max(1, min(self.context.settings.max_concurrency, len(pending)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
            futures = [pool.submit(self.answer, req, k) for k, req in pending]
            return {k: fut.result() for (k, _), fut in zip(pending, futures, strict=True)}

    def answer(self, request: Request, key: str) -> Response:
        """Call until the answer is well-formed or the malformed retries are used up; a
        request refused by the budget or the stop gets that reason as its error."""
        ctx = self.context
        accounting, transport = ctx.accounting, ctx.transport
        malformed_left = ctx.settings.malformed_retries
        while True:
            refused = self._refusal()
            if refused is not None:
                accounting.count_failure(refused)
                return Response(key, None, None, refused, 0, 0)
            result = transport.send(request)
            if isinstance(result, str):
                self._done(result)
                return Response(key, None, None, result, 0, 0)
            accounting.charge_usage(result.prompt_tokens, result.completion_tokens)
            if result.usage_estimated:
                accounting.count("usage_estimated")
            entry = CacheEntry(
                key=key,
                text=result.text,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                finish_reason=result.finish_reason,
                model=ctx.settings.model,
                prompt_version=ctx.prompt_version,
                source="sync",
            )
            resp = response_from_entry(request, entry, cached=False)
            if resp.error in MALFORMED and malformed_left > 0 and not transport.stop.is_set():
                malformed_left -= 1
                accounting.count_malformed(resp.error)
                logger.info(
                    "llm: %s answer (%s); asking again", resp.error, request.tag or key[:12]
                )
                continue
            if resp.error not in MALFORMED:  # malformed answers are transient: not cached
                ctx.cache.put(entry)
            self._done(resp.error)
            return resp

    def _refusal(self) -> str | None:
        """Why no call may start now (``stopped``, ``budget_exhausted``), else None: the call
        is then charged to the budget."""
        if self.context.transport.stop.error is not None:
            return "stopped"
        if not self.context.accounting.reserve_call():
            return "budget_exhausted"
        return None

    def _done(self, error: str | None) -> None:
        done = self.context.accounting.finish_call(error)
        if done % self.context.settings.progress_every == 0:
            log_progress(self.context.accounting.snapshot())
