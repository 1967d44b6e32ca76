"""A blind-attack certificate read (``results/blind/<benchmark>/attacks.parquet``, written by
``vlcomp.blind.jobs.attacks_stage``): per (benchmark, part, variant, type) the best attack of
the certification panel and the verdict of the certificate's rule, which reads that panel
only (``vocabulary.above_chance`` / ``below_chance``), with the debiasing panel's best beside
it (the attacks the debiasing filtered against: at chance on a debiased variant by
construction, so they certify nothing); its
per-pair decisions (``attack_predictions.parquet``), a pair's credit under its tie rule and
its interval (items resampled). In the ground, so that the summary and the audit read
certificates the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.resampling import ratio_of_sums
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


def familywise(decided: pl.DataFrame, level: float = 0.95) -> pl.DataFrame:
    """The attacks' intervals widened from ``level`` each to ``level`` for all m of them
    together (Bonferroni): each half-width scaled by z(1 - (1 - level) / 2m) / z(1 - (1 -
    level) / 2), the bootstrap interval read as a normal one. Without it the best of m
    attacks at chance leaves chance "reliably" about 1 - level^m of the time (half the
    types, for the certification panel's 14)."""
    from scipy.stats import norm

    m = max(decided.height, 1)
    alpha = 1 - level
    scale = norm.ppf(1 - alpha / (2 * m)) / norm.ppf(1 - alpha / 2)
    return decided.with_columns(
        ci_low=pl.col("accuracy") - (pl.col("accuracy") - pl.col("ci_low")) * scale,
        ci_high=pl.col("accuracy") + (pl.col("ci_high") - pl.col("accuracy")) * scale,
    )


def certificate_status(cell: pl.DataFrame, margin: float = MARGIN) -> str:
    """One (benchmark, part, type)'s verdict over its attacks' rows, their intervals taken
    together (``familywise``): *hackable* when an attack is reliably off chance (its
    interval above chance, or below: its texts still tell the two apart, and the verdict
    says so when only such attacks do); *at chance* when every attack is at most chance +
    ``margin`` as well; else too few pairs to tell whether the attack above the margin is
    (named, with the pairs it read)."""
    decided = cell.filter(pl.col("accuracy").is_not_null())
    if decided.is_empty():
        return BY_DESIGN
    if int(cell["n"].max()) < MIN_PAIRS:
        return TOO_FEW
    decided = familywise(decided)
    chance = pl.col("chance")
    reliable = (pl.col("ci_low") > chance) | below_chance(chance)
    off = decided.filter(reliable)
    if off.is_empty():
        over = decided.filter(above_chance(chance, margin)).sort("accuracy", descending=True)
        if over.is_empty():
            return AT_CHANCE
        top = over.row(0, named=True)
        return f"{TOO_FEW} to tell ({top['attack']} {top['accuracy']:.3f} on {top['n']})"
    below = off.filter(below_chance(chance))["attack"].to_list()
    return HACKABLE + (
        f" ({', '.join(below)} below chance)" if below == off["attack"].to_list() else ""
    )


BEST_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String, "part": pl.String, "variant": pl.String, "type": pl.String,
    "attack": pl.String, "accuracy": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "chance": pl.Float64, "n": pl.Int64, "items": pl.Int64,
    "status": pl.String, "note": pl.String,
    "debias_attack": pl.String, "debias_accuracy": pl.Float64, "debias_ci_low": pl.Float64,
    "debias_ci_high": pl.Float64,
}  # fmt: skip
CERTIFY, DEBIAS = "certify", "debias"  # a certificate's panels (``panel``)
NO_PANEL = "not certified: no certification attack ran"


def _best_row(cell: pl.DataFrame, verdict: bool = False) -> dict:
    """The attack with the highest accuracy; with ``verdict``, among those reliably above
    chance when any is (``familywise``): the attack that fails the type."""
    decided = cell.filter(pl.col("accuracy").is_not_null())
    if verdict and decided.height:
        wide = familywise(decided)
        above = (wide["ci_low"] > wide["chance"]).fill_null(False)
        decided = decided.filter(above) if above.any() else decided
    decided = decided.sort("accuracy", descending=True, maintain_order=True)
    return decided.row(0, named=True) if decided.height else cell.row(0, named=True)


