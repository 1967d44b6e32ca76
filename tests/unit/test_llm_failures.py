"""Endpoints that refuse, vanish or answer garbage: the client stops at once with one line
naming base_url, model and status (never the key), trips a circuit breaker on repeated
connection failures, retries malformed answers as transient errors (at once, within
``malformed_retries``) and stops an endpoint that answers nothing usable (the malformed-answer
breaker), and charges every call to a spend ledger that persists across runs
(``vlcomp.llm.ledger``; per-call spend under faults is in test_llm_spend.py).

Uses the loopback server of ``tests/llm_server.py`` and the real ``openai`` client."""

from __future__ import annotations

import json
import re
import socket
import threading
import time

import pytest

from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_client import KEY_ENV, answer, client, requests_for, settings
from vlcomp.errors import BudgetExhausted, EndpointRefused, EndpointUnreachable
from vlcomp.llm import EndpointMalformed, LLMClient, LLMSettings
from vlcomp.llm.ledger import SpendLedger, reset
from vlcomp.llm.ledger import main as ledger_main


@pytest.fixture
def server(llm_server):  # noqa: F811 - the imported fixture
    llm_server.answer = answer
    return llm_server


@pytest.fixture
def api_key(monkeypatch):
    key = "sk-fail-0123456789abcdef0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, key)
    return key


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- refused: stop at once ------------------------------------------------------------------
@pytest.mark.parametrize(
    "status,words",
    [
        (401, "API key was not accepted"),
        (403, "may not use this model"),
        (404, "no such model or endpoint"),
        (400, "bad request"),
    ],
)
def test_refusals_stop_every_call_at_once(server, api_key, tmp_path, status, words):
    # every request is refused; a 400 is refused in all three structured-output formats
    server.faults.extend([("status", status)] * 50)
    c = client(server, tmp_path / "c", max_concurrency=2)
    with pytest.raises(EndpointRefused) as caught:
        c.complete_many(requests_for(20))
    message = str(caught.value)
    assert server.base_url in message and "'test-model'" in message
    assert f"HTTP {status}" in message and words in message
    assert api_key not in message and "\n" not in message
    assert caught.value.exit_code == 3
    # in flight at most max_concurrency requests (a 400 also tries the two fallback formats)
    assert server.chat_calls <= 2 * (3 if status == 400 else 1)
    assert len(c.cache) == 0


def test_a_key_quoted_by_the_server_is_redacted_from_the_message(server, api_key, tmp_path):
    c = client(server, tmp_path / "c", max_concurrency=1)
    refused = c._refused(401, f"Incorrect API key provided: {api_key}.")
    assert api_key not in str(refused) and "[redacted]" in str(refused)


def test_missing_key_for_the_openai_endpoint_is_a_refusal(tmp_path, monkeypatch):
    monkeypatch.delenv("VLCOMP_NO_SUCH_KEY", raising=False)
    s = LLMSettings.from_config({"api_key_env": "VLCOMP_NO_SUCH_KEY"})
    c = LLMClient(s, tmp_path / "c", "v1", log=lambda _m: None)
    with pytest.raises(EndpointRefused, match="VLCOMP_NO_SUCH_KEY"):
        c.complete_many(requests_for(1))


# -- unreachable: the circuit breaker -------------------------------------------------------
@pytest.mark.parametrize("base_url", ["closed_port", "http://vlcomp-no-such-host.invalid/v1"])
def test_nothing_listening_trips_the_breaker(api_key, tmp_path, base_url):
    if base_url == "closed_port":
        base_url = f"http://127.0.0.1:{free_port()}/v1"
    s = LLMSettings.from_config(
        {
            "base_url": base_url,
            "model": "test-model",
            "api_key_env": KEY_ENV,
            "max_retries": 6,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "breaker_failures": 8,
            "max_concurrency": 4,
        }
    )
    c = LLMClient(s, tmp_path / "c", "v1", log=lambda _m: None)
    started = time.monotonic()
    with pytest.raises(EndpointUnreachable) as caught:
        c.complete_many(requests_for(200))
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert base_url in message and "consecutive failures" in message and "connection" in message
    assert caught.value.exit_code == 4
    # calls stop at the breaker: at most its count plus what was in flight
    assert c.stats["calls"] <= 8 + 4
    print(f"breaker tripped after {elapsed:.2f} s and {c.stats['calls']} calls ({base_url})")


def test_the_breaker_also_trips_on_time(server, api_key, tmp_path):
    server.faults.extend([("500",)] * 100)
    c = client(
        server, tmp_path / "c", max_concurrency=1, max_retries=100, breaker_seconds=0.2,
        breaker_failures=1000, backoff_base_s=0.05, backoff_max_s=0.05,
    )  # fmt: skip
    with pytest.raises(EndpointUnreachable, match="http_500"):
        c.complete_many(requests_for(1))


