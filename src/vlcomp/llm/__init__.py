"""LLM client layer for any OpenAI-compatible endpoint: settings, cached and budgeted calls,
structured output, dry-run estimates, and Batch API files (see client.py, cache.py, batch.py)."""

from vlcomp.llm.batch import (
    BatchOutputError,
    BatchPending,
    BatchRunner,
    ImportCounts,
    import_batch_output,
    write_batch_files,
)
from vlcomp.llm.cache import CacheEntry, ResponseCache
from vlcomp.llm.client import (
    Budget,
    BudgetExhausted,
    Estimate,
    LLMClient,
    LLMSettings,
    MissingAPIKey,
    Price,
    Request,
    Response,
    check_strict_schema,
    estimate_cost,
    parse_json_tolerant,
)

__all__ = [
    "BatchOutputError",
    "BatchPending",
    "BatchRunner",
    "Budget",
    "BudgetExhausted",
    "CacheEntry",
    "Estimate",
    "ImportCounts",
    "LLMClient",
    "LLMSettings",
    "MissingAPIKey",
    "Price",
    "Request",
    "Response",
    "ResponseCache",
    "check_strict_schema",
    "estimate_cost",
    "import_batch_output",
    "parse_json_tolerant",
    "write_batch_files",
]
