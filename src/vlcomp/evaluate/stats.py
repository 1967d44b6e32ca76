"""Paired significance between models: McNemar (two-sided mid-p), Benjamini-Hochberg, and
rank-flip detection between splits (BindSplit §5.3).

Inputs are per-item prediction tables, one row per (model, benchmark, part, item_id, family)
with ``split`` and a boolean ``correct`` (tie counts as wrong), as
``vlcomp.evaluate.retrieval_sets`` writes them. Two models are compared on the items both
were evaluated on (an inner join on benchmark, part, item_id and family), so the test is
paired, and each part is tested on its own. An item's split is the one in model_a's rows
(in a table without parts, splits follow each model's own training corpus; the crossover,
``vlcomp.evaluate.crossover``, is the comparison across corpora).

McNemar mid-p (Fagerland, Lydersen & Laake, BMC Med Res Methodol 2013): with ``b`` items
that only model A gets right and ``c`` items that only model B gets right, n = b + c and
k = min(b, c), under H0 each discordant item goes either way with probability 1/2, and

    p_mid = 2 * (P(X <= k) - P(X = k) / 2),  X ~ Binomial(n, 1/2)

(capped at 1; it is exactly 1 when b == c, and 1 when n == 0).

Benjamini-Hochberg over all tests of a run: sort the m p-values ascending,
q_(i) = min_{j >= i} (m * p_(j) / j), capped at 1; a test is significant when q < alpha.

Rank flip between splits s1 and s2 for models A and B: A is significantly better than B on
s1 *and* B is significantly better than A on s2 (both after BH, in opposite directions).
A reversal of the point estimates without significance on both splits is not a flip; it is
reported separately as ``reversed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import binom

from vlcomp.io import write_parquet
from vlcomp.vocabulary import ALL, NO_SPLIT, SPLIT_ORDER

Log = Callable[[str], None]

# An item is identified within its benchmark and part (e.g. the training corpus of a CREPE
# systematicity set); predictions without parts count as one part.
PAIR_KEYS = ("benchmark", "part", "item_id", "family")
TEST_NAME = "mcnemar_midp"


SIGNIFICANCE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,  # whose splits (e.g. a CREPE systematicity corpus); null: no parts
    "split": pl.String,  # "all" = every item
    "family": pl.String,  # "all" = every negative type
    "model_a": pl.String,  # model_a < model_b (string order)
    "model_b": pl.String,
    "n": pl.Int64,  # paired items
    "accuracy_a": pl.Float64,
    "accuracy_b": pl.Float64,
    "b": pl.Int64,  # items only model_a gets right
    "c": pl.Int64,  # items only model_b gets right
    "test": pl.String,
    "p_value": pl.Float64,  # two-sided mid-p
    "p_bh": pl.Float64,  # Benjamini-Hochberg over every test in the table
    "alpha": pl.Float64,
    "significant": pl.Boolean,  # p_bh < alpha
    "better": pl.String,  # the model that is significantly better, else null
}

FLIPS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,
    "family": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "split_1": pl.String,
    "split_2": pl.String,
    "better_1": pl.String,  # significantly better model on split_1 (null: none)
    "better_2": pl.String,
    "p_bh_1": pl.Float64,
    "p_bh_2": pl.Float64,
    "delta_1": pl.Float64,  # accuracy_a - accuracy_b on split_1
    "delta_2": pl.Float64,
    "reversed": pl.Boolean,  # point estimates in opposite directions (no significance needed)
    "flip": pl.Boolean,  # significant on both splits, opposite directions
}


def mcnemar_midp(b: int, c: int) -> float:
    """Two-sided McNemar mid-p value from the discordant counts ``b`` and ``c``."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    p = 2.0 * (binom.cdf(k, n, 0.5) - 0.5 * binom.pmf(k, n, 0.5))
    return float(min(1.0, max(0.0, p)))


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """BH-adjusted p-values (q-values) in the input order; NaN stays NaN and is not counted."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    if ((p[valid] < 0) | (p[valid] > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out[order] = np.minimum(adjusted, 1.0)
    return out


def split_order(splits: Sequence[str]) -> list[str]:
    """Known splits in canonical order, then the rest alphabetically; "all" excluded."""
    present = set(splits) - {ALL}
    known = [s for s in SPLIT_ORDER if s in present]
    return known + sorted(present - set(known))


def split_family_cells(
    frame: pl.DataFrame, families: Sequence[str]
) -> Iterator[tuple[str, str, pl.DataFrame]]:
    """(split, family, rows) for every split and family of ``frame`` with rows, "all"
    first in both (every split / every family pooled), splits in canonical order."""
    for split in [ALL, *split_order(frame["split"].to_list())]:
        in_split = frame if split == ALL else frame.filter(pl.col("split") == split)
        for family in families:
            cell = in_split if family == ALL else in_split.filter(pl.col("family") == family)
            if cell.height:
                yield split, family, cell


def _check_predictions(predictions: pl.DataFrame) -> pl.DataFrame:
    needed = ["model", *PAIR_KEYS, "split", "correct"]
    if "part" not in predictions.columns:
        predictions = predictions.with_columns(part=pl.lit(None, dtype=pl.String))
    predictions = predictions.with_columns(pl.col("part").fill_null(""))
    missing = [c for c in needed if c not in predictions.columns]
    if missing:
        raise ValueError(f"predictions: missing column(s) {missing}")
    frame = predictions.select(needed).with_columns(pl.col("split").fill_null(NO_SPLIT))
    duplicated = frame.select("model", *PAIR_KEYS).is_duplicated()
    if duplicated.any():
        row = frame.filter(duplicated).row(0, named=True)
        raise ValueError(f"predictions: duplicate row for {row}")
    return frame


def _paired(frame: pl.DataFrame, model_a: str, model_b: str) -> pl.DataFrame:
    a = frame.filter(pl.col("model") == model_a).select(
        *PAIR_KEYS, "split", correct_a=pl.col("correct")
    )
    b = frame.filter(pl.col("model") == model_b).select(*PAIR_KEYS, correct_b=pl.col("correct"))
    return a.join(b, on=list(PAIR_KEYS), how="inner")


def mcnemar_table(
    predictions: pl.DataFrame,
    alpha: float = 0.05,
    per_family: bool = False,
    log: Log | None = None,
) -> pl.DataFrame:
    """McNemar mid-p for every model pair on every benchmark and split (and "all"), and, with
    ``per_family``, every negative type; BH over every test in the returned table."""
    frame = _check_predictions(predictions)
    models = sorted(set(frame["model"].to_list()) - {"chance"})
    rows: list[tuple] = []
    for model_a, model_b in combinations(models, 2):
        paired = _paired(frame, model_a, model_b)
        if log:
            n_a = frame.filter(pl.col("model") == model_a).height
            n_b = frame.filter(pl.col("model") == model_b).height
            if paired.height < max(n_a, n_b):
                log(f"{model_a} vs {model_b}: {paired.height} paired items ({n_a} and {n_b})")
        for benchmark, part in sorted(set(paired.select("benchmark", "part").rows())):
            in_bench = paired.filter((pl.col("benchmark") == benchmark) & (pl.col("part") == part))
            families = [ALL]
            if per_family:
                families += sorted(set(in_bench["family"].to_list()))
            for split, family, cell in split_family_cells(in_bench, families):
                ca, cb = cell["correct_a"].to_numpy(), cell["correct_b"].to_numpy()
                b, c = int((ca & ~cb).sum()), int((~ca & cb).sum())
                rows.append(
                    (benchmark, part or None, split, family, model_a, model_b, cell.height,
                     float(ca.mean()), float(cb.mean()), b, c, mcnemar_midp(b, c))
                )  # fmt: skip
    base_columns = [c for c in list(SIGNIFICANCE_SCHEMA)[:13] if c != "test"]
    base = pl.DataFrame(
        rows, schema={c: SIGNIFICANCE_SCHEMA[c] for c in base_columns}, orient="row"
    )
    q = benjamini_hochberg(base["p_value"].to_numpy()) if base.height else np.zeros(0)
    table = base.with_columns(
        test=pl.lit(TEST_NAME),
        p_bh=pl.Series(q, dtype=pl.Float64),
        alpha=pl.lit(alpha, dtype=pl.Float64),
    ).with_columns(significant=pl.col("p_bh") < alpha)
    table = table.with_columns(
        better=pl.when(~pl.col("significant"))
        .then(None)
        .when(pl.col("b") > pl.col("c"))
        .then(pl.col("model_a"))
        .otherwise(pl.col("model_b"))
    )
    return table.select([pl.col(c).cast(t) for c, t in SIGNIFICANCE_SCHEMA.items()])


def rank_flips(
    significance: pl.DataFrame, split_pairs: Sequence[tuple[str, str]] | None = None
) -> pl.DataFrame:
    """Rank flips between split pairs (default: every pair of splits in canonical order)."""
    table = significance.filter(pl.col("split") != ALL)
    if split_pairs is None:
        split_pairs = list(combinations(split_order(table["split"].to_list()), 2))
    keys = ["benchmark", "part", "family", "model_a", "model_b"]
    cols = ["better", "p_bh", "delta"]
    table = table.with_columns(delta=pl.col("accuracy_a") - pl.col("accuracy_b"))
    parts = []
    for split_1, split_2 in split_pairs:
        one = table.filter(pl.col("split") == split_1).select(
            *keys, *[pl.col(c).alias(f"{c}_1") for c in cols]
        )
        two = table.filter(pl.col("split") == split_2).select(
            *keys, *[pl.col(c).alias(f"{c}_2") for c in cols]
        )
        parts.append(
            one.join(two, on=keys, how="inner", nulls_equal=True).with_columns(
                split_1=pl.lit(split_1), split_2=pl.lit(split_2)
            )
        )
    if not parts:
        return pl.DataFrame(schema=FLIPS_SCHEMA)
    joined = pl.concat(parts).with_columns(
        reversed=pl.col("delta_1") * pl.col("delta_2") < 0,
        flip=(
            pl.col("better_1").is_not_null()
            & pl.col("better_2").is_not_null()
            & (pl.col("better_1") != pl.col("better_2"))
        ),
    )
    return joined.select([pl.col(c).cast(t) for c, t in FLIPS_SCHEMA.items()]).sort(
        "benchmark", "part", "family", "model_a", "model_b", "split_1", "split_2",
        nulls_last=True,
    )  # fmt: skip


def pairwise_significance(
    predictions: Sequence[str | Path],
    significance_out: str | Path,
    flips_out: str | Path,
    alpha: float = 0.05,
    per_family: bool = False,
    split_pairs: Sequence[tuple[str, str]] | None = None,
    log: Log = print,
) -> None:
    """Job: per-item prediction files (one per model) -> McNemar/BH table and rank flips."""
    frame = pl.concat(
        [_check_predictions(pl.read_parquet(p)) for p in predictions], how="vertical_relaxed"
    )
    significance = mcnemar_table(frame, alpha=alpha, per_family=per_family, log=log)
    flips = rank_flips(significance, split_pairs)
    meta = {"test": TEST_NAME, "correction": "benjamini_hochberg", "alpha": str(alpha)}
    write_parquet(significance, significance_out, metadata=meta)
    write_parquet(flips, flips_out, metadata=meta)
    n_sig = int(significance["significant"].sum()) if significance.height else 0
    log(f"{significance.height} McNemar tests, {n_sig} significant after BH at {alpha}")
    for row in flips.filter(pl.col("flip")).iter_rows(named=True):
        log(
            f"rank flip {row['benchmark']}/{row['family']}: {row['better_1']} better on "
            f"{row['split_1']}, {row['better_2']} better on {row['split_2']}"
        )
