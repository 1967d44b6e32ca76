"""Transport: the HTTP side of the LLM client, shared by sync and batch mode.

- ``ChatTransport`` owns the ``openai.OpenAI`` client (made on first use, ``max_retries=0``,
  the key read from the variable named by ``api_key_env`` and registered with
  ``vlcomp.redact``) and sends one chat completion with retries: exponential backoff with
  jitter on 408/409/429/5xx, timeouts and dropped connections, honouring ``Retry-After`` /
  ``retry-after-ms``; a 400/422 steps down the structured-output formats; 401/403/404 and an
  unexplained 400/422 stop every call (``EndpointRefused``), and so does the circuit breaker
  (``EndpointUnreachable``). EVERY HTTP call it sends (first try, retry, format step) is
  charged to the budget first (``Accounting.reserve_call``); none is sent once a limit is
  reached. A 200 whose body is not a chat completion is returned at once (``MalformedBody``,
  no backoff): the caller asks again within ``malformed_retries`` and counts every unusable
  answer for the malformed-answer breaker (``malformed`` / ``well_formed``):
  ``breaker_malformed`` in a row stop every call (``EndpointMalformed``).
- ``StopSwitch`` is that stop: the first error wins, no new call starts, backoff sleeps end.
- ``retry_after_s``, ``equal_jitter_delay``, ``RETRYABLE_STATUS`` and ``MAX_RETRY_AFTER_S``
  are the retry policy, also used by batch mode's Files / Batches API calls; ``server_words``
  is how a server's words reach a message (redacted, one line, cut).
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from vlcomp import redact
from vlcomp.errors import EndpointMalformed, EndpointRefused, EndpointUnreachable, JobStop
from vlcomp.llm.accounting import Accounting
from vlcomp.llm.request import Request
from vlcomp.llm.settings import FORMATS, LLMSettings

logger = logging.getLogger("vlcomp.llm")

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
MAX_RETRY_AFTER_S = 600.0
REFUSED_STATUS = frozenset({400, 401, 403, 404, 422})  # stop every call (after any fallback)
FORMAT_LEVELS = {"auto": 0, "json_schema": 0, "json_object": 1, "none": 2}  # into FORMATS
QUOTED_CHARS = 200  # of a server's words quoted in a stop's message

_REFUSALS = {
    400: "the server refused the request (bad request) in every structured-output format",
    401: "the API key was not accepted",
    403: "the key may not use this model or endpoint",
    404: "no such model or endpoint",
    422: "the server refused the request (unprocessable) in every structured-output format",
}


class MissingAPIKey(EndpointRefused):
    """The environment variable named by ``api_key_env`` is not set (and one is needed)."""


def server_words(text: object, limit: int = QUOTED_CHARS) -> str:
    """A server's words (an error message, a body, an answer) as a message quotes them:
    redacted BEFORE they are cut (no part of a key survives), on one line, at most
    ``limit`` characters (``...`` marks a cut)."""
    flat = " ".join(redact.redact(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def quoted(text: str | None) -> str:
    """A body or an answer's content as a stop's message quotes it: ``server_words`` in
    quotes, or ``a null content``."""
    return "a null content" if text is None else repr(server_words(text))


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds asked for by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def equal_jitter_delay(settings: LLMSettings, attempt: int, rng: random.Random) -> float:
    """The backoff before retry ``attempt + 1``: half of the capped exponential step, plus a
    uniform random part of up to the other half ("equal jitter")."""
    cap = min(settings.backoff_max_s, settings.backoff_base_s * (2**attempt))
    return cap / 2 + rng.uniform(0, cap / 2)


def endpoint_name(settings: LLMSettings) -> str:
    return settings.base_url or "the OpenAI API"


def endpoint_refusal(settings: LLMSettings, status: int, server_message: str) -> EndpointRefused:
    """The one-line error for a refused request: base_url, model, status, what it means, and
    the server's words (redacted, at most 200 characters)."""
    what = _REFUSALS.get(status, "the server refused the request")
    detail = server_words(server_message)
    hint = f" (key from ${settings.api_key_env})" if status in (401, 403) else ""
    return EndpointRefused(
        f"{endpoint_name(settings)} answered HTTP {status} for model {settings.model!r}: "
        f"{what}{hint}; server said: {detail}"
    )


class Breaker:
    """Stops calls to an endpoint that keeps failing: ``failures`` consecutive failures
    (across all threads), or failures without a success for ``seconds``. Any success resets
    it. The transport has two: connection failures, timeouts and 5xx (429s neither count nor
    reset it), and malformed answers (``seconds`` infinite)."""

    def __init__(self, failures: int, seconds: float) -> None:
        self.failures, self.seconds = failures, seconds
        self.streak = 0
        self.since: float | None = None
        self._lock = threading.Lock()

    def success(self) -> None:
        with self._lock:
            self.streak, self.since = 0, None

    def failure(self) -> bool:
        """Count one failure; True when the breaker trips."""
        with self._lock:
            now = time.monotonic()
            self.streak += 1
            if self.since is None:
                self.since = now
            return self.streak >= self.failures or now - self.since >= self.seconds

    def elapsed(self) -> float:
        with self._lock:
            return 0.0 if self.since is None else time.monotonic() - self.since


