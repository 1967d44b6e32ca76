"""A blind-attack certificate read (``results/blind/<benchmark>/attacks.parquet``, written by
``vlcomp.refine.jobs.attacks_stage``): per (benchmark, part, variant, type) the best attack and
the verdict of the certificate's rule (``vocabulary.above_chance`` / ``below_chance``). In the
ground, so that the summary and the audit read certificates the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from vlcomp.vocabulary import (
    AT_CHANCE,
    BY_DESIGN,
    CERTIFICATE_MARGIN,
    CERTIFICATE_MIN_PAIRS,
    HACKABLE,
    TOO_FEW,
    above_chance,
    below_chance,
)

MARGIN, MIN_PAIRS = CERTIFICATE_MARGIN, CERTIFICATE_MIN_PAIRS


def certificate_status(cell: pl.DataFrame, margin: float = MARGIN) -> str:
    """One (benchmark, part, type)'s verdict over its attacks' rows. An attack reliably
    below chance fails it too (its texts still tell the two apart); the verdict says so when
    only such attacks do."""
    decided = cell.filter(pl.col("accuracy").is_not_null())
    if decided.is_empty():
        return BY_DESIGN
    if int(cell["n"].max()) < MIN_PAIRS:
        return TOO_FEW
    chance = pl.col("chance")
    off = decided.filter(above_chance(chance, margin) | below_chance(chance))
    if off.is_empty():
        return AT_CHANCE
    below = off.filter(below_chance(chance))["attack"].to_list()
    return HACKABLE + (
        f" ({', '.join(below)} below chance)" if below == off["attack"].to_list() else ""
    )


def best_attack_table(certificates: Sequence[str | Path]) -> pl.DataFrame:
    """Per (benchmark, part, variant, type): the best attack, its accuracy and interval,
    its margin over chance, n, and the verdict (``certificate_status``)."""
    rows = []
    for path in certificates:
        table = pl.read_parquet(path)
        for key, cell in table.group_by(
            "benchmark", "part", "variant", "type", maintain_order=True
        ):
            decided = cell.filter(pl.col("accuracy").is_not_null()).sort(
                "accuracy", descending=True, maintain_order=True
            )
            best = decided.row(0, named=True) if decided.height else cell.row(0, named=True)
            rows.append(
                dict(zip(("benchmark", "part", "variant", "type"), key, strict=True))
                | {c: best[c] for c in ("attack", "accuracy", "ci_low", "ci_high", "chance")}
                | {
                    "n": int(cell["n"].max()),
                    "status": certificate_status(cell),
                    "note": best["note"],
                }
            )
    schema = {
        "benchmark": pl.String, "part": pl.String, "variant": pl.String, "type": pl.String,
        "attack": pl.String, "accuracy": pl.Float64, "ci_low": pl.Float64,
        "ci_high": pl.Float64, "chance": pl.Float64, "n": pl.Int64, "status": pl.String,
        "note": pl.String,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")
