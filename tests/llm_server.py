"""A local OpenAI-compatible HTTP server for tests (loopback only, a free port, bounded).

It speaks just enough of the OpenAI API for the real `openai` client:

- ``POST /v1/chat/completions``: the answer comes from ``server.answer(request_json)`` (a
  function the test sets; it returns the message content as a string), wrapped in the OpenAI
  response shape with ``usage`` (tokens counted as characters / 4, at least 1).
- ``POST /v1/files`` (multipart, purpose=batch), ``GET /v1/files/{id}/content``,
  ``POST /v1/batches``, ``GET /v1/batches/{id}``: a batch is run synchronously through the
  same answer function when it is created; ``GET /v1/batches/{id}`` reports ``in_progress``
  for the first ``batch_polls_before_complete`` polls, then ``completed``.

Fault injection: ``server.faults`` is a queue applied, one fault per request, to the next
chat completion requests: ``("429", retry_after_s)``, ``("500",)``, ``("delay", seconds)``
(the answer comes after that delay, at most ``MAX_DELAY_S``), ``("drop",)`` (the connection is
closed without a response), ``("status", code)`` (an error with that HTTP status),
``("truncate",)`` (the content is cut in half, finish_reason
``length``), ``("content", text)`` (this text instead of the answer function's),
``("body", raw)`` or ``("body", raw, content_type)`` (HTTP 200 with this raw body, e.g.
truncated JSON, as ``application/json`` unless another type is given), ``("null",)``
(message content null), ``("no_usage",)`` (no ``usage`` in the answer), ``(None,)`` (the
normal answer). ``server.default_fault`` (None by default) is applied to every chat request
that the queue leaves without a fault: ``("body", "<html>...")`` makes a server that answers
only garbage.
``server.reject_formats`` lists ``response_format`` types the server refuses with a 400 (like a
server without structured output support).

Batch and secrecy options (off by default): ``server.echo_key_in_errors`` puts the request's
``Authorization`` header (the API key) in the message of every error the server returns (chat,
files, batches, and the lines of a batch error file), like a careless server;
``server.files_error_status`` answers every ``/v1/files`` request with that HTTP status (404:
a server without the Files API, such as vLLM's); ``server.batch_expire_after`` answers only
that many lines of a batch, which then ends ``expired`` with the other lines in its error file
(``error.code`` ``batch_expired``, as OpenAI's). ``server.batch_create_faults`` is a queue
applied, one per request, to ``POST /v1/batches``: ``("500",)`` answers 500 and creates
nothing, ``("lost",)`` creates and runs the batch, then answers 500 (an answer lost on the
way, so the client cannot know the batch exists). ``batch_lines_run`` counts the batch lines
the server has answered (each one a chat completion it ran).

Every request is recorded (path, parsed body, headers with lower-case names) in
``server.requests``; ``chat_bodies()`` lists the chat completion bodies that were answered or
faulted, ``max_in_flight`` is the most chat requests handled at once, and
``answer_latencies_s`` the server's own time per answered chat request (from the body parsed to
the response written).

Use the ``llm_server`` fixture: ``from tests.llm_server import llm_server`` in a test module
(or a conftest) makes it available; it starts the server and shuts it down after the test.
"""

from __future__ import annotations

import collections
import email.parser
import email.policy
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MAX_DELAY_S = 5.0  # no handler sleeps longer than this: every request returns in bounded time


