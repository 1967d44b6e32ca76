"""Batch mode: Batch API JSONL files, submit / poll / resume by job id, import into the cache.

A batch input file holds one request per line, in the shape both the OpenAI Batch API and
vLLM's offline ``run_batch`` accept::

    {"custom_id": "<the request's cache key>", "method": "POST",
     "url": "/v1/chat/completions", "body": {"model": ..., "messages": [...], ...}}

Files are split at ``max_requests_per_file`` (50,000) lines or ``max_bytes_per_file``
(200 MB). Requests already in the cache, or already in a job that is still running, are not
written. The output JSONL (OpenAI's and vLLM's are the same shape)::

    {"id": ..., "custom_id": "<key>", "response": {"status_code": 200, "body": <chat completion>},
     "error": null}

is imported into the same response cache, so ``complete_many`` then answers from it with zero
calls. Lines with an error are counted and left out: such requests are written again on the
next run.

State (``state_path``, JSON, written atomically after every change) lists the jobs: the input
file name, its uploaded file id, the batch id, the last status seen, the output / error file
ids, and whether the output was imported. A run that stops (or is killed) anywhere resumes from
it: submitted jobs are polled, not submitted again. It never holds the API key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlcomp.io import atomic_path
from vlcomp.llm.cache import CacheEntry, ResponseCache
from vlcomp.llm.client import FORMATS, LLMClient, Request

logger = logging.getLogger("vlcomp.llm")

MAX_REQUESTS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 200 * 1000 * 1000
ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchPending(RuntimeError):
    """Batch jobs are still running; rerun later to resume (the state file holds their ids)."""


@dataclass(frozen=True)
class ImportCounts:
    imported: int
    failed: int
    already_cached: int


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


def import_batch_output(
    lines: Iterable[bytes | str],
    cache: ResponseCache,
    model: str,
    prompt_version: str,
) -> tuple[ImportCounts, list[CacheEntry]]:
    """Put every successful line of a batch output (OpenAI or vLLM run_batch) into the cache."""
    imported: list[CacheEntry] = []
    failed = already = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
            key = str(item["custom_id"])
        except (ValueError, KeyError, TypeError):
            failed += 1  # a torn or foreign line
            continue
        resp = item.get("response") or {}
        body = resp.get("body") if isinstance(resp, dict) else None
        if item.get("error") or resp.get("status_code") != 200 or not isinstance(body, dict):
            failed += 1
            continue
        choices = body.get("choices") or []
        if not choices:
            failed += 1
            continue
        if key in cache:
            already += 1
            continue
        usage = body.get("usage") or {}
        message = choices[0].get("message") or {}
        entry = CacheEntry(
            key=key,
            text=message.get("content"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choices[0].get("finish_reason"),
            model=model,
            prompt_version=prompt_version,
            source="batch",
        )
        cache.put(entry)
        imported.append(entry)
    return ImportCounts(len(imported), failed, already), imported


class BatchRunner:
    """Submit the uncached requests as batch jobs, poll, import; resumable from ``state_path``."""

    def __init__(
        self,
        client: LLMClient,
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

    # -- steps -----------------------------------------------------------------------------
    def write(self, requests: Sequence[Request], state: dict) -> list[Path]:
        """Write files for the requests that are neither cached nor in a running job, within
        the budget; record them in the state (not yet submitted)."""
        client = self.client
        in_flight: set[str] = set()
        for job in state["jobs"]:
            if self._pending(job):
                in_flight.update(custom_ids(self.work_dir / job["input"]))
        fmt = FORMATS[client._format_level]
        lines, seen = [], set()
        b = client.settings.budget
        price = client.settings.price
        st = client.stats  # what this client already spent counts against the budget
        calls = st["calls"]
        tokens = st["prompt_tokens"] + st["completion_tokens"]
        cost = st["cost_usd"] or 0.0
        for r in requests:
            k = client.key(r)
            if k in client.cache or k in in_flight or k in seen:
                continue
            pt = r.estimated_prompt_tokens()
            ct = r.max_tokens or client.settings.completion_tokens_estimate
            c = price.cost(pt, ct, batch=True) if price is not None else 0.0
            if (
                (b.max_calls is not None and calls + 1 > b.max_calls)
                or (b.max_tokens is not None and tokens + pt + ct > b.max_tokens)
                or (b.max_cost_usd is not None and cost + c > b.max_cost_usd)
            ):
                with client._lock:
                    client._exhausted = client._exhausted or "batch estimate over budget"
                logger.warning("llm batch: budget reached; the remaining requests are not written")
                break
            seen.add(k)
            lines.append(batch_line(r, k, client.settings.model, fmt))
            calls, tokens, cost = calls + 1, tokens + pt + ct, cost + c
        if not lines:
            return []
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

    def submit(self, state: dict) -> None:
        """Upload and create a batch for every written job without a batch id."""
        api = self.client._ensure_client()
        for job in state["jobs"]:
            if not self._pending(job) or job.get("batch_id"):
                continue
            if not job.get("input_file_id"):
                with open(self.work_dir / job["input"], "rb") as fh:
                    f = api.files.create(file=(job["input"], fh), purpose="batch")
                job["input_file_id"] = f.id
                self._save(state)
            batch = api.batches.create(
                input_file_id=job["input_file_id"], endpoint=ENDPOINT, completion_window="24h"
            )
            job.update(batch_id=batch.id, status=batch.status)
            self._save(state)
            self.client._log(f"llm batch: submitted {job['input']} ({job['n']}) as {batch.id}")

    def poll(self, state: dict) -> int:
        """Refresh every submitted job; import finished ones. Returns the jobs still pending."""
        api = self.client._ensure_client()
        for job in state["jobs"]:
            if not self._pending(job) or not job.get("batch_id"):
                continue
            batch = api.batches.retrieve(job["batch_id"])
            job.update(
                status=batch.status,
                output_file_id=batch.output_file_id,
                error_file_id=batch.error_file_id,
            )
            if batch.status in TERMINAL:
                self._collect(job)
            self._save(state)
        return sum(1 for j in state["jobs"] if self._pending(j))

    def _collect(self, job: dict) -> None:
        api = self.client._ensure_client()
        counts = ImportCounts(0, 0, 0)
        if job.get("output_file_id"):
            out = self.work_dir / f"output-{job['batch_id']}.jsonl"
            out.write_bytes(api.files.content(job["output_file_id"]).content)
            with open(out, "rb") as fh:
                counts, entries = import_batch_output(
                    fh, self.client.cache, self.client.settings.model, self.client.prompt_version
                )
            self.client._account_batch(entries)
        if job.get("error_file_id"):
            err = self.work_dir / f"errors-{job['batch_id']}.jsonl"
            err.write_bytes(api.files.content(job["error_file_id"]).content)
        unanswered = job["n"] - counts.imported - counts.already_cached
        job.update(done=True, imported=counts.imported, unanswered=unanswered)
        self.client._log(
            f"llm batch: {job['batch_id']} {job['status']}: {counts.imported} answers imported, "
            f"{unanswered} unanswered (written again on the next run)"
        )

    def run(self, requests: Sequence[Request]) -> dict:
        """Resume the recorded jobs, submit what is missing, wait (``wait_s``: None = until done;
        0 = do not wait) and import. Raises BatchPending if jobs are still running then."""
        state = self.load_state()
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
