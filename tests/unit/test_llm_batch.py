"""Batch mode (vlcomp.llm.batch) where users run it: vLLM's offline ``run_batch`` (the exact
command, then the output imported by config), outputs imported by hand into OpenAI's flow, the
Files / Batches API's errors as one-line job stops, and the API key kept out of every file,
message and log even when the server echoes it.

The OpenAI side runs through the real ``openai`` client against tests/llm_server.py. vLLM
cannot be installed here (it needs a GPU build and model weights), so ``play_run_batch`` plays
its ``run_batch``: it reads the input JSONL our code wrote and writes the output in vLLM's
schema (tests/fixtures/llm_batch/vllm_output.jsonl, whose README names the source), answering
with the test server's answer function.
"""

from __future__ import annotations

import copy
import json
import logging
import secrets
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_client import answer, requests_for
from vlcomp.errors import BatchPending, EndpointRefused, EndpointUnreachable
from vlcomp.joblog import job_log
from vlcomp.llm import BatchOutputError, LLMClient, LLMSettings, ResponseCache
from vlcomp.llm.batch import VLLM_RUN_BATCH, import_batch_output

FIXTURES = REPO / "tests" / "fixtures" / "llm_batch"
KEY_ENV = "VLCOMP_TEST_BATCH_KEY"
MODEL = "test-model"


def expected(i: int) -> str:
    return f"a blue car number {i} next to a tree"


def settings(base_url: str | None, **over) -> LLMSettings:
    cfg = {
        "base_url": base_url,
        "model": MODEL,
        "api_key_env": KEY_ENV,
        "mode": "batch",
        "timeout_s": 5,
        "max_retries": 1,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
        "batch_poll_s": 0.01,
    }
    cfg.update(over)
    return LLMSettings.from_config(cfg)


def make_client(base_url, cache_dir: Path, logs: list[str] | None = None, **over) -> LLMClient:
    sink = logs.append if logs is not None else (lambda _m: None)
    return LLMClient(settings(base_url, **over), cache_dir, "v1", log=sink)


@pytest.fixture
def api_key(monkeypatch):
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    return key


@pytest.fixture
def server(llm_server):  # noqa: F811 - the imported fixture
    llm_server.answer = answer
    return llm_server


def fixture_line(name: str, index: int) -> dict:
    return json.loads((FIXTURES / name).read_text().splitlines()[index])


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


def play_run_batch(
    inp: Path, out: Path, answer_fn: Callable[[dict], str], fail: set[str] = frozenset()
) -> None:
    """What ``python -m vllm.entrypoints.openai.run_batch -i inp -o out`` writes: one
    BatchRequestOutput per input line, in order (compact JSON, as pydantic dumps it); the
    custom_ids in ``fail`` get vLLM's ErrorResponse line (an unknown model: 404)."""
    ok, error = fixture_line("vllm_output.jsonl", 0), fixture_line("vllm_output.jsonl", 1)
    lines = []
    for raw in inp.read_text().splitlines():
        item = json.loads(raw)
        if item["custom_id"] in fail:
            row = copy.deepcopy(error)
        else:
            row = copy.deepcopy(ok)
            body = row["response"]["body"]
            text = answer_fn(item["body"])
            prompt = "".join(m["content"] for m in item["body"]["messages"])
            body["model"] = item["body"]["model"]
            body["choices"][0]["message"]["content"] = text
            pt, ct = tokens(prompt), tokens(text)
            body["usage"].update(prompt_tokens=pt, completion_tokens=ct, total_tokens=pt + ct)
        row["id"] = f"vllm-{uuid.uuid4().hex[:16]}"
        row["custom_id"] = item["custom_id"]
        row["response"]["request_id"] = f"vllm-batch-{uuid.uuid4().hex[:16]}"
        lines.append(json.dumps(row, separators=(",", ":")) + "\n")
    out.write_text("".join(lines))


def play_openai_batch(
    inp: Path, out: Path, answer_fn: Callable[[dict], str], only: int | None = None
) -> None:
    """An OpenAI batch output downloaded by hand: one line per answered request (the first
    ``only`` lines of the input when given), in the Batch API's documented shape."""
    ok = fixture_line("openai_output.jsonl", 0)
    lines = []
    for raw in inp.read_text().splitlines()[:only]:
        item = json.loads(raw)
        row = copy.deepcopy(ok)
        text = answer_fn(item["body"])
        body = row["response"]["body"]
        body["choices"][0]["message"]["content"] = text
        prompt = "".join(m["content"] for m in item["body"]["messages"])
        pt, ct = tokens(prompt), tokens(text)
        body["usage"].update(prompt_tokens=pt, completion_tokens=ct, total_tokens=pt + ct)
        row["custom_id"] = item["custom_id"]
        lines.append(json.dumps(row) + "\n")
    out.write_text("".join(lines))


