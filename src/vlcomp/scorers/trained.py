"""The scorers a workflow trains per text set: where their files live and how to train them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SCORER_FILES = {"ngram": "ngram.parquet", "minilm": "minilm.parquet", "tiny_gpt2": "tiny_gpt2"}


def scorer_specs(
    directory: str,
    use: Sequence[str],
    settings: dict[str, Any],
    minilm_queries: str | None = None,
) -> dict[str, dict]:
    """``make_scorer`` specs of the scorers trained under ``directory``, by short name;
    ``minilm_queries``: texts already embedded by MiniLM (``embed_minilm_queries``)."""
    specs = {
        "ngram": {"kind": "ngram", "model": f"{directory}/{SCORER_FILES['ngram']}"},
        "minilm": {
            "kind": "minilm_familiarity",
            "index": f"{directory}/{SCORER_FILES['minilm']}",
            "k": settings["minilm"]["k"],
        },
        "tiny_gpt2": {"kind": "causal_lm", "model": f"{directory}/{SCORER_FILES['tiny_gpt2']}"},
    }
    if minilm_queries is not None:
        specs["minilm"]["queries"] = minilm_queries
    return {name: specs[name] for name in use}


def embed_minilm_queries(candidates: str, out: str, log: Callable[[str], None] = print) -> None:
    """Job: embed a benchmark's candidate texts with MiniLM once, for every corpus's
    familiarity scorer (they differ only in the index the texts are compared with)."""
    import polars as pl

    from vlcomp.scorers.familiarity import embed_queries

    frame = pl.read_parquet(candidates)
    if "text" not in frame.columns:
        raise ValueError(f"{candidates}: no 'text' column to embed (columns {frame.columns})")
    texts = frame["text"]
    log(f"embedded {embed_queries(texts, out)} distinct texts of {candidates} with MiniLM")


def train_scorer(
    name: str,
    captions: Sequence[str],
    out: str,
    settings: dict[str, Any],
    log: Callable[[str], None] = print,
) -> None:
    """Train one text-only scorer on caption tables (Parquet with a ``text`` column)."""
    from vlcomp.scorers import build_minilm_index, train_ngram, train_tiny_gpt2

    if name == "ngram":
        train_ngram(captions, out, **settings["ngram"])
    elif name == "minilm":
        build_minilm_index(
            captions, out, sample=settings["minilm"]["sample"], seed=settings["minilm"]["seed"]
        )
    elif name == "tiny_gpt2":
        train_tiny_gpt2(
            captions, out, settings["tiny_gpt2"]["settings"], settings["tiny_gpt2"]["seed"]
        )
    else:
        raise ValueError(f"unknown scorer {name!r}")
    log(f"trained {name} -> {out}")
