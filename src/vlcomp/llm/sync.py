"""Sync mode: the uncached requests are sent at once, at most ``max_concurrency`` at a time
(threads); the transport charges every HTTP call to the budget before it is sent.

An unusable answer (a 200 whose body is not a chat completion, an empty content, a non-JSON
or off-schema answer) is asked again at once, up to ``malformed_retries`` times, and never
cached; each one counts for the malformed-answer breaker, which a usable answer resets
(``ChatTransport.malformed`` / ``well_formed``). Every usable answer is cached before it is
used."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from vlcomp.llm.cache import CacheEntry
from vlcomp.llm.context import ClientContext
from vlcomp.llm.report import log_progress
from vlcomp.llm.request import MALFORMED, Request, Response, response_from_entry
from vlcomp.llm.transport import ChatAnswer, MalformedBody, quoted

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
        """Call until the answer is usable or the malformed retries are used up; a request
        refused by the budget or the stop gets that reason as its error."""
        ctx = self.context
        accounting, transport = ctx.accounting, ctx.transport
        malformed_left = ctx.settings.malformed_retries
        while True:
            if transport.stop.error is not None:
                accounting.count_failure("stopped")
                return Response(key, None, None, "stopped", 0, 0)
            result = transport.send(request)
            if isinstance(result, str):
                self._done(result)
                return Response(key, None, None, result, 0, 0)
            entry = None
            if isinstance(result, MalformedBody):
                resp = Response(key, None, None, result.reason, 0, 0)
                quote = result.quote
            else:
                entry = self._entry(result, key)
                resp = response_from_entry(request, entry, cached=False)
                quote = quoted(result.text)
            if entry is not None and resp.error not in MALFORMED:
                transport.well_formed()
                ctx.cache.put(entry)
                self._done(None)
                return resp
            transport.malformed(resp.error, quote)  # unusable: never cached; may trip
            if malformed_left > 0 and not transport.stop.is_set():
                malformed_left -= 1
                accounting.count_malformed(resp.error)
                logger.info(
                    "llm: %s answer (%s); asking again", resp.error, request.tag or key[:12]
                )
                continue
            self._done(resp.error)
            return resp

    def _entry(self, answer: ChatAnswer, key: str) -> CacheEntry:
        """The cache entry of a chat completion, its usage charged."""
        ctx = self.context
        ctx.accounting.charge_usage(answer.prompt_tokens, answer.completion_tokens)
        if answer.usage_estimated:
            ctx.accounting.count("usage_estimated")
        return CacheEntry(
            key=key,
            text=answer.text,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            finish_reason=answer.finish_reason,
            model=ctx.settings.model,
            prompt_version=ctx.prompt_version,
            source="sync",
        )

    def _done(self, error: str | None) -> None:
        done = self.context.accounting.finish_call(error)
        if done % self.context.settings.progress_every == 0:
            log_progress(self.context.accounting.snapshot())
