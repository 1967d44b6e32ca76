"""The LLM client layer (vlcomp.llm) driven through the real `openai` client against a local
OpenAI-compatible server on loopback (tests/llm_server.py): answers, cache, retries, budget,
structured output, kill -9 recovery, batch mode, secrecy of the API key, concurrency bound."""

from __future__ import annotations

import datetime
import email.utils
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from vlcomp.errors import EndpointRefused
from vlcomp.llm import (
    BatchPending,
    BatchRunner,
    Budget,
    BudgetExhausted,
    LLMClient,
    LLMSettings,
    MissingAPIKey,
    Price,
    Request,
    ResponseCache,
    check_strict_schema,
    estimate_cost,
    import_batch_output,
    parse_json_tolerant,
    write_batch_files,
)
from vlcomp.llm.transport import retry_after_s

KEY_ENV = "VLCOMP_TEST_LLM_KEY"

SCHEMA = {
    "title": "negative",
    "type": "object",
    "properties": {
        "negative": {"type": "string"},
        "changed": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["negative", "changed"],
    "additionalProperties": False,
}


def answer(body: dict) -> str:
    """A realistic canned answer: the caption with its first 'red' made 'blue'."""
    caption = body["messages"][-1]["content"]
    return json.dumps({"negative": caption.replace("red", "blue", 1), "changed": ["red"]})


def requests_for(n: int, schema=SCHEMA, temperature=0.0) -> list[Request]:
    return [
        Request(
            messages=(
                {"role": "system", "content": "Replace one attribute. Answer in JSON."},
                {"role": "user", "content": f"a red car number {i} next to a tree"},
            ),
            temperature=temperature,
            seed=i,
            schema=schema,
            max_tokens=64,
            tag=f"item{i}",
        )
        for i in range(n)
    ]


@pytest.fixture
def api_key(monkeypatch):
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    return key


@pytest.fixture
def server(llm_server):  # noqa: F811 - the imported fixture
    llm_server.answer = answer
    return llm_server


def settings(server, **over) -> LLMSettings:
    cfg = {
        "base_url": server.base_url,
        "model": "test-model",
        "api_key_env": KEY_ENV,
        "max_concurrency": 4,
        "timeout_s": 5,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "prices": {"test-model": {"input": 0.15, "output": 0.60, "batch_discount": 0.5}},
    }
    cfg.update(over)
    return LLMSettings.from_config(cfg)


def client(server, cache_dir, logs=None, prompt_version="v1", **over) -> LLMClient:
    sink = logs.append if logs is not None else (lambda _m: None)
    return LLMClient(settings(server, **over), cache_dir, prompt_version, log=sink)


# -- answers, cache, identical reruns ------------------------------------------------------
def test_answers_usage_and_auth_header(server, api_key, tmp_path):
    reqs = requests_for(5)
    c = client(server, tmp_path / "cache")
    out = c.complete_many(reqs)
    assert [r.error for r in out] == [None] * 5
    assert [r.parsed["negative"] for r in out] == [
        f"a blue car number {i} next to a tree" for i in range(5)
    ]
    assert all(r.prompt_tokens > 0 and r.completion_tokens > 0 for r in out)
    assert [r.key for r in out] == [r.key("test-model", "v1") for r in reqs]
    assert server.chat_calls == 5
    assert {b["headers"]["authorization"] for b in server.requests} == {f"Bearer {api_key}"}
    body = server.chat_bodies()[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["seed"] in range(5) and body["max_tokens"] == 64
    st = c.stats
    assert st["calls"] == 5 and st["cache_hits"] == 0 and st["failures"] == {}
    assert st["prompt_tokens"] == sum(r.prompt_tokens for r in out)
    assert st["cost_usd"] > 0


def test_rerun_makes_zero_calls_and_identical_responses(server, api_key, tmp_path):
    reqs = requests_for(6)
    first = client(server, tmp_path / "cache").complete_many(reqs)
    assert server.chat_calls == 6
    server.reset_records()
    c2 = client(server, tmp_path / "cache")
    second = c2.complete_many(reqs)
    assert server.chat_calls == 0
    assert second == first
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    assert c2.stats["calls"] == 0 and c2.stats["cache_hits"] == 6
    # the key covers the prompt version, model, temperature and seed
    c3 = client(server, tmp_path / "cache", prompt_version="v2")
    c3.complete_many(reqs[:1])
    assert server.chat_calls == 1
    keys = {r.key("m", "v") for r in requests_for(2)} | {
        requests_for(1, temperature=1.5)[0].key("m", "v"),
        requests_for(1)[0].key("m2", "v"),
        requests_for(1)[0].key("m", "v2"),
    }
    assert len(keys) == 5
    # the tag is not part of the key
    a = requests_for(1)[0]
    b = Request(a.messages, a.temperature, a.seed, a.schema, a.max_tokens, tag="other")
    assert a.key("m", "v") == b.key("m", "v")


def test_duplicate_requests_are_sent_once(server, api_key, tmp_path):
    reqs = requests_for(2)
    out = client(server, tmp_path / "c").complete_many([reqs[0], reqs[1], reqs[0]])
    assert server.chat_calls == 2
    assert out[0] == out[2]


def test_torn_last_line_is_skipped(server, api_key, tmp_path):
    reqs = requests_for(3)
    c = client(server, tmp_path / "cache")
    first = c.complete_many(reqs)
    c.close()
    (path,) = list((tmp_path / "cache").glob("responses-*.jsonl"))
    with open(path, "ab") as fh:
        fh.write(b'{"key": "abc", "text": "half a rec')  # a write cut by kill -9
    cache = ResponseCache(tmp_path / "cache")
    assert cache.torn_lines == 1 and len(cache) == 3
    server.reset_records()
    more = requests_for(4)
    out = client(server, tmp_path / "cache").complete_many(more)
    assert server.chat_calls == 1 and out[:3] == first
    assert len(list((tmp_path / "cache").glob("responses-*.jsonl"))) == 2  # one file per writer


# -- retries ----------------------------------------------------------------------------------
def test_429_retry_after_is_honoured(server, api_key, tmp_path, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(LLMClient, "_wait", lambda self, s: waits.append(s) or False)
    server.faults.append(("429", 1))
    c = client(server, tmp_path / "c", max_concurrency=1)
    (r,) = c.complete_many(requests_for(1))
    assert r.error is None
    assert server.chat_calls == 2
    assert len(waits) == 1 and waits[0] >= 1.0  # the backoff is at least what Retry-After asked
    assert c.stats["retries"] == 1


@pytest.mark.parametrize(
    "fault,reason",
    [(("500",), "http_500"), (("drop",), "connection"), (("status", 503), "http_503")],
)
def test_transient_faults_are_retried(server, api_key, tmp_path, fault, reason):
    server.faults.extend([fault, fault])
    c = client(server, tmp_path / "c", max_concurrency=1)
    (r,) = c.complete_many(requests_for(1))
    assert r.error is None and server.chat_calls == 3 and c.stats["retries"] == 2


def test_timeout_is_retried(server, api_key, tmp_path, caplog):
    server.faults.append(("delay", 1.5))
    c = client(server, tmp_path / "c", max_concurrency=1, timeout_s=0.3)
    with caplog.at_level("INFO", logger="vlcomp.llm"):
        (r,) = c.complete_many(requests_for(1))
    assert r.error is None and server.chat_calls == 2
    assert c.stats["retries"] == 1
    assert any("after timeout" in record.getMessage() for record in caplog.records)


def test_retries_exhausted_gives_the_reason_and_nothing_is_cached(server, api_key, tmp_path):
    server.faults.extend([("500",)] * 3)
    c = client(server, tmp_path / "c", max_concurrency=1, max_retries=2)
    (r,) = c.complete_many(requests_for(1))
    assert r.error == "http_500" and r.text is None
    assert server.chat_calls == 3
    assert c.stats["failures"] == {"http_500": 1}
    server.reset_records()
    (r2,) = client(server, tmp_path / "c").complete_many(requests_for(1))
    assert r2.error is None and server.chat_calls == 1  # a failure is not cached


def test_other_client_errors_fail_the_request_without_a_retry(server, api_key, tmp_path):
    server.faults.append(("status", 413))
    out = client(server, tmp_path / "a", max_concurrency=1).complete_many(requests_for(2))
    assert [r.error for r in out] == ["http_413", None] and server.chat_calls == 2


# -- structured output ----------------------------------------------------------------------
def test_truncated_json_is_a_parse_error_once_the_retries_are_spent(server, api_key, tmp_path):
    server.faults.extend([("truncate",)] * 3)
    c = client(server, tmp_path / "c", malformed_retries=2)
    (r,) = c.complete_many(requests_for(1))
    assert r.error == "parse_error" and r.parsed is None and r.text
    assert server.chat_calls == 3
    assert c.stats["malformed_retried"] == {"parse_error": 2}


def test_wrong_schema_is_a_schema_error(server, api_key, tmp_path):
    server.faults.append(("content", json.dumps({"negative": "a blue car"})))  # no "changed"
    (r,) = client(server, tmp_path / "c", malformed_retries=0).complete_many(requests_for(1))
    assert r.error == "schema_error" and r.parsed is None


def test_fallback_to_json_object_is_remembered_in_auto_mode(server, api_key, tmp_path):
    server.reject_formats = {"json_schema"}
    c = client(server, tmp_path / "c", max_concurrency=1)
    out = c.complete_many(requests_for(3))
    assert all(r.error is None for r in out)
    formats = [b["response_format"]["type"] for b in server.chat_bodies()]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert c.stats["structured_output"] == "json_object"


def test_plain_text_and_tolerant_parser_when_no_format_is_accepted(server, api_key, tmp_path):
    server.reject_formats = {"json_schema", "json_object"}
    server.answer = lambda body: "Sure! Here it is:\n```json\n" + answer(body) + "\n```\nDone."
    c = client(server, tmp_path / "c", max_concurrency=1)
    out = c.complete_many(requests_for(2))
    assert [r.parsed["negative"] for r in out] == [
        "a blue car number 0 next to a tree",
        "a blue car number 1 next to a tree",
    ]
    assert "response_format" not in server.chat_bodies()[-1]
    assert c.stats["structured_output"] == "none"


def test_retry_after_headers():
    assert retry_after_s({"retry-after": "2"}) == 2.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    when = email.utils.format_datetime(
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30), usegmt=True
    )
    assert 20 < retry_after_s({"retry-after": when}) <= 30
    assert retry_after_s({}) is None and retry_after_s({"retry-after": "soon"}) is None


def test_tolerant_parser_and_strict_schema_check():
    assert parse_json_tolerant('{"a": 1}') == {"a": 1}
    assert parse_json_tolerant('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_tolerant('Answer: {"a": {"b": [1, 2]}} hope it helps {"c": 3}') == {
        "a": {"b": [1, 2]}
    }
    with pytest.raises(ValueError):
        parse_json_tolerant('{"a": ')
    check_strict_schema(SCHEMA)
    loose = {**SCHEMA, "additionalProperties": True}
    with pytest.raises(ValueError, match="additionalProperties"):
        Request(({"role": "user", "content": "x"},), 0.0, schema=loose)
    partial = {**SCHEMA, "required": ["negative"]}
    with pytest.raises(ValueError, match="required"):
        Request(({"role": "user", "content": "x"},), 0.0, schema=partial)
    nested = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {}}}},
        "required": ["items"],
        "additionalProperties": False,
    }
    with pytest.raises(ValueError, match=r"properties\.items\.items"):
        check_strict_schema(nested)


