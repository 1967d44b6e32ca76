"""Persistent response cache: append-only JSONL files, one per writer process.

Layout: ``<cache_dir>/responses-<host>-<pid>-<random>.jsonl``. Every process that answers a
request appends one JSON record per answer to its OWN file, flushing and fsync'ing each record
before the answer is used, so a kill -9 loses at most the calls in flight and never corrupts an
earlier record; a torn last line (the write the kill interrupted) is skipped when read. At
start every ``responses-*.jsonl`` file in the folder is read (sorted by name; the first record
of a key wins). A process that finds everything cached creates no file. The spend ledger
(``ledger.py``) lives in the same folder.

A record holds what is needed to rebuild the answer and nothing else::

    {"key": "<sha256 of the request>", "text": "<message content or null>",
     "prompt_tokens": 12, "completion_tokens": 34, "finish_reason": "stop",
     "model": "gpt-4o-mini", "prompt_version": "v1", "source": "sync" | "batch"}

never the API key, headers or the request URL. Only well-formed answers are cached (HTTP 200
with content that parses and fits the request's schema): malformed ones are transient errors,
asked again. Parse and schema checks run again on every read, so a cached answer yields the
same Response as the fresh one.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CacheEntry:
    key: str
    text: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None
    model: str = ""
    prompt_version: str = ""
    source: str = "sync"

    def to_json(self) -> str:
        return json.dumps(
            {
                "key": self.key,
                "text": self.text,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "finish_reason": self.finish_reason,
                "model": self.model,
                "prompt_version": self.prompt_version,
                "source": self.source,
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_dict(cls, d: dict) -> CacheEntry:
        return cls(
            key=str(d["key"]),
            text=d.get("text"),
            prompt_tokens=int(d.get("prompt_tokens") or 0),
            completion_tokens=int(d.get("completion_tokens") or 0),
            finish_reason=d.get("finish_reason"),
            model=str(d.get("model") or ""),
            prompt_version=str(d.get("prompt_version") or ""),
            source=str(d.get("source") or "sync"),
        )


class ResponseCache:
    """The on-disk cache of one folder; thread-safe within a process."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.dir = Path(cache_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, CacheEntry] = {}
        self._lock = threading.Lock()
        self._fh = None
        self.path: Path | None = None  # this process's file, created on the first put
        self.torn_lines = 0  # unreadable lines skipped while loading (a kill mid-write)
        self._load()

    def _load(self) -> None:
        for path in sorted(self.dir.glob("responses-*.jsonl")):
            with open(path, "rb") as fh:
                for raw in fh:
                    if not raw.strip():
                        continue
                    try:
                        entry = CacheEntry.from_dict(json.loads(raw))
                    except (ValueError, KeyError, TypeError):
                        self.torn_lines += 1
                        continue
                    self._entries.setdefault(entry.key, entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> CacheEntry | None:
        return self._entries.get(key)

    def put(self, entry: CacheEntry) -> None:
        """Append the entry (flush + fsync) unless its key is already cached."""
        line = (entry.to_json() + "\n").encode("utf-8")
        with self._lock:
            if entry.key in self._entries:
                return
            if self._fh is None:
                name = (
                    f"responses-{_safe(socket.gethostname())}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
                )
                self.path = self.dir / f"{name}.jsonl"
                self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open for appends
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._entries[entry.key] = entry

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:40] or "host"
