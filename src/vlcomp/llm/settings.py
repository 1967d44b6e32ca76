"""Settings of the LLM client: the ``llm:`` config block, validated, with its defaults.

``LLMSettings.from_config`` checks every key in a fixed order and raises ``ValueError`` naming
the first bad one (``llm.max_concurrency must be >= 1, got 0``); the config schema
(``schemas/config.schema.yaml``) documents the same keys. ``Price`` and ``Budget`` are the two
nested blocks. Nothing here talks to an endpoint.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FORMATS = ("json_schema", "json_object", "none")  # structured-output levels, strongest first
STRUCTURED_OUTPUT = ("auto", *FORMATS)
MODES = ("sync", "batch")
BATCH_BACKENDS = ("openai", "vllm")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


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

# integer keys and their smallest allowed value, checked in this order
_INT_MINIMUMS = {
    "max_concurrency": 1,
    "max_retries": 0,
    "max_attempts": 1,
    "max_chars": 1,
    "progress_every": 1,
    "completion_tokens_estimate": 1,
    "breaker_failures": 1,
    "malformed_retries": 0,
}
# number keys that must be > 0, checked in this order
_POSITIVE_NUMBERS = (
    "timeout_s",
    "backoff_base_s",
    "backoff_max_s",
    "batch_poll_s",
    "breaker_seconds",
)

KeyName = Callable[[str], str]  # a key's full name for messages: "max_chars" -> "llm.max_chars"


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
        v = _with_defaults(mapping, prefix)

        def key(name: str) -> str:
            return f"{prefix}.{name}"

        _check_endpoint(v, key)
        _check_numbers(v, key)
        outputs = _check_batch(v, key)
        if not isinstance(v["dry_run"], bool):
            raise ValueError(f"{key('dry_run')} must be true or false")
        temps = _temperatures(v["temperatures"], key)
        budget = _budget(v["budget"], key)
        prices = _prices(v["prices"], key, v["model"], budget)
        return cls(
            base_url=v["base_url"],
            model=v["model"],
            api_key_env=v["api_key_env"],
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


# ---------------------------------------------------------------------------------------
# The steps of from_config, in the order it runs them (the first bad key is the one named)
# ---------------------------------------------------------------------------------------
def _with_defaults(mapping: Mapping[str, Any] | None, prefix: str) -> dict[str, Any]:
    """The config over the defaults; refuses a pasted API key and unknown keys. A null value
    means "the default", except for the keys where null means something itself."""
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
    return v


def _check_endpoint(v: Mapping[str, Any], key: KeyName) -> None:
    """base_url, model, api_key_env, mode and structured_output."""
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


def _check_numbers(v: dict[str, Any], key: KeyName) -> None:
    """The integer and number keys, converted in place; min_yield in [0, 1]."""
    for name, lo in _INT_MINIMUMS.items():
        v[name] = _int(v[name], lo, key(name))
    for name in _POSITIVE_NUMBERS:
        v[name] = _num(v[name], key(name), positive=True)
    v["min_yield"] = _num(v["min_yield"], key("min_yield"))
    if v["min_yield"] > 1:
        raise ValueError(f"{key('min_yield')} must be in [0, 1], got {v['min_yield']}")


def _check_batch(v: dict[str, Any], key: KeyName) -> list[str] | tuple[str, ...]:
    """batch_backend, batch_outputs (returned; one path may be given as a string) and
    batch_wait_s (converted in place)."""
    if v["batch_backend"] not in BATCH_BACKENDS:
        raise ValueError(
            f"{key('batch_backend')} must be one of {BATCH_BACKENDS}, got {v['batch_backend']!r}"
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
    return outputs


def _temperatures(temps: Any, key: KeyName) -> dict[str, float]:
    """The per-step temperatures over the defaults, each in [0, 2]."""
    if not isinstance(temps, Mapping):
        raise ValueError(f"{key('temperatures')} must be a mapping step -> temperature")
    temps = {**DEFAULT_TEMPERATURES, **temps}
    for step, t in temps.items():
        t = _num(t, key(f"temperatures.{step}"))
        if not 0.0 <= t <= 2.0:
            raise ValueError(f"{key(f'temperatures.{step}')} must be in [0, 2], got {t}")
        temps[step] = t
    return temps


def _budget(budget_cfg: Any, key: KeyName) -> Budget:
    budget_cfg = budget_cfg or {}
    if not isinstance(budget_cfg, Mapping):
        raise ValueError(f"{key('budget')} must be a mapping")
    bad = sorted(set(budget_cfg) - {"max_calls", "max_tokens", "max_cost_usd"})
    if bad:
        raise ValueError(f"{key('budget.' + bad[0])}: unknown key")
    b = {k: budget_cfg.get(k) for k in ("max_calls", "max_tokens", "max_cost_usd")}
    return Budget(
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


def _prices(prices_cfg: Any, key: KeyName, model: str, budget: Budget) -> dict[str, Price]:
    """The price table; a money limit needs a price for the model."""
    prices_cfg = prices_cfg or {}
    if not isinstance(prices_cfg, Mapping):
        raise ValueError(f"{key('prices')} must be a mapping model -> {{input, output}}")
    prices = {str(m): price_from_config(p, key(f"prices.{m}")) for m, p in prices_cfg.items()}
    if budget.max_cost_usd is not None and model not in prices:
        raise ValueError(
            f"{key('budget.max_cost_usd')} needs a price for the model: add "
            f"{key('prices.' + model)}: {{input: ..., output: ...}}"
        )
    return prices


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


def price_from_config(p: Any, name: str) -> Price:
    """A ``Price`` from a ``{input, output, batch_discount}`` mapping (or a Price as is);
    ``name`` is the config key named in errors (``llm.prices.gpt-4o-mini``)."""
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