# -- budget ---------------------------------------------------------------------------------
def test_budget_stops_cleanly_and_a_rerun_makes_only_the_missing_calls(
    server, api_key, tmp_path, caplog
):
    reqs = requests_for(10)
    c = client(server, tmp_path / "c", max_concurrency=2, budget={"max_calls": 3})
    with caplog.at_level(logging.WARNING, logger="vlcomp.llm"):
        out = c.complete_many(reqs)
    assert server.chat_calls == 3
    ok = [r for r in out if r.error is None]
    assert len(ok) == 3
    assert sum(r.error == "budget_exhausted" for r in out) == 7
    assert c.budget_exhausted and "budget reached" in caplog.text
    with pytest.raises(BudgetExhausted):
        c.raise_if_budget_exhausted()
    assert len(ResponseCache(tmp_path / "c")) == 3
    answered = {reqs[i].messages[-1]["content"] for i, r in enumerate(out) if r.error is None}

    server.reset_records()
    c2 = client(server, tmp_path / "c", max_concurrency=2, budget={"max_calls": 10})
    out2 = c2.complete_many(reqs)
    assert server.chat_calls == 7 and c2.stats["cache_hits"] == 3
    assert all(r.error is None for r in out2)
    assert not set(server.user_messages()) & answered  # no answered request asked again


