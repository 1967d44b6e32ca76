"""LLM client layer for any OpenAI-compatible endpoint: settings, cached and budgeted calls,
structured output, dry-run estimates, and Batch API files (see client.py, which says where
each part lives)."""

from vlcomp.errors import BudgetExhausted
from vlcomp.llm.batch import (
    BatchOutputError,
    BatchPending,
    BatchRunner,
    ImportCounts,
    import_batch_output,
    write_batch_files,
)
from vlcomp.llm.cache import CacheEntry, ResponseCache
from vlcomp.llm.client import LLMClient
from vlcomp.llm.estimate import Estimate, estimate_cost
from vlcomp.llm.request import Request, Response, check_strict_schema, parse_json_tolerant
from vlcomp.llm.settings import Budget, LLMSettings, Price
from vlcomp.llm.transport import EndpointMalformed, MissingAPIKey

__all__ = [
    "BatchOutputError",
    "BatchPending",
    "BatchRunner",
    "Budget",
    "BudgetExhausted",
    "CacheEntry",
    "EndpointMalformed",
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