def test_transient_failures_between_successes_never_trip_it(server, api_key, tmp_path):
    for _ in range(6):
        server.faults.extend([("500",), ("500",), (None,)])
    c = client(server, tmp_path / "c", max_concurrency=1, breaker_failures=3)
    out = c.complete_many(requests_for(6))
    assert all(r.error is None for r in out)


# -- malformed answers: transient, counted by reason ----------------------------------------
@pytest.mark.parametrize(
    "fault,reason",
    [
        (
            ("body", '{"id": "x", "choices": [{"index": 0, "message": {"role": "assis'),
            "invalid_body",
        ),
        (("body", "<html>502 Bad Gateway</html>"), "invalid_body"),
        (("body", '{"id": "x", "object": "chat.completion"}'), "invalid_response"),
        (("null",), "empty"),
        (("truncate",), "parse_error"),
        (("content", '{"negative": "a blue car"}'), "schema_error"),
    ],
)
def test_malformed_answers_are_retried_and_counted(server, api_key, tmp_path, fault, reason):
    server.faults.append(fault)
    c = client(server, tmp_path / "c", max_concurrency=1)
    (r,) = c.complete_many(requests_for(1))
    assert r.error is None and r.parsed is not None
    assert server.chat_calls == 2
    assert c.stats["malformed_retried"] == {reason: 1}


