"""A chat-completions client for any OpenAI-compatible endpoint, built on the `openai` package.

What it adds to ``openai.OpenAI`` (which it drives with ``max_retries=0``):

- **Cache first.** Every request has a key (sha256 of the canonical JSON of model, messages,
  temperature, seed, max_tokens, answer schema and prompt version; ``Request.key``). Answers
  are stored in a persistent append-only cache (``cache.py``); a rerun makes zero calls and
  returns equal ``Response`` objects (``Response.cached`` tells them apart but is not compared).
- **Bounded concurrency.** ``complete_many`` runs at most ``max_concurrency`` calls at once
  (threads) and returns the responses in request order. Identical requests are sent once.
- **Retries** with exponential backoff and jitter on 408/409/429/5xx, timeouts, dropped
  connections and bodies that are not a chat completion (``max_retries`` more attempts),
  honouring ``Retry-After`` / ``retry-after-ms``. Other 4xx fail the request (``http_<status>``).
- **Refusals stop the job at once.** 401, 403, 404 (model or endpoint) and a 400/422 that no
  structured-output fallback explains stop every call (no new call starts, backoff sleeps end)
  and ``complete_many`` raises ``vlcomp.errors.EndpointRefused`` once the calls in flight are
  done: one line naming base_url, model and status, the server's words redacted.
- **A circuit breaker**: ``breaker_failures`` consecutive connection failures, timeouts or 5xx
  (across threads; 429s do not count), or failures without a success for ``breaker_seconds``,
  stop the calls the same way with ``EndpointUnreachable``.
- **Malformed answers are transient**: an empty content, a non-JSON answer or one off its
  schema is asked again up to ``malformed_retries`` times (counted by reason in
  ``stats["malformed_retried"]``) and never cached. A missing ``usage`` is estimated
  (characters / 4) and counted in ``stats["usage_estimated"]``.
- **Budget** (calls, tokens, USD from the price table) over ALL runs through the cache folder:
  every call is charged to the spend ledger (``ledger.py``) before it is sent, its usage when
  it returns, so limits are totals across runs and across jobs running at once. When a limit
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
  Batch lines are charged to the ledger as calls when written, their usage when imported.

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
completion), ``stopped`` (the client was stopped), ``dry_run``, ``not_cached``
(``cache_only=True`` or a batch request that failed).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp import redact
from vlcomp.errors import BudgetExhausted, EndpointRefused, EndpointUnreachable, JobStop
from vlcomp.llm.cache import CacheEntry, ResponseCache
from vlcomp.llm.ledger import Spend, SpendLedger

logger = logging.getLogger("vlcomp.llm")

KEY_FORMAT = 1  # bump when what goes into Request.key changes
FORMATS = ("json_schema", "json_object", "none")  # structured-output levels, strongest first
STRUCTURED_OUTPUT = ("auto", *FORMATS)
MODES = ("sync", "batch")
BATCH_BACKENDS = ("openai", "vllm")
MALFORMED = ("empty", "parse_error", "schema_error")  # answers retried as transient errors
RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
MAX_RETRY_AFTER_S = 600.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


# ---------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------
class MissingAPIKey(EndpointRefused):
    """The environment variable named by ``api_key_env`` is not set (and one is needed)."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``batch_discount`` is the fraction the Batch API takes off."""

    input: float
    output: float
    batch_discount: float = 0.5

    def cost(self, prompt_tokens: float, completion_tokens: float, batch: bool = False) -> float:
        usd = (prompt_tokens * self.input + completion_tokens * self.output) / 1e6
        return usd * (1.0 - self.batch_discount) if batch else usd