def jobs(cache_dir: Path) -> list[dict]:
    return json.loads((cache_dir / "batch" / "state.json").read_text())["jobs"]


# -- the documented output schemas -----------------------------------------------------------
def test_openai_output_fixture_imported_and_errors_counted_by_reason(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    with open(FIXTURES / "openai_output.jsonl", "rb") as fh:
        counts, entries = import_batch_output(fh, cache, "m", "v1")
    assert (counts.imported, counts.failed, counts.already_cached) == (1, 2, 0)
    assert counts.reasons == {"batch_expired": 1, "invalid_json_schema": 1}
    assert counts.examples["batch_expired"].startswith("line 2: This request could not")
    assert counts.ids == {"request-1", "request-2", "request-3"}
    (e,) = entries
    assert (e.key, e.prompt_tokens, e.completion_tokens, e.finish_reason) == (
        "request-1", 31, 12, "stop"
    )  # fmt: skip
    assert json.loads(e.text) == {"negative": "a blue car", "changed": ["red"]}
    assert "request-2" not in cache and "request-3" not in cache


def test_vllm_output_fixture_imported_and_errors_counted_by_reason(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    with open(FIXTURES / "vllm_output.jsonl", "rb") as fh:
        counts, entries = import_batch_output(fh, cache, "m", "v1")
    assert (counts.imported, counts.failed) == (1, 2)
    assert counts.reasons == {"http_400": 1, "http_404": 1}
    assert "does not exist" in counts.examples["http_404"]
    assert counts.examples["http_400"] == "line 3: Request must not be sent in stream mode"
    (e,) = entries
    assert (e.prompt_tokens, e.completion_tokens, e.source) == (35, 14, "batch")
    # a second import of the same file adds nothing
    with open(FIXTURES / "vllm_output.jsonl", "rb") as fh:
        again, _ = import_batch_output(fh, cache, "m", "v1")
    assert (again.imported, again.already_cached) == (0, 1)


# -- vLLM: the exact command, then the output imported by config -----------------------------
def test_vllm_backend_names_run_batch_then_imports_its_output(server, api_key, tmp_path):
    reqs = requests_for(6)
    cache = tmp_path / "cache"
    logs: list[str] = []
    c = make_client(server.base_url, cache, logs, batch_backend="vllm")
    with pytest.raises(BatchPending) as stop:
        c.complete_many(reqs)
    (job,) = jobs(cache)
    assert (job["n"], job["status"], job["done"]) == (6, "written", False)
    inp = (cache / "batch" / job["input"]).resolve()
    out = inp.with_name(inp.name.removesuffix(".jsonl") + ".output.jsonl")
    message = str(stop.value)
    command = f"python -m vllm.entrypoints.openai.run_batch -i {inp} -o {out} --model {MODEL}"
    assert command in message and f"llm.batch_outputs: [{out}]" in message
    assert "\n" not in message and stop.value.exit_code == 8
    assert server.requests == []  # nothing is sent to any server in this backend
    lines = [json.loads(x) for x in inp.read_text().splitlines()]
    assert [x["custom_id"] for x in lines] == [c.key(r) for r in reqs]
    assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}

    play_run_batch(inp, out, server.answer)
    c2 = make_client(server.base_url, cache, logs, batch_backend="vllm", batch_outputs=[str(out)])
    responses = c2.complete_many(reqs)
    assert [r.parsed["negative"] for r in responses] == [expected(i) for i in range(6)]
    assert server.requests == [] and server.chat_calls == 0
    assert c2.stats["batch_imported"] == 6
    (job,) = jobs(cache)
    assert (job["done"], job["status"], job["imported"], job["unanswered"]) == (
        True, "imported", 6, 0
    )  # fmt: skip

    # a rerun writes nothing new and asks for nothing
    c3 = make_client(server.base_url, cache, logs, batch_backend="vllm", batch_outputs=[str(out)])
    assert c3.complete_many(reqs) == responses
    assert len(jobs(cache)) == 1 and server.requests == []


def test_vllm_failed_lines_are_written_again_once(server, api_key, tmp_path, caplog):
    reqs = requests_for(5)
    cache = tmp_path / "cache"
    c = make_client(None, cache, batch_backend="vllm")
    with pytest.raises(BatchPending):
        c.complete_many(reqs)
    (job,) = jobs(cache)
    inp = (cache / "batch" / job["input"]).resolve()
    out = inp.with_suffix(".output.jsonl")
    failed = {c.key(reqs[1]), c.key(reqs[3])}
    play_run_batch(inp, out, answer, fail=failed)

    first = make_client(None, cache, batch_backend="vllm", batch_outputs=[str(out)])
    with caplog.at_level(logging.WARNING, logger="vlcomp.llm"), pytest.raises(BatchPending) as stop:
        first.complete_many(reqs)
    assert "2 line(s) failed with http_404" in caplog.text
    old, new = jobs(cache)
    assert (old["done"], old["imported"], old["unanswered"]) == (True, 3, 2)
    assert (new["n"], new["done"]) == (2, False)
    new_inp = (cache / "batch" / new["input"]).resolve()
    assert set(json.loads(x)["custom_id"] for x in new_inp.read_text().splitlines()) == failed
    assert f"-i {new_inp} " in str(stop.value) and f"-i {inp} " not in str(stop.value)
    assert str(stop.value).count(VLLM_RUN_BATCH) == 1

    # rerun before run_batch ran on the new file: the same command, no new job
    with pytest.raises(BatchPending) as again:
        make_client(None, cache, batch_backend="vllm", batch_outputs=[str(out)]).complete_many(reqs)
    assert str(again.value) == str(stop.value) and len(jobs(cache)) == 2

    new_out = new_inp.with_suffix(".output.jsonl")
    play_run_batch(new_inp, new_out, answer)
    done = make_client(None, cache, batch_backend="vllm", batch_outputs=[str(out), str(new_out)])
    assert [r.parsed["negative"] for r in done.complete_many(reqs)] == [
        expected(i) for i in range(5)
    ]
    assert all(j["done"] for j in jobs(cache)) and len(jobs(cache)) == 2


# -- OpenAI: an output imported by config is never uploaded ------------------------------------
def test_openai_imported_job_is_not_uploaded_again(server, api_key, tmp_path):
    reqs = requests_for(6)
    cache = tmp_path / "cache"
    server.files_error_status = 404  # like a vLLM server: no Files API
    with pytest.raises(EndpointRefused) as stop:
        make_client(server.base_url, cache).complete_many(reqs)
    assert str(stop.value) == (
        f"the endpoint at {server.base_url} has no Files API (404 on /v1/files): for vLLM set "
        "llm.batch_backend: vllm and run its run_batch"
    )
    assert stop.value.exit_code == 3 and stop.value.__suppress_context__
    (job,) = jobs(cache)
    assert job["status"] == "written" and "input_file_id" not in job

    # the user ran the batch elsewhere; 4 of 6 answered; the Files API works again
    inp = cache / "batch" / job["input"]
    out = tmp_path / "downloaded.jsonl"
    play_openai_batch(inp, out, server.answer, only=4)
    server.files_error_status = None
    server.reset_records()
    c = make_client(server.base_url, cache, batch_outputs=[str(out)])
    responses = c.complete_many(reqs)
    assert [r.parsed["negative"] for r in responses] == [expected(i) for i in range(6)]
    old, new = jobs(cache)
    assert (old["status"], old["imported"], old["unanswered"]) == ("imported", 4, 2)
    assert "input_file_id" not in old and "batch_id" not in old
    assert new["n"] == 2 and new["done"] and new["batch_id"]
    paths = [r["path"] for r in server.requests]
    assert paths.count("/v1/files") == 1 and paths.count("/v1/batches") == 1
    uploaded = [
        json.loads(x)["custom_id"]
        for data in server._files.values()
        for x in data.decode().splitlines()
        if "method" in json.loads(x)  # input files (outputs have no method)
    ]
    assert uploaded == [c.key(r) for r in reqs[4:]]

    # all answered: a rerun (same output still configured) sends nothing at all
    server.reset_records()
    again = make_client(server.base_url, cache, batch_outputs=[str(out)])
    assert again.complete_many(reqs) == responses and server.requests == []


def test_written_job_answered_in_full_is_never_uploaded(server, api_key, tmp_path):
    reqs = requests_for(3)
    cache = tmp_path / "cache"
    server.files_error_status = 404
    with pytest.raises(EndpointRefused):
        make_client(server.base_url, cache).complete_many(reqs)
    (job,) = jobs(cache)
    out = tmp_path / "out.jsonl"
    play_openai_batch(cache / "batch" / job["input"], out, server.answer)
    server.reset_records()  # the 404 stays: any upload would fail the run
    c = make_client(server.base_url, cache, batch_outputs=[str(out)])
    assert all(r.ok for r in c.complete_many(reqs))
    assert [r["path"] for r in server.requests] == []
    (job,) = jobs(cache)
    assert (job["done"], job["status"], job["imported"]) == (True, "imported", 3)


# -- bad outputs named in the config -----------------------------------------------------------
def test_missing_output_file_is_an_error_naming_it(api_key, tmp_path):
    missing = tmp_path / "nowhere" / "out.jsonl"
    c = make_client(None, tmp_path / "cache", batch_backend="vllm", batch_outputs=[str(missing)])
    with pytest.raises(
        BatchOutputError, match="llm.batch_outputs: cannot read .*nowhere/out.jsonl"
    ):
        c.complete_many(requests_for(1))
    folder = make_client(None, tmp_path / "c2", batch_backend="vllm", batch_outputs=[str(tmp_path)])
    with pytest.raises(BatchOutputError, match=f"cannot read {tmp_path}: Is a directory"):
        folder.complete_many(requests_for(1))


def test_bad_output_lines_are_counted_not_fatal(api_key, tmp_path, caplog):
    reqs = requests_for(2)
    cache = tmp_path / "cache"
    with pytest.raises(BatchPending):
        make_client(None, cache, batch_backend="vllm").complete_many(reqs)
    (job,) = jobs(cache)
    inp = (cache / "batch" / job["input"]).resolve()
    out = inp.with_suffix(".output.jsonl")
    play_run_batch(inp, out, answer)
    good = out.read_text().splitlines()
    out.write_text(good[0] + "\n" + good[1][: len(good[1]) // 2] + "\nnot json at all\n")
    logs: list[str] = []
    c = make_client(None, cache, logs, batch_backend="vllm", batch_outputs=[str(out)])
    with caplog.at_level(logging.WARNING, logger="vlcomp.llm"), pytest.raises(BatchPending):
        c.complete_many(reqs)
    assert "2 line(s) failed with unreadable_line (e.g. line 2" in caplog.text
    assert any("1 answers imported, 0 already cached, 2 failed line(s)" in m for m in logs)
    old, new = jobs(cache)
    assert (old["done"], old["unanswered"], new["n"]) == (True, 1, 1)


# -- the key never leaks, even when the server echoes it ----------------------------------------
def test_key_echoed_by_the_server_reaches_no_file_message_or_log(
    server, api_key, tmp_path, caplog, capsys
):
    server.echo_key_in_errors = True
    logs: list[str] = []
    messages: list[str] = []
    with caplog.at_level(logging.DEBUG):
        # 404 on /v1/files, through the job log: one line and exit 3
        server.files_error_status = 404
        log_path = tmp_path / "logs" / "job.log"
        with pytest.raises(SystemExit) as exit_info, job_log(log_path) as log:
            make_client(server.base_url, tmp_path / "a", logs).complete_many(requests_for(2))
            log("not reached")
        assert exit_info.value.code == 3
        assert "has no Files API (404 on /v1/files)" in log_path.read_text()

        # 500 on /v1/files: retried, then EndpointUnreachable (exit 4)
        server.files_error_status = 500
        with pytest.raises(EndpointUnreachable) as stop:
            make_client(server.base_url, tmp_path / "b", logs).complete_many(requests_for(2))
        messages.append(str(stop.value))
        assert "failed after 2 attempt(s): HTTP 500" in str(stop.value)
        assert stop.value.exit_code == 4 and stop.value.__suppress_context__
        assert [r["path"] for r in server.requests].count("/v1/files") == 3  # 1 + 2

        # an expired batch whose error file quotes the key in every line
        server.files_error_status = None
        server.batch_expire_after = 2
        c = make_client(server.base_url, tmp_path / "c", logs)
        out = c.complete_many(requests_for(5))
        assert [r.error for r in out] == [None, None] + ["not_cached"] * 3
        (job,) = jobs(tmp_path / "c")
        assert (job["status"], job["imported"], job["unanswered"]) == ("expired", 2, 3)
        errors = (tmp_path / "c" / "batch" / f"error-{job['batch_id']}.jsonl").read_text()
        assert errors.count("[redacted]") == 3
        assert "3 line(s) failed with batch_expired" in caplog.text

    # the server did receive the key and quote it back
    assert any(api_key in r["headers"].get("authorization", "") for r in server.requests)
    captured = capsys.readouterr()
    texts = [caplog.text, captured.out, captured.err, *logs, *messages]
    assert [t for t in texts if api_key in t] == []
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("error-") for p in files)
    assert [str(p) for p in files if api_key.encode() in p.read_bytes()] == []


def test_unreachable_endpoint_is_one_clear_stop(api_key, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    base = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointUnreachable) as stop:
        make_client(base, tmp_path / "cache").complete_many(requests_for(1))
    assert str(stop.value).startswith("llm batch: upload of batch-0000-")
    assert f"(/v1/files) at {base} failed after 2 attempt(s): connection failed" in str(stop.value)
    assert stop.value.__cause__ is None and stop.value.__suppress_context__
