"""The blind-attack certificates in the summary: per benchmark and negative type, the best
text-only attack (``results/blind/<benchmark>/attacks.parquet``), its margin over chance,
whether the type is at chance under every attack, and each model's accuracy beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from vlcomp.certificate import MARGIN, MIN_PAIRS, best_attack_table
from vlcomp.vocabulary import ALL, AS_GENERATED, AT_CHANCE, CHANCE, DEBIASED, HACKABLE


def scored_variant(certificate_variant: str) -> str:
    """The variant a metric table names for the items of a certificate's variant: debiased,
    or as generated (an imported benchmark's certificate names its source instead)."""
    return DEBIASED if certificate_variant == DEBIASED else AS_GENERATED


def _model_accuracy(
    tables: Mapping[str, str | Path],
) -> dict[tuple[str, str, str], dict[str, float]]:
    """(benchmark, variant, type) -> model -> pair accuracy on all items (1+1 benchmarks'
    tables; the variant the models were scored on, as generated where a table names none)."""
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    for benchmark, path in tables.items():
        frame = pl.read_parquet(path)
        if "complexity" in frame.columns:
            frame = frame.filter(pl.col("complexity").is_null())
        if "part" in frame.columns:
            frame = frame.filter(pl.col("part").is_null())
        rows = frame.filter(
            pl.col("metric").is_in(["accuracy", "accuracy_micro"])
            & (pl.col("split") == ALL)
            & (pl.col("model") != CHANCE)
        )
        for r in rows.iter_rows(named=True):
            kind = ALL if r["metric"] == "accuracy_micro" else r["family"]
            variant = r.get("variant") or AS_GENERATED
            out.setdefault((benchmark, variant, kind), {})[r["model"]] = r["value"]
    return out


def attacks_markdown(
    certificates: Sequence[str | Path], pair_tables: Mapping[str, str | Path] | None = None
) -> list[str]:
    """The summary's "Blind attacks" section; ``pair_tables`` (benchmark -> metric table of
    a 1+1 benchmark) adds each model's accuracy on the same items and its margin over the
    best attack."""
    if not certificates:
        return []
    best = best_attack_table(certificates)
    models = _model_accuracy(pair_tables or {})
    lines = [
        "## Blind attacks",
        "",
        "The best text-only attack per benchmark and negative type (`results/blind/<benchmark>/"
        "attacks.parquet`): every attack cross-fitted over folds of the items, bootstrap 95 % "
        "interval, a tie counts 1/2, accuracy over (positive, negative) pairs. "
        f"*{AT_CHANCE}*: every attack at most chance + {MARGIN} with its interval covering "
        f"chance; *{HACKABLE}*: some attack beats that; types with fewer than {MIN_PAIRS} pairs "
        "are not certified. Models' accuracy (1+1 benchmarks, all items) beside the variant they "
        "were scored on (config `evaluate.variant`): a model above the best attack sees more "
        "than the texts give away.",
        "",
        "| benchmark | part | variant | type | best attack | accuracy | 95% CI | over chance | n "
        "| verdict | models (accuracy, minus best attack) |",
        "|---|---|---|---|---|---:|---|---:|---:|---|---|",
    ]
    for r in best.iter_rows(named=True):
        if r["accuracy"] is None:
            lines.append(
                f"| {r['benchmark']} | {r['part']} | {r['variant']} | {r['type']} | — | | | "
                f"| {r['n']} | {r['status']}: {r['note'] or ''} | |"
            )
            continue
        accuracy = models.get((r["benchmark"], scored_variant(r["variant"]), r["type"]), {})
        beside = "; ".join(
            f"{m} {v:.3f} ({v - r['accuracy']:+.3f})" for m, v in sorted(accuracy.items())
        )
        lines.append(
            f"| {r['benchmark']} | {r['part']} | {r['variant']} | {r['type']} | {r['attack']} "
            f"| {r['accuracy']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
            f"| {r['accuracy'] - r['chance']:+.3f} | {r['n']} | {r['status']} | {beside} |"
        )
    return [*lines, ""]