def best_attack_table(certificates: Sequence[str | Path]) -> pl.DataFrame:
    """Per (benchmark, part, variant, type) (``BEST_SCHEMA``): the certification panel's
    best attack (the best of those that fail the type, where any does), its accuracy and
    interval, n, the items, the verdict
    (``certificate_status`` over that panel's attacks) and the debiasing panel's best."""
    rows = []
    for path in certificates:
        table = pl.read_parquet(path)
        if "panel" not in table.columns:
            raise ValueError(
                f"{path}: no 'panel' column: written before certificates had a "
                "certification panel apart from the debiasing one; rerun rule blind_attacks"
            )
        for key, cell in table.group_by(
            "benchmark", "part", "variant", "type", maintain_order=True
        ):
            # never a verdict from the debiasing panel: without certification rows the
            # type is not certified
            certify = cell.filter(pl.col("panel") == CERTIFY)
            debias = cell.filter(pl.col("panel") == DEBIAS)
            best = _best_row(certify, verdict=True) if certify.height else {}
            other = _best_row(debias) if debias.height else {}
            rows.append(
                dict(zip(("benchmark", "part", "variant", "type"), key, strict=True))
                | {c: best.get(c) for c in ("attack", "accuracy", "ci_low", "ci_high")}
                | {
                    "chance": cell["chance"][0],
                    "n": int(cell["n"].max()),
                    "items": int(cell["items"].max()) if "items" in cell.columns else None,
                    "status": certificate_status(certify) if certify.height else NO_PANEL,
                    "note": best.get("note"),
                }
                | {f"debias_{c}": other.get(c) for c in ("attack", "accuracy", "ci_low", "ci_high")}
            )
    return pl.DataFrame(rows, schema=BEST_SCHEMA, orient="row")


# What the summary reads of a certificate's decisions (``attack_predictions.parquet``):
# every variant's, each pair with its part, type and the text keys of its two texts.
DECISION_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.String, "panel": pl.String, "part": pl.String, "variant": pl.String,
    "item_id": pl.String,
    "type": pl.String, "positive_key": pl.String, "negative_key": pl.String,
    "attack": pl.String, "d": pl.Float64,
}  # fmt: skip


def attack_decisions(paths: Sequence[str | Path]) -> pl.DataFrame:
    """The per-pair decisions of certificates (``DECISION_COLUMNS``), an item id without
    the ``<part>/`` prefix a certificate of several parts gives it."""
    frames = []
    for path in paths:
        frame = pl.read_parquet(path)
        missing = [c for c in DECISION_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{path}: no column(s) {missing}: written before certificates kept every "
                "variant's decisions with their pairs' part, type and text keys; rerun rule "
                "blind_attacks"
            )
        several = pl.col("part").n_unique().over("benchmark", "variant") > 1
        frames.append(
            frame.select([pl.col(c).cast(t) for c, t in DECISION_COLUMNS.items()]).with_columns(
                item_id=pl.when(several)
                .then(pl.col("item_id").str.strip_prefix(pl.format("{}/", "part")))
                .otherwise(pl.col("item_id"))
            )
        )
    return pl.concat(frames) if frames else pl.DataFrame(schema=DECISION_COLUMNS)


def credit(d: pl.Expr) -> pl.Expr:
    """A pair's credit under the certificate's tie rule: 1 when d(positive, negative) > 0,
    0 when d < 0, 1/2 when d == 0 (the expected credit of a coin flip)."""
    return pl.when(d > 0).then(1.0).when(d < 0).then(0.0).otherwise(0.5)


def bootstrap_interval(
    credits: np.ndarray, counts: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """95 % percentile interval of sum(credit) / sum(pairs) over items drawn with
    replacement (``credits`` and ``counts`` per item; a credit may be negative: a
    difference of two credits)."""
    if resamples <= 0 or len(credits) == 0:
        return None, None
    ratios = ratio_of_sums(credits, counts, resamples, rng)
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)
