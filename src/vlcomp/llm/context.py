"""What sync and batch mode need from a client: its settings, cache, accounting, transport,
job log and request keys. ``LLMClient`` provides it; the modes depend on this protocol, not
on the client, so that the client can build on the modes without an import circle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from vlcomp.llm.accounting import Accounting
from vlcomp.llm.cache import ResponseCache
from vlcomp.llm.request import Request
from vlcomp.llm.settings import LLMSettings
from vlcomp.llm.transport import ChatTransport


class ClientContext(Protocol):
    settings: LLMSettings
    prompt_version: str
    cache: ResponseCache
    accounting: Accounting
    transport: ChatTransport
    log: Callable[[str], None]  # the job's log (one line per call)

    def key(self, request: Request) -> str:
        """The request's cache key (for this model and prompt version)."""
        ...
