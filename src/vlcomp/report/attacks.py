"""The blind-attack certificates in the summary: per benchmark and negative type, the best
certification attack (``results/blind/<benchmark>/attacks.parquet``) with its interval and
the verdict it gives, the debiasing panel's best beside it, and each model beside the best
certification attack on the same pairs:
its accuracy and how far it is above the best attack, with a paired bootstrap interval over
items (``blind_margins``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.certificate import (
    CERTIFY,
    MARGIN,
    MIN_PAIRS,
    attack_decisions,
    best_attack_table,
    bootstrap_interval,
    credit,
)
from vlcomp.contracts import text_key
from vlcomp.vocabulary import ALL, AS_GENERATED, AT_CHANCE, DEBIASED, HACKABLE

# A (positive, negative) pair, as a model's predictions and a certificate's decisions name it.
PAIR_KEY = ("benchmark", "part", "item_id", "pair_type", "positive_key", "negative_key")
CELL = ("benchmark", "part", "variant", "type")
MARGIN_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,
    "variant": pl.String,  # the certificate's
    "type": pl.String,  # a negative type, or "all"
    "model": pl.String,
    "n": pl.Int64,  # pairs the model scored and the best attack decided
    "items": pl.Int64,
    "model_accuracy": pl.Float64,  # a tie counts as wrong
    "attack_accuracy": pl.Float64,  # a tie counts 1/2
    "difference": pl.Float64,  # model - attack
    "ci_low": pl.Float64,  # 95 % percentile bootstrap over items, paired
    "ci_high": pl.Float64,
}


def scored_variant(certificate_variant: str) -> str:
    """The variant a metric table names for the items of a certificate's variant: debiased,
    or as generated (an imported benchmark's certificate names its source instead)."""
    return DEBIASED if certificate_variant == DEBIASED else AS_GENERATED


def scored_variants(metric_tables: Sequence[str | Path]) -> dict[str, str]:
    """benchmark -> the variant its models were scored on (the metric table's ``variant``;
    as generated where the table names none)."""
    out: dict[str, str] = {}
    for path in metric_tables:
        frame = pl.read_parquet(path)
        variant = pl.col("variant") if "variant" in frame.columns else pl.lit(None)
        for benchmark, name in frame.select("benchmark", variant.alias("v")).unique().iter_rows():
            out[benchmark] = name or AS_GENERATED
    return out


def model_pairs(predictions: Sequence[str | Path]) -> pl.DataFrame:
    """Every model prediction of a candidate set that is one (positive, negative) pair
    (``SET_PREDICTIONS_SCHEMA`` rows of two candidates): the model, the pair (``PAIR_KEY``;
    part: the benchmark where the predictions name none) and ``correct`` (a tie counts as
    wrong). A set with several negatives of one type is one row that holds the outcome of
    its best negative only, not of each pair: it is left out."""
    columns = ["model", "benchmark", "part", "item_id", "family", "n_candidates",
               "n_positives", "correct", "pos_text_key", "neg_text_key"]  # fmt: skip
    frames = [pl.read_parquet(path, columns=columns) for path in predictions]
    if not frames:
        schema = {"model": pl.String, **dict.fromkeys(PAIR_KEY, pl.String)}
        return pl.DataFrame(schema={**schema, "correct": pl.Boolean})
    return (
        pl.concat(frames, how="diagonal_relaxed")
        .filter((pl.col("n_candidates") == 2) & (pl.col("n_positives") == 1))
        .select(
            "model",
            "benchmark",
            pl.col("part").fill_null(pl.col("benchmark")),
            "item_id",
            pair_type=pl.col("family"),
            positive_key=pl.col("pos_text_key"),
            negative_key=pl.col("neg_text_key"),
            correct="correct",
        )
    )


def blind_margins(
    best: pl.DataFrame,
    decisions: pl.DataFrame,
    pairs: pl.DataFrame,
    scored: Mapping[str, str],
    resamples: int,
    seed: int,
) -> pl.DataFrame:
    """Per certificate cell of the variant the models were scored on (``best``:
    ``best_attack_table``; ``scored``: benchmark -> variant) and model (``MARGIN_SCHEMA``):
    the model's accuracy and the best certification attack's on the same pairs, the pairs
    of ``pairs`` (``model_pairs``) that the attack decided (``decisions``:
    ``attack_decisions``), and their difference with a bootstrap interval over items, an
    item's pairs drawn together and the same draws for every model of a cell."""
    of_scored = [
        scored.get(b) == scored_variant(v) for b, v in best[["benchmark", "variant"]].rows()
    ]
    wanted = best.filter(pl.Series(of_scored, dtype=pl.Boolean) & pl.col("accuracy").is_not_null())
    decided = (
        decisions.filter(pl.col("panel") == CERTIFY)
        .rename({"type": "pair_type"})
        .with_columns(credit=credit(pl.col("d")))
    )
    by_type = decided.join(
        wanted.filter(pl.col("type") != ALL).select(*CELL, "attack"),
        left_on=["benchmark", "part", "variant", "pair_type", "attack"],
        right_on=[*CELL, "attack"],
    ).with_columns(type=pl.col("pair_type"))
    over_types = decided.join(
        wanted.filter(pl.col("type") == ALL).select(*CELL, "attack"),
        on=["benchmark", "part", "variant", "attack"],
    )
    columns = [*CELL, *PAIR_KEY[2:], "credit"]
    cells = pl.concat([by_type.select(columns), over_types.select(columns)]).unique(
        subset=columns[:-1], keep="first", maintain_order=True
    )
    per_item = (
        cells.join(pairs, on=list(PAIR_KEY))
        .group_by(*CELL, "model", "item_id")
        .agg(
            model_credit=pl.col("correct").cast(pl.Float64).sum(),
            attack_credit=pl.col("credit").sum(),
            n=pl.len(),
        )
        .sort(*CELL, "model", "item_id")
    )
    rows = []
    for key, cell in per_item.group_by([*CELL, "model"], maintain_order=True):
        model, attack = cell["model_credit"].to_numpy(), cell["attack_credit"].to_numpy()
        counts = cell["n"].to_numpy()
        # seeded by the cell, not the model: every model of a cell gets the same draws
        digest = text_key("\x1f".join(map(str, key[:4])))
        rng = np.random.default_rng([seed, int(digest[:8], 16)])
        low, high = bootstrap_interval(model - attack, counts, resamples, rng)
        n = int(counts.sum())
        rows.append(
            (*key, n, cell.height, model.sum() / n, attack.sum() / n)
            + ((model.sum() - attack.sum()) / n, low, high)
        )
    return pl.DataFrame(rows, schema=MARGIN_SCHEMA, orient="row")


def _beside(margin: Mapping[str, object]) -> str:
    interval = ""
    if margin["ci_low"] is not None:
        interval = f" [{margin['ci_low']:+.3f}, {margin['ci_high']:+.3f}]"
    return (
        f"{margin['model']} {margin['model_accuracy']:.3f}, above best blind "
        f"{margin['difference']:+.3f}{interval} (n {margin['n']})"
    )


def attacks_markdown(
    certificates: Sequence[str | Path],
    metric_tables: Sequence[str | Path] = (),
    predictions: Sequence[str | Path] = (),
    decisions: Sequence[str | Path] = (),
    resamples: int = 1000,
    seed: int = 0,
) -> list[str]:
    """The summary's "Blind attacks" section. With ``predictions`` (the models' per-set
    predictions of candidate-set benchmarks), ``decisions`` (their certificates'
    ``attack_predictions.parquet``) and ``metric_tables`` (which variant the models were
    scored on), each model beside the best attack on the same pairs (``blind_margins``;
    ``resamples`` and ``seed``: config ``attacks``)."""
    if not certificates:
        return []
    best = best_attack_table(certificates)
    margins: dict[tuple, list[str]] = {}
    if predictions and decisions:
        table = blind_margins(
            best,
            attack_decisions(decisions),
            model_pairs(predictions),
            scored_variants(metric_tables),
            resamples,
            seed,
        )
        for r in table.iter_rows(named=True):
            margins.setdefault(tuple(r[c] for c in CELL), []).append(_beside(r))
    lines = [
        "## Blind attacks",
        "",
        "Two panels of text-only attacks per benchmark and negative type (`results/blind/"
        "<benchmark>/attacks.parquet`, column `panel`), accuracy over (positive, negative) "
        "pairs, a tie counts 1/2, bootstrap 95 % interval. The *debiasing panel* (length, word "
        "prior, changed words and their context, the corpora's text scorers, the generator's "
        "context model; folds of the items) is what the debiasing filters and balances "
        "against: on a debiased variant it is at chance by construction and certifies "
        "nothing. The *certification panel* gives the verdict and never decides what is "
        "kept: whole-text word and character n-grams, frozen MiniLM embeddings (a seeded "
        "sample of pairs, config `attacks.certify.encoder_pairs`), surface statistics with "
        "boosted trees and the rules they suggest, an add-k bigram LM of each training "
        "corpus, and each of them also trained on a corpus's generated training negatives "
        "(`generator:<corpus>/<family>`); refitted on each variant, with folds of its own "
        "grouped by item and by text, and an interval over those groups. "
        f"*{AT_CHANCE}*: every certification attack at most chance + {MARGIN} with its "
        f"interval covering chance; *{HACKABLE}*: some attack beats that (or is reliably "
        f"below chance); types with fewer than {MIN_PAIRS} pairs are not certified. Models, "
        "on the variant they were scored on (config `evaluate.variant`): each model's "
        "accuracy on the same pairs as the best certification attack (the pairs the model "
        "scored and the attack decided; a candidate set with several negatives of one type "
        "is left out, its table holding the outcome of its best negative only), how far it "
        "is *above best blind* (model minus attack; a tie counts as wrong for a model, 1/2 "
        "for an attack) and the 95 % interval of that difference: a paired bootstrap over "
        "items, an item's pairs drawn together and the same draws for model and attack "
        f"({resamples} resamples, seed {seed}, config `attacks`); n: the pairs. A model sees "
        "more than the texts give away only where the interval is above 0.",
        "",
        "| benchmark | part | variant | type | items | pairs | certification: best attack "
        "| accuracy [95% CI] | verdict | debiasing panel: best attack | models (accuracy, "
        "above best blind [95% CI], pairs) |",
        "|---|---|---|---|---:|---:|---|---|---|---|---|",
    ]
    for r in best.iter_rows(named=True):
        head = (
            f"| {r['benchmark']} | {r['part']} | {r['variant']} | {r['type']} "
            f"| {r['items'] if r['items'] is not None else ''} | {r['n']} "
        )
        if r["accuracy"] is None:
            lines.append(f"{head}| — | | {r['status']}: {r['note'] or ''} | | |")
            continue
        debias = ""
        if r["debias_accuracy"] is not None:
            interval = _interval(r["debias_accuracy"], r["debias_ci_low"], r["debias_ci_high"])
            debias = f"{r['debias_attack']} {interval}"
        beside = "; ".join(margins.get(tuple(r[c] for c in CELL), []))
        lines.append(
            f"{head}| {r['attack']} | {_interval(r['accuracy'], r['ci_low'], r['ci_high'])} "
            f"| {r['status']} | {debias} | {beside} |"
        )
    return [*lines, ""]


def _interval(value: float, low: float | None, high: float | None) -> str:
    return f"{value:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None else "")