@dataclass(frozen=True)
class Budget:
    """Limits for one client (None: no limit)."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None


DEFAULT_TEMPERATURES = {
    "locate": 0.0,
    "propose": 1.5,
    "compose": 0.0,
    "swap": 0.0,
    "productivity": 0.0,
}

DEFAULTS: dict[str, Any] = {
    "base_url": None,
    "model": "gpt-4o-mini",
    "api_key_env": "OPENAI_API_KEY",
    "mode": "sync",
    "max_concurrency": 4,
    "timeout_s": 60.0,
    "max_retries": 6,
    "structured_output": "auto",
    "temperatures": DEFAULT_TEMPERATURES,
    "max_attempts": 3,
    "max_chars": 300,
    "budget": {"max_calls": None, "max_tokens": None, "max_cost_usd": None},
    "prices": {"gpt-4o-mini": {"input": 0.15, "output": 0.60, "batch_discount": 0.5}},
    "dry_run": False,
    # beyond the documented block; all optional
    "backoff_base_s": 0.5,
    "backoff_max_s": 60.0,
    "progress_every": 50,
    "completion_tokens_estimate": 100,
    "batch_poll_s": 60.0,
    "batch_wait_s": None,
    "batch_backend": "openai",
    "batch_outputs": [],
    "min_yield": 0.1,
    "breaker_failures": 10,
    "breaker_seconds": 300.0,
    "malformed_retries": 2,
}


@dataclass(frozen=True)
class LLMSettings:
    base_url: str | None
    model: str
    api_key_env: str
    mode: str
    max_concurrency: int
    timeout_s: float
    max_retries: int
    structured_output: str
    max_chars: int
    max_attempts: int
    temperatures: Mapping[str, float]
    budget: Budget
    prices: Mapping[str, Price]
    dry_run: bool
    backoff_base_s: float = 0.5
    backoff_max_s: float = 60.0
    progress_every: int = 50
    completion_tokens_estimate: int = 100
    batch_poll_s: float = 60.0
    batch_wait_s: float | None = None  # batch mode: None waits until the jobs end
    batch_backend: str = "openai"  # openai: Files + Batches API; vllm: files for run_batch
    batch_outputs: tuple[str, ...] = ()  # batch output JSONL files to import (any backend)
    min_yield: float = 0.1  # accepted / attempted below this fails the job
    breaker_failures: int = 10  # consecutive connection failures / timeouts / 5xx that stop
    breaker_seconds: float = 300.0  # ... or failing without a success for this long
    malformed_retries: int = 2  # more calls for an empty, non-JSON or off-schema answer

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None, prefix: str = "llm") -> LLMSettings:
        """Validate a config mapping (the ``llm:`` block) and fill defaults; a bad value raises
        ValueError naming its key (``llm.max_concurrency`` ...)."""
        cfg = dict(mapping or {})
        if "api_key" in cfg:
            raise ValueError(
                f"{prefix}.api_key: the API key never goes in the config; set "
                f"{prefix}.api_key_env to the NAME of an environment variable holding it"
            )
        unknown = sorted(set(cfg) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"{prefix}.{unknown[0]}: unknown key (known: {sorted(DEFAULTS)})")
        v = {**DEFAULTS, **{k: val for k, val in cfg.items() if val is not None}}
        for k in ("base_url", "budget", "batch_wait_s"):  # keys where null means something
            if k in cfg:
                v[k] = cfg[k]

        def key(name: str) -> str:
            return f"{prefix}.{name}"

        base_url = v["base_url"]
        if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
            raise ValueError(f"{key('base_url')} must be a URL string or null")
        model = v["model"]
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"{key('model')} must be a non-empty string")
        env = v["api_key_env"]
        if not isinstance(env, str) or not _ENV_NAME.match(env):
            # never echo the value: it might be the key itself pasted by mistake
            raise ValueError(
                f"{key('api_key_env')} must be the NAME of an environment variable (letters, "
                "digits and _, at most 64), not the key itself"
            )
        if v["mode"] not in MODES:
            raise ValueError(f"{key('mode')} must be one of {MODES}, got {v['mode']!r}")
        if v["structured_output"] not in STRUCTURED_OUTPUT:
            raise ValueError(
                f"{key('structured_output')} must be one of {STRUCTURED_OUTPUT}, "
                f"got {v['structured_output']!r}"
            )
        ints = {
            "max_concurrency": 1,
            "max_retries": 0,
            "max_attempts": 1,
            "max_chars": 1,
            "progress_every": 1,
            "completion_tokens_estimate": 1,
            "breaker_failures": 1,
            "malformed_retries": 0,
        }
        for name, lo in ints.items():
            v[name] = _int(v[name], lo, key(name))
        for name in (
            "timeout_s",
            "backoff_base_s",
            "backoff_max_s",
            "batch_poll_s",
            "breaker_seconds",
        ):
            v[name] = _num(v[name], key(name), positive=True)
        v["min_yield"] = _num(v["min_yield"], key("min_yield"))
        if v["min_yield"] > 1:
            raise ValueError(f"{key('min_yield')} must be in [0, 1], got {v['min_yield']}")
        if v["batch_backend"] not in BATCH_BACKENDS:
            raise ValueError(
                f"{key('batch_backend')} must be one of {BATCH_BACKENDS}, "
                f"got {v['batch_backend']!r}"
            )
        outputs = v["batch_outputs"]
        if isinstance(outputs, str):
            outputs = [outputs]
        if not isinstance(outputs, list | tuple) or not all(
            isinstance(o, str) and o.strip() for o in outputs
        ):
            raise ValueError(f"{key('batch_outputs')} must be a list of file paths")
        if v["batch_wait_s"] is not None:
            v["batch_wait_s"] = _num(v["batch_wait_s"], key("batch_wait_s"))
        if not isinstance(v["dry_run"], bool):
            raise ValueError(f"{key('dry_run')} must be true or false")

        temps = v["temperatures"]
        if not isinstance(temps, Mapping):
            raise ValueError(f"{key('temperatures')} must be a mapping step -> temperature")
        temps = {**DEFAULT_TEMPERATURES, **temps}
        for step, t in temps.items():
            t = _num(t, key(f"temperatures.{step}"))
            if not 0.0 <= t <= 2.0:
                raise ValueError(f"{key(f'temperatures.{step}')} must be in [0, 2], got {t}")
            temps[step] = t

        budget_cfg = v["budget"] or {}
        if not isinstance(budget_cfg, Mapping):
            raise ValueError(f"{key('budget')} must be a mapping")
        bad = sorted(set(budget_cfg) - {"max_calls", "max_tokens", "max_cost_usd"})
        if bad:
            raise ValueError(f"{key('budget.' + bad[0])}: unknown key")
        b = {k: budget_cfg.get(k) for k in ("max_calls", "max_tokens", "max_cost_usd")}
        budget = Budget(
            max_calls=None
            if b["max_calls"] is None
            else _int(b["max_calls"], 0, key("budget.max_calls")),
            max_tokens=None
            if b["max_tokens"] is None
            else _int(b["max_tokens"], 0, key("budget.max_tokens")),
            max_cost_usd=None
            if b["max_cost_usd"] is None
            else _num(b["max_cost_usd"], key("budget.max_cost_usd")),
        )

        prices_cfg = v["prices"] or {}
        if not isinstance(prices_cfg, Mapping):
            raise ValueError(f"{key('prices')} must be a mapping model -> {{input, output}}")
        prices = {str(m): _price(p, key(f"prices.{m}")) for m, p in prices_cfg.items()}
        if budget.max_cost_usd is not None and model not in prices:
            raise ValueError(
                f"{key('budget.max_cost_usd')} needs a price for the model: add "
                f"{key('prices.' + model)}: {{input: ..., output: ...}}"
            )

        return cls(
            base_url=base_url,
            model=model,
            api_key_env=env,
            mode=v["mode"],
            max_concurrency=v["max_concurrency"],
            timeout_s=v["timeout_s"],
            max_retries=v["max_retries"],
            structured_output=v["structured_output"],
            max_chars=v["max_chars"],
            max_attempts=v["max_attempts"],
            temperatures=temps,
            budget=budget,
            prices=prices,
            dry_run=v["dry_run"],
            backoff_base_s=v["backoff_base_s"],
            backoff_max_s=v["backoff_max_s"],
            progress_every=v["progress_every"],
            completion_tokens_estimate=v["completion_tokens_estimate"],
            batch_poll_s=v["batch_poll_s"],
            batch_wait_s=v["batch_wait_s"],
            batch_backend=v["batch_backend"],
            batch_outputs=tuple(outputs),
            min_yield=v["min_yield"],
            breaker_failures=v["breaker_failures"],
            breaker_seconds=v["breaker_seconds"],
            malformed_retries=v["malformed_retries"],
        )

    def temperature(self, step: str) -> float:
        try:
            return self.temperatures[step]
        except KeyError:
            raise KeyError(f"llm.temperatures has no step {step!r}") from None

    @property
    def price(self) -> Price | None:
        return self.prices.get(self.model)


def _int(value: Any, lo: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value!r}")
    return int(value)


def _num(value: Any, name: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def _price(p: Any, name: str) -> Price:
    if isinstance(p, Price):
        return p
    if not isinstance(p, Mapping):
        raise ValueError(f"{name} must be a mapping {{input, output, batch_discount}}")
    bad = sorted(set(p) - {"input", "output", "batch_discount"})
    if bad:
        raise ValueError(f"{name}.{bad[0]}: unknown key")
    for k in ("input", "output"):
        if k not in p:
            raise ValueError(f"{name}.{k} is required (USD per million tokens)")
    disc = _num(p.get("batch_discount", 0.5), f"{name}.batch_discount")
    if disc > 1:
        raise ValueError(f"{name}.batch_discount must be in [0, 1], got {disc}")
    return Price(_num(p["input"], f"{name}.input"), _num(p["output"], f"{name}.output"), disc)


# ---------------------------------------------------------------------------------------
# Requests, responses, parsing
# ---------------------------------------------------------------------------------------
def check_strict_schema(schema: Any, where: str = "schema") -> None:
    """Raise ValueError unless every object in the schema lists all its properties in
    ``required`` and sets ``additionalProperties: false`` (OpenAI strict structured output)."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"{where} must be a JSON schema object")
    if where == "schema" and schema.get("type") != "object":
        raise ValueError("schema: the root must be {'type': 'object', ...}")
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            raise ValueError(f"{where}: an object needs additionalProperties: false")
        missing = sorted(set(props) - set(schema.get("required", [])))
        if missing:
            raise ValueError(f"{where}: every property must be required; missing {missing}")
        for name, sub in props.items():
            check_strict_schema(sub, f"{where}.properties.{name}")
    if isinstance(schema.get("items"), Mapping):
        check_strict_schema(schema["items"], f"{where}.items")
    for k in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(k, []) or []):
            check_strict_schema(sub, f"{where}.{k}[{i}]")
    for k in ("$defs", "definitions"):
        for name, sub in (schema.get(k) or {}).items():
            check_strict_schema(sub, f"{where}.{k}.{name}")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Request:
    """One chat completion. ``tag`` is for progress and logs only (not in the key)."""

    messages: tuple[Mapping[str, str], ...]
    temperature: float
    seed: int | None = None
    schema: Mapping | None = None  # a strict JSON schema for the answer
    max_tokens: int | None = None
    tag: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        msgs = []
        for i, m in enumerate(self.messages):
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise ValueError(f"messages[{i}] must be a mapping with a 'role'")
            if not isinstance(m.get("content"), str):
                raise ValueError(f"messages[{i}].content must be a string")
            msgs.append(dict(m))
        if not msgs:
            raise ValueError("a Request needs at least one message")
        object.__setattr__(self, "messages", tuple(msgs))
        object.__setattr__(self, "temperature", float(self.temperature))
        if self.schema is not None:
            check_strict_schema(self.schema)
            object.__setattr__(self, "schema", json.loads(_canonical(self.schema)))
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")

    def key(self, model: str, prompt_version: str) -> str:
        """sha256 of the canonical JSON of everything that determines the answer."""
        payload = {
            "key_format": KEY_FORMAT,
            "model": model,
            "prompt_version": prompt_version,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
            "seed": self.seed,
            "schema": self.schema,
            "max_tokens": self.max_tokens,
        }
        return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()

    def body(self, model: str, fmt: str) -> dict[str, Any]:
        """The chat.completions request body, with structured output at level ``fmt``."""
        body: dict[str, Any] = {
            "model": model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.schema is not None and fmt == "json_schema":
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(self.schema.get("title") or "answer"))
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name[:64], "schema": self.schema, "strict": True},
            }
        elif self.schema is not None and fmt == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def estimated_prompt_tokens(self) -> int:
        chars = sum(len(m["content"]) + 16 for m in self.messages)
        if self.schema is not None:
            chars += len(_canonical(self.schema))
        return max(1, math.ceil(chars / 4))