def test_token_and_cost_budgets(server, api_key, tmp_path):
    c = client(server, tmp_path / "a", max_concurrency=1, budget={"max_tokens": 1})
    out = c.complete_many(requests_for(4))
    assert server.chat_calls == 1 and [r.error for r in out][1:] == ["budget_exhausted"] * 3
    server.reset_records()
    c = client(server, tmp_path / "b", max_concurrency=1, budget={"max_cost_usd": 1e-9})
    out = c.complete_many(requests_for(4))
    assert server.chat_calls == 1 and out[0].error is None


# -- kill -9 in the middle ------------------------------------------------------------------
CHILD = """
import sys
sys.path[:0] = [{src!r}, {repo!r}]
from tests.unit.test_llm_client import requests_for
from vlcomp.llm import LLMClient, LLMSettings
s = LLMSettings.from_config({{"base_url": {url!r}, "model": "test-model",
    "api_key_env": {env!r}, "max_concurrency": 2, "timeout_s": 10}})
LLMClient(s, {cache!r}, "v1").complete_many(requests_for({n}))
print("finished")
"""


def test_kill_9_then_rerun_repeats_no_cached_call(server, api_key, tmp_path):
    n = 30

    def slow(body):
        time.sleep(0.05)
        return answer(body)

    server.answer = slow
    cache_dir = tmp_path / "cache"
    script = tmp_path / "child.py"
    script.write_text(
        CHILD.format(
            src=str(REPO / "src"),
            repo=str(REPO),
            url=server.base_url,
            env=KEY_ENV,
            cache=str(cache_dir),
            n=n,
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while server.chat_calls < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    child_out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, child_out
    assert b"finished" not in child_out
    (tmp_path / "child_output.txt").write_bytes(child_out)

    reqs = requests_for(n)
    cached_before = set(ResponseCache(cache_dir)._entries)
    assert 0 < len(cached_before) < n
    content_of = {r.key("test-model", "v1"): r.messages[-1]["content"] for r in reqs}
    first_asked = server.user_messages()

    server.reset_records()
    server.answer = answer
    c = client(server, cache_dir)
    out = c.complete_many(reqs)
    assert all(r.error is None for r in out)
    asked = server.user_messages()
    assert not set(asked) & {content_of[k] for k in cached_before}  # no cached call repeated
    assert len(asked) == n - len(cached_before) == c.stats["calls"]
    # at most the calls in flight at the kill were answered by the server but not cached
    assert len(set(first_asked) & set(asked)) <= 2

    server.reset_records()
    again = client(server, cache_dir).complete_many(reqs)
    assert server.chat_calls == 0 and again == out
    assert [r.parsed["negative"] for r in again] == [
        f"a blue car number {i} next to a tree" for i in range(n)
    ]


# -- concurrency, progress, overhead ------------------------------------------------------------
def test_concurrency_is_bounded(server, api_key, tmp_path):
    def slow(body):
        time.sleep(0.2)
        return answer(body)

    server.answer = slow
    out = client(server, tmp_path / "c", max_concurrency=3).complete_many(requests_for(12))
    assert all(r.error is None for r in out)
    assert server.chat_calls == 12
    assert 2 <= server.max_in_flight <= 3


def test_progress_is_logged(server, api_key, tmp_path, caplog):
    logs: list[str] = []
    c = client(server, tmp_path / "c", logs=logs, progress_every=2, max_concurrency=1)
    with caplog.at_level(logging.INFO, logger="vlcomp.llm"):
        c.complete_many(requests_for(4))
    progress = [m for m in caplog.messages if m.startswith("llm progress")]
    assert len(progress) == 2 and "tokens" in progress[-1] and "cost $" in progress[-1]
    assert "calls 4" in logs[-1] and "cache hits 0" in logs[-1]


def test_client_overhead_per_call(server, api_key, tmp_path):
    """Time the client adds per call over the server's own latency (printed, not asserted)."""
    import openai

    n = 60
    reqs = requests_for(n)
    c = client(server, tmp_path / "c", max_concurrency=1)
    c.complete_many(reqs[:2])  # warm up the connection
    server.reset_records()
    t0 = time.perf_counter()
    c.complete_many(reqs[2:])
    ours = (time.perf_counter() - t0) / (n - 2)
    server_s = sum(server.answer_latencies_s) / len(server.answer_latencies_s)

    raw = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    body = reqs[0].body("test-model", "json_schema")
    raw.chat.completions.create(**body)
    server.reset_records()
    t0 = time.perf_counter()
    for _ in range(n):
        raw.chat.completions.create(**body)
    bare = (time.perf_counter() - t0) / n
    bare_server = sum(server.answer_latencies_s) / len(server.answer_latencies_s)
    raw.close()
    print(
        f"\nper call: vlcomp.llm {ours * 1e3:.2f} ms, server {server_s * 1e3:.2f} ms -> "
        f"client adds {(ours - server_s) * 1e3:.2f} ms (bare openai client adds "
        f"{(bare - bare_server) * 1e3:.2f} ms; our layer incl. cache fsync "
        f"{(ours - server_s - (bare - bare_server)) * 1e3:.2f} ms)"
    )


# -- dry run and cost estimates -------------------------------------------------------------------
def test_dry_run_sends_nothing(server, api_key, tmp_path):
    reqs = requests_for(5)
    client(server, tmp_path / "c").complete_many(reqs[:2])
    server.reset_records()
    logs: list[str] = []
    c = client(server, tmp_path / "c", logs=logs, dry_run=True)
    out = c.complete_many(reqs)
    assert server.requests == []
    assert [r.error for r in out] == [None, None, "dry_run", "dry_run", "dry_run"]
    est = c.estimate(reqs)
    assert (est.requests, est.cached, est.calls) == (5, 2, 3)
    assert est.completion_tokens == 3 * 64
    assert est.cost_batch_usd == pytest.approx(est.cost_sync_usd * 0.5)
    assert "3 calls to make" in logs[0] and "nothing was sent" in logs[0]


def test_dry_run_needs_no_api_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    c = client(server, tmp_path / "c", dry_run=True)
    assert c.dry_run(requests_for(3)).calls == 3
    c = LLMClient(
        LLMSettings.from_config({"api_key_env": KEY_ENV}), tmp_path / "d", "v1", log=lambda m: 0
    )
    with pytest.raises(MissingAPIKey, match=KEY_ENV):
        c.complete_many(requests_for(1))


def test_estimate_cost_for_sugarcrepe_size():
    prices = {
        "gpt-4o-mini": {"input": 0.15, "output": 0.60, "batch_discount": 0.5},
        "gpt-4o": {"input": 2.50, "output": 10.0, "batch_discount": 0.5},
    }
    df = estimate_cost(25_000 * 40, 400, 60, prices, ["gpt-4o-mini", "gpt-4o"])
    row = df.row(0, named=True)
    assert row["calls"] == 1_000_000
    assert row["cost_sync_usd"] == pytest.approx((4e8 * 0.15 + 6e7 * 0.60) / 1e6)
    assert df["cost_batch_usd"].to_list() == pytest.approx([c / 2 for c in df["cost_sync_usd"]])
    with pytest.raises(ValueError, match="llm.prices.other"):
        estimate_cost(1, 1, 1, prices, ["other"])


# -- settings ---------------------------------------------------------------------------------
def test_settings_defaults_and_building():
    """The block as the config schema left it (every key checked there:
    tests/unit/test_config.py) becomes typed settings; a key left out takes its default."""
    s = LLMSettings.from_config(None)
    assert (s.model, s.mode, s.max_concurrency, s.structured_output) == (
        "gpt-4o-mini",
        "sync",
        4,
        "auto",
    )
    assert s.temperature("propose") == 1.5 and s.temperature("compose") == 0.0
    with pytest.raises(KeyError, match="llm.temperatures has no step 'write'"):
        s.temperature("write")
    assert s.price.batch_discount == 0.5 and s.budget.max_calls is None
    s = LLMSettings.from_config(
        {
            "model": "m",
            "timeout_s": 5,
            "temperatures": {"propose": 1},
            "budget": {"max_cost_usd": 20},
            "prices": {"m": {"input": 1, "output": 2}},
            "batch_outputs": "out.jsonl",  # one path as a string
        }
    )
    assert s.timeout_s == 5.0 and isinstance(s.timeout_s, float)
    assert s.temperature("propose") == 1.0 and s.temperature("locate") == 0.0
    assert s.budget == Budget(max_cost_usd=20.0) and s.price == Price(1.0, 2.0, 0.5)
    assert s.batch_outputs == ("out.jsonl",)
    assert LLMSettings.from_config({"budget": None}).budget == Budget()  # null: no limit
    for cfg, key in [
        ({"budget": {"max_dollars": 1}}, "llm.budget.max_dollars: unknown key"),
        ({"prices": {"m": {"input": 1}}}, "llm.prices.m.output: required"),
        ({"retries": 3}, "llm.retries: unknown key"),
        # what the schema cannot say: a money limit needs the model's price
        (
            {"model": "m", "budget": {"max_cost_usd": 5}},
            "llm.budget.max_cost_usd needs a price for the model: add llm.prices.m",
        ),
    ]:
        with pytest.raises(ValueError, match=key.replace(".", r"\.")):
            LLMSettings.from_config(cfg)
    secret = "sk-" + secrets.token_hex(20)
    with pytest.raises(ValueError) as e:
        LLMSettings.from_config({"api_key": secret})
    assert secret not in str(e.value)


# -- batch mode -------------------------------------------------------------------------------
def test_batch_files_split_by_count_and_size(tmp_path):
    lines = [{"custom_id": f"k{i}", "body": {"x": "y" * 100}} for i in range(12)]
    paths = write_batch_files(lines, tmp_path / "a", max_requests_per_file=5)
    assert [len(p.read_text().splitlines()) for p in paths] == [5, 5, 2]
    one = len(json.dumps(lines[0], sort_keys=True)) + 1
    paths = write_batch_files(lines, tmp_path / "b", max_bytes_per_file=3 * one + 10)
    assert [len(p.read_text().splitlines()) for p in paths] == [3, 3, 3, 3]
    assert all(p.stat().st_size <= 3 * one + 10 for p in paths)


def test_batch_submit_poll_import_then_zero_calls(server, api_key, tmp_path):
    reqs = requests_for(12)
    reference = client(server, tmp_path / "ref").complete_many(reqs)
    server.reset_records()

    c = client(server, tmp_path / "cache")
    c.complete_many(reqs[:2])  # two already cached: not written to the batch files
    server.reset_records()
    runner = BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", 5, poll_s=0.01)
    state = runner.run(reqs)
    inputs = sorted((tmp_path / "batch").glob("batch-*.jsonl"))
    assert [len(p.read_text().splitlines()) for p in inputs] == [5, 5]
    line = json.loads(inputs[0].read_text().splitlines()[0])
    assert set(line) == {"custom_id", "method", "url", "body"}
    assert line["url"] == "/v1/chat/completions" and line["method"] == "POST"
    assert line["custom_id"] == reqs[2].key("test-model", "v1")
    assert line["body"]["response_format"]["type"] == "json_schema"
    paths = [r["path"] for r in server.requests]
    assert paths.count("/v1/files") == 2 and paths.count("/v1/batches") == 2
    assert sum(p.startswith("/v1/batches/") for p in paths) >= 4  # polled: in_progress, done
    assert all(j["done"] and j["imported"] == 5 for j in state["jobs"])
    assert c.stats["batch_imported"] == 10 and server.chat_calls == 0

    out = c.complete_many(reqs)
    assert server.chat_calls == 0 and out == reference
    server.reset_records()
    assert client(server, tmp_path / "cache").complete_many(reqs) == reference
    assert server.chat_calls == 0


def test_batch_resume_by_job_id(server, api_key, tmp_path):
    reqs = requests_for(6)
    server.batch_polls_before_complete = 2
    c = client(server, tmp_path / "cache")
    runner = BatchRunner(c, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01, wait_s=0)
    with pytest.raises(BatchPending):
        runner.run(reqs)
    state = json.loads((tmp_path / "state.json").read_text())
    (job,) = state["jobs"]
    assert job["batch_id"].startswith("batch_") and not job["done"]

    # a later workflow run: polls the recorded job, submits nothing new
    c2 = client(server, tmp_path / "cache")
    BatchRunner(c2, tmp_path / "batch", tmp_path / "state.json", poll_s=0.01).run(reqs)
    assert [r["path"] for r in server.requests].count("/v1/batches") == 1
    assert all(r.error is None for r in c2.complete_many(reqs))
    assert server.chat_calls == 0


def test_batch_mode_through_complete_many(server, api_key, tmp_path):
    reqs = requests_for(4)
    s = settings(server, mode="batch", batch_poll_s=0.01)
    state = tmp_path / "results" / "llm_batch_state.json"
    c = LLMClient(s, tmp_path / "cache", "v1", log=lambda m: None, batch_state=state)
    out = c.complete_many(reqs)
    assert all(r.error is None for r in out) and server.chat_calls == 0
    assert [r["path"] for r in server.requests].count("/v1/batches") == 1
    assert json.loads(state.read_text())["jobs"][0]["done"]
    assert list((tmp_path / "cache" / "batch").glob("batch-*.jsonl"))
    # once imported, a rerun in batch mode submits nothing
    server.reset_records()
    again = LLMClient(s, tmp_path / "cache", "v1", log=lambda m: None, batch_state=state)
    assert again.complete_many(reqs) == out and server.requests == []


def test_import_vllm_run_batch_output(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    body = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }
    lines = [
        json.dumps(
            {
                "id": "vllm-1",
                "custom_id": "k1",
                "response": {"status_code": 200, "request_id": "vllm-batch-1", "body": body},
                "error": None,
            }
        ),
        json.dumps(
            {
                "id": "vllm-2",
                "custom_id": "k2",
                "response": {"status_code": 400, "request_id": "r", "body": None},
                "error": {"message": "bad"},
            }
        ),
        '{"custom_id": "k3", "resp',
    ]
    counts, entries = import_batch_output(lines, cache, "m", "v1")
    assert (counts.imported, counts.failed) == (1, 2)
    e = cache.get("k1")
    assert (e.text, e.prompt_tokens, e.completion_tokens, e.source) == ("{}", 7, 2, "batch")
    assert "k2" not in cache


# -- the API key never leaks ----------------------------------------------------------------------
def test_api_key_never_written(server, api_key, tmp_path, caplog, capsys):
    logs: list[str] = []
    with caplog.at_level(logging.DEBUG):
        c = client(server, tmp_path / "cache", logs=logs, progress_every=1)
        server.faults.extend([("429", 0), ("500",), ("truncate",), ("status", 400)])
        c.complete_many(requests_for(4) + requests_for(1, schema=None))
        c.dry_run(requests_for(8))
        runner = BatchRunner(c, tmp_path / "batch", tmp_path / "results" / "state.json", 3)
        runner.poll_s = 0.01
        runner.run(requests_for(8))
        server.faults.append(("status", 401))
        with pytest.raises(EndpointRefused) as refused:
            client(server, tmp_path / "other", logs=logs).complete_many(requests_for(2))
    texts = [repr(c.settings), repr(c), str(c.stats), caplog.text, capsys.readouterr().out]
    texts.append(str(refused.value))
    texts += logs
    (tmp_path / "captured.txt").write_text("\n".join(texts))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files) and any(p.name == "state.json" for p in files)
    leaked = [str(p) for p in files if api_key.encode() in p.read_bytes()]
    assert leaked == []
    assert any(api_key in r["headers"].get("authorization", "") for r in server.requests)
