"""The scorers a workflow trains per text set: where their files live and how to train them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SCORER_FILES = {"ngram": "ngram.parquet", "minilm": "minilm.parquet", "tiny_gpt2": "tiny_gpt2"}


def scorer_specs(directory: str, use: Sequence[str], settings: dict[str, Any]) -> dict[str, dict]:
    """``make_scorer`` specs of the scorers trained under ``directory``, by short name."""
    specs = {
        "ngram": {"kind": "ngram", "model": f"{directory}/{SCORER_FILES['ngram']}"},
        "minilm": {
            "kind": "minilm_familiarity",
            "index": f"{directory}/{SCORER_FILES['minilm']}",
            "k": settings["minilm"]["k"],
        },
        "tiny_gpt2": {"kind": "causal_lm", "model": f"{directory}/{SCORER_FILES['tiny_gpt2']}"},
    }
    return {name: specs[name] for name in use}


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
