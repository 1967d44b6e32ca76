"""One redaction path for secrets (API keys): every log line, exception text and job log.

A secret is registered once (``register``) by the code that reads it from the environment;
from then on ``redact`` replaces it in any text, and ``RedactingStream`` does so for everything
written through it (``vlcomp.joblog.job_log`` wraps the job's log file and stderr in one).
"""

from __future__ import annotations

import threading
from typing import TextIO

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter values ("EMPTY", "x") are placeholders, not secrets

_secrets: set[str] = set()
_lock = threading.Lock()


def register(secret: str | None) -> None:
    if secret and len(secret) >= MIN_SECRET_CHARS:
        with _lock:
            _secrets.add(secret)


def redact(text: str) -> str:
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RedactingStream:
    """A text stream that redacts registered secrets from every write.

    Writes are redacted line by line, so a secret split across two ``write`` calls is still
    caught: text after the last newline waits for the next write (or ``flush``)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            head, sep, tail = self._pending.rpartition("\n")
            if sep:
                self._stream.write(redact(head + sep))
                self._pending = tail
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._stream.write(redact(self._pending))
                self._pending = ""
            self._stream.flush()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", "utf-8")

    def writable(self) -> bool:
        return True
