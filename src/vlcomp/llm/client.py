"""A chat-completions client for any OpenAI-compatible endpoint, built on the `openai` package.

What it adds to ``openai.OpenAI`` (which it drives with ``max_retries=0``):

- **Cache first.** Every request has a key (sha256 of the canonical JSON of model, messages,
  temperature, seed, max_tokens, answer schema and prompt version; ``Request.key``). Answers
  are stored in a persistent append-only cache (``cache.py``); a rerun makes zero calls and
  returns equal ``Response`` objects (``Response.cached`` tells them apart but is not compared).
- **Bounded concurrency.** ``complete_many`` runs at most ``max_concurrency`` calls at once
  (threads) and returns the responses in request order. Identical requests are sent once.
- **Retries** with exponential backoff and jitter on 408/409/429/5xx, timeouts and dropped
  connections (``max_retries`` more attempts), honouring ``Retry-After`` /
  ``retry-after-ms``. Other 4xx fail the request (``http_<status>``).
- **Refusals stop the job at once.** 401, 403, 404 (model or endpoint) and a 400/422 that no
  structured-output fallback explains stop every call (no new call starts, backoff sleeps end)
  and ``complete_many`` raises ``vlcomp.errors.EndpointRefused`` once the calls in flight are
  done: one line naming base_url, model and status, the server's words redacted.
- **A circuit breaker**: ``breaker_failures`` consecutive connection failures, timeouts or 5xx
  (across threads; 429s do not count), or failures without a success for ``breaker_seconds``,
  stop the calls the same way with ``EndpointUnreachable``.
- **Malformed answers are transient**: an HTTP 200 whose body is not JSON
  (``invalid_body``) or not a chat completion (``invalid_response``), an empty or null
  content (``empty``), a non-JSON answer (``parse_error``) or one off its schema
  (``schema_error``) is asked again at once (no backoff) up to ``malformed_retries`` times
  (counted by reason in ``stats["malformed_retried"]``) and never cached. A missing
  ``usage`` is estimated (characters / 4) and counted in ``stats["usage_estimated"]``.
- **A malformed-answer breaker**: ``breaker_malformed`` malformed answers in a row (across
  threads; a usable answer resets the count, HTTP errors neither count nor reset it) stop
  the calls the same way with ``EndpointMalformed`` (exit status 9), whose message quotes
  the start of the last body or answer, redacted.
- **Budget** (calls, tokens, USD from the price table) over ALL runs through the cache folder:
  every HTTP call (first try, retry, structured-output step down, malformed answer asked
  again) is charged to the spend ledger (``ledger.py``) before it is sent, its usage when it
  returns, so limits are totals across runs and across jobs running at once, and the
  ledger's calls are the calls the server received. When a limit
  is reached no new call starts; calls in flight finish and are cached. ``complete_many`` then
  RETURNS normally: every request that was not answered gets ``error="budget_exhausted"``,
  ``client.budget_exhausted`` is True and every later ``complete_many`` of this client answers
  only from the cache; ``client.raise_if_budget_exhausted()`` raises ``BudgetExhausted`` with
  what was spent and how to raise or reset the limit. Cached answers cost nothing. Calls count
  exactly; tokens and money can overshoot by what the calls in flight use.
- **Structured output.** A request with a ``schema`` (strict: every object lists all its
  properties in ``required`` and sets ``additionalProperties: false``, checked when the Request
  is made) is sent with ``response_format`` json_schema (structured_output ``auto`` or
  ``json_schema``), or json_object, or nothing (``none``). A server that refuses a format (400
  or 422) is asked again with the next one down; ``auto`` remembers what the server accepted.
  The answer is parsed by a tolerant parser (code fences stripped, the first JSON value taken)
  and validated against the schema: failures are reasons (``parse_error``, ``schema_error``),
  not exceptions. The prompt itself must ask for JSON (json_object mode requires it).
- **Progress** through ``logging.getLogger("vlcomp.llm")`` every ``progress_every`` calls, and a
  summary line through ``log`` at the end of each ``complete_many``.
- **Dry run.** ``dry_run(requests)`` counts the calls not in the cache and estimates tokens
  (characters / 4 for prompts, ``max_tokens`` or ``completion_tokens_estimate`` for answers)
  and cost at sync and batch prices, prints it and sends nothing. With ``dry_run: true`` in
  settings ``complete_many`` does that and answers uncached requests with ``error="dry_run"``.
- **Batch mode** (``mode: batch``): ``complete_many`` sends the uncached requests through the
  Batch API (``batch.py``) instead, waits for the jobs (or raises ``BatchPending``), imports
  the output into the cache and answers from it. With ``batch_backend: vllm`` nothing is sent:
  the input JSONL is written and ``BatchPending`` gives the exact ``run_batch`` command; the
  files named in ``batch_outputs`` (vLLM's or OpenAI's output format) are imported first.
  Batch lines are charged to the ledger as calls when written (and again when their batch
  is created again), their usage when imported.

The API key is read from the environment variable NAMED by ``api_key_env``; a call needs it
(an all-cached rerun does not). It is registered with ``vlcomp.redact`` as soon as a client
exists, so every log line, job log and exception text that quotes it (as some servers do in
their errors) is redacted, in sync, batch and import modes alike; it is never stored in
settings, cache, ledger, batch or state files. Without
the variable, an OpenAI endpoint (``base_url: null``) is an error; a local server
(``base_url`` set) gets the placeholder key ``EMPTY``.

Error reasons in ``Response.error``: ``parse_error``, ``schema_error``, ``empty`` (no content;
these three after their retries), ``budget_exhausted``, ``http_<status>``, ``timeout``,
``connection``, ``invalid_body`` / ``invalid_response`` (a 200 that is not a chat
completion; after their retries), ``stopped`` (the client was stopped), ``dry_run``,
``not_cached``
(``cache_only=True`` or a batch request that failed).

Where the parts live: ``settings.py`` (the ``llm:`` config block, ``LLMSettings``),
``request.py`` (``Request``, ``Response``, parsing and schema checks), ``transport.py`` (the
``openai`` client, retries, refusals, the two breakers), ``accounting.py`` (budget, spend
ledger, counters), ``report.py`` (progress and summary lines), ``estimate.py`` (dry-run and
cost estimates), ``sync.py`` and ``batch.py`` (the two modes, picked in ``modes.py``). This
module ties them together.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from vlcomp import redact
from vlcomp.errors import BudgetExhausted, EndpointRefused
from vlcomp.llm.accounting import Accounting
from vlcomp.llm.cache import ResponseCache
from vlcomp.llm.estimate import Estimate
from vlcomp.llm.ledger import SpendLedger
from vlcomp.llm.modes import answer_mode
from vlcomp.llm.report import summary_line
from vlcomp.llm.request import (
    Request,
    Response,
    response_from_entry,
)
from vlcomp.llm.settings import (
    LLMSettings,
)
from vlcomp.llm.transport import (
    ChatTransport,
    endpoint_name,
    endpoint_refusal,
)

logger = logging.getLogger("vlcomp.llm")


class LLMClient:
    """Cached, budgeted chat completions; see the module's docstring. It is the
    ``ClientContext`` that sync and batch mode work through."""

    def __init__(
        self,
        settings: LLMSettings,
        cache_dir: str | Path,
        prompt_version: str,
        log: Callable[[str], None] = print,
        batch_dir: str | Path | None = None,
        batch_state: str | Path | None = None,
    ) -> None:
        """``batch_dir`` holds batch mode's JSONL files (default ``<cache_dir>/batch``) and
        ``batch_state`` its job-id state file (default ``<batch_dir>/state.json``)."""
        if settings.budget.max_cost_usd is not None and settings.price is None:
            raise ValueError(f"llm.budget.max_cost_usd needs llm.prices.{settings.model}")
        self.settings = settings
        self.prompt_version = str(prompt_version)
        self.cache = ResponseCache(cache_dir)
        self.ledger = SpendLedger(cache_dir)
        self.batch_dir = Path(batch_dir) if batch_dir is not None else Path(cache_dir) / "batch"
        self.batch_state = Path(batch_state) if batch_state is not None else None
        self.log = log
        # registered before any call, so that every mode (sync, batch, import) redacts it
        redact.register(os.environ.get(settings.api_key_env))
        self.accounting = Accounting(settings, self.ledger)
        self.transport = ChatTransport(settings, self.accounting, sleep=self._sleep)
        if self.cache.torn_lines:
            logger.warning("llm cache: skipped %d torn line(s)", self.cache.torn_lines)

    def __repr__(self) -> str:
        return (
            f"LLMClient(model={self.settings.model!r}, base_url={self.settings.base_url!r}, "
            f"cache_dir={str(self.cache.dir)!r}, prompt_version={self.prompt_version!r})"
        )

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()
        self.cache.close()

    # -- public ----------------------------------------------------------------------------
    def key(self, request: Request) -> str:
        return request.key(self.settings.model, self.prompt_version)

    @property
    def endpoint(self) -> str:
        return endpoint_name(self.settings)

    @property
    def budget_exhausted(self) -> bool:
        return self.accounting.exhausted is not None

    def raise_if_budget_exhausted(self) -> None:
        if self.accounting.exhausted is not None:
            raise BudgetExhausted(
                f"llm budget reached ({self.accounting.exhausted}; {self.spend_line()}); "
                "answers so far are cached: raise the limit in llm.budget (a total over all "
                "runs) to continue, or reset the ledger: python -m vlcomp.llm.ledger reset "
                f"{self.cache.dir}"
            )

    def ledger_summary(self) -> dict:
        """Spent (all runs through this cache folder), the limits, and what remains."""
        return self.accounting.ledger_summary()

    def spend_line(self) -> str:
        return self.accounting.spend_line()

    @property
    def stats(self) -> dict:
        stopped = self.transport.stop.error
        return {
            **self.accounting.snapshot(),
            "stopped": None if stopped is None else str(stopped),
            "structured_output": self.transport.structured_format,
        }

    def complete_many(
        self, requests: Sequence[Request], *, cache_only: bool = False
    ) -> list[Response]:
        """Answer the requests, in order: cache first, then calls (bounded concurrency, budget
        checked before each). A failed call is a ``Response.error``; an endpoint that refuses
        (401/403/404, an unexplained 400), stays unreachable or keeps answering malformed
        bodies raises ``EndpointRefused`` / ``EndpointUnreachable`` / ``EndpointMalformed``
        once the calls in flight are done."""
        keys = [self.key(r) for r in requests]
        out, todo = self._answer_from_cache(requests, keys)

        if todo and self.settings.dry_run:
            self.dry_run(requests)
            return self._answer_rest(out, todo, keys, "dry_run")

        if todo and not cache_only:
            mode = answer_mode(self, self.batch_dir, self.batch_state)
            answers = mode.send([(k, requests[idx[0]]) for k, idx in todo.items()])
            if mode.answers_into_cache:
                return self.complete_many(requests, cache_only=True)
            for k, resp in answers.items():
                for i in todo[k]:
                    out[i] = resp
            stopped = self.transport.stop.error
            if stopped is not None:
                self.log(self._summary(len(requests)))
                raise stopped
        missing = "budget_exhausted" if self.accounting.exhausted is not None else "not_cached"
        answered = self._answer_rest(out, todo, keys, missing)
        if todo:
            self.log(self._summary(len(requests)))
        return answered

    def estimate(self, requests: Sequence[Request]) -> Estimate:
        """Calls not in the cache, their estimated tokens and cost; sends nothing."""
        seen: set[str] = set()
        cached = calls = pt = ct = 0
        for r in requests:
            k = self.key(r)
            if k in self.cache:
                cached += 1
                continue
            if k in seen:
                continue
            seen.add(k)
            calls += 1
            pt += r.estimated_prompt_tokens()
            ct += r.max_tokens or self.settings.completion_tokens_estimate
        price = self.settings.price
        return Estimate(
            requests=len(requests),
            cached=cached,
            calls=calls,
            prompt_tokens=pt,
            completion_tokens=ct,
            cost_sync_usd=None if price is None else price.cost(pt, ct),
            cost_batch_usd=None if price is None else price.cost(pt, ct, batch=True),
            model=self.settings.model,
        )

    def dry_run(self, requests: Sequence[Request]) -> Estimate:
        """Print (through ``log``) and return the estimate; sends nothing."""
        est = self.estimate(requests)
        self.log(str(est))
        return est

    # -- internals -------------------------------------------------------------------------
    def _answer_from_cache(
        self, requests: Sequence[Request], keys: Sequence[str]
    ) -> tuple[list[Response | None], dict[str, list[int]]]:
        """The cached answers by position (None where there is none), and the positions of
        each uncached key."""
        out: list[Response | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        for i, (req, k) in enumerate(zip(requests, keys, strict=True)):
            entry = self.cache.get(k)
            if entry is not None:
                out[i] = response_from_entry(req, entry, cached=True)
                self.accounting.count("cache_hits")
            else:
                todo.setdefault(k, []).append(i)
        return out, todo

    @staticmethod
    def _answer_rest(
        out: list[Response | None],
        todo: dict[str, list[int]],
        keys: Sequence[str],
        error: str,
    ) -> list[Response]:
        """``out`` with every uncached position still unanswered given ``error``."""
        for idx in todo.values():
            for i in idx:
                if out[i] is None:
                    out[i] = Response(keys[i], None, None, error, 0, 0)
        return out  # type: ignore[return-value]

    def _sleep(self, seconds: float) -> bool:
        # looks _wait up at call time, so that replacing LLMClient._wait changes every sleep
        return self._wait(seconds)

    def _wait(self, seconds: float) -> bool:
        """Sleep between attempts; True (at once) when the client is stopped meanwhile."""
        return self.transport.stop.wait(seconds)

    def _refused(self, status: int, server_message: str) -> EndpointRefused:
        """The error a refusal with this status and server message raises (redacted)."""
        return endpoint_refusal(self.settings, status, server_message)

    def _summary(self, n: int) -> str:
        return summary_line(self.settings.model, n, self.accounting.snapshot())
