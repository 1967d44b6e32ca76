"""LLM hard negatives through the real workflow: a COCO-style eval set, an OpenAI-compatible
server on loopback (tests/llm_server.py) driven by the real ``openai`` client, canned answers
written for six captions (tests/unit/test_llm_negatives.py).

Shows: the generated benchmark is evaluated like a template one; the API key reaches no file;
a forced rerun makes zero calls and writes the same bytes; a kill -9 in the middle of the
generation job, then a rerun, repeats no answered request and gives the same output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml
from PIL import Image

from tests.conftest import REPO
from tests.integration.test_user_data import save_random_checkpoint
from tests.integration.test_workflow import SNAKEMAKE, snakemake
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.unit.test_llm_negatives import CAPTIONS, KEY_ENV, MODEL, SECRET, sugarcrepe_answer

pytestmark = pytest.mark.integration

GENERATED = "results/negatives/llm_pairs/generated.parquet"


def write_inputs(root: Path, base_url: str) -> Path:
    images = root / "images"
    images.mkdir(parents=True)
    records, annotations = [], []
    for index, text in enumerate(CAPTIONS, 1):
        Image.new("RGB", (64, 48), (30 * index, 200 - 20 * index, 90)).save(images / f"{index}.jpg")
        records.append({"id": index, "file_name": f"{index}.jpg"})
        annotations.append({"id": index, "image_id": index, "caption": text})
    captions = root / "captions.json"
    captions.write_text(json.dumps({"images": records, "annotations": annotations}))
    checkpoint = root / "model" / "random_init.pt"
    save_random_checkpoint(checkpoint)
    config = {
        "eval_sets": {
            "coco": {"format": "coco_captions", "captions": str(captions), "images": str(images)}
        },
        "models": {"mine": {"open_clip": "vlcomp-world-vit", "checkpoint": str(checkpoint)}},
        "benchmarks": {"llm_pairs": {"kind": "pairs", "eval_set": "coco", "negatives": "llm"}},
        "llm": {
            "base_url": base_url,
            "model": MODEL,
            "api_key_env": KEY_ENV,
            "timeout_s": 5,
            "max_retries": 1,
            "backoff_base_s": 0.01,
            "max_chars": 120,
            "max_concurrency": 2,
            "prices": {MODEL: {"input": 1.0, "output": 2.0}},
        },
        "evaluate": {"models": ["mine"], "bootstrap_resamples": 20, "threads": 1},
        "parser_quality": {"factual_csv": None},
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def server(llm_server, monkeypatch):  # noqa: F811 - the imported fixture
    monkeypatch.setenv(KEY_ENV, SECRET)
    llm_server.answer = sugarcrepe_answer
    return llm_server


def files_containing(root: Path, secret: str) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and secret.encode() in path.read_bytes():
            hits.append(path)
    return hits


def request_signatures(server) -> Counter:
    return Counter(json.dumps(body, sort_keys=True) for body in server.chat_bodies())


def test_llm_benchmark_end_to_end(tmp_path, server):
    config = write_inputs(tmp_path / "inputs", server.base_url)
    work = tmp_path / "work"
    work.mkdir()
    result = snakemake(work, config=config)
    assert result.returncode == 0, result.stderr[-5000:]
    calls = request_signatures(server)
    assert calls
    candidates = pl.read_parquet(work / "results/negatives/llm_pairs/candidates.parquet")
    assert set(candidates["generator"]) == {f"llm:{MODEL}"}
    assert candidates.filter(~pl.col("is_positive")).height >= len(CAPTIONS)
    metrics = pl.read_parquet(work / "results/metrics/llm_pairs.parquet")
    assert "accuracy_micro" in set(metrics["metric"])
    assert (work / "results/review/llm_pairs/sheet.html").stat().st_size > 0
    review = json.loads((work / "results/negatives/llm_pairs/review.json").read_text())
    assert review["decisions_file"] is None
    stats = json.loads((work / "results/negatives/llm_pairs/llm_stats.json").read_text())
    assert stats["calls"] == sum(calls.values())
    # The key was sent to the server, and written nowhere.
    assert SECRET in json.dumps([r["headers"] for r in server.requests])
    for folder in ("results", "logs", ".snakemake"):
        assert files_containing(work / folder, SECRET) == [], folder

    # A forced rerun of the generation job answers everything from the cache.
    first = (work / GENERATED).read_bytes()
    server.reset_records()
    rerun = snakemake(work, "--forcerun", "llm_pairs", config=config)
    assert rerun.returncode == 0, rerun.stderr[-5000:]
    assert server.chat_calls == 0
    assert (work / GENERATED).read_bytes() == first

    # A kill -9 in the middle of the generation job (new folder, empty cache), then a rerun.
    killed = tmp_path / "killed"
    killed.mkdir()
    command = [
        SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(killed),
        "--configfile", str(config), "--cores", "2", GENERATED,
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while server.chat_calls < 10 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the generation finished before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert sum(request_signatures(server).values()) >= 10
    assert not (killed / GENERATED).exists()

    assert snakemake(killed, "--unlock", config=config).returncode == 0
    result = snakemake(killed, GENERATED, config=config)
    assert result.returncode == 0, result.stderr[-5000:]
    both = request_signatures(server)
    # Only requests in flight at the kill (answered by the server, not yet cached) may be
    # sent again: at most max_concurrency (2) of them.
    assert sum(n - 1 for n in both.values() if n > 1) <= 2
    assert set(both) == set(calls)
    assert (killed / GENERATED).read_bytes() == first
