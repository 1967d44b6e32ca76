"""CPU throughput of the offline scorers, all measured in one run on the same texts.

    python -m vlcomp_dev.bench.scorers --train captions.parquet [...] --eval sugarcrepe/*.json

Trains an n-gram LM, a tiny GPT-2 and a MiniLM index on the training captions (timing each),
then scores the same evaluation texts with each and prints captions per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import torch

from vlcomp.scorers.base import TextScorer


def sugarcrepe_texts(paths: Sequence[str | Path]) -> list[str]:
    """Positive and negative captions of SugarCrepe JSON files (``{index: {caption, ...}}``)."""
    texts: list[str] = []
    for path in sorted(Path(p) for p in paths):
        for item in json.loads(Path(path).read_text()).values():
            texts += [item["caption"], item["negative_caption"]]
    return texts


def read_training_texts(paths: Sequence[str | Path], column: str) -> list[str]:
    frames = [
        pl.read_csv(p) if str(p).endswith(".csv") else pl.read_parquet(p) for p in sorted(paths)
    ]
    return pl.concat([f.select(pl.col(column).cast(pl.String)) for f in frames])[column].to_list()


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def benchmark(
    train_texts: Sequence[str],
    eval_texts: Sequence[str],
    work_dir: str | Path,
    gpt2_settings: dict[str, Any] | None = None,
    index_sample: int = 20_000,
    batch_size: int = 64,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Train each offline scorer, then time ``score`` on ``eval_texts``; print a table."""
    from vlcomp.scorers.causal_lm import CausalLMScorer
    from vlcomp.scorers.familiarity import MiniLMFamiliarityScorer, build_index_from_texts
    from vlcomp.scorers.ngram import NgramLM
    from vlcomp.scorers.tiny_gpt2 import fit_tiny_gpt2

    work = Path(work_dir)
    train_texts = list(train_texts)
    ngram, ngram_train = _timed(lambda: NgramLM.fit(train_texts, order=3))
    _, gpt2_train = _timed(
        lambda: fit_tiny_gpt2(train_texts, work / "tiny-gpt2", gpt2_settings, seed)
    )
    _, index_train = _timed(
        lambda: build_index_from_texts(
            train_texts, work / "minilm.parquet", sample=index_sample, seed=seed
        )
    )
    scorers: list[tuple[TextScorer, float]] = [
        (ngram, ngram_train),
        (CausalLMScorer(str(work / "tiny-gpt2"), batch_size=batch_size), gpt2_train),
        (
            MiniLMFamiliarityScorer(work / "minilm.parquet", k=10, batch_size=batch_size),
            index_train,
        ),
    ]
    results: dict[str, dict[str, float]] = {}
    print(
        f"{len(eval_texts)} texts, {len(train_texts)} training captions, "
        f"torch threads {torch.get_num_threads()}",
        file=sys.stderr,
    )
    for scorer, train_seconds in scorers:
        _, seconds = _timed(lambda s=scorer: s.score(list(eval_texts)))
        results[scorer.name] = {
            "train_s": round(train_seconds, 2),
            "score_s": round(seconds, 2),
            "captions_per_s": round(len(eval_texts) / seconds, 1),
        }
        print(
            f"{scorer.name:60s} train {train_seconds:8.1f} s   "
            f"score {seconds:7.2f} s   {len(eval_texts) / seconds:10.1f} captions/s",
            file=sys.stderr,
        )
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", nargs="+", required=True, help="CSV or Parquet files")
    parser.add_argument("--train-column", default="text")
    parser.add_argument("--train-limit", type=int, default=None)
    parser.add_argument("--eval", nargs="+", required=True, help="SugarCrepe JSON files")
    parser.add_argument("--n", type=int, default=5000, help="evaluation texts")
    parser.add_argument("--gpt2-settings", default="{}", help="JSON overrides")
    parser.add_argument("--index-sample", type=int, default=20_000)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    train = read_training_texts(args.train, args.train_column)[: args.train_limit]
    texts = sugarcrepe_texts(args.eval)[: args.n]
    with tempfile.TemporaryDirectory() as tmp:
        results = benchmark(
            train,
            texts,
            args.work_dir or tmp,
            json.loads(args.gpt2_settings),
            index_sample=args.index_sample,
        )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
