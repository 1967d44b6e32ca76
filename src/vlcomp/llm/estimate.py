"""Cost estimates: what the uncached requests of a run would cost (``llm.dry_run``), and a
price comparison of models for a planned number of calls (``estimate_cost``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from vlcomp.llm.settings import Price, price_from_config


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
        p = price_from_config(prices[m], f"llm.prices.{m}")
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
