"""Batch mode: Batch API JSONL files, run by OpenAI's Batch API or by vLLM's offline
``run_batch``, imported into the response cache; resumable from a state file.

A batch input file holds one request per line, in the shape both the OpenAI Batch API and
vLLM's ``run_batch`` accept::

    {"custom_id": "<the request's cache key>", "method": "POST",
     "url": "/v1/chat/completions", "body": {"model": ..., "messages": [...], ...}}

Files are split at ``max_requests_per_file`` (50,000) lines or ``max_bytes_per_file``
(200 MB). Requests already in the cache, or already in a job that is still pending, are not
written. Each output line (OpenAI's and vLLM's share the shape)::

    {"id": ..., "custom_id": "<key>", "response": {"status_code": 200, "request_id": ...,
     "body": <chat completion>}, "error": null}

is imported into the same response cache, so ``complete_many`` then answers from it with zero
calls. A failed line (``error`` set, a status other than 200, no choices, unreadable JSON) is
counted by reason (``error.code``, else ``http_<status>``) and logged with its message
redacted (``vlcomp.redact``); its request is written again on the next run.

Backends (``llm.batch_backend``):

- ``openai``: every written file is uploaded (Files API), a batch is created (Batches API),
  polled every ``batch_poll_s`` until done (``batch_wait_s``: None waits, else
  ``BatchPending`` after that long) and its output and error files are downloaded (redacted)
  and imported. Every Files / Batches call goes through one wrapper: 408/409/429/5xx,
  timeouts and dropped connections are retried (``max_retries``, backoff) and then raise
  ``EndpointUnreachable``; any other 4xx raises ``EndpointRefused`` (a 404 on ``/v1/files``
  says the endpoint has no Files API, e.g. a vLLM server). Messages are redacted and raised
  without the chained ``openai`` exception.
- ``vllm``: nothing is sent anywhere. The files are written, then ``BatchPending`` names the
  exact command per file, ``python -m vllm.entrypoints.openai.run_batch -i <input> -o
  <input stem>.output.jsonl --model <llm.model>`` (absolute paths), and the config key to
  set, ``llm.batch_outputs: [<outputs>]``, before rerunning.

``llm.batch_outputs`` (either backend) lists output files to import first, e.g. what
``run_batch`` wrote or an OpenAI output downloaded by hand. A missing or unreadable file is
an error naming it (``BatchOutputError``); a bad line is counted, not fatal. Then the state
is reconciled: a job whose requests are all in the cache is marked done (``status:
imported``) and is never uploaded or submitted again; a job not yet submitted (or any job,
with the vllm backend) that a newly imported file covers in part, answered or failed (a file
new to the state, or changed since: ``state["outputs"]`` holds each applied file's sha256), is
marked done too, and its unanswered requests are written again as a new job by the same run.

Spend: every line written is charged to the spend ledger as one call (within ``llm.budget``:
the lines past a limit are not written). Creating a job's batch again (a ``batches.create``
retried after its answer was lost, or sent again by a rerun after a kill) may run its lines
again, so every creation after the first charges them again before it is sent
(``create_attempts`` in the state; without room the job is left unsubmitted and the budget is
exhausted). Uploads, polls and downloads run no completion and are not charged.

State (``state_path``, JSON, written atomically after every change) lists the jobs: the input
file name, its uploaded file id, the times its batch was created, the batch id, the last
status seen, the output / error file ids, and whether the output was imported (downloaded as
``output-<batch id>.jsonl`` and ``error-<batch id>.jsonl`` beside the inputs). A run that
stops (or is killed) anywhere resumes from it: submitted jobs are polled, not submitted
again. It never holds the API key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import shlex
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from vlcomp.errors import BatchPending, EndpointRefused, EndpointUnreachable, InputError
from vlcomp.io import atomic_path
from vlcomp.llm.cache import CacheEntry, ResponseCache
from vlcomp.llm.context import ClientContext
from vlcomp.llm.request import Request
from vlcomp.llm.transport import (
    MAX_RETRY_AFTER_S,
    RETRYABLE_STATUS,
    equal_jitter_delay,
    retry_after_s,
    server_words,
)
from vlcomp.redact import redact

__all__ = [
    "BatchOutputError",
    "BatchPending",
    "BatchRunner",
    "ImportCounts",
    "batch_line",
    "custom_ids",
    "import_batch_output",
    "write_batch_files",
]

logger = logging.getLogger("vlcomp.llm")

MAX_REQUESTS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 200 * 1000 * 1000
ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
VLLM_RUN_BATCH = "python -m vllm.entrypoints.openai.run_batch"
MAX_MESSAGE_CHARS = 300  # of a server's error message quoted in a log line or an exception
_PLAIN = re.compile(r"^[\w./@+-]+$")

T = TypeVar("T")


class BatchOutputError(InputError):
    """A file named in ``llm.batch_outputs`` is missing or cannot be read."""


class _NoRoom(Exception):
    """The budget has no room to create a job's batch again."""


