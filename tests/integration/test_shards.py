"""Shard counts per corpus: each corpus is ingested into its own number of shards (its
n_shards, or n_captions / ingest.captions_per_shard, or ingest.n_shards), parsed and counted
per shard, and the merged counts do not depend on how the corpus was sharded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.test_workflow import snakemake

pytestmark = pytest.mark.integration

CAPTIONS = [
    "a red circle next to a blue square",
    "two small dogs on a wooden bench",
    "A man holding a yellow umbrella.",
    "green trees behind a white house",
    "a black cat sleeping on the red sofa",
] * 5


def test_each_corpus_gets_its_own_shard_count(tmp_path: Path) -> None:
    (tmp_path / "captions.txt").write_text("\n".join(CAPTIONS) + "\n")
    corpus = {"format": "text_lines", "inputs": [str(tmp_path / "captions.txt")]}
    config = {
        "corpora": {
            "explicit": {**corpus, "n_shards": 3},
            "sized": {**corpus, "n_captions": 25},
            "default": dict(corpus),
        },
        "ingest": {"n_shards": 1, "captions_per_shard": 10},
        "benchmarks": {},
        "evaluate": {"models": []},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [f"results/counts/{name}/atoms.parquet" for name in config["corpora"]]
    result = snakemake(tmp_path, *targets, config=tmp_path / "config.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    expected = {"explicit": 3, "sized": 3, "default": 1}
    for name, n in expected.items():
        shards = sorted((tmp_path / "results" / "graphs" / name).glob("graphs-*.parquet"))
        assert [p.name for p in shards] == [f"graphs-{i}-of-{n}.parquet" for i in range(n)]
    for table in ("atoms", "compounds", "bindings"):
        one = (tmp_path / "results/counts/default" / f"{table}.parquet").read_bytes()
        for name in ("explicit", "sized"):
            assert (tmp_path / "results/counts" / name / f"{table}.parquet").read_bytes() == one
