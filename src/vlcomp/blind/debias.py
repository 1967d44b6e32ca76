"""Debiasing: drop the pairs through which a benchmark's texts give its answer away.

The blind-attack panel (``blind.attacks``) finds a benchmark hackable when a text-only
attack beats chance. This module removes what the panel finds while keeping as many items
as it can, in three steps per negative type (``part`` x ``type``, as the panel reports):

1. ``balance_changes``: a change (the words only the positive has -> the words only the
   negative has, ``words.changed_words``) and its reverse become the positive as often as
   the negative: of each unordered change {X->Y, Y->X} min(count(X->Y), count(Y->X)) pairs
   of each direction stay. A change seen one way only is dropped whole, unless seen once
   (no attack can learn a change from one pair: those of random filler words, say, stay);
   a pair whose texts have the same words (a swap) has no direction and always stays.
2. ``balance_lengths``: as many pairs whose positive is longer (in words) as pairs whose
   negative is; pairs of equal length stay.
3. ``aflite``: AFLite (Le Bras et al. 2020), adapted to the panel: per round the
   cross-fitted panel is refitted with new folds (seed + round, so that the attacks do not
   overfit one split) and with the certificate's (seed); per type off chance under either,
   each pair's predictability is the mean credit (``attacks.credit``) of the off-chance
   fits (attack x split; oriented: an attack reliably below chance is read reversed), and
   the most predictable ``fraction`` of the type's pairs (among those above 1/2; the more
   confident first) is dropped. A type stops when at chance under both splits, below
   ``min_pairs`` pairs, or after ``max_rounds``.

Gating (the design choice for 1 and 2): balancing is exact, so run blindly it would drop
every one-directional change of a type (all of an "add" type) and the noise of a type whose
directions are already coin flips. ``debias`` therefore balances changes only in the types
where ``word_prior`` or ``changed_words`` is above chance, and lengths only where ``length``
is, each judged by the panel on the pairs as they stand before the step; the functions
themselves balance the types they are given (all by default). What the gated steps leave
(context, word order, a score attack, residual priors) is AFLite's. Exact balance has a
cost under cross-fitting: with a change's two directions equally frequent overall, the
training folds hold more of the direction the held-out fold has less of, so ``word_prior``
lands below chance (about 0.44 for 80 + 80 pairs, 0.16 for 2 + 2); the certificate counts
that as off chance, and AFLite's reversed reading removes it. Among the pairs a step
drops, those of the items with most pairs go first, so that 1+N items keep a negative.

Off chance (``Panel.off_chance``), as the summary's certificate (``report.attacks``):
accuracy > 1/2 + margin, or the 95 % interval excludes 1/2. A type's final status:
``at chance``, ``hackable`` (some attack still off chance), or ``not certified: too few pairs``
(fewer than ``min_pairs`` pairs left), judged by the panel with the caller's seed.

Output is per item: a 1+N item keeps its positive and the negatives whose pairs were kept,
and disappears with its last negative. Every choice is seeded and made by a stable hash of
(seed, step, benchmark, pair_id), so the result does not depend on row order; only texts,
family, target and ids are read, never an image or a ground truth.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from vlcomp.blind.attacks import (
    CHANGED_WORDS,
    LENGTH,
    RESULTS_SCHEMA,
    TEXT_ATTACKS,
    WORD_PRIOR,
    attack_accuracy,
    attack_pairs,
    credit,
    folds,
    generator_predictions,
    pair_type,
    predict_attacks,
    score_predictions,
    stable_int,
)
from vlcomp.importers.registry import CANDIDATES
from vlcomp.refine.candidates import ITEM_KEY
from vlcomp.refine.words import changed_words
from vlcomp.text import words
from vlcomp.vocabulary import (
    ALL,
    AT_CHANCE,
    CERTIFICATE_MARGIN,
    CERTIFICATE_MIN_PAIRS,
    HACKABLE,
    TOO_FEW,
    above_chance,
    below_chance,
)

PRIOR_ATTACKS = (WORD_PRIOR, CHANGED_WORDS)  # the gate of balance_changes
CHANCE_LEVEL = 0.5
MARGIN, MIN_PAIRS = CERTIFICATE_MARGIN, CERTIFICATE_MIN_PAIRS
FRACTION = 0.05  # AFLite's slice per round, of the type's pairs
MAX_ROUNDS = 20
BALANCE_CHANGES, BALANCE_LENGTHS, AFLITE = "balance_changes", "balance_lengths", "aflite"
GROUP = ["part", "type"]
Group = tuple[str, str]

DROPPED_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "item_id": pl.String,
    "pair_id": pl.String,  # attacks.PAIRS_SCHEMA's
    "part": pl.String,
    "type": pl.String,
    "negative": pl.String,  # the dropped pair's negative text
    "step": pl.String,  # balance_changes, balance_lengths or aflite:<round>
    "reason": pl.String,
}
TYPES_SCHEMA: dict[str, pl.DataType] = {
    "part": pl.String,
    "type": pl.String,
    "items_before": pl.Int64,  # items with a pair of the type
    "pairs_before": pl.Int64,
    "after_balance_changes": pl.Int64,  # pairs
    "after_balance_lengths": pl.Int64,
    "pairs_after": pl.Int64,  # after AFLite
    "items_after": pl.Int64,
    "kept_share": pl.Float64,  # pairs_after / pairs_before
    "aflite_rounds": pl.Int64,
    "best_attack_before": pl.String,  # the most accurate attack
    "accuracy_before": pl.Float64,
    "best_attack_after": pl.String,
    "accuracy_after": pl.Float64,
    "status": pl.String,  # vocabulary.AT_CHANCE / HACKABLE / TOO_FEW
}


@dataclass(frozen=True, eq=False)
class Panel:
    """The attacks a debiased benchmark must defeat: the text attacks (``attacks``), a
    ``score:<scorer>@<corpus>`` attack per scorer of each training corpus's score table
    (``scores``: corpus -> ``SCORES_SCHEMA``) and a ``generator@<corpus>`` attack per
    corpus's generated training pairs (``training``), as the certificate runs them; the folds
    and bootstrap resamples of its accuracy, and the margin over chance it may keep.
    ``generated``: the generator attacks' decisions, made once for every pair (they need no
    folds; ``with_generated``)."""

    attacks: Sequence[str] = TEXT_ATTACKS
    scores: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    training: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    k: int = 5
    resamples: int = 1000
    margin: float = MARGIN
    generated: pl.DataFrame | None = None

    def with_generated(self, pairs: pl.DataFrame, seed: int) -> Panel:
        """The panel with the generator attacks' decisions on ``pairs`` made."""
        if not self.training or self.generated is not None:
            return self
        return replace(self, generated=generator_predictions(pairs, self.training, seed))

    def run(self, pairs: pl.DataFrame, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(results, predictions) of the panel on ``pairs``, folds drawn with ``seed``."""
        if pairs.is_empty():
            return pl.DataFrame(schema=RESULTS_SCHEMA), pl.DataFrame()
        fold = folds(pairs["benchmark"].to_list(), pairs["item_id"].to_list(), self.k, seed)
        pairs = pairs.with_columns(fold=pl.Series(fold, dtype=pl.Int64))
        frames = [
            predict_attacks(pairs, list(self.attacks), seed=seed),
            score_predictions(pairs, self.scores, seed),
        ]
        if self.generated is not None:
            keys = pairs.select("benchmark", "pair_id")
            frames.append(self.generated.join(keys, on=["benchmark", "pair_id"], how="semi"))
        predictions = pl.concat(frames)
        return attack_accuracy(pairs, predictions, self.resamples, seed), predictions

    def splits(
        self, pairs: pl.DataFrame, seeds: Sequence[int]
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """``run`` with the folds of each seed, the tables stacked with a ``split`` column."""
        runs = [self.run(pairs, seed) for seed in seeds]
        split = [pl.lit(seed, dtype=pl.Int64).alias("split") for seed in seeds]
        return tuple(
            pl.concat([run[i].with_columns(s) for run, s in zip(runs, split, strict=True)])
            for i in (0, 1)
        )

    def off_chance(self, results: pl.DataFrame, above_only: bool = False) -> pl.DataFrame:
        """The per-type rows of ``results`` whose attack is off chance (above it only, with
        ``above_only``)."""
        above = above_chance(CHANCE_LEVEL, self.margin)
        off = above if above_only else above | below_chance(CHANCE_LEVEL)
        return results.filter(
            (pl.col("type") != ALL) & pl.col("accuracy").is_not_null() & off.fill_null(False)
        )


@dataclass(frozen=True, eq=False)
class DebiasResult:
    candidates: pl.DataFrame  # the kept rows, in the input's schema and order
    types: pl.DataFrame  # TYPES_SCHEMA
    dropped: pl.DataFrame  # DROPPED_SCHEMA, one row per dropped pair
    before: pl.DataFrame  # the panel's per-type results (RESULTS_SCHEMA) on the input
    after: pl.DataFrame  # ... and on the output


# ------------------------------------------------------------------------ helpers


def _groups(frame: pl.DataFrame) -> set[Group]:
    return set(frame.select(GROUP).unique().rows())


def _in_groups(groups: Collection[Group] | None) -> pl.Expr:
    if groups is None:
        return pl.lit(True)
    key = pl.concat_str("part", "type", separator="\x1f")
    return key.is_in(sorted(f"{p}\x1f{t}" for p, t in groups))


def _drop_order(pairs: pl.DataFrame, seed: int, step: str) -> pl.Series:
    """A stable order of the pairs for a seeded choice: by sha256 of (seed, step, benchmark,
    pair_id), never by row order."""
    keys = zip(pairs["benchmark"], pairs["pair_id"], strict=True)
    return pl.Series([stable_int(seed, step, b, p) for b, p in keys], dtype=pl.UInt64)


def _drop_excess(frame: pl.DataFrame, by: list[str], seed: int, step: str) -> pl.Series:
    """Whether each row of ``frame`` (with a ``keep`` column per ``by`` group) is dropped:
    all but ``keep`` rows of its group are, those of the items with most pairs first (so
    that a 1+N item rather keeps a negative), then in the seeded order."""
    ranked = (
        frame.with_row_index("_row")
        .with_columns(_size=pl.len().over(ITEM_KEY), _order=_drop_order(frame, seed, step))
        .sort(*by, "_size", "_order")
        .with_columns(_rank=pl.int_range(pl.len()).over(by))
        .sort("_row")
    )
    return ranked["_rank"] >= ranked["keep"]


def _pair_key() -> pl.Expr:
    return pl.concat_str("benchmark", "pair_id", separator="\x1f").alias("key")


def _concat(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat([pl.DataFrame(schema=DROPPED_SCHEMA), *frames])


def _dropped(pairs: pl.DataFrame, step: pl.Expr | str, reason: pl.Expr) -> pl.DataFrame:
    step = pl.lit(step) if isinstance(step, str) else step
    return pairs.select(
        *ITEM_KEY, "pair_id", "part", "type", "negative", step.alias("step"), reason.alias("reason")
    ).cast(DROPPED_SCHEMA)


# ------------------------------------------------------------------------- steps


def balance_changes(
    pairs: pl.DataFrame, seed: int = 0, groups: Collection[Group] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kept pairs, dropped table): in each (part, type) of ``groups`` (default all) every
    change X->Y seen more than once is kept min(count(X->Y), count(Y->X)) times
    (``attacks.PAIRS_SCHEMA``)."""
    changes = [
        changed_words(p, n) for p, n in zip(pairs["positive"], pairs["negative"], strict=True)
    ]
    frame = pairs.with_columns(
        removed=pl.Series([" ".join(r) for r, _ in changes], dtype=pl.String),
        added=pl.Series([" ".join(a) for _, a in changes], dtype=pl.String),
    )
    by = [*GROUP, "removed", "added"]
    counts = frame.group_by(by).agg(n=pl.len())
    reverse = counts.rename({"removed": "added", "added": "removed", "n": "n_reverse"})
    frame = (
        frame.join(counts, on=by, how="left", maintain_order="left")
        .join(reverse, on=by, how="left", maintain_order="left")
        .with_columns(pl.col("n_reverse").fill_null(0))
    )
    frame = frame.with_columns(
        keep=pl.when(
            (pl.col("removed") == pl.col("added"))
            | (pl.col("n") + pl.col("n_reverse") < 2)
            | ~_in_groups(groups)
        )
        .then(pl.col("n"))
        .otherwise(pl.min_horizontal("n", "n_reverse")),
    )
    drop = _drop_excess(frame, by, seed, BALANCE_CHANGES)
    reason = pl.format(
        "change '{}'->'{}' over-represented ({} vs {} reversed)",
        "removed",
        "added",
        "n",
        "n_reverse",
    )
    return pairs.filter(~drop), _dropped(frame.filter(drop), BALANCE_CHANGES, reason)


def balance_lengths(
    pairs: pl.DataFrame, seed: int = 0, groups: Collection[Group] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kept pairs, dropped table): in each (part, type) of ``groups`` (default all) as
    many pairs whose positive is longer in words as pairs whose negative is."""
    gap = [
        int(np.sign(len(words(p)) - len(words(n))))
        for p, n in zip(pairs["positive"], pairs["negative"], strict=True)
    ]
    frame = pairs.with_columns(longer=pl.Series(gap, dtype=pl.Int64))
    by = [*GROUP, "longer"]
    sides = frame.group_by(GROUP).agg(
        pos=(pl.col("longer") > 0).sum().cast(pl.Int64),
        neg=(pl.col("longer") < 0).sum().cast(pl.Int64),
    )
    frame = frame.join(sides, on=GROUP, how="left", maintain_order="left").with_columns(
        n=pl.when(pl.col("longer") > 0).then("pos").otherwise("neg"),
        n_other=pl.when(pl.col("longer") > 0).then("neg").otherwise("pos"),
    )
    frame = frame.with_columns(
        keep=pl.when((pl.col("longer") == 0) | ~_in_groups(groups))
        .then(pl.len().over(by))
        .otherwise(pl.min_horizontal("n", "n_other"))
    )
    drop = _drop_excess(frame, by, seed, BALANCE_LENGTHS)
    side = pl.when(pl.col("longer") > 0).then(pl.lit("positive")).otherwise(pl.lit("negative"))
    reason = pl.format("{} longer over-represented ({} vs {})", side, "n", "n_other")
    return pairs.filter(~drop), _dropped(frame.filter(drop), BALANCE_LENGTHS, reason)


def _predictability(
    pairs: pl.DataFrame, predictions: pl.DataFrame, off: pl.DataFrame
) -> pl.DataFrame:
    """Per pair of an off-chance type: the mean credit of its off-chance fits (attack x
    fold split), their mean standardised decision (both oriented: an attack below chance is
    read reversed), and which attacks get it right."""
    by = ["split", *GROUP, "attack"]
    orient = off.select(
        *by, sign=pl.when(pl.col("accuracy") >= CHANCE_LEVEL).then(1.0).otherwise(-1.0)
    )
    d = pl.col("sign") * pl.col("d")
    scale = pl.col("d").std().over(by).fill_null(0.0)
    scored = (
        predictions.join(pairs.select("benchmark", "pair_id", *GROUP), on=["benchmark", "pair_id"])
        .join(orient, on=by)
        .with_columns(
            credit=credit(d),
            z=pl.when(scale > 0).then(d / scale).otherwise(0.0),
            right=pl.when(d > 0).then("attack"),
        )
    )
    return scored.group_by("benchmark", "pair_id").agg(
        predictability=pl.col("credit").mean(),
        confidence=pl.col("z").mean(),
        right=pl.col("right").drop_nulls().unique().sort().str.join(", "),
        right_n=pl.col("right").count(),
        off_n=pl.len(),
    )


def _most_predictable(
    pairs: pl.DataFrame, predictions: pl.DataFrame, off: pl.DataFrame, fraction: float, seed: int
) -> pl.DataFrame:
    """The pairs AFLite drops this round (with a ``reason``): per off-chance type the
    ``fraction`` of its pairs that its off-chance attacks predict best, if above 1/2."""
    scored = pairs.join(_predictability(pairs, predictions, off), on=["benchmark", "pair_id"])
    quota = pl.max_horizontal(pl.lit(1), (pl.len().over(GROUP) * fraction).ceil().cast(pl.Int64))
    ranked = (
        scored.with_columns(_order=_drop_order(scored, seed, AFLITE), _quota=quota)
        .filter(pl.col("predictability") > CHANCE_LEVEL)
        .sort(
            *GROUP,
            "predictability",
            "confidence",
            "_order",
            descending=[False, False, True, True, False],
        )
        .with_columns(_rank=pl.int_range(pl.len()).over(GROUP))
    )
    reason = pl.format(
        "predicted by {}/{} off-chance fits ({})", "right_n", "off_n", "right"
    ).alias("reason")
    return ranked.filter(pl.col("_rank") < pl.col("_quota")).with_columns(reason)


def aflite(
    pairs: pl.DataFrame,
    seed: int = 0,
    panel: Panel | None = None,
    fraction: float = FRACTION,
    max_rounds: int = MAX_ROUNDS,
    min_pairs: int = MIN_PAIRS,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[Group, int]]:
    """(kept pairs, dropped table, rounds that dropped pairs per type): AFLite rounds
    1..``max_rounds``, the panel refitted each round with the folds of seed + round and of
    seed, on the types still off chance with at least ``min_pairs`` pairs."""
    panel = panel or Panel()
    active, rounds, dropped = _groups(pairs), dict.fromkeys(_groups(pairs), 0), []
    for r in range(1, max_rounds + 1):
        current = pairs.filter(_in_groups(active))
        if current.is_empty():
            break
        results, predictions = panel.splits(current, [seed + r, seed])
        sizes = {(p, t): n for p, t, n in current.group_by(GROUP).len().rows()}
        off = panel.off_chance(results)
        active = {g for g in _groups(off) if sizes.get(g, 0) >= min_pairs}
        if not active:
            break
        off = off.filter(_in_groups(active))
        chosen = _most_predictable(current, predictions, off, fraction, seed + r)
        if chosen.is_empty():
            break
        dropped.append(_dropped(chosen, f"{AFLITE}:{r}", pl.col("reason")))
        for group in _groups(chosen):
            rounds[group] += 1
        pairs = pairs.filter(~_pair_key().is_in(chosen.select(_pair_key())["key"].implode()))
    return pairs, _concat(dropped), rounds


# ------------------------------------------------------------------------ debias


def debias(
    candidates: pl.DataFrame,
    seed: int = 0,
    panel: Panel | None = None,
    fraction: float = FRACTION,
    max_rounds: int = MAX_ROUNDS,
    min_pairs: int = MIN_PAIRS,
) -> DebiasResult:
    """Balance changes, then lengths, where the panel finds them off chance, then AFLite;
    the kept candidates (``CANDIDATES_SCHEMA`` items, 1+N or 1+1), the per-type table, the
    dropped pairs and the panel before and after (see the module's docstring)."""
    pairs = attack_pairs(candidates, CANDIDATES, (panel or Panel()).k, seed)
    panel = (panel or Panel()).with_generated(pairs, seed)
    before, _ = panel.run(pairs, seed)
    prior = panel.off_chance(before, above_only=True).filter(pl.col("attack").is_in(PRIOR_ATTACKS))
    changed, by_changes = balance_changes(pairs, seed, _groups(prior))
    results = before if by_changes.is_empty() else panel.run(changed, seed)[0]
    length = panel.off_chance(results, above_only=True).filter(pl.col("attack") == LENGTH)
    lengths, by_lengths = balance_lengths(changed, seed, _groups(length))
    kept, by_aflite, rounds = aflite(lengths, seed, panel, fraction, max_rounds, min_pairs)
    after, _ = panel.run(kept, seed)
    types = _types_table([pairs, changed, lengths, kept], before, after, rounds, panel, min_pairs)
    step = pl.col("step").str.extract(r":(\d+)$").cast(pl.Int64).fill_null(0)
    dropped = _concat([by_changes, by_lengths, by_aflite]).sort(
        *GROUP, pl.col("step").str.starts_with(AFLITE), step, "step", "benchmark", "pair_id"
    )
    per_type = pl.col("type") != ALL
    return DebiasResult(
        _kept_rows(candidates, kept),
        types,
        dropped,
        before.filter(per_type),
        after.filter(per_type),
    )


def _best(results: pl.DataFrame, suffix: str) -> pl.DataFrame:
    """Per (part, type): the most accurate attack and its accuracy."""
    columns = {"part": pl.String, "type": pl.String, f"best_attack_{suffix}": pl.String}
    if results.is_empty():
        return pl.DataFrame(schema=columns | {f"accuracy_{suffix}": pl.Float64})
    return (
        results.filter((pl.col("type") != ALL) & pl.col("accuracy").is_not_null())
        .sort(*GROUP, "accuracy", "attack", descending=[False, False, True, False])
        .group_by(GROUP, maintain_order=True)
        .first()
        .select(
            *GROUP,
            pl.col("attack").alias(f"best_attack_{suffix}"),
            pl.col("accuracy").alias(f"accuracy_{suffix}"),
        )
    )


def _types_table(
    stages: Sequence[pl.DataFrame],
    before: pl.DataFrame,
    after: pl.DataFrame,
    rounds: dict[Group, int],
    panel: Panel,
    min_pairs: int,
) -> pl.DataFrame:
    """``TYPES_SCHEMA``: pairs (and items) per type at each stage, best attacks, status."""
    names = ["pairs_before", "after_balance_changes", "after_balance_lengths", "pairs_after"]
    counts = [
        stage.group_by(GROUP).agg(
            pl.len().cast(pl.Int64).alias(name), items=pl.struct(ITEM_KEY).n_unique()
        )
        for name, stage in zip(names, stages, strict=True)
    ]
    table = counts[0].rename({"items": "items_before"})
    for count in counts[1:]:
        table = table.join(count.drop("items"), on=GROUP, how="left")
    table = table.join(counts[-1].select(*GROUP, items_after="items"), on=GROUP, how="left")
    hackable = _groups(panel.off_chance(after))
    rows = [
        (
            part,
            kind,
            rounds.get((part, kind), 0),
            HACKABLE if (part, kind) in hackable else AT_CHANCE,
        )
        for part, kind in table.select(GROUP).rows()
    ]
    extra = pl.DataFrame(rows, schema=[*GROUP, "aflite_rounds", "status"], orient="row")
    table = (
        table.with_columns(pl.col(*names[1:], "items_after").fill_null(0))
        .join(extra, on=GROUP)
        .join(_best(before, "before"), on=GROUP, how="left")
        .join(_best(after, "after"), on=GROUP, how="left")
        .with_columns(
            kept_share=pl.col("pairs_after") / pl.col("pairs_before"),
            status=pl.when(pl.col("pairs_after") < min_pairs)
            .then(pl.lit(TOO_FEW))
            .otherwise("status"),
        )
    )
    return table.select(list(TYPES_SCHEMA)).cast(TYPES_SCHEMA).sort(GROUP)


def _kept_rows(candidates: pl.DataFrame, kept: pl.DataFrame) -> pl.DataFrame:
    """The input rows of the kept pairs' negatives and of their items' positives, in input
    order. Negatives of one item with the same text and type (indistinguishable to every
    attack) are matched to pairs in a content order, not by row order."""
    table = candidates.with_row_index("_row")
    by = [*ITEM_KEY, "text", "type"]
    plain = [
        c for c, t in candidates.schema.items() if t in (pl.String, pl.Boolean) and c not in by
    ]
    negatives = (
        table.filter(~pl.col("is_positive"))
        .with_columns(pair_type())
        .sort(*by, *plain, "_row", nulls_last=True)
        .with_columns(_j=pl.int_range(pl.len()).over(by))
    )
    ordinal = (
        pl.when(pl.col("pair_id") == pl.col("item_id"))
        .then(0)
        .otherwise(pl.col("pair_id").str.split("~").list.last().cast(pl.Int64))
    )
    matched = (
        kept.select(*ITEM_KEY, pl.col("negative").alias("text"), "type", _ordinal=ordinal)
        .sort(*by, "_ordinal")
        .with_columns(_j=pl.int_range(pl.len()).over(by))
        .join(negatives.select(*by, "_j", "_row"), on=[*by, "_j"])
    )
    items = matched.select(ITEM_KEY).unique()
    positives = table.filter(pl.col("is_positive")).join(items, on=ITEM_KEY).select("_row")
    rows = pl.concat([matched.select("_row"), positives])["_row"]
    return table.filter(pl.col("_row").is_in(rows.implode())).drop("_row")
