"""Bad endpoints through the real workflow: every case ends at once with one line naming the
endpoint, the model and the reason, a documented exit code (``vlcomp.errors``), no output of
the generation rule, and the API key in no file, log or message.

The server is ``tests/llm_server.py`` on loopback (real ``openai`` client); it quotes the key
in its error messages, as some servers do. Run with ``-s`` to see the table of cases (message,
exit code, seconds to fail, files written), the numbers of the issue's closing note."""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from pathlib import Path

import pytest
import yaml

from tests.integration.test_llm_workflow import GENERATED, files_containing, write_inputs
from tests.integration.test_workflow import snakemake
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_negatives import KEY_ENV, SECRET, nothing_found, sugarcrepe_answer

pytestmark = pytest.mark.integration

OUTPUTS = "results/negatives/llm_pairs"
EVAL_ITEMS = "results/eval_sets/coco/items.parquet"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refusing(status: int):
    return [("status", status)] * 5000


CASES = {
    # name: (llm config overrides, server faults (None: a base_url nothing answers), answer, code)
    # 403 and DNS failures take the same paths as 401 and a closed port:
    # tests/unit/test_llm_failures.py covers them at the client
    "401 wrong key": ({}, refusing(401), None, 3),
    "404 wrong model": ({"model": "no-such-model"}, refusing(404), None, 3),
    "connection refused": ({"base_url": "closed"}, None, None, 4),
    "low yield": ({}, [], nothing_found, 7),
    "garbage 200": ({}, [("body", "<html>502 Bad Gateway</html>")] * 5000, None, 9),
    "budget": ({"budget": {"max_calls": 5}}, [], None, 5),
    "dry run": ({"dry_run": True}, [], None, 6),
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A work folder whose eval items are built (the generation job is what each case runs)."""
    root = tmp_path_factory.mktemp("bad_endpoints")
    config = write_inputs(root / "inputs", "http://127.0.0.1:9/v1")
    work = root / "work"
    work.mkdir()
    result = snakemake(work, EVAL_ITEMS, config=config)
    assert result.returncode == 0, result.stderr[-3000:]
    return root, work, yaml.safe_load(config.read_text())


def run_case(root: Path, work: Path, base: dict, server, name: str) -> dict:
    overrides, faults, answer, _ = CASES[name]
    config = json.loads(json.dumps(base))
    config["llm"].update(overrides)
    if config["llm"]["base_url"] == "closed":
        config["llm"]["base_url"] = f"http://127.0.0.1:{closed_port()}/v1"
    elif "base_url" not in overrides:
        config["llm"]["base_url"] = server.base_url
    path = root / f"config-{re.sub(r'[^a-z0-9]+', '_', name)}.yaml"
    path.write_text(yaml.safe_dump(config))
    server.faults.clear()
    server.faults.extend(faults or [])
    server.answer = answer or sugarcrepe_answer
    server.reset_records()
    server.echo_key_in_errors = True  # every error message quotes the Authorization header
    # each case starts with nothing spent and nothing cached (a well-formed answer of an
    # earlier case would be read from the cache instead of asking this case's server)
    shutil.rmtree(work / "results/cache/llm", ignore_errors=True)
    started = time.monotonic()
    result = snakemake(work, GENERATED, config=path, timeout=600)
    elapsed = time.monotonic() - started
    status = re.findall(r"non-zero exit status (\d+)", result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if "(exit " in ln]
    return {
        "case": name,
        "returncode": result.returncode,
        "job_exit": int(status[-1]) if status else None,
        "message": lines[-1] if lines else "",
        "seconds": elapsed,
        "chat_calls": server.chat_calls,
        "written": sorted(p.name for p in (work / OUTPUTS).glob("*"))
        if (work / OUTPUTS).exists()
        else [],
        "stdout_stderr_has_key": SECRET in result.stdout + result.stderr,
    }


def test_bad_endpoints_fail_at_once_with_one_line_and_a_documented_code(
    prepared,
    llm_server,  # noqa: F811 - the imported fixture
    monkeypatch,
):
    root, work, base = prepared
    monkeypatch.setenv(KEY_ENV, SECRET)
    rows = [run_case(root, work, base, llm_server, name) for name in CASES]
    print("\n| case | job exit | seconds | chat calls | files written | message |")
    print("|---|---:|---:|---:|---|---|")
    for r in rows:
        print(
            f"| {r['case']} | {r['job_exit']} | {r['seconds']:.1f} | {r['chat_calls']} | "
            f"{len(r['written'])} | {r['message'][:160]} |"
        )
    for r in rows:
        expected = CASES[r["case"]][3]
        assert r["returncode"] != 0, r
        assert r["job_exit"] == expected, r
        assert r["written"] == [], r
        assert not r["stdout_stderr_has_key"], r
        assert r["message"], r
    by = {r["case"]: r for r in rows}
    assert "HTTP 401" in by["401 wrong key"]["message"]
    assert "'no-such-model'" in by["404 wrong model"]["message"]
    assert "unreachable" in by["connection refused"]["message"]
    assert "min_yield" in by["low yield"]["message"]
    assert "malformed answers in a row" in by["garbage 200"]["message"]
    assert "max_calls=5" in by["budget"]["message"] and by["budget"]["chat_calls"] == 5
    assert "nothing was sent" in by["dry run"]["message"] and by["dry run"]["chat_calls"] == 0
    # a refusal stops at once: at most the calls in flight (max_concurrency 2) are sent
    for case in ("401 wrong key", "404 wrong model"):
        assert by[case]["chat_calls"] <= 2, by[case]
    for folder in ("results", "logs", ".snakemake"):
        assert files_containing(work / folder, SECRET) == [], folder

    # the right endpoint afterwards: the job runs (no stale empty output to skip it)
    llm_server.faults.clear()
    llm_server.answer = sugarcrepe_answer
    good = root / "config-good.yaml"
    config = json.loads(json.dumps(base))
    config["llm"]["base_url"] = llm_server.base_url
    good.write_text(yaml.safe_dump(config))
    result = snakemake(work, GENERATED, config=good)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (work / GENERATED).exists()