def count_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def default_answer(body: dict) -> str:
    """Echo the last user message (a plain-text answer)."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return "echo: " + (user[-1]["content"] if user else "")


class FakeLLMServer:
    def __init__(self) -> None:
        self.answer: Callable[[dict], str] = default_answer
        self.faults: collections.deque[tuple] = collections.deque()
        self.default_fault: tuple | None = None
        self.batch_create_faults: collections.deque[tuple] = collections.deque()
        self.batch_lines_run = 0
        self.reject_formats: set[str] = set()
        self.batch_polls_before_complete = 1
        self.echo_key_in_errors = False
        self.files_error_status: int | None = None
        self.batch_expire_after: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.answer_latencies_s: list[float] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict] = {}
        self._polls: dict[str, int] = collections.Counter()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=MAX_DELAY_S + 5)
            self._httpd = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- what tests read ------------------------------------------------------------------
    def chat_bodies(self) -> list[dict]:
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] == "/v1/chat/completions"]

    @property
    def chat_calls(self) -> int:
        return len(self.chat_bodies())

    def user_messages(self) -> list[str]:
        """The last user message of each chat request, in arrival order."""
        out = []
        for body in self.chat_bodies():
            user = [m for m in body.get("messages", []) if m.get("role") == "user"]
            out.append(user[-1]["content"] if user else "")
        return out

    def reset_records(self) -> None:
        with self._lock:
            self.requests.clear()
            self.answer_latencies_s.clear()
            self.max_in_flight = 0

    # -- internals ------------------------------------------------------------------------
    def _record(self, path: str, method: str, body: Any, headers: dict) -> None:
        with self._lock:
            self.requests.append({"path": path, "method": method, "body": body, "headers": headers})

    def _next_fault(self) -> tuple | None:
        with self._lock:
            return self.faults.popleft() if self.faults else self.default_fault

    def _next_batch_create_fault(self) -> tuple | None:
        with self._lock:
            return self.batch_create_faults.popleft() if self.batch_create_faults else None

    def completion(self, body: dict, content: str, finish_reason: str = "stop") -> dict:
        prompt = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        pt, ct = count_tokens(prompt), count_tokens(content)
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }

    def run_batch(self, input_file_id: str) -> tuple[str, int]:
        """Answer every line of an uploaded batch input file; return (output file id, n)."""
        output_id, _, n, _ = self.run_batch_files(input_file_id)
        return output_id, n

    def run_batch_files(
        self, input_file_id: str, authorization: str = ""
    ) -> tuple[str | None, str | None, int, int]:
        """Answer the lines of an uploaded batch input file (the first
        ``batch_expire_after`` only, when set; the others expire). Returns (output file id,
        error file id, answered, expired); a file id is None when it would be empty."""
        lines = self._files[input_file_id].decode().splitlines()
        out, expired = [], []
        for line in lines:
            if not line.strip():
                continue
            item = json.loads(line)
            body = item["body"]
            if self.batch_expire_after is not None and len(out) >= self.batch_expire_after:
                message = "This request could not be executed before the completion window expired."
                if self.echo_key_in_errors:
                    message += f" (authorization: {authorization})"
                expired.append(
                    {
                        "id": "batch_req_" + uuid.uuid4().hex[:12],
                        "custom_id": item["custom_id"],
                        "response": None,
                        "error": {"code": "batch_expired", "message": message},
                    }
                )
                continue
            out.append(
                {
                    "id": "batch_req_" + uuid.uuid4().hex[:12],
                    "custom_id": item["custom_id"],
                    "response": {
                        "status_code": 200,
                        "request_id": uuid.uuid4().hex,
                        "body": self.completion(body, self.answer(body)),
                    },
                    "error": None,
                }
            )
        with self._lock:
            self.batch_lines_run += len(out)
        output_id = self._store(out) if out or self.batch_expire_after is None else None
        error_id = self._store(expired) if expired else None
        return output_id, error_id, len(out), len(expired)

    def _store(self, rows: list[dict]) -> str:
        file_id = "file-" + uuid.uuid4().hex[:12]
        self._files[file_id] = "".join(json.dumps(o) + "\n" for o in rows).encode()
        return file_id


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.1"
    timeout = MAX_DELAY_S + 5  # a stalled client cannot hold a handler thread forever

    def setup(self):
        super().setup()
        # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK would add ~40 ms to every response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _read_body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send_json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to do

    def _send_raw(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, status: int, message: str, headers: dict | None = None) -> None:
        if self.fake.echo_key_in_errors:
            message += f" (authorization: {self.headers.get('Authorization')})"
        err = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
        self._send_json(status, {"error": err}, headers)

    # -- routes ---------------------------------------------------------------------------
    def do_POST(self):  # noqa: N802 - http.server's naming
        raw = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path == "/v1/chat/completions":
            body = json.loads(raw)
            self.fake._record(self.path, "POST", body, headers)
            self._chat(body)
        elif self.path == "/v1/files":
            self.fake._record(self.path, "POST", None, headers)
            if self.fake.files_error_status is not None:
                return self._error(self.fake.files_error_status, f"no route {self.path}")
            self._upload(raw)
        elif self.path == "/v1/batches":
            body = json.loads(raw)
            self.fake._record(self.path, "POST", body, headers)
            self._create_batch(body)
        else:
            self.fake._record(self.path, "POST", None, headers)
            self._error(404, f"no route {self.path}")

    def do_GET(self):  # noqa: N802
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake._record(self.path, "GET", None, headers)
        parts = self.path.strip("/").split("/")
        if len(parts) == 3 and parts[:2] == ["v1", "batches"]:
            batch = self.fake._batches.get(parts[2])
            if batch is None:
                return self._error(404, "no such batch")
            self.fake._polls[parts[2]] += 1
            shown = dict(batch)
            if self.fake._polls[parts[2]] <= self.fake.batch_polls_before_complete:
                shown.update(status="in_progress", output_file_id=None, error_file_id=None)
            return self._send_json(200, shown)
        if parts[:2] == ["v1", "files"] and self.fake.files_error_status is not None:
            return self._error(self.fake.files_error_status, f"no route {self.path}")
        if len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content":
            data = self.fake._files.get(parts[2])
            if data is None:
                return self._error(404, "no such file")
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self._error(404, f"no route {self.path}")

    def _chat(self, body: dict) -> None:
        fake = self.fake
        start = time.perf_counter()
        with fake._lock:
            fake._in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        try:
            fault = fake._next_fault()
            kind = fault[0] if fault else None
            if kind == "429":
                retry_after = fault[1] if len(fault) > 1 else 0
                return self._error(429, "rate limited", {"Retry-After": str(retry_after)})
            if kind == "500":
                return self._error(500, "internal error")
            if kind == "status":
                return self._error(int(fault[1]), f"status {fault[1]}")
            if kind == "drop":
                self.close_connection = True
                return None  # nothing written: the client sees the connection close
            if kind == "delay":
                time.sleep(min(float(fault[1]), MAX_DELAY_S))
            fmt = (body.get("response_format") or {}).get("type")
            if fmt in fake.reject_formats:
                return self._error(400, f"response_format {fmt} is not supported")
            if kind == "body":  # HTTP 200 with this raw body (e.g. truncated JSON)
                return self._send_raw(200, fault[1].encode(), *fault[2:])
            content = fault[1] if kind == "content" else fake.answer(body)
            finish = "stop"
            if kind == "truncate":
                content, finish = content[: len(content) // 2], "length"
            completion = fake.completion(body, content or "", finish)
            if kind == "null":
                completion["choices"][0]["message"]["content"] = None
            if kind == "no_usage":
                del completion["usage"]
            self._send_json(200, completion)
            with fake._lock:
                fake.answer_latencies_s.append(time.perf_counter() - start)
        finally:
            with fake._lock:
                fake._in_flight -= 1

    def _upload(self, raw: bytes) -> None:
        ctype = self.headers.get("Content-Type", "")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw
        )
        data, purpose, filename = None, None, "upload.jsonl"
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                data = part.get_payload(decode=True)
                filename = part.get_filename() or filename
            elif name == "purpose":
                purpose = part.get_payload(decode=True).decode()
        if data is None:
            return self._error(400, "no file part")
        file_id = "file-" + uuid.uuid4().hex[:12]
        self.fake._files[file_id] = data
        return self._send_json(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": purpose or "batch",
                "status": "processed",
            },
        )

    def _create_batch(self, body: dict) -> None:
        input_id = body["input_file_id"]
        if input_id not in self.fake._files:
            return self._error(404, "no such input file")
        fault = self.fake._next_batch_create_fault()
        if fault is not None and fault[0] == "500":
            return self._error(500, "internal error")
        authorization = self.headers.get("Authorization") or ""
        output_id, error_id, n, expired = self.fake.run_batch_files(input_id, authorization)
        batch_id = "batch_" + uuid.uuid4().hex[:12]
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": input_id,
            "completion_window": body["completion_window"],
            "status": "expired" if expired else "completed",
            "output_file_id": output_id,
            "error_file_id": error_id,
            "created_at": int(time.time()),
            "request_counts": {"total": n + expired, "completed": n, "failed": expired},
        }
        self.fake._batches[batch_id] = batch
        if fault is not None and fault[0] == "lost":
            return self._error(500, "internal error (the batch was created)")
        shown = dict(batch)
        shown.update(status="validating", output_file_id=None)
        return self._send_json(200, shown)


@pytest.fixture
def llm_server():
    """A running FakeLLMServer on 127.0.0.1 (a free port); shut down after the test."""
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
