"""Spend is counted per HTTP call: every call the client sends (a first try, a retry, a
structured-output step down, a malformed answer asked again; sync and batch mode) is charged
to the spend ledger before it is sent. Against the loopback server of tests/llm_server.py
with injected faults and the real ``openai`` client, the server's count of the calls it
received, the ledger's and the client's agree and never pass ``llm.budget.max_calls``; an
endpoint that answers only garbage stops a generation job after a bounded number of calls."""

from __future__ import annotations

import json

import pytest

from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_client import KEY_ENV, answer, client, requests_for
from tests.unit.test_llm_negatives import SECRET, run_pairs, sugarcrepe_answer
from vlcomp.llm import BatchRunner, EndpointMalformed
from vlcomp.llm.ledger import SpendLedger

GARBAGE = "<html><body>502 Bad Gateway</body></html>"
FAULTS = {
    "http_500": ("500",),
    "http_429": ("429", 0),
    "dropped_connection": ("drop",),
    "timeout": ("delay", 1.0),
    "not_json": ("body", GARBAGE),
    "html_page": ("body", GARBAGE, "text/html"),
    "truncated_json": ("body", '{"id": "x", "choices": [{"index": 0, "message": {"role": "as'),
    "not_a_chat_completion": ("body", '{"id": "x", "object": "chat.completion"}'),
    "null_content": ("null",),
    "truncated_answer": ("truncate",),
    "off_schema": ("content", '{"negative": "a blue car"}'),
}


@pytest.fixture
def server(llm_server):  # noqa: F811 - the imported fixture
    llm_server.answer = answer
    return llm_server


@pytest.fixture
def api_key(monkeypatch):
    key = "sk-spend-0123456789abcdef0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, key)
    return key


def ledger_calls(cache) -> int:
    return SpendLedger(cache).totals().calls


@pytest.mark.parametrize("kind", [*FAULTS, "format_refused"])
def test_every_http_call_is_charged_before_it_is_sent(server, api_key, tmp_path, kind):
    """Every other call the server receives is faulted (the others are answered), so the 30
    requests need more than the 20 calls the budget allows: the budget stops them."""
    over = {}
    if kind == "format_refused":  # a 400 to json_schema, then json_object: two calls each
        server.reject_formats = {"json_schema"}
        over["structured_output"] = "json_schema"
    else:
        server.faults.extend([FAULTS[kind], (None,)] * 40)
    c = client(
        server, tmp_path / "c", max_concurrency=4, timeout_s=0.3, budget={"max_calls": 20}, **over
    )
    out = c.complete_many(requests_for(30))
    assert server.chat_calls == ledger_calls(tmp_path / "c") == c.stats["calls"] == 20
    stats = c.stats
    asked_again = (
        stats["retries"] + stats["format_fallbacks"] + sum(stats["malformed_retried"].values())
    )
    assert asked_again > 0  # calls beyond the first tries were sent, and charged
    assert c.budget_exhausted and "budget_exhausted" in {r.error for r in out}


def test_a_server_answering_only_truncated_bodies_gets_max_calls(server, api_key, tmp_path):
    """The review's case: HTTP 200 with a truncated body, max_calls 20 (the server used to
    receive 140 calls while the ledger said 20)."""
    server.default_fault = FAULTS["truncated_json"]
    c = client(server, tmp_path / "c", budget={"max_calls": 20}, breaker_malformed=1000)
    out = c.complete_many(requests_for(20))
    assert server.chat_calls == ledger_calls(tmp_path / "c") == 20
    assert {r.error for r in out} == {"invalid_body", "budget_exhausted"}


def test_a_batch_created_again_is_charged_again(server, api_key, tmp_path):
    """The answer to the first ``batches.create`` is lost (the server ran the batch): the
    retry creates and runs it again, and both runs are charged."""
    server.batch_create_faults.append(("lost",))
    c = client(server, tmp_path / "c", budget={"max_calls": 100})
    runner = BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01)
    runner.run(requests_for(4))
    assert server.batch_lines_run == ledger_calls(tmp_path / "c") == 8
    assert c.stats["batch_written"] == 4 and c.stats["batch_resubmitted"] == 4
    assert all(r.error is None for r in c.complete_many(requests_for(4), cache_only=True))
    (job,) = json.loads((tmp_path / "state.json").read_text())["jobs"]
    assert job["create_attempts"] == 2 and job["done"]


def test_a_batch_that_failed_to_be_created_is_charged_again_too(server, api_key, tmp_path):
    """A 500 that created nothing looks the same to the client: the ledger counts the lines
    twice, the server ran them once (the ledger never counts fewer calls than were run)."""
    server.batch_create_faults.append(("500",))
    c = client(server, tmp_path / "c")
    BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01).run(requests_for(3))
    assert server.batch_lines_run == 3 and ledger_calls(tmp_path / "c") == 6


def test_no_room_to_create_a_batch_again_leaves_it_unsubmitted(server, api_key, tmp_path):
    server.batch_create_faults.append(("lost",))
    c = client(server, tmp_path / "c", budget={"max_calls": 6})
    BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01).run(requests_for(4))
    assert server.batch_lines_run == ledger_calls(tmp_path / "c") == 4  # 8 would pass 6
    assert c.budget_exhausted
    (job,) = json.loads((tmp_path / "state.json").read_text())["jobs"]
    assert job["create_attempts"] == 1 and "batch_id" not in job and not job["done"]
    out = c.complete_many(requests_for(4))
    assert {r.error for r in out} == {"budget_exhausted"}


def test_a_generation_job_against_a_garbage_endpoint_stops_after_few_calls(
    llm_server,  # noqa: F811 - the imported fixture
    tmp_path,
    monkeypatch,
):
    """The SugarCrepe job retries a failed task up to llm.max_attempts with a new seed; the
    malformed-answer breaker stops the whole job instead, after its count of calls plus the
    calls in flight, and nothing is written."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    llm_server.answer = sugarcrepe_answer
    llm_server.default_fault = ("body", GARBAGE)
    with pytest.raises(EndpointMalformed) as caught:
        run_pairs(tmp_path, llm_server, breaker_malformed=8, max_concurrency=4)
    assert caught.value.exit_code == 9 and repr(GARBAGE) in str(caught.value)
    assert 8 <= llm_server.chat_calls <= 8 + 3
    assert llm_server.chat_calls == ledger_calls(tmp_path / "cache")
    assert not (tmp_path / "candidates.parquet").exists()
    assert not (tmp_path / "stats.json").exists()
