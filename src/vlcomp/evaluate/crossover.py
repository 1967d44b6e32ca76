"""Crossover comparison: each corpus's splits scored by the model trained on it and by models
trained on other corpora, on identical items.

A split (CREPE's SC / UC / UA, BindSplit's seen / mixed / unseen, or any other) is defined
relative to one training corpus C: an item is "unseen" because C lacks its compound. The
model trained on C (the *own* model) meets those compounds for the first time; a model
trained on another corpus (the *other* model) may well have seen them. Comparing the two on
the same items separates generalisation from item difficulty: if the own model's deficit
against the other model is larger on C's unseen split than on its seen split, the unseen
items are hard *because they are unseen*, not because of what they are.

Inputs are per-item prediction tables (``vlcomp.evaluate.retrieval_sets``: model,
benchmark, part, item_id, family, split, correct); each table passed under a *label* (the
metric table it belongs to, e.g. ``crepe_systematicity_bindsplit``). The split of an item
is the one in the own model's rows (the other model's rows may carry splits of its own
corpus); items are paired by (benchmark, part, item_id, family). A part names the corpus
whose splits it carries (CREPE systematicity: one part per corpus); a table without parts
is split by the own model's corpus.

Per (label, corpus, own model, other model, split incl. "all", family incl. "all"): both
accuracies, their difference (own - other) with a paired percentile-bootstrap interval, the
discordant counts and McNemar's two-sided mid-p (``stats.mcnemar_midp``), Benjamini-Hochberg
over every test of the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.evaluate.metrics import EvalSettings, cell_rng, percentile_interval
from vlcomp.evaluate.stats import (
    ALL,
    PAIR_KEYS,
    TEST_NAME,
    benjamini_hochberg,
    mcnemar_midp,
    split_family_cells,
)
from vlcomp.io import write_parquet
from vlcomp.vocabulary import NO_SPLIT

Log = Callable[[str], None]

CROSSOVER_SCHEMA: dict[str, pl.DataType] = {
    "table": pl.String,  # the metric table the predictions belong to
    "corpus": pl.String,  # whose splits: the own model's training corpus
    "split": pl.String,  # "all" = every item
    "family": pl.String,  # "all" = every negative type
    "model_own": pl.String,  # trained on ``corpus``
    "model_other": pl.String,  # trained on ``corpus_other``
    "corpus_other": pl.String,
    "n": pl.Int64,  # paired items
    "accuracy_own": pl.Float64,
    "accuracy_other": pl.Float64,
    "delta": pl.Float64,  # accuracy_own - accuracy_other
    "delta_low": pl.Float64,  # paired percentile bootstrap over items
    "delta_high": pl.Float64,
    "own_low": pl.Float64,
    "own_high": pl.Float64,
    "other_low": pl.Float64,
    "other_high": pl.Float64,
    "b": pl.Int64,  # items only the own model gets right
    "c": pl.Int64,  # items only the other model gets right
    "test": pl.String,
    "p_value": pl.Float64,  # McNemar two-sided mid-p
    "p_bh": pl.Float64,  # Benjamini-Hochberg over every test in the table
    "significant": pl.Boolean,
}


def _rows_of(frame: pl.DataFrame, model: str, corpus: str) -> pl.DataFrame:
    """A model's rows on items carrying ``corpus``'s splits (its part, or no part)."""
    return frame.filter((pl.col("model") == model) & pl.col("part").is_in(["", corpus]))


def crossover_table(
    predictions: Mapping[str, pl.DataFrame],
    model_corpus: Mapping[str, str | None],
    settings: EvalSettings,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """The crossover comparisons (``CROSSOVER_SCHEMA``) of every labelled prediction table,
    for every pair of models trained on different corpora. Models without a corpus are
    compared as *other* models only."""
    out: list[dict[str, object]] = []
    trained = {m: c for m, c in model_corpus.items() if c is not None}
    for label, raw in predictions.items():
        frame = _normalise(raw, label)
        present = set(frame["model"].to_list())
        for own, corpus in sorted(trained.items()):
            if own not in present:
                continue
            mine = _rows_of(frame, own, corpus).select(
                *PAIR_KEYS, "split", correct_own=pl.col("correct")
            )
            for other in sorted(present - {own, "chance"}):
                corpus_other = model_corpus.get(other)
                if corpus_other == corpus:
                    continue
                theirs = _rows_of(frame, other, corpus).select(
                    *PAIR_KEYS, correct_other=pl.col("correct")
                )
                paired = mine.join(theirs, on=list(PAIR_KEYS), how="inner")
                out += _cells(label, corpus, own, other, corpus_other, paired, settings)
    table = pl.DataFrame(out, schema={c: CROSSOVER_SCHEMA[c] for c in _CELL_COLUMNS})
    q = benjamini_hochberg(table["p_value"].to_numpy()) if table.height else np.zeros(0)
    table = table.with_columns(
        test=pl.lit(TEST_NAME), p_bh=pl.Series(q, dtype=pl.Float64)
    ).with_columns(significant=pl.col("p_bh") < alpha)
    return table.select([pl.col(c).cast(t) for c, t in CROSSOVER_SCHEMA.items()])


_CELL_COLUMNS = [c for c in CROSSOVER_SCHEMA if c not in ("test", "p_bh", "significant")]


def _normalise(frame: pl.DataFrame, label: str) -> pl.DataFrame:
    if "part" not in frame.columns:
        frame = frame.with_columns(part=pl.lit(None, dtype=pl.String))
    needed = ["model", *PAIR_KEYS, "split", "correct"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{label}: predictions lack column(s) {missing}")
    return frame.select(needed).with_columns(
        pl.col("part").fill_null(""), pl.col("split").fill_null(NO_SPLIT)
    )


def _cells(
    label: str,
    corpus: str,
    own: str,
    other: str,
    corpus_other: str | None,
    paired: pl.DataFrame,
    settings: EvalSettings,
) -> list[dict[str, object]]:
    rows = []
    families = [ALL, *sorted(set(paired["family"].to_list()))]
    for split, family, cell in split_family_cells(paired, families):
        a = cell["correct_own"].to_numpy().astype(bool)
        o = cell["correct_other"].to_numpy().astype(bool)
        b, c = int((a & ~o).sum()), int((~a & o).sum())
        values = np.column_stack([a, o, a.astype(float) - o]).astype(float)
        rng = cell_rng(settings.seed, "crossover", label, corpus, own, other, split, family)
        low, high = percentile_interval([values], settings.resamples, settings.level, rng)
        rows.append(
            {
                "table": label, "corpus": corpus, "split": split, "family": family,
                "model_own": own, "model_other": other, "corpus_other": corpus_other,
                "n": cell.height, "accuracy_own": float(a.mean()),
                "accuracy_other": float(o.mean()), "delta": float(a.mean() - o.mean()),
                "delta_low": float(low[2]), "delta_high": float(high[2]),
                "own_low": float(low[0]), "own_high": float(high[0]),
                "other_low": float(low[1]), "other_high": float(high[1]),
                "b": b, "c": c, "p_value": mcnemar_midp(b, c),
            }
        )  # fmt: skip
    return rows


def crossover_job(
    predictions: Mapping[str, Sequence[str | Path]],
    model_corpus: Mapping[str, str | None],
    settings: Mapping[str, object],
    alpha: float,
    out: str | Path,
    log: Log = print,
) -> None:
    """Job: labelled per-item prediction files (label -> one file per model) -> the
    crossover table (``CROSSOVER_SCHEMA``)."""
    eval_settings = EvalSettings.from_config(settings)
    frames = {
        label: pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        for label, files in predictions.items()
    }
    table = crossover_table(frames, model_corpus, eval_settings, alpha)
    meta = {**eval_settings.metadata(), "test": TEST_NAME, "correction": "benjamini_hochberg"}
    meta["alpha"] = str(alpha)
    write_parquet(table, out, metadata=meta)
    headline = table.filter(pl.col("family") == ALL).sort("table", "corpus", "model_own")
    if headline.height == 0:
        log("no crossover: no two evaluated models were trained on different corpora")
    for row in headline.iter_rows(named=True):
        log(
            f"{row['table']} {row['corpus']} {row['split']}: {row['model_own']} "
            f"{row['accuracy_own']:.3f} vs {row['model_other']} {row['accuracy_other']:.3f} "
            f"(delta {row['delta']:+.3f} [{row['delta_low']:+.3f}, {row['delta_high']:+.3f}], "
            f"mid-p {row['p_value']:.3g}, n={row['n']})"
        )
