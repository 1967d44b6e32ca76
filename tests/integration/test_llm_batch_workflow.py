"""Batch mode through the real workflow, round trip by round trip, as a user runs it.

- ``llm.batch_backend: vllm``: every run of the generation job writes the requests of its
  next step (REPLACE: locate, propose, compose) and stops with exit status 8, naming the
  ``run_batch`` command and the ``llm.batch_outputs`` to set; the test plays ``run_batch``
  (vLLM cannot be installed here: ``tests/unit/test_llm_batch.play_run_batch`` writes its
  documented output schema) and reruns with the outputs configured, until the job exits 0
  having made no call at all.
- ``llm.batch_backend: openai`` against a server without the Files API (404 on ``/v1/files``)
  that quotes the API key in every error: each run stops with exit status 3 and the hint to
  use vLLM; the test imports an OpenAI batch output by config instead, and no imported job is
  uploaded again.

No run writes an output of the rule before it finishes, and the key reaches no file under the
work folder (results, logs, .snakemake) and neither of Snakemake's streams.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.integration.test_llm_workflow import (  # noqa: F401 - server is a fixture
    GENERATED,
    files_containing,
    server,
    write_inputs,
)
from tests.integration.test_workflow import snakemake
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_batch import play_openai_batch, play_run_batch
from tests.unit.test_llm_negatives import SECRET

pytestmark = pytest.mark.integration

OUTPUTS = [
    "results/negatives/llm_pairs/generated.parquet",
    "results/negatives/llm_pairs/boxes.parquet",
    "results/negatives/llm_pairs/rejections.parquet",
    "results/negatives/llm_pairs/llm_stats.json",
]
LOG = "logs/negatives/llm_pairs_llm.log"
STATE = "results/cache/llm/batch/state.json"
MAX_ROUNDS = 8
COMMAND = re.compile(
    r"python -m vllm\.entrypoints\.openai\.run_batch -i (\S+) -o (\S+) --model (\S+)"
)


def batch_config(root: Path, base_url: str, families: list[str], **llm) -> Path:
    path = write_inputs(root, base_url)
    config = yaml.safe_load(path.read_text())
    config["llm"].update(mode="batch", batch_poll_s=0.05, **llm)
    config["benchmarks"]["llm_pairs"]["families"] = families
    path.write_text(yaml.safe_dump(config))
    return path


def set_outputs(config_path: Path, outputs: list[str]) -> None:
    config = yaml.safe_load(config_path.read_text())
    config["llm"]["batch_outputs"] = outputs
    config_path.write_text(yaml.safe_dump(config))


def check_stopped(work: Path, result, exit_code: int) -> str:
    """A stopped run: the job's one line in its log and on Snakemake's stderr, the exit
    status, and no output of the rule. Returns the job's log."""
    assert result.returncode != 0
    log = (work / LOG).read_text()
    assert f"(exit {exit_code}): " in log
    assert f"exit status {exit_code}" in result.stderr, result.stderr[-3000:]
    assert [p for p in OUTPUTS if (work / p).exists()] == []
    return log


def run_rounds(
    work: Path, config: Path, stopped: Callable[[object], list[str]]
) -> tuple[object, list, int]:
    """Run the generation until it succeeds; ``stopped(result)`` handles a stopped run and
    returns the batch outputs to configure. Returns (last result, every result, rounds)."""
    results = []
    outputs: list[str] = []
    for rounds in range(1, MAX_ROUNDS + 1):
        result = snakemake(work, GENERATED, config=config)
        results.append(result)
        if result.returncode == 0:
            return result, results, rounds
        new = stopped(result)
        assert new, "a stopped run must leave something to run"
        outputs += new
        set_outputs(config, outputs)
    raise AssertionError(f"not done after {MAX_ROUNDS} rounds")


def assert_no_key(work: Path, results: list) -> None:
    for folder in ("results", "logs", ".snakemake"):
        assert files_containing(work / folder, SECRET) == [], folder
    for result in results:
        assert SECRET not in result.stdout and SECRET not in result.stderr


def test_vllm_run_batch_round_trips(tmp_path, server):  # noqa: F811 - the imported fixture
    config = batch_config(
        tmp_path / "inputs", server.base_url, ["replace_obj"], batch_backend="vllm"
    )
    work = tmp_path / "work"
    work.mkdir()

    def stopped(result) -> list[str]:
        log = check_stopped(work, result, 8)
        line = next(x for x in log.splitlines() if "BatchPending (exit 8)" in x)
        assert line in result.stderr  # the same line on Snakemake's stderr
        commands = COMMAND.findall(line)
        assert commands and {model for *_, model in commands} == {"test-model"}
        for inp, out, _ in commands:
            assert Path(inp).is_absolute() and Path(inp).exists() and not Path(out).exists()
            play_run_batch(Path(inp), Path(out), server.answer)
        listed = re.search(r"llm\.batch_outputs: \[([^\]]*)\]", line).group(1).split(", ")
        assert listed[-len(commands) :] == [out for _, out, _ in commands]
        return [out for _, out, _ in commands]

    result, results, rounds = run_rounds(work, config, stopped)
    assert rounds >= 4  # locate, propose, compose: one stop each (each needs the last's answers)
    assert (work / GENERATED).stat().st_size > 0
    assert server.requests == [] and server.chat_calls == 0
    state = json.loads((work / STATE).read_text())
    assert state["jobs"] and all(j["done"] and j["status"] == "imported" for j in state["jobs"])
    stats = json.loads((work / "results/negatives/llm_pairs/llm_stats.json").read_text())
    assert stats["calls"] == 0 and stats["batch_imported"] > 0
    assert_no_key(work, results)


def test_openai_output_imported_by_config(tmp_path, server):  # noqa: F811 - the imported fixture
    server.files_error_status = 404  # the endpoint has no Files API
    server.echo_key_in_errors = True  # and quotes the key in every error
    config = batch_config(tmp_path / "inputs", server.base_url, ["swap_obj"])
    work = tmp_path / "work"
    work.mkdir()
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    uploads_per_round: list[int] = []

    def stopped(result) -> list[str]:
        log = check_stopped(work, result, 3)
        assert "has no Files API (404 on /v1/files)" in log
        assert "llm.batch_backend: vllm" in result.stderr
        uploads_per_round.append([r["path"] for r in server.requests].count("/v1/files"))
        server.reset_records()
        state = json.loads((work / STATE).read_text())
        written = [j for j in state["jobs"] if not j["done"] and not j.get("input_file_id")]
        outputs = []
        for job in written:
            out = downloads / job["input"].replace(".jsonl", ".openai.jsonl")
            play_openai_batch(work / "results/cache/llm/batch" / job["input"], out, server.answer)
            outputs.append(str(out))
        return outputs

    result, results, rounds = run_rounds(work, config, stopped)
    assert rounds >= 2
    assert uploads_per_round == [1] * (rounds - 1)  # only the newly written job, each time
    assert server.requests == []  # the last run uploaded nothing: every job was imported
    assert (work / GENERATED).stat().st_size > 0
    state = json.loads((work / STATE).read_text())
    assert all(j["done"] and "input_file_id" not in j for j in state["jobs"])
    assert_no_key(work, results)
