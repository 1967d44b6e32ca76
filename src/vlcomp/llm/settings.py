"""Settings of the LLM client: the ``llm:`` config block, with its defaults.

The config schema (``schemas/config.schema.yaml``) types, bounds and describes every key of
the block and fills in the defaults, which are the fields' defaults here (a test keeps them
equal); ``LLMSettings.from_config`` builds the settings with ``vlcomp.settings.settings_from``
and checks the one rule the schema cannot say (a money limit needs a price for the model).
``Price``, ``Budget`` and ``Temperatures`` are the nested blocks. Nothing here talks to an
endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from vlcomp.settings import settings_from

FORMATS = ("json_schema", "json_object", "none")  # structured-output levels, strongest first
STRUCTURED_OUTPUT = ("auto", *FORMATS)
MODES = ("sync", "batch")
BATCH_BACKENDS = ("openai", "vllm")


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


@dataclass(frozen=True)
class Temperatures:
    """The sampling temperature of each generation step (``llm.temperatures``)."""

    locate: float = 0.0
    propose: float = 1.5
    compose: float = 0.0
    swap: float = 0.0
    productivity: float = 0.0


def _default_prices() -> dict[str, Price]:
    return {"gpt-4o-mini": Price(input=0.15, output=0.60, batch_discount=0.5)}


@dataclass(frozen=True)
class LLMSettings:
    """The ``llm:`` block. Its defaults are the schema's (``schemas/config.schema.yaml``,
    where every key is described; a test keeps the two equal)."""

    base_url: str | None = None  # None: OpenAI
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    mode: str = "sync"  # MODES
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 6
    structured_output: str = "auto"  # STRUCTURED_OUTPUT
    temperatures: Temperatures = field(default_factory=Temperatures)
    max_attempts: int = 3
    max_chars: int = 300
    budget: Budget = field(default_factory=Budget)
    prices: Mapping[str, Price] = field(default_factory=_default_prices)
    dry_run: bool = False
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
    malformed_retries: int = 2  # more calls, at once, for an answer that is not usable
    breaker_malformed: int = 30  # consecutive malformed answers (across threads) that stop

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None, prefix: str = "llm") -> LLMSettings:
        """The ``llm:`` block (None: every default) as settings; a key left out takes its
        default. One path of ``batch_outputs`` may be given as a string, and a null
        ``budget`` sets no limit. The config schema checked every key; what it cannot say
        is checked here: a money limit needs a price for the model (ValueError)."""
        block = dict(mapping or {})
        if isinstance(block.get("batch_outputs"), str):
            block["batch_outputs"] = [block["batch_outputs"]]
        if "budget" in block and block["budget"] is None:
            block["budget"] = {}
        settings = settings_from(cls, block, prefix)
        if settings.budget.max_cost_usd is not None and settings.price is None:
            raise ValueError(
                f"{prefix}.budget.max_cost_usd needs a price for the model: add "
                f"{prefix}.prices.{settings.model}: {{input: ..., output: ...}}"
            )
        return settings

    def temperature(self, step: str) -> float:
        if step not in TEMPERATURE_STEPS:
            raise KeyError(f"llm.temperatures has no step {step!r}")
        return getattr(self.temperatures, step)

    @property
    def price(self) -> Price | None:
        return self.prices.get(self.model)


TEMPERATURE_STEPS = tuple(f.name for f in fields(Temperatures))
# Every key of the block with its default, as plain data (the schema's defaults).
DEFAULTS: dict[str, Any] = {
    **asdict(LLMSettings()),
    "batch_outputs": [],
}


def price_from_config(p: Any, name: str) -> Price:
    """A ``Price`` from a ``{input, output, batch_discount}`` mapping (or a Price as is);
    ``name`` is the config key named in errors (``llm.prices.gpt-4o-mini``)."""
    return p if isinstance(p, Price) else settings_from(Price, p, name)
