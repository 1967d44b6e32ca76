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


def test_a_corpus_ingested_in_parts_gives_what_one_job_gives(tmp_path: Path) -> None:
    """files_per_job: one ingest job per part of the files, then the shards gathered in
    file order and the summaries summed: the same captions, rejected rows, summary and
    counts as one job over every file."""
    import polars as pl

    folder = tmp_path / "corpus"
    folder.mkdir()
    bad = ["", "\x01 control", "x" * 50]  # empty, control characters, too long
    for i in range(5):
        lines = [f"{c} {i}" for c in CAPTIONS[i : i + 7]] + [bad[i % 3]]
        (folder / f"part-{i:05d}.txt").write_text("\n".join(lines) + "\n")
    runs = {}
    for name, files_per_job in (("whole", None), ("parts", 2)):
        work = tmp_path / name
        work.mkdir()
        corpus = {"format": "text_lines", "inputs": [str(folder)], "n_shards": 3}
        config = {
            "corpora": {"c": {**corpus, "files_per_job": files_per_job}},
            "ingest": {"rules": {"max_chars": 40}},
            "benchmarks": {},
            "evaluate": {"models": []},
        }
        (work / "config.yaml").write_text(yaml.safe_dump(config))
        targets = ["results/counts/c/atoms.parquet", "results/captions/c/summary.json"]
        result = snakemake(work, *targets, config=work / "config.yaml")
        assert result.returncode == 0, result.stderr[-4000:]
        runs[name] = work
    whole, parts = runs["whole"], runs["parts"]
    assert sorted(p.name for p in (parts / "benchmarks/ingest/c").glob("*.tsv")) == [
        f"{j}-of-3.tsv" for j in range(3)
    ]
    assert not (whole / "benchmarks/ingest/c").exists()
    # the parts' caption shards are temporary: gathered, then removed
    assert not list((parts / "results/captions/c/parts").rglob("captions-*"))
    summary = yaml.safe_load((whole / "results/captions/c/summary.json").read_text())
    assert summary["files"] == 5 and summary["accepted"] == 35
    assert sum(summary["rejected"].values()) == 5
    assert yaml.safe_load((parts / "results/captions/c/summary.json").read_text()) == summary
    tables = [f"captions/c/captions-{i}-of-3.parquet" for i in range(3)]
    for table in (*tables, "captions/c/rejected.parquet"):
        one = pl.read_parquet(whole / "results" / table)
        assert pl.read_parquet(parts / "results" / table).equals(one), table
    for table in ("atoms", "compounds", "bindings"):
        path = f"results/counts/c/{table}.parquet"
        assert (parts / path).read_bytes() == (whole / path).read_bytes()