@dataclass(frozen=True)
class Response:
    key: str
    text: str | None
    parsed: Any | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cached: bool = field(default=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None


_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)


def parse_json_tolerant(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, else a fenced block, else the first
    decodable ``{...}`` or ``[...]``. Raises ValueError when there is none."""
    s = text.strip()
    try:
        return json.loads(s)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for block in _FENCE.findall(s):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    for m in re.finditer(r"[{\[]", s):
        try:
            value, _ = decoder.raw_decode(s, m.start())
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    raise ValueError("no JSON value in the answer")


_VALIDATORS: dict[str, Any] = {}
_VALIDATORS_LOCK = threading.Lock()


def _validator(schema: Mapping) -> Any:
    import jsonschema

    k = _canonical(schema)
    with _VALIDATORS_LOCK:
        v = _VALIDATORS.get(k)
        if v is None:
            cls = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            v = _VALIDATORS[k] = cls(schema)
        return v


def response_from_entry(request: Request, entry: CacheEntry, cached: bool) -> Response:
    """Rebuild a Response from a cached (or just received) answer: parse and validate again."""
    text, parsed, error = entry.text, None, None
    if text is None or not text.strip():
        error = "empty"
    elif request.schema is not None:
        try:
            value = parse_json_tolerant(text)
        except ValueError:
            error = "parse_error"
        else:
            if _validator(request.schema).is_valid(value):
                parsed = value
            else:
                error = "schema_error"
    return Response(
        key=entry.key,
        text=text,
        parsed=parsed,
        error=error,
        prompt_tokens=entry.prompt_tokens,
        completion_tokens=entry.completion_tokens,
        cached=cached,
    )


# ---------------------------------------------------------------------------------------
# Cost estimates
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    requests: int
    cached: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_sync_usd: float | None
    cost_batch_usd: float | None
    model: str = ""

    def __str__(self) -> str:
        def usd(x):
            return "no price" if x is None else f"${x:,.4f}"

        return (
            f"llm dry run ({self.model}): {self.requests} requests, {self.cached} cached, "
            f"{self.calls} calls to make; ~{self.prompt_tokens:,} prompt + "
            f"~{self.completion_tokens:,} completion tokens; cost sync {usd(self.cost_sync_usd)}"
            f", batch {usd(self.cost_batch_usd)}; nothing was sent"
        )


def estimate_cost(
    n_calls: int,
    prompt_tokens_per_call: float,
    completion_tokens_per_call: float,
    prices: Mapping[str, Price | Mapping],
    models: Sequence[str],
) -> pl.DataFrame:
    """Cost of ``n_calls`` calls per model, at sync and at batch prices (one row per model)."""
    rows = []
    for m in models:
        if m not in prices:
            raise ValueError(f"llm.prices.{m}: no price for this model")
        p = _price(prices[m], f"llm.prices.{m}")
        pt, ct = n_calls * prompt_tokens_per_call, n_calls * completion_tokens_per_call
        rows.append(
            {
                "model": m,
                "calls": int(n_calls),
                "prompt_tokens": float(pt),
                "completion_tokens": float(ct),
                "usd_per_m_input": p.input,
                "usd_per_m_output": p.output,
                "cost_sync_usd": p.cost(pt, ct),
                "cost_batch_usd": p.cost(pt, ct, batch=True),
            }
        )
    return pl.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------
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


class _Breaker:
    """Stops calls to an endpoint that keeps failing: ``failures`` consecutive connection
    failures, timeouts or 5xx answers (across all threads), or failures without a success
    for ``seconds``. Any success resets it; 429s (rate limits) neither count nor reset."""

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


_REFUSALS = {
    400: "the server refused the request (bad request) in every structured-output format",
    401: "the API key was not accepted",
    403: "the key may not use this model or endpoint",
    404: "no such model or endpoint",
    422: "the server refused the request (unprocessable) in every structured-output format",
}


def _answer_of(completion: Any) -> tuple[str | None, str, tuple[int, int] | None] | None:
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


class LLMClient:
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
        self._log = log
        self._lock = threading.Lock()
        self._openai = None
        # registered before any call, so that every mode (sync, batch, import) redacts it
        redact.register(os.environ.get(settings.api_key_env))
        self._rng = random.Random()
        self._format_level = {"auto": 0, "json_schema": 0, "json_object": 1, "none": 2}[
            settings.structured_output
        ]
        self._exhausted: str | None = None  # which budget limit stopped the calls
        self._fatal: JobStop | None = None  # the endpoint refused or is unreachable
        self._stopping = threading.Event()  # set with _fatal: backoff sleeps end at once
        self._breaker = _Breaker(settings.breaker_failures, settings.breaker_seconds)
        self._calls = 0
        self._done = 0
        self._counts: Counter[str] = Counter()
        self._failures: Counter[str] = Counter()
        self._malformed: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost = 0.0
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
        if self._openai is not None:
            self._openai.close()
            self._openai = None
        self.cache.close()

    # -- public ----------------------------------------------------------------------------
    def key(self, request: Request) -> str:
        return request.key(self.settings.model, self.prompt_version)

    @property
    def budget_exhausted(self) -> bool:
        return self._exhausted is not None

    def raise_if_budget_exhausted(self) -> None:
        if self._exhausted is not None:
            raise BudgetExhausted(
                f"llm budget reached ({self._exhausted}; {self.spend_line()}); answers so far "
                "are cached: raise the limit in llm.budget (a total over all runs) to continue, "
                f"or reset the ledger: python -m vlcomp.llm.ledger reset {self.cache.dir}"
            )

    def raise_if_stopped(self) -> None:
        """Raise the EndpointRefused / EndpointUnreachable that stopped the calls, if any."""
        if self._fatal is not None:
            raise self._fatal

    def _budget_refusal(self, spent: Spend) -> str | None:
        b = self.settings.budget
        if b.max_calls is not None and spent.calls >= b.max_calls:
            return f"max_calls={b.max_calls}"
        if b.max_tokens is not None and spent.tokens >= b.max_tokens:
            return f"max_tokens={b.max_tokens}"
        if b.max_cost_usd is not None and spent.cost_usd >= b.max_cost_usd:
            return f"max_cost_usd={b.max_cost_usd}"
        return None

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

    @property
    def stats(self) -> dict:
        with self._lock:
            return {
                "calls": self._calls,
                "cache_hits": self._counts["cache_hits"],
                "retries": self._counts["retries"],
                "format_fallbacks": self._counts["format_fallbacks"],
                "batch_written": self._counts["batch_written"],
                "batch_imported": self._counts["batch_imported"],
                "prompt_tokens": self._prompt_tokens,
                "completion_tokens": self._completion_tokens,
                "cost_usd": self._cost if self.settings.price is not None else None,
                "failures": dict(self._failures),
                "malformed_retried": dict(self._malformed),
                "usage_estimated": self._counts["usage_estimated"],
                "budget_exhausted": self._exhausted,
                "stopped": None if self._fatal is None else str(self._fatal),
                "structured_output": FORMATS[self._format_level],
            }

    def complete_many(
        self, requests: Sequence[Request], *, cache_only: bool = False
    ) -> list[Response]:
        """Answer the requests, in order: cache first, then calls (bounded concurrency, budget
        checked before each). A failed call is a ``Response.error``; an endpoint that refuses
        (401/403/404, an unexplained 400) or stays unreachable raises ``EndpointRefused`` /
        ``EndpointUnreachable`` once the calls in flight are done."""
        keys = [self.key(r) for r in requests]
        out: list[Response | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        for i, (req, k) in enumerate(zip(requests, keys, strict=True)):
            entry = self.cache.get(k)
            if entry is not None:
                out[i] = response_from_entry(req, entry, cached=True)
                with self._lock:
                    self._counts["cache_hits"] += 1
            else:
                todo.setdefault(k, []).append(i)

        if todo and self.settings.dry_run:
            self.dry_run(requests)
            for idx in todo.values():
                for i in idx:
                    out[i] = Response(keys[i], None, None, "dry_run", 0, 0)
            return out  # type: ignore[return-value]

        if todo and not cache_only and self.settings.mode == "batch":
            from vlcomp.llm.batch import BatchRunner

            pending = [requests[idx[0]] for idx in todo.values()]
            BatchRunner(self, self.batch_dir, self.batch_state).run(pending)
            return self.complete_many(requests, cache_only=True)

        if todo and not cache_only:
            self._ensure_client()
            unique = [(k, requests[idx[0]]) for k, idx in todo.items()]
            workers = max(1, min(self.settings.max_concurrency, len(unique)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
                futures = [pool.submit(self._call, req, k) for k, req in unique]
                for (k, _), fut in zip(unique, futures, strict=True):
                    resp = fut.result()
                    for i in todo[k]:
                        out[i] = resp
            if self._fatal is not None:
                self._log(self._summary(len(requests)))
                raise self._fatal
        missing = "budget_exhausted" if self._exhausted is not None else "not_cached"
        for idx in todo.values():
            for i in idx:
                if out[i] is None:
                    out[i] = Response(keys[i], None, None, missing, 0, 0)
        if todo:
            self._log(self._summary(len(requests)))
        return out  # type: ignore[return-value]

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
        self._log(str(est))
        return est

    # -- internals -------------------------------------------------------------------------
    def _ensure_client(self):
        with self._lock:
            if self._openai is None:
                import openai

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

    @property
    def endpoint(self) -> str:
        return self.settings.base_url or "the OpenAI API"

    def _stop(self, error: JobStop) -> None:
        """Stop all calls (first error wins): no new call starts, backoffs end now."""
        with self._lock:
            if self._fatal is None:
                self._fatal = error
                logger.error("llm: %s", error)
        self._stopping.set()

    def _reserve(self) -> str | None:
        """Take one call from the budget (the ledger's totals over all runs); None if allowed,
        else the reason it is not."""
        with self._lock:
            if self._fatal is not None:
                return "stopped"
            if self._exhausted is not None:
                return "budget_exhausted"
        record = {"calls": 1, "model": self.settings.model, "source": "sync"}
        reason, _ = self.ledger.reserve(self._budget_refusal, record)
        with self._lock:
            if reason is not None:
                if self._exhausted is None:
                    self._exhausted = reason
                    logger.warning(
                        "llm budget reached (%s): no new calls; calls in flight finish and are "
                        "cached",
                        reason,
                    )
                return "budget_exhausted"
            self._calls += 1
            return None

    def _account(
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

    def _call(self, request: Request, key: str) -> Response:
        malformed_left = self.settings.malformed_retries
        while True:
            refused = self._reserve()
            if refused is not None:
                with self._lock:
                    self._failures[refused] += 1
                return Response(key, None, None, refused, 0, 0)
            result = self._send_with_retries(request)
            if isinstance(result, str):
                with self._lock:
                    self._failures[result] += 1
                    self._done += 1
                self._progress()
                return Response(key, None, None, result, 0, 0)
            text, pt, ct, finish, estimated = result
            self._account(pt, ct)
            if estimated:
                with self._lock:
                    self._counts["usage_estimated"] += 1
            entry = CacheEntry(
                key=key,
                text=text,
                prompt_tokens=pt,
                completion_tokens=ct,
                finish_reason=finish,
                model=self.settings.model,
                prompt_version=self.prompt_version,
                source="sync",
            )
            resp = response_from_entry(request, entry, cached=False)
            if resp.error in MALFORMED and malformed_left > 0 and not self._stopping.is_set():
                malformed_left -= 1
                with self._lock:
                    self._malformed[resp.error] += 1
                logger.info(
                    "llm: %s answer (%s); asking again", resp.error, request.tag or key[:12]
                )
                continue
            if resp.error not in MALFORMED:  # malformed answers are transient: not cached
                self.cache.put(entry)
            with self._lock:
                self._done += 1
                if resp.error is not None:
                    self._failures[resp.error] += 1
            self._progress()
            return resp

    def _refused(self, status: int, server_message: str) -> EndpointRefused:
        s = self.settings
        what = _REFUSALS.get(status, "the server refused the request")
        detail = redact.redact(" ".join(str(server_message).split()))[:200]
        hint = f" (key from ${s.api_key_env})" if status in (401, 403) else ""
        return EndpointRefused(
            f"{self.endpoint} answered HTTP {status} for model {s.model!r}: {what}{hint}; "
            f"server said: {detail}"
        )

    def _send_with_retries(self, request: Request) -> tuple[str | None, int, int, str, bool] | str:
        """(text, prompt_tokens, completion_tokens, finish_reason, usage estimated), or a
        failure reason. Stops the client (``_stop``) when the endpoint refuses or the breaker
        trips."""
        import openai

        client = self._openai
        level = self._format_level if request.schema is not None else len(FORMATS) - 1
        attempt = 0
        while True:
            if self._stopping.is_set():
                return "stopped"
            wait_hint = None
            counts_for_breaker = True
            try:
                completion = client.chat.completions.create(
                    **request.body(self.settings.model, FORMATS[level])
                )
            except openai.APIStatusError as e:
                status = e.status_code
                if status in (400, 422) and level < len(FORMATS) - 1:
                    logger.info(
                        "llm: server refused response_format %s (%s); trying %s",
                        FORMATS[level],
                        status,
                        FORMATS[level + 1],
                    )
                    level += 1
                    with self._lock:
                        self._counts["format_fallbacks"] += 1
                    continue
                reason = f"http_{status}"
                if status in (400, 401, 403, 404, 422):
                    self._stop(self._refused(status, e.message))
                    return reason
                if status not in RETRYABLE_STATUS and status < 500:
                    logger.warning("llm call failed: %s %s", reason, redact.redact(e.message))
                    return reason
                counts_for_breaker = status >= 500
                wait_hint = retry_after_s(e.response.headers)
            except openai.APITimeoutError:
                reason = "timeout"
            except openai.APIConnectionError:
                reason = "connection"
            except (openai.APIError, ValueError) as e:  # a 200 whose body is not JSON
                reason = "invalid_body"
                counts_for_breaker = False
                logger.info("llm invalid body: %s", redact.redact(str(e))[:200])
            else:
                answer = _answer_of(completion)
                if answer is None:
                    reason = "invalid_response"
                    counts_for_breaker = False
                else:
                    self._breaker.success()
                    if request.schema is not None and level > self._format_level:
                        with self._lock:
                            if self.settings.structured_output == "auto":
                                self._format_level = max(self._format_level, level)
                    text, finish, usage = answer
                    if usage is not None:
                        return text, usage[0], usage[1], finish, False
                    # a server without usage: estimate, for the budget and the cost
                    pt = request.estimated_prompt_tokens()
                    return text, pt, math.ceil(len(text or "") / 4), finish, True
            if counts_for_breaker and self._breaker.failure():
                self._stop(
                    EndpointUnreachable(
                        f"{self.endpoint} (model {self.settings.model!r}) is unreachable: "
                        f"{self._breaker.streak} consecutive failures over "
                        f"{self._breaker.elapsed():.1f} s, the last {reason} (llm.breaker_failures"
                        f"={self.settings.breaker_failures}, llm.breaker_seconds="
                        f"{self.settings.breaker_seconds:g})"
                    )
                )
                return reason
            if reason in ("invalid_body", "invalid_response"):
                with self._lock:
                    self._malformed[reason] += 1
            if attempt >= self.settings.max_retries:
                logger.warning("llm call failed after %d attempt(s): %s", attempt + 1, reason)
                return reason
            delay = self._backoff(attempt, wait_hint)
            logger.info("llm retry %d after %s in %.2fs", attempt + 1, reason, delay)
            with self._lock:
                self._counts["retries"] += 1
            if self._wait(delay):
                return "stopped"
            attempt += 1

    def _wait(self, seconds: float) -> bool:
        """Sleep between attempts; True (at once) when the client is stopped meanwhile."""
        return self._stopping.wait(seconds)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        s = self.settings
        cap = min(s.backoff_max_s, s.backoff_base_s * (2**attempt))
        delay = cap / 2 + self._rng.uniform(0, cap / 2)  # "equal jitter"
        if retry_after is not None:
            ra = min(retry_after, MAX_RETRY_AFTER_S)
            delay = max(delay, ra + self._rng.uniform(0, 0.1 * ra + 0.05))
        return delay

    def _summary(self, n: int) -> str:
        st = self.stats
        cost = "n/a" if st["cost_usd"] is None else f"${st['cost_usd']:.4f}"
        fails = ", ".join(f"{k} {v}" for k, v in sorted(st["failures"].items())) or "none"
        return (
            f"llm {self.settings.model}: {n} requests; calls {st['calls']}, cache hits "
            f"{st['cache_hits']}, retries {st['retries']}, tokens {st['prompt_tokens']}+"
            f"{st['completion_tokens']}, cost {cost}; failures: {fails}"
        )

    def _progress(self) -> None:
        with self._lock:
            done = self._done
        if done % self.settings.progress_every == 0:
            st = self.stats
            cost = "n/a" if st["cost_usd"] is None else f"${st['cost_usd']:.4f}"
            logger.info(
                "llm progress: %d calls, %d cache hits, %d retries, tokens %d+%d, cost %s",
                st["calls"],
                st["cache_hits"],
                st["retries"],
                st["prompt_tokens"],
                st["completion_tokens"],
                cost,
            )

    # used by batch.py
    def _account_batch(self, entries: Sequence[CacheEntry]) -> None:
        """Charge imported batch answers' usage (their calls were charged when written); a
        local vLLM run_batch costs no money."""
        priced = self.settings.batch_backend != "vllm"
        for e in entries:
            self._account(
                e.prompt_tokens, e.completion_tokens, batch=True, source="batch", priced=priced
            )
        with self._lock:
            self._counts["batch_imported"] += len(entries)