def test_malformed_bodies_are_asked_again_at_once_within_malformed_retries(
    server, api_key, tmp_path, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(LLMClient, "_wait", lambda self, s: waits.append(s) or False)
    server.default_fault = ("body", "<html><body>502 Bad Gateway</body></html>")
    c = client(server, tmp_path / "c", max_concurrency=1, max_retries=5, malformed_retries=2)
    (r,) = c.complete_many(requests_for(1))
    assert r.error == "invalid_body" and r.text is None
    assert server.chat_calls == 3 and waits == [] and c.stats["retries"] == 0
    assert c.stats["malformed_retried"] == {"invalid_body": 2}
    assert len(c.cache) == 0


GARBAGE = "<html><body>502 Bad Gateway (upstream said: bad key {key})</body></html>"


@pytest.mark.parametrize(
    "fault,reason,quote",
    [
        (("body", GARBAGE), "invalid_body", "'<html><body>502 Bad Gateway"),
        (("body", GARBAGE, "text/html"), "invalid_response", "'<html><body>502 Bad Gateway"),
        (("body", '{"id": "x", "usage": "{key}"}'), "invalid_response", """'{"id": "x", """),
        (("null",), "empty", "was a null content"),
        (("truncate",), "parse_error", """'{"negative": "a blue car"""),
        (("content", '{"negative": "{key}"}'), "schema_error", """'{"negative": "[redacted]"""),
    ],
)
def test_an_endpoint_answering_only_garbage_trips_the_malformed_breaker(
    server, api_key, tmp_path, monkeypatch, fault, reason, quote
):
    waits: list[float] = []
    monkeypatch.setattr(LLMClient, "_wait", lambda self, s: waits.append(s) or False)
    server.default_fault = tuple(str(f).replace("{key}", api_key) for f in fault)
    c = client(server, tmp_path / "c", max_concurrency=4, breaker_malformed=6)
    with pytest.raises(EndpointMalformed) as caught:
        c.complete_many(requests_for(20))
    message = str(caught.value)
    assert caught.value.exit_code == 9 and "\n" not in message
    assert server.base_url in message and "'test-model'" in message
    assert re.search(r"\b\d+ malformed answers in a row \(llm.breaker_malformed=6\)", message)
    assert f"the last ({reason}) was " in message and quote in message, message
    assert api_key not in message
    # the breaker's count, plus the calls in flight when it tripped; no backoff
    assert 6 <= server.chat_calls <= 6 + 3 and waits == []
    assert server.chat_calls == SpendLedger(tmp_path / "c").totals().calls == c.stats["calls"]
    assert len(c.cache) == 0


def test_usable_answers_in_between_never_trip_the_malformed_breaker(server, api_key, tmp_path):
    server.faults.extend([("body", "<html>"), (None,)] * 10)
    c = client(server, tmp_path / "c", max_concurrency=1, breaker_malformed=2)
    out = c.complete_many(requests_for(10))
    assert all(r.error is None for r in out) and server.chat_calls == 20


def test_missing_usage_is_estimated_and_flagged(server, api_key, tmp_path):
    server.faults.append(("no_usage",))
    c = client(server, tmp_path / "c", max_concurrency=1)
    (r,) = c.complete_many(requests_for(1))
    assert r.error is None and server.chat_calls == 1
    assert c.stats["usage_estimated"] == 1 and r.prompt_tokens > 0 and r.completion_tokens > 0


# -- the spend ledger -------------------------------------------------------------------------
def test_the_budget_is_a_total_over_runs(server, api_key, tmp_path, capsys):
    cache = tmp_path / "cache"
    c1 = client(server, cache, max_concurrency=1, budget={"max_calls": 3})
    c1.complete_many(requests_for(3))
    assert server.chat_calls == 3 and not c1.budget_exhausted

    # a second run with the same limit and new requests: nothing left to spend
    c2 = client(server, cache, max_concurrency=1, budget={"max_calls": 3})
    out = c2.complete_many(requests_for(5))
    assert server.chat_calls == 3 and [r.error for r in out[3:]] == ["budget_exhausted"] * 2
    with pytest.raises(BudgetExhausted) as caught:
        c2.raise_if_budget_exhausted()
    assert "calls 3 of 3 (0 left)" in str(caught.value) and "ledger reset" in str(caught.value)
    assert caught.value.exit_code == 5
    summary = c2.ledger_summary()
    assert summary["spent"]["calls"] == 3 and summary["remaining"]["calls"] == 0

    # raising the limit gives exactly the difference
    c3 = client(server, cache, max_concurrency=1, budget={"max_calls": 4})
    out = c3.complete_many(requests_for(5))
    assert server.chat_calls == 4 and sum(r.error is None for r in out) == 4

    # a reset starts from zero and keeps the old ledger aside
    assert ledger_main(["reset", str(cache)]) == 0
    assert "ledger reset" in capsys.readouterr().out
    assert len(list(cache.glob("ledger-*.jsonl.reset"))) == 1
    c4 = client(server, cache, max_concurrency=1, budget={"max_calls": 1})
    c4.complete_many(requests_for(6))
    assert server.chat_calls == 5
    assert ledger_main(["show", str(cache)]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 1


def test_concurrent_clients_share_one_budget(server, api_key, tmp_path):
    cache = tmp_path / "cache"
    clients = [client(server, cache, max_concurrency=3, budget={"max_calls": 7}) for _ in range(3)]
    threads = [
        threading.Thread(target=c.complete_many, args=(requests_for(10 + 10 * i)[10 * i :],))
        for i, c in enumerate(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(c.stats["calls"] for c in clients) == 7
    assert SpendLedger(cache).totals().calls == 7
    assert server.chat_calls == 7  # a retry (a timeout under load) is a call like any other


def test_a_torn_ledger_line_is_skipped(tmp_path):
    ledger = SpendLedger(tmp_path)
    ledger.record({"calls": 1})
    with open(ledger.path, "ab") as fh:
        fh.write(b'{"calls": 1, "prompt_to')  # a kill -9 in the middle of a write
    fresh = SpendLedger(tmp_path)
    assert fresh.totals().calls == 1
    fresh.record({"calls": 1})
    assert SpendLedger(tmp_path).totals().calls == 2 and fresh.torn_lines == 1
    assert reset(tmp_path) is not None and SpendLedger(tmp_path).totals().calls == 0


def test_settings_of_the_new_keys():
    from vlcomp.config import ConfigError, validate_section

    s = settings(type("S", (), {"base_url": "http://x/v1"})())
    assert (s.min_yield, s.breaker_failures, s.malformed_retries) == (0.1, 10, 2)
    assert s.breaker_malformed == 30
    for bad in (
        {"min_yield": 1.5},
        {"breaker_failures": 0},
        {"breaker_malformed": 0},
        {"batch_backend": "x"},
    ):
        with pytest.raises(ConfigError, match=f"config key 'llm.{next(iter(bad))}'"):
            validate_section("llm", bad)


def test_batch_lines_are_charged_to_the_same_ledger(server, api_key, tmp_path):
    from vlcomp.llm import BatchRunner

    cache = tmp_path / "cache"
    sync = client(server, cache, max_concurrency=1, budget={"max_calls": 6})
    sync.complete_many(requests_for(2))  # 2 sync calls in an earlier run
    c = client(server, cache, budget={"max_calls": 6})
    runner = BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01)
    runner.run(requests_for(10))
    written = sum(len(p.read_text().splitlines()) for p in (tmp_path / "batch").glob("batch-*"))
    assert written == 4 and c.budget_exhausted  # 6 - 2: the batch got what was left
    totals = SpendLedger(cache).totals()
    assert totals.calls == 6 and totals.prompt_tokens > 0  # usage charged on import
    assert c.stats["batch_written"] == 4 and c.stats["batch_imported"] == 4