@dataclass(frozen=True)
class ImportCounts:
    imported: int
    failed: int
    already_cached: int
    reasons: dict[str, int] = field(default_factory=dict)  # failed lines by reason
    examples: dict[str, str] = field(default_factory=dict)  # reason -> "line N: message"
    ids: frozenset[str] = frozenset()  # every custom_id the file mentions (answered or not)


def batch_line(request: Request, key: str, model: str, fmt: str) -> dict:
    return {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": request.body(model, fmt)}


def write_batch_files(
    lines: Iterable[dict],
    out_dir: str | Path,
    prefix: str = "batch",
    start: int = 0,
    max_requests_per_file: int = MAX_REQUESTS_PER_FILE,
    max_bytes_per_file: int = MAX_BYTES_PER_FILE,
) -> list[Path]:
    """Write the lines as JSONL files of at most the given size; names carry a sequence number
    and the content's sha256 prefix (``batch-0003-1a2b3c4d.jsonl``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chunks: list[list[bytes]] = [[]]
    size = 0
    for line in lines:
        data = (json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        if len(data) > max_bytes_per_file:
            raise ValueError(f"one batch request is {len(data)} bytes, over the file limit")
        cur = chunks[-1]
        if cur and (len(cur) >= max_requests_per_file or size + len(data) > max_bytes_per_file):
            chunks.append([])
            size = 0
        chunks[-1].append(data)
        size += len(data)
    paths = []
    for i, chunk in enumerate(c for c in chunks if c):
        blob = b"".join(chunk)
        path = out / f"{prefix}-{start + i:04d}-{hashlib.sha256(blob).hexdigest()[:8]}.jsonl"
        with atomic_path(path) as tmp:
            tmp.write_bytes(blob)
        paths.append(path)
    return paths


def custom_ids(path: str | Path) -> list[str]:
    ids = []
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                ids.append(json.loads(raw)["custom_id"])
    return ids


def _one_line(text: Any) -> str:
    """A server's message, redacted, on one line, at most ``MAX_MESSAGE_CHARS``."""
    return server_words(text, MAX_MESSAGE_CHARS)


def _http(status: Any) -> str | None:
    if isinstance(status, int) and not isinstance(status, bool) and status != 200:
        return f"http_{status}"
    return None


def line_failure(item: dict) -> tuple[str, str] | None:
    """(reason, message) of a failed output line, None for an answer.

    Reasons: ``error.code`` when it is a string (OpenAI: ``batch_expired``,
    ``batch_cancelled``, ...), ``http_<code>`` for a numeric one (vLLM's ErrorResponse carries
    the HTTP status there), else ``http_<response.status_code>``; ``no_choices`` for a 200
    without an answer."""
    resp = item.get("response")
    status = resp.get("status_code") if isinstance(resp, dict) else None
    body = resp.get("body") if isinstance(resp, dict) else None
    err = item.get("error")
    if err:
        inner = err.get("error") if isinstance(err, dict) else None
        detail = inner if isinstance(inner, dict) else err
        if isinstance(detail, dict):
            code = detail.get("code")
            if isinstance(code, str) and code:
                reason = code
            else:
                reason = _http(code) or _http(status) or "error"
            return reason, _one_line(detail.get("message") or "")
        return _http(status) or "error", _one_line(detail)
    if status != 200 or not isinstance(body, dict):
        berr = body.get("error") if isinstance(body, dict) else None
        code = berr.get("code") if isinstance(berr, dict) else None
        reason = code if isinstance(code, str) and code else _http(status) or "no_response"
        message = berr.get("message") if isinstance(berr, dict) else ""
        return reason, _one_line(message or "")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "no_choices", ""
    return None


def import_batch_output(
    lines: Iterable[bytes | str],
    cache: ResponseCache,
    model: str,
    prompt_version: str,
) -> tuple[ImportCounts, list[CacheEntry]]:
    """Put every successful line of a batch output (OpenAI or vLLM run_batch) into the cache;
    count the others by reason (``line_failure``; ``unreadable_line`` for a line that is not
    a JSON object with a custom_id)."""
    imported: list[CacheEntry] = []
    already = 0
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    ids: set[str] = set()
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        failure = None
        try:
            item = json.loads(raw)
            key = str(item["custom_id"])
        except (ValueError, KeyError, TypeError):
            failure = ("unreadable_line", "not a JSON object with a custom_id")
        else:
            ids.add(key)
            failure = line_failure(item)
        if failure is not None:
            reason, message = failure
            reasons[reason] += 1
            examples.setdefault(
                reason, f"line {number}: {message}" if message else f"line {number}"
            )
            continue
        if key in cache:
            already += 1
            continue
        body = item["response"]["body"]
        choice = body["choices"][0]
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = message.get("content")
        entry = CacheEntry(
            key=key,
            text=text if isinstance(text, str) else None,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
            model=model,
            prompt_version=prompt_version,
            source="batch",
        )
        cache.put(entry)
        imported.append(entry)
    counts = ImportCounts(
        imported=len(imported),
        failed=sum(reasons.values()),
        already_cached=already,
        reasons=dict(sorted(reasons.items())),
        examples=examples,
        ids=frozenset(ids),
    )
    return counts, imported


def _yaml_path(path: Path) -> str:
    text = str(path)
    return text if _PLAIN.match(text) else json.dumps(text)


class BatchRunner:
    """Write the uncached requests as batch files; run them (OpenAI's Batch API) or name the
    command that does (vLLM's run_batch); import the outputs. Resumable from ``state_path``."""

    def __init__(
        self,
        client: ClientContext,
        work_dir: str | Path,
        state_path: str | Path | None = None,
        max_requests_per_file: int = MAX_REQUESTS_PER_FILE,
        max_bytes_per_file: int = MAX_BYTES_PER_FILE,
        poll_s: float | None = None,
        wait_s: float | None = None,
    ) -> None:
        self.client = client
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.state_path = Path(state_path) if state_path else self.work_dir / "state.json"
        self.max_requests_per_file = max_requests_per_file
        self.max_bytes_per_file = max_bytes_per_file
        s = client.settings
        self.poll_s = s.batch_poll_s if poll_s is None else poll_s
        self.wait_s = s.batch_wait_s if wait_s is None else wait_s
        self._rng = random.Random()

    # -- state ---------------------------------------------------------------------------
    def load_state(self) -> dict:
        if self.state_path.exists():
            return json.loads(self.state_path.read_text())
        return {"version": 1, "jobs": []}

    def _save(self, state: dict) -> None:
        with atomic_path(self.state_path) as tmp:
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True))

    @staticmethod
    def _pending(job: dict) -> bool:
        return not job.get("done")

    # -- import by config and reconciliation -----------------------------------------------
    def import_file(
        self, path: str | Path, source: str = "llm.batch_outputs"
    ) -> tuple[ImportCounts, str]:
        """Import one output file into the cache and log what it held; (counts, sha256)."""
        path = Path(path).expanduser()
        client = self.client
        digest = hashlib.sha256()

        def lines(fh) -> Iterable[bytes]:
            for raw in fh:
                digest.update(raw)
                yield raw

        try:
            with open(path, "rb") as fh:
                counts, entries = import_batch_output(
                    lines(fh), client.cache, client.settings.model, client.prompt_version
                )
        except OSError as e:
            raise BatchOutputError(
                f"{source}: cannot read {path}: {e.strerror or type(e).__name__}"
            ) from None
        client.accounting.charge_batch_import(entries)
        client.log(
            f"llm batch: {path}: {counts.imported} answers imported, {counts.already_cached} "
            f"already cached, {counts.failed} failed line(s)"
        )
        self._log_failures(str(path), counts)
        return counts, digest.hexdigest()

    @staticmethod
    def _log_failures(where: str, counts: ImportCounts) -> None:
        for reason, n in counts.reasons.items():
            logger.warning(
                "llm batch: %s: %d line(s) failed with %s (e.g. %s)",
                where,
                n,
                reason,
                counts.examples.get(reason, "-"),
            )

    def import_outputs(self, state: dict) -> tuple[set[str], dict[str, str]]:
        """Import every file of ``llm.batch_outputs``. Returns the custom_ids mentioned by the
        files not applied to the state before (new, or changed since), and every file's
        sha256 by resolved path (``state["outputs"]`` once reconciled)."""
        mentioned: set[str] = set()
        seen = state.get("outputs") or {}
        digests: dict[str, str] = {}
        for name in self.client.settings.batch_outputs:
            counts, digest = self.import_file(name)
            where = str(Path(name).expanduser().resolve())
            digests[where] = digest
            if seen.get(where) != digest:
                mentioned |= counts.ids
        return mentioned, digests

    def reconcile(
        self,
        state: dict,
        mentioned: set[str] = frozenset(),
        partial_submitted: bool = False,
        outputs: dict[str, str] | None = None,
    ) -> None:
        """Close the pending jobs that need nothing more: every request answered (in the
        cache), or (not yet submitted, or ``partial_submitted``) some request mentioned by a
        newly imported output, answered or failed: its unanswered requests are then written
        again as a new job. ``outputs`` (path -> sha256) are recorded as applied."""
        changed = False
        for job in state["jobs"]:
            if not self._pending(job):
                continue
            ids = custom_ids(self.work_dir / job["input"])
            answered = sum(1 for k in ids if k in self.client.cache)
            partial_ok = partial_submitted or not job.get("batch_id")
            if answered < len(ids) and not (partial_ok and any(k in mentioned for k in ids)):
                continue
            unanswered = len(ids) - answered
            job.update(done=True, status="imported", imported=answered, unanswered=unanswered)
            changed = True
            again = " (written again)" if unanswered else ""
            self.client.log(
                f"llm batch: {job['input']} closed by imported output(s): {answered} answered, "
                f"{unanswered} unanswered{again}"
            )
        if outputs and {**(state.get("outputs") or {}), **outputs} != state.get("outputs"):
            state["outputs"] = {**(state.get("outputs") or {}), **outputs}
            changed = True
        if changed:
            self._save(state)

    # -- steps -----------------------------------------------------------------------------
    def write(self, requests: Sequence[Request], state: dict) -> list[Path]:
        """Write files for the requests that are neither cached nor in a running job, within
        the budget; record them in the state (not yet submitted)."""
        client = self.client
        in_flight: set[str] = set()
        for job in state["jobs"]:
            if self._pending(job):
                in_flight.update(custom_ids(self.work_dir / job["input"]))
        fmt = client.transport.structured_format
        lines, seen = [], set()
        allowance = client.accounting.batch_allowance()  # every run's spend counts
        for r in requests:
            k = client.key(r)
            if k in client.cache or k in in_flight or k in seen:
                continue
            ct = r.max_tokens or client.settings.completion_tokens_estimate
            if not allowance.take(r.estimated_prompt_tokens(), ct):
                client.accounting.mark_exhausted("batch estimate over budget")
                logger.warning("llm batch: budget reached; the remaining requests are not written")
                break
            seen.add(k)
            lines.append(batch_line(r, k, client.settings.model, fmt))
        if not lines:
            return []
        client.accounting.charge_batch_written(len(lines))
        paths = write_batch_files(
            lines,
            self.work_dir,
            start=len(state["jobs"]),
            max_requests_per_file=self.max_requests_per_file,
            max_bytes_per_file=self.max_bytes_per_file,
        )
        for p in paths:
            n = len(custom_ids(p))
            state["jobs"].append({"input": p.name, "n": n, "status": "written", "done": False})
        self._save(state)
        return paths

    # -- the OpenAI Files / Batches API ------------------------------------------------------
    def _base_url(self) -> str:
        api = self.client.transport.api()
        return redact(str(api.base_url).rstrip("/"))

    def _api(self, what: str, route: str, call: Callable[[], T]) -> T:
        """``call()`` with retries on 408/409/429/5xx, timeouts and dropped connections; an
        ``openai`` error becomes ``EndpointRefused`` or ``EndpointUnreachable`` (redacted,
        without the chained exception, whose text may quote the key)."""
        import openai

        s = self.client.settings
        attempt = 0
        while True:
            wait_hint = None
            try:
                return call()
            except openai.APIStatusError as e:
                status = e.status_code
                body = e.body if isinstance(e.body, dict) else {}
                message = _one_line(body.get("message") or e.message)
                if status not in RETRYABLE_STATUS and status < 500:
                    base = self._base_url()
                    if status == 404 and route in ("/v1/files", "/v1/batches"):
                        api_name = "Files" if route == "/v1/files" else "Batches"
                        raise EndpointRefused(
                            f"the endpoint at {base} has no {api_name} API (404 on {route}): "
                            "for vLLM set llm.batch_backend: vllm and run its run_batch"
                        ) from None
                    raise EndpointRefused(
                        f"llm batch: {what} ({route}) at {base} refused: HTTP {status}: {message}"
                    ) from None
                reason = f"HTTP {status}: {message}"
                wait_hint = retry_after_s(e.response.headers)
            except openai.APITimeoutError:
                reason = "timeout"
            except openai.APIConnectionError:
                reason = "connection failed"
            except openai.APIError as e:
                raise EndpointRefused(
                    f"llm batch: {what} ({route}) at {self._base_url()}: unexpected response: "
                    f"{_one_line(e)}"
                ) from None
            if attempt >= s.max_retries:
                raise EndpointUnreachable(
                    f"llm batch: {what} ({route}) at {self._base_url()} failed after "
                    f"{attempt + 1} attempt(s): {reason}"
                ) from None
            delay = equal_jitter_delay(s, attempt, self._rng)
            if wait_hint is not None:
                delay = max(delay, min(wait_hint, MAX_RETRY_AFTER_S))
            logger.info(
                "llm batch: %s: retry %d after %s in %.2fs", what, attempt + 1, reason, delay
            )
            time.sleep(delay)
            attempt += 1

    def _download(self, file_id: str, path: Path) -> None:
        """Download a file, redacted (a server may quote the key in an error line)."""
        api = self.client.transport.api()
        route = f"/v1/files/{file_id}/content"
        data = self._api("download", route, lambda: api.files.content(file_id).content)
        text = redact(data.decode("utf-8", errors="replace"))
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")

    def submit(self, state: dict) -> None:
        """Upload and create a batch for every written job without a batch id."""
        api = self.client.transport.api()
        for job in state["jobs"]:
            if not self._pending(job) or job.get("batch_id"):
                continue
            if not job.get("input_file_id"):
                path = self.work_dir / job["input"]

                def upload(path: Path = path, name: str = job["input"]):
                    with open(path, "rb") as fh:
                        return api.files.create(file=(name, fh), purpose="batch")

                f = self._api(f"upload of {job['input']}", "/v1/files", upload)
                job["input_file_id"] = f.id
                self._save(state)

            def create(job: dict = job):
                # the write charged one run of the job's lines; a batch created again (a retry
                # after a lost answer, a rerun after a kill) may run them again: charged again
                again = job.get("create_attempts", 0) > 0
                if again and not self.client.accounting.reserve_call(job["n"], source="batch"):
                    raise _NoRoom
                job["create_attempts"] = job.get("create_attempts", 0) + 1
                self._save(state)
                return api.batches.create(
                    input_file_id=job["input_file_id"], endpoint=ENDPOINT, completion_window="24h"
                )

            try:
                batch = self._api(f"batch of {job['input']}", "/v1/batches", create)
            except _NoRoom:
                logger.warning(
                    "llm batch: budget reached: %s (%d lines) is not created again",
                    job["input"],
                    job["n"],
                )
                return
            job.update(batch_id=batch.id, status=batch.status)
            self._save(state)
            self.client.log(f"llm batch: submitted {job['input']} ({job['n']}) as {batch.id}")

    def poll(self, state: dict) -> int:
        """Refresh every submitted job; import finished ones. Returns the jobs still pending."""
        api = self.client.transport.api()
        for job in state["jobs"]:
            if not self._pending(job) or not job.get("batch_id"):
                continue
            batch_id = job["batch_id"]
            batch = self._api(
                f"status of {batch_id}",
                f"/v1/batches/{batch_id}",
                lambda batch_id=batch_id: api.batches.retrieve(batch_id),
            )
            job.update(
                status=batch.status,
                output_file_id=batch.output_file_id,
                error_file_id=batch.error_file_id,
            )
            if batch.status in TERMINAL:
                self._collect(job, batch)
            self._save(state)
        return sum(1 for j in state["jobs"] if self._pending(j) and j.get("batch_id"))

    def _collect(self, job: dict, batch: Any = None) -> None:
        client = self.client
        batch_id = job["batch_id"]
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        for err in errors:  # a failed batch: its input was refused as a whole
            logger.warning(
                "llm batch: %s %s: %s: %s (line %s)",
                batch_id,
                job["status"],
                getattr(err, "code", None),
                _one_line(getattr(err, "message", "") or ""),
                getattr(err, "line", None),
            )
        answered = 0
        for kind in ("output", "error"):
            file_id = job.get(f"{kind}_file_id")
            if not file_id:
                continue
            path = self.work_dir / f"{kind}-{batch_id}.jsonl"
            self._download(file_id, path)
            with open(path, "rb") as fh:
                counts, entries = import_batch_output(
                    fh, client.cache, client.settings.model, client.prompt_version
                )
            client.accounting.charge_batch_import(entries)
            self._log_failures(f"{batch_id} {kind} file", counts)
            answered += counts.imported + counts.already_cached
        unanswered = job["n"] - answered
        job.update(done=True, imported=answered, unanswered=unanswered)
        client.log(
            f"llm batch: {batch_id} {job['status']}: {answered} answers imported, "
            f"{unanswered} unanswered (written again on the next run)"
        )

    # -- vLLM's offline run_batch ----------------------------------------------------------
    def vllm_output(self, job: dict) -> Path:
        """Where the run_batch command for a job writes its output (beside the input)."""
        return (self.work_dir / job["input"]).resolve().with_suffix(".output.jsonl")

    def vllm_pending(self, jobs: Sequence[dict]) -> BatchPending:
        model = shlex.quote(self.client.settings.model)
        commands, outputs = [], []
        for job in jobs:
            src = (self.work_dir / job["input"]).resolve()
            out = self.vllm_output(job)
            commands.append(
                f"{VLLM_RUN_BATCH} -i {shlex.quote(str(src))} -o {shlex.quote(str(out))} "
                f"--model {model}"
            )
            outputs.append(out)
        listed = [Path(p).expanduser().resolve() for p in self.client.settings.batch_outputs]
        keys = listed + [o for o in outputs if o not in listed]
        n = sum(int(j.get("n") or 0) for j in jobs)
        return BatchPending(
            f"llm batch (vllm): {n} request(s) in {len(jobs)} file(s) to run with vLLM: "
            f"{' && '.join(commands)} ; then set llm.batch_outputs: "
            f"[{', '.join(_yaml_path(p) for p in keys)}] in the config and rerun "
            f"(state: {self.state_path.resolve()})"
        )

    # -- the whole run ---------------------------------------------------------------------
    def run(self, requests: Sequence[Request]) -> dict:
        """Import ``llm.batch_outputs``, reconcile the state, then per backend: ``openai``
        resumes the recorded jobs, submits what is missing, waits (``wait_s``: None = until
        done; 0 = do not wait) and imports, raising ``BatchPending`` if jobs are still
        running then; ``vllm`` writes the files and raises ``BatchPending`` with the
        ``run_batch`` commands while any job waits for its output."""
        state = self.load_state()
        vllm = self.client.settings.batch_backend == "vllm"
        mentioned, outputs = self.import_outputs(state)
        self.reconcile(state, mentioned, partial_submitted=vllm, outputs=outputs)
        if vllm:
            self.write(requests, state)
            waiting = [j for j in state["jobs"] if self._pending(j)]
            if waiting:
                raise self.vllm_pending(waiting)
            return state
        if any(j.get("batch_id") and self._pending(j) for j in state["jobs"]):
            self.poll(state)
        self.write(requests, state)
        self.submit(state)
        start = time.monotonic()
        pending = self.poll(state)
        while pending:
            if self.wait_s is not None and time.monotonic() - start >= self.wait_s:
                raise BatchPending(
                    f"{pending} batch job(s) still running; rerun to resume ({self.state_path})"
                )
            time.sleep(self.poll_s)
            pending = self.poll(state)
        return state