class StopSwitch:
    """The error that stopped all calls (first one wins), and the event that ends backoff
    sleeps at once when it is set."""

    def __init__(self) -> None:
        self.error: JobStop | None = None
        self._lock = threading.Lock()
        self._event = threading.Event()

    def stop(self, error: JobStop) -> None:
        with self._lock:
            if self.error is None:
                self.error = error
                logger.error("llm: %s", error)
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep; True (at once) when the calls are stopped meanwhile."""
        return self._event.wait(seconds)


def answer_of(completion: Any) -> tuple[str | None, str, tuple[int, int] | None] | None:
    """(content, finish_reason, (prompt, completion tokens) or None) of a chat completion, or
    None when its shape is not one (no choices, no message)."""
    try:
        choice = completion.choices[0]
        text = choice.message.content
        finish = choice.finish_reason or ""
    except (AttributeError, IndexError, TypeError, KeyError):
        return None
    if text is not None and not isinstance(text, str):
        return None
    usage = getattr(completion, "usage", None)
    try:
        tokens = None if usage is None else (int(usage.prompt_tokens), int(usage.completion_tokens))
    except (AttributeError, TypeError, ValueError):
        tokens = None
    return text, finish, tokens


class ChatAnswer(NamedTuple):
    text: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    usage_estimated: bool  # the server sent no usage: tokens estimated from characters


class MalformedBody(NamedTuple):
    """An HTTP 200 whose body is not a chat completion."""

    reason: str  # invalid_body (not JSON), invalid_response (JSON, not a chat completion)
    quote: str  # the body's first characters (``quoted``)


@dataclass(frozen=True)
class _Failure:
    """One failed attempt (no 200), classified: give up now (``final``), step down the
    structured output format (``fallback``), or retry; whether it counts for the circuit
    breaker."""

    reason: str
    final: bool = False
    fallback: bool = False
    counts_for_breaker: bool = True
    wait_hint: float | None = None  # what Retry-After asked for


class ChatTransport:
    """Chat completions over the ``openai`` package, one request at a time (thread safe).

    ``sleep(seconds)`` waits between attempts and returns True when the calls were stopped
    meanwhile (the client passes its own, so that a test can replace it). Every call is
    charged to ``accounting`` before it is sent; counters (retries, format fallbacks) go
    there too."""

    def __init__(
        self,
        settings: LLMSettings,
        accounting: Accounting,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.accounting = accounting
        self.stop = StopSwitch()
        self.breaker = Breaker(settings.breaker_failures, settings.breaker_seconds)
        self.malformed_breaker = Breaker(settings.breaker_malformed, math.inf)
        self._sleep = sleep or self.stop.wait
        self._lock = threading.Lock()
        self._openai = None
        self._rng = random.Random()
        self._format_level = FORMAT_LEVELS[settings.structured_output]

    @property
    def structured_format(self) -> str:
        """The strongest structured-output format the server is known to accept so far."""
        return FORMATS[self._format_level]

    def api(self) -> Any:
        """The ``openai.OpenAI`` client, made on first use; raises ``MissingAPIKey`` when the
        OpenAI endpoint (``base_url: null``) has no key in the environment."""
        with self._lock:
            if self._openai is None:
                import openai  # slow to import; only a call needs it

                s = self.settings
                key = os.environ.get(s.api_key_env, "")
                if not key:
                    if s.base_url is None:
                        raise MissingAPIKey(
                            f"the environment variable {s.api_key_env} (llm.api_key_env) is not "
                            "set; export the API key there, or set llm.base_url for a local "
                            "server that needs none"
                        )
                    key = "EMPTY"
                redact.register(key)
                self._openai = openai.OpenAI(
                    base_url=s.base_url, api_key=key, timeout=s.timeout_s, max_retries=0
                )
            return self._openai

    def close(self) -> None:
        if self._openai is not None:
            self._openai.close()
            self._openai = None

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = equal_jitter_delay(self.settings, attempt, self._rng)
        if retry_after is not None:
            ra = min(retry_after, MAX_RETRY_AFTER_S)
            delay = max(delay, ra + self._rng.uniform(0, 0.1 * ra + 0.05))
        return delay

    def send(self, request: Request) -> ChatAnswer | MalformedBody | str:
        """The answer (a chat completion, or a 200 that is not one), or a failure reason
        (``budget_exhausted`` when the budget has no room for the next call). Every HTTP call
        is charged to the budget before it is sent. Stops every call (``stop``) when the
        endpoint refuses or the circuit breaker trips."""
        api = self._openai
        level = self._format_level if request.schema is not None else len(FORMATS) - 1
        attempt = 0
        while True:
            if self.stop.is_set():
                return "stopped"
            if not self.accounting.reserve_call():
                return "budget_exhausted"
            outcome = self._attempt(api, request, level)
            if isinstance(outcome, ChatAnswer | MalformedBody):
                return outcome
            if outcome.fallback:
                level += 1
                continue
            reason = outcome.reason
            if outcome.final:
                return reason
            if outcome.counts_for_breaker and self.breaker.failure():
                self.stop.stop(self._unreachable(reason))
                return reason
            if attempt >= self.settings.max_retries:
                logger.warning("llm call failed after %d attempt(s): %s", attempt + 1, reason)
                return reason
            delay = self.backoff(attempt, outcome.wait_hint)
            logger.info("llm retry %d after %s in %.2fs", attempt + 1, reason, delay)
            self.accounting.count("retries")
            if self._sleep(delay):
                return "stopped"
            attempt += 1

    def malformed(self, reason: str, quote: str) -> bool:
        """Count one unusable answer (``reason``; ``quote``: its first characters, from
        ``quoted``) for the malformed-answer breaker; True when it has tripped (every call is
        then stopped with ``EndpointMalformed``)."""
        if not self.malformed_breaker.failure():
            return False
        s = self.settings
        self.stop.stop(
            EndpointMalformed(
                f"{endpoint_name(s)} (model {s.model!r}) answers HTTP 200 with nothing "
                f"usable: {self.malformed_breaker.streak} malformed answers in a row "
                f"(llm.breaker_malformed={s.breaker_malformed}); the last ({reason}) was "
                f"{quote}"
            )
        )
        return True

    def well_formed(self) -> None:
        """A usable answer: the malformed-answer breaker starts counting again."""
        self.malformed_breaker.success()

    def _attempt(
        self, api: Any, request: Request, level: int
    ) -> ChatAnswer | MalformedBody | _Failure:
        import openai

        try:
            raw = api.chat.completions.with_raw_response.create(
                **request.body(self.settings.model, FORMATS[level])
            )
        except openai.APIStatusError as e:
            return self._status_failure(e, level)
        except openai.APITimeoutError:
            return _Failure("timeout")
        except openai.APIConnectionError:
            return _Failure("connection")
        try:
            completion = raw.parse()
        except (openai.APIError, ValueError) as e:  # a 200 whose body is not JSON
            logger.info("llm invalid body: %s", server_words(e))
            return MalformedBody("invalid_body", quoted(raw.http_response.text))
        answer = answer_of(completion)  # a body of another content type parses to a str
        if answer is None:
            return MalformedBody("invalid_response", quoted(raw.http_response.text))
        self.breaker.success()
        if request.schema is not None and level > self._format_level:
            with self._lock:
                if self.settings.structured_output == "auto":
                    self._format_level = max(self._format_level, level)
        text, finish, usage = answer
        if usage is not None:
            return ChatAnswer(text, usage[0], usage[1], finish, False)
        # a server without usage: estimate, for the budget and the cost
        pt = request.estimated_prompt_tokens()
        return ChatAnswer(text, pt, math.ceil(len(text or "") / 4), finish, True)

    def _status_failure(self, error: Any, level: int) -> _Failure:
        """Classify an HTTP error status (``error`` is an ``openai.APIStatusError``)."""
        status = error.status_code
        if status in (400, 422) and level < len(FORMATS) - 1:
            logger.info(
                "llm: server refused response_format %s (%s); trying %s",
                FORMATS[level],
                status,
                FORMATS[level + 1],
            )
            self.accounting.count("format_fallbacks")
            return _Failure(f"http_{status}", fallback=True)
        reason = f"http_{status}"
        if status in REFUSED_STATUS:
            self.stop.stop(endpoint_refusal(self.settings, status, error.message))
            return _Failure(reason, final=True)
        if status not in RETRYABLE_STATUS and status < 500:
            logger.warning("llm call failed: %s %s", reason, redact.redact(error.message))
            return _Failure(reason, final=True)
        return _Failure(
            reason,
            counts_for_breaker=status >= 500,
            wait_hint=retry_after_s(error.response.headers),
        )

    def _unreachable(self, reason: str) -> EndpointUnreachable:
        s = self.settings
        return EndpointUnreachable(
            f"{endpoint_name(s)} (model {s.model!r}) is unreachable: "
            f"{self.breaker.streak} consecutive failures over "
            f"{self.breaker.elapsed():.1f} s, the last {reason} (llm.breaker_failures"
            f"={s.breaker_failures}, llm.breaker_seconds="
            f"{s.breaker_seconds:g})"
        )
