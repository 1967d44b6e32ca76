"""Requests, responses and answer parsing: what one chat completion asks and what came back.

A ``Request`` has a cache key (sha256 of the canonical JSON of model, messages, temperature,
seed, max_tokens, answer schema and prompt version) and builds its own request body at each
structured-output level. A ``Response`` is rebuilt from a cache entry by
``response_from_entry``, which parses and validates the answer again on every read: failures
are reasons (``empty``, ``parse_error``, ``schema_error``), not exceptions.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vlcomp.llm.cache import CacheEntry

KEY_FORMAT = 1  # bump when what goes into Request.key changes
MALFORMED = ("empty", "parse_error", "schema_error")  # answers retried as transient errors


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
