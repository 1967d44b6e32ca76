"""Blind attacks: can a benchmark be solved from its texts alone, without the image?

A panel of text-only attacks of the kind a reviewer runs to show that a benchmark leaks its
answer through the texts (SugarCrepe's finding; hypothesis-only baselines, Poliak et al. and
Gururangan et al. 2018; AFLite, Le Bras et al. 2020). Every (positive, negative) pair of
every item is one pair: a 1+N set gives N pairs, a SugarCrepe++ item (two positives, one
negative) two.

An attack is a decision function over two texts, ``d(a, b)``, antisymmetric by
construction: ``d(a, b) == -d(b, a)``. A pair is scored as ``d(positive, negative)``:
``> 0`` right (credit 1), ``< 0`` wrong (0), ``== 0`` a tie, credit 1/2 (``TIE_POLICY``,
the expected credit of a coin flip; the same rule as ``blind``'s ``tie_counts_as_chance``
for a pair). ``answered`` counts the pairs with ``d != 0``. An attack never sees the image,
the item's ground truth or which text is the positive when it predicts: its fitted decision
function takes two lists of texts only.

Cross-fitting: every pair has a fold in ``0..k-1`` from a stable hash (sha256) of
(seed, benchmark, item_id), so an item's pairs share a fold whatever the row order. For each
fold the attack is fitted on the other folds' pairs, presented in both orientations
(positive, negative) -> +1 and (negative, positive) -> -1, and predicts the held-out fold.
By default one attack is fitted per negative type (``family_target``) on that type's
training pairs; ``per_type=False`` fits one over all types.

The attacks (``ATTACKS``, then one ``score:<scorer>`` per scorer of a score table):

- ``length``: the longer (or shorter) text in words wins, whichever the training folds favour;
  a tie when they are balanced.
- ``word_prior``: the words the pair changes (``words.changed_words``: only in a, only in b)
  win in the direction the training folds saw more often; unseen or balanced: a tie.
- ``changed_words``: L2 logistic regression without intercept on the bag of words of a minus
  that of b (the changed words; common words cancel), vocabulary from the training folds.
- ``context``: the same on the changed words and changed bigrams (with sentence start and end
  markers): sees word order, so it can solve attribute swaps that a bag of words cannot.
- ``score:<scorer>``: a per-text score (``SCORES_SCHEMA``: an n-gram LM, MiniLM
  familiarity...), the higher (or lower) one winning as the training folds favour; a text
  without a score makes the pair a tie, not answered.
- ``generator``: ``context`` fitted on an external set of (caption, generated negative)
  pairs (what a NegCLIP-style model trains on) and applied to every pair; per type where
  the training set has it, else one model over all its types. No cross-fitting.

Two-image sets (Winoground: each caption is right for one image) and image-selection sets
(one caption) are balanced by design: the panel gives them a row with a note, no accuracy.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import numpy as np
import polars as pl
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from vlcomp.certificate import bootstrap_interval, credit
from vlcomp.contracts import text_key
from vlcomp.importers.registry import CANDIDATES, IMAGE_SELECTION, TWO_IMAGES, TWO_POSITIVES
from vlcomp.refine.candidates import ITEM_KEY
from vlcomp.refine.words import changed_words
from vlcomp.text import words
from vlcomp.vocabulary import ALL, UNLABELLED, negative_type

LENGTH, WORD_PRIOR, CHANGED_WORDS, CONTEXT, GENERATOR = (
    "length",
    "word_prior",
    "changed_words",
    "context",
    "generator",
)
ATTACKS: tuple[str, ...] = (LENGTH, WORD_PRIOR, CHANGED_WORDS, CONTEXT, GENERATOR)
TEXT_ATTACKS: tuple[str, ...] = ATTACKS[:-1]  # cross-fitted on the benchmark's own texts
SCORE_PREFIX = "score:"  # score:<scorer>, one attack per scorer of a score table
TIE_POLICY = "tie_counts_half"  # d == 0: credit 1/2
C = 1.0  # inverse L2 strength of the logistic regressions
NO_SCORES = "no scores"
NO_TRAINING = "no training negatives"
POOLED = "type not in the training negatives: one model over all their types"
BALANCED_BY_DESIGN = {
    TWO_IMAGES: "balanced by design: every text is a positive for one image",
    IMAGE_SELECTION: "balanced by design: one caption, the images differ",
}

PAIRS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "item_id": pl.String,
    "pair_id": pl.String,  # item_id, or <item_id>~<j> when the item has several pairs
    "part": pl.String,  # the ``part`` column where given, else the benchmark
    "type": pl.String,  # family_target (vocabulary.negative_type)
    "fold": pl.Int64,
    "positive": pl.String,
    "negative": pl.String,
}
PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "item_id": pl.String,
    "pair_id": pl.String,
    "attack": pl.String,
    "d": pl.Float64,  # d(positive, negative): > 0 right, < 0 wrong, 0 a tie
    "note": pl.String,  # why the attack could not apply to the pair; null if it could
}
# The decisions a certificate writes (``results/blind/<benchmark>/attack_predictions.parquet``):
# ``PREDICTIONS_SCHEMA`` with each pair's part, type and texts' keys, per variant, so that a
# model's predictions of the same pairs (``pos_text_key``, ``neg_text_key``) join them.
DECISIONS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "panel": pl.String,  # debias (this module's attacks) or certify (blind.certify's)
    "part": pl.String,
    "variant": pl.String,  # the certificate's variant (as_generated, imported:<source>, debiased)
    "item_id": pl.String,  # <part>/<item_id> when the certificate has several parts
    "pair_id": pl.String,
    "type": pl.String,
    "positive_key": pl.String,  # contracts.text_key of the positive
    "negative_key": pl.String,  # contracts.text_key of the negative
    "attack": pl.String,
    "d": pl.Float64,
    "note": pl.String,
}
RESULTS_SCHEMA: dict[str, pl.DataType] = {
    "part": pl.String,
    "type": pl.String,  # family_target, or "all"
    "attack": pl.String,
    "accuracy": pl.Float64,  # mean credit over pairs (TIE_POLICY)
    "ci_low": pl.Float64,  # bootstrap 95 % percentile interval, items resampled
    "ci_high": pl.Float64,
    "n": pl.Int64,  # pairs (sets, for a set balanced by design)
    "items": pl.Int64,  # items holding those pairs
    "answered": pl.Int64,  # pairs with d != 0
    "note": pl.String,
}

Decide = Callable[[Sequence[str], Sequence[str]], np.ndarray]  # d(a_i, b_i) per i
Fit = Callable[[Sequence[str], Sequence[str]], Decide]  # (positives, negatives) -> Decide


# --------------------------------------------------------------------------- pairs


def stable_int(*parts: object) -> int:
    """A 64-bit integer from sha256 of the parts: the same on every run and machine."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def folds(benchmarks: Sequence[str], item_ids: Sequence[str], k: int = 5, seed: int = 0):
    """The fold (0..k-1) of each item, from sha256 of (seed, benchmark, item_id)."""
    if k < 2:
        raise ValueError(f"cross-fitting needs k >= 2 folds, got {k}")
    return [stable_int(seed, b, i) % k for b, i in zip(benchmarks, item_ids, strict=True)]


def pair_type() -> pl.Expr:
    """A pair's negative type (family_target; ``unlabelled`` without a family)."""
    return negative_type(pl.col("family"), pl.col("target")).fill_null(UNLABELLED).alias("type")


def _part_and_type(frame: pl.DataFrame) -> list[pl.Expr]:
    part = pl.col("part") if "part" in frame.columns else pl.col("benchmark")
    return [part.cast(pl.String).alias("part"), pair_type()]


def _check_positives(candidates: pl.DataFrame, shape: str) -> None:
    """Every item has a positive and a negative; ``candidates`` items exactly one positive."""
    stats = candidates.group_by(ITEM_KEY).agg(
        positives=pl.col("is_positive").sum(), negatives=(~pl.col("is_positive")).sum()
    )
    wrong = (pl.col("positives") != 1) if shape == CANDIDATES else (pl.col("positives") < 1)
    for condition, problem in [
        (wrong, "not exactly one positive" if shape == CANDIDATES else "no positive"),
        (pl.col("negatives") < 1, "no negative"),
    ]:
        bad = stats.filter(condition).sort(ITEM_KEY)
        if bad.height:
            example = f"{bad['benchmark'][0]}/{bad['item_id'][0]}"
            raise ValueError(f"{bad.height} item(s) with {problem}, e.g. {example}")


def attack_pairs(
    candidates: pl.DataFrame, shape: str = CANDIDATES, k: int = 5, seed: int = 0
) -> pl.DataFrame:
    """Every (positive, negative) pair of every item (``PAIRS_SCHEMA``, sorted).

    ``shape``: ``candidates`` (one positive per item) or ``two_positives`` (SugarCrepe++:
    every positive against every negative). A pair's type is its negative's (a CREPE set
    holds negatives of several types); an optional ``part`` column is passed through."""
    if shape not in (CANDIDATES, TWO_POSITIVES):
        raise ValueError(f"blind attacks need texts to choose between; shape {shape!r} has not")
    _check_positives(candidates, shape)
    part = pl.col("part") if "part" in candidates.columns else pl.col("benchmark")
    pos = candidates.filter(pl.col("is_positive")).select(
        *ITEM_KEY, part.cast(pl.String).alias("part"), pl.col("text").alias("positive")
    )
    neg = candidates.filter(~pl.col("is_positive")).select(
        *ITEM_KEY, pair_type(), pl.col("text").alias("negative")
    )
    pairs = pos.join(neg, on=ITEM_KEY, how="inner").sort(*ITEM_KEY, "positive", "negative")
    pair_id = (
        pl.when(pl.len().over(ITEM_KEY) > 1)
        .then(pl.format("{}~{}", "item_id", pl.int_range(pl.len()).over(ITEM_KEY)))
        .otherwise(pl.col("item_id"))
    )
    fold = folds(pairs["benchmark"].to_list(), pairs["item_id"].to_list(), k, seed)
    return pairs.with_columns(pair_id=pair_id, fold=pl.Series(fold, dtype=pl.Int64)).select(
        list(PAIRS_SCHEMA)
    )


# ------------------------------------------------------------------------- attacks


def _zero(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    return np.zeros(len(a))


def _direction(right: int, wrong: int) -> float:
    return float(np.sign(right - wrong))


def fit_length(positives: Sequence[str], negatives: Sequence[str]) -> Decide:
    """``length``: sign(words(a) - words(b)) times the direction the training pairs favour."""

    def lengths(texts: Sequence[str]) -> np.ndarray:
        return np.array([len(_tokens(t)) for t in texts], dtype=np.float64)

    gap = np.sign(lengths(positives) - lengths(negatives))
    s = _direction(int((gap > 0).sum()), int((gap < 0).sum()))
    return lambda a, b: s * np.sign(lengths(a) - lengths(b))


def fit_word_prior(positives: Sequence[str], negatives: Sequence[str]) -> Decide:
    """``word_prior``: +1 when the change (only in a, only in b) was seen more often as
    (only in the positive, only in the negative) than the other way, -1 when less often."""
    seen = Counter(_changed(p, n) for p, n in zip(positives, negatives, strict=True))

    def decide(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        changes = [_changed(x, y) for x, y in zip(a, b, strict=True)]
        return np.array([_direction(seen[(x, y)], seen[(y, x)]) for x, y in changes], float)

    return decide


@lru_cache(maxsize=1 << 17)
def _tokens(text: str) -> tuple[str, ...]:
    """``text``'s words, once per text (cross-fitting reads every text k times)."""
    return tuple(words(text))


@lru_cache(maxsize=1 << 17)
def _changed(a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return changed_words(a, b)


@lru_cache(maxsize=1 << 17)
def _features(a: str, b: str, bigrams: bool) -> Counter[str]:
    """Bag of a minus bag of b (words; with bigrams, also "w1 w2" with <s> and </s>); cached,
    so callers only read it."""
    bags = []
    for text in (a, b):
        tokens = _tokens(text)
        bag = Counter(tokens)
        if bigrams:
            padded = ["<s>", *tokens, "</s>"]
            bag.update(f"{x} {y}" for x, y in zip(padded, padded[1:], strict=False))
        bags.append(bag)
    bags[0].subtract(bags[1])
    return Counter({f: v for f, v in bags[0].items() if v})


_FEATURE_IDS: dict[str, int] = {}  # every feature seen in this process -> a fixed id
_FEATURE_NAMES: list[str] = []  # and back


@lru_cache(maxsize=1 << 17)
def _feature_arrays(a: str, b: str, bigrams: bool) -> tuple[np.ndarray, np.ndarray]:
    """``_features(a, b, bigrams)`` as (feature ids in ``_FEATURE_IDS``, values)."""
    row = _features(a, b, bigrams)
    for feature in row:
        if feature not in _FEATURE_IDS:
            _FEATURE_IDS[feature] = len(_FEATURE_NAMES)
            _FEATURE_NAMES.append(feature)
    ids = [_FEATURE_IDS[f] for f in row]
    return np.asarray(ids, dtype=np.int64), np.asarray(list(row.values()), dtype=np.float64)


def _matrix(
    rows: Sequence[tuple[np.ndarray, np.ndarray]], columns: np.ndarray
) -> sparse.csr_matrix:
    """Rows (``_feature_arrays``) as a sparse matrix; ``columns``: feature id -> column (-1
    or beyond its end: dropped). Column indices sorted, so that x @ w of -x is exactly minus
    that of x."""
    lengths = np.fromiter((len(ids) for ids, _ in rows), dtype=np.int64, count=len(rows))
    ids = np.concatenate([ids for ids, _ in rows]) if rows else np.zeros(0, np.int64)
    values = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
    at = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    known = ids < len(columns)
    column = np.full(len(ids), -1, dtype=np.int64)
    column[known] = columns[ids[known]]
    kept = column >= 0
    shape = (len(rows), int(columns.max(initial=-1)) + 1)
    matrix = sparse.csr_matrix((values[kept], (at[kept], column[kept])), shape=shape)
    matrix.sort_indices()
    return matrix


def fit_linear(
    positives: Sequence[str], negatives: Sequence[str], bigrams: bool = False, seed: int = 0
) -> Decide:
    """``changed_words`` (``bigrams=False``) or ``context``: d = w . x(a, b), x the feature
    difference (``_features``), w an L2 logistic regression without intercept fitted on
    x(positive, negative) -> 1 and x(negative, positive) -> 0. The columns are the training
    pairs' features in alphabetical order."""
    rows = [_feature_arrays(p, n, bigrams) for p, n in zip(positives, negatives, strict=True)]
    seen = np.unique(np.concatenate([ids for ids, _ in rows])) if rows else np.zeros(0, np.int64)
    if not len(seen):
        return _zero
    ordered = sorted(seen.tolist(), key=_FEATURE_NAMES.__getitem__)
    columns = np.full(len(_FEATURE_IDS), -1, dtype=np.int64)
    columns[ordered] = np.arange(len(ordered))
    x = _matrix(rows, columns)
    labels = np.r_[np.ones(x.shape[0]), np.zeros(x.shape[0])]
    model = LogisticRegression(C=C, fit_intercept=False, solver="liblinear", random_state=seed)
    w = model.fit(sparse.vstack([x, -x]).tocsr(), labels).coef_.ravel()

    def decide(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        features = [_feature_arrays(p, n, bigrams) for p, n in zip(a, b, strict=True)]
        return np.asarray(_matrix(features, columns) @ w, dtype=np.float64)

    return decide


def fit_changed_words(positives: Sequence[str], negatives: Sequence[str], seed: int = 0) -> Decide:
    return fit_linear(positives, negatives, bigrams=False, seed=seed)


def fit_context(positives: Sequence[str], negatives: Sequence[str], seed: int = 0) -> Decide:
    return fit_linear(positives, negatives, bigrams=True, seed=seed)


def score_fitter(values: Mapping[str, float]) -> Fit:
    """``score:<scorer>`` over ``values`` (text -> score; missing or non-finite: no score):
    d = s * (score(a) - score(b)), s the direction the training pairs favour; 0 where a text
    has no score."""

    def lookup(texts: Sequence[str]) -> np.ndarray:
        v = np.array([values.get(t, np.nan) for t in texts], dtype=np.float64)
        return np.where(np.isfinite(v), v, np.nan)

    def fit(positives: Sequence[str], negatives: Sequence[str]) -> Decide:
        gap = lookup(positives) - lookup(negatives)
        s = _direction(int((gap > 0).sum()), int((gap < 0).sum()))
        return lambda a, b: np.nan_to_num(s * (lookup(a) - lookup(b)), nan=0.0)

    return fit


def score_values(scores: pl.DataFrame, scorer: str, texts: Sequence[str]) -> dict[str, float]:
    """text -> ``scorer``'s score (``SCORES_SCHEMA`` table) for the texts that have one."""
    table = dict(scores.filter(pl.col("scorer") == scorer).select("text_key", "score").rows())
    keyed = {t: table.get(text_key(t)) for t in set(texts)}
    return {t: v for t, v in keyed.items() if v is not None}


# ----------------------------------------------------------------------- fitting


def cross_fit(pairs: pl.DataFrame, fit: Fit, per_type: bool = True) -> np.ndarray:
    """d(positive, negative) of every pair (``PAIRS_SCHEMA``) from an attack fitted on the
    other folds' pairs of the same part (and type when ``per_type``); 0 where there are
    none. Parts are fitted apart: a benchmark's parts may hold the same items (a CREPE set
    per corpus), whose positives one part's training folds would otherwise give away."""
    pos, neg = pairs["positive"].to_numpy(), pairs["negative"].to_numpy()
    fold = pairs["fold"].to_numpy()
    keys = ["part", "type"] if per_type else ["part"]
    group = pairs.select(pl.concat_str(keys, separator="\x1f", ignore_nulls=True))
    group = group.to_series().to_numpy()
    d = np.zeros(pairs.height)
    for g in sorted(set(group.tolist())):
        in_group = group == g
        for k in sorted(set(fold[in_group].tolist())):
            test, train = in_group & (fold == k), in_group & (fold != k)
            if train.any():
                decide = fit(pos[train].tolist(), neg[train].tolist())
                d[test] = decide(pos[test].tolist(), neg[test].tolist())
    return d


def transfer(
    pairs: pl.DataFrame, training: pl.DataFrame, per_type: bool = True, seed: int = 0
) -> tuple[np.ndarray, list[str | None]]:
    """``generator``: d of every pair from ``context`` fitted on ``training`` (positive,
    negative, family, target), per type where the training set has the type, else pooled;
    with the pooled pairs' note."""
    train_type = training.select("positive", "negative", pair_type())
    pooled = fit_context(train_type["positive"].to_list(), train_type["negative"].to_list(), seed)
    d = np.zeros(pairs.height)
    notes: list[str | None] = [None] * pairs.height
    types = pairs["type"].to_numpy()
    for kind in sorted(set(types.tolist())):
        rows = np.flatnonzero(types == kind)
        own = train_type.filter(pl.col("type") == kind)
        decide = pooled
        if per_type and own.height:
            decide = fit_context(own["positive"].to_list(), own["negative"].to_list(), seed)
        elif per_type:
            for i in rows:
                notes[i] = POOLED
        test = pairs[rows.tolist()]
        d[rows] = decide(test["positive"].to_list(), test["negative"].to_list())
    return d, notes


def panel_attacks(scores: pl.DataFrame | None = None) -> list[str]:
    """``ATTACKS``, then ``score:<scorer>`` for each scorer of ``scores``."""
    names = sorted(scores["scorer"].unique().to_list()) if scores is not None else []
    return [*ATTACKS, *(SCORE_PREFIX + name for name in names)]


def _decisions(
    pairs: pl.DataFrame,
    attack: str,
    scores: pl.DataFrame | None,
    training: pl.DataFrame | None,
    per_type: bool,
    seed: int,
) -> tuple[np.ndarray, list[str | None] | str | None]:
    fits: dict[str, Fit] = {
        LENGTH: fit_length,
        WORD_PRIOR: fit_word_prior,
        CHANGED_WORDS: lambda p, n: fit_changed_words(p, n, seed),
        CONTEXT: lambda p, n: fit_context(p, n, seed),
    }
    if attack in fits:
        return cross_fit(pairs, fits[attack], per_type), None
    if attack == GENERATOR:
        if training is None or training.is_empty():
            return np.zeros(pairs.height), NO_TRAINING
        return transfer(pairs, training, per_type, seed)
    if attack.startswith(SCORE_PREFIX):
        texts = pairs["positive"].to_list() + pairs["negative"].to_list()
        name = attack.removeprefix(SCORE_PREFIX)
        values = score_values(scores, name, texts) if scores is not None else {}
        if not values:
            return np.zeros(pairs.height), NO_SCORES
        return cross_fit(pairs, score_fitter(values), per_type), None
    raise ValueError(f"unknown attack {attack!r}; expected one of {ATTACKS} or score:<scorer>")


def predict_attacks(
    pairs: pl.DataFrame,
    attacks: Sequence[str] | None = None,
    scores: pl.DataFrame | None = None,
    training: pl.DataFrame | None = None,
    per_type: bool = True,
    seed: int = 0,
) -> pl.DataFrame:
    """Per pair and attack, the decision value d(positive, negative) (``PREDICTIONS_SCHEMA``).

    ``attacks``: default ``panel_attacks(scores)``. ``scores``: ``SCORES_SCHEMA``.
    ``training``: the generator attack's pairs (positive, negative, family, target)."""
    pairs = pairs.sort("benchmark", "pair_id")
    keys = pairs.select("benchmark", "item_id", "pair_id")
    frames = []
    for attack in attacks if attacks is not None else panel_attacks(scores):
        d, note = _decisions(pairs, attack, scores, training, per_type, seed)
        notes = note if isinstance(note, list) else [note] * pairs.height
        frames.append(
            keys.with_columns(
                attack=pl.lit(attack, dtype=pl.String),
                d=pl.Series(d + 0.0, dtype=pl.Float64),  # no -0.0
                note=pl.Series(notes, dtype=pl.String),
            )
        )
    if not frames:
        return pl.DataFrame(schema=PREDICTIONS_SCHEMA)
    return pl.concat(frames).select(list(PREDICTIONS_SCHEMA))


def score_predictions(
    pairs: pl.DataFrame, scores: Mapping[str, pl.DataFrame], seed: int = 0
) -> pl.DataFrame:
    """``score:<scorer>@<corpus>``: each scorer of each training corpus's score table
    (``scores``: corpus -> ``SCORES_SCHEMA``), cross-fitted like the text attacks."""
    frames = [pl.DataFrame(schema=PREDICTIONS_SCHEMA)]
    for corpus, corpus_scores in scores.items():
        names = panel_attacks(corpus_scores)[len(ATTACKS) :]
        frames.append(
            predict_attacks(pairs, names, scores=corpus_scores, seed=seed)
            .with_columns(pl.format("{}@{}", "attack", pl.lit(corpus)).alias("attack"))
        )  # fmt: skip
    return pl.concat(frames)


def generator_predictions(
    pairs: pl.DataFrame, training: Mapping[str, pl.DataFrame], seed: int = 0
) -> pl.DataFrame:
    """``generator@<corpus>``: ``context`` fitted on each corpus's generated training pairs
    (``training``: corpus -> pairs), no folds: a pair's decision depends on that pair and the
    training pairs only. Without any corpus, ``generator`` with its note."""
    if not training:
        return predict_attacks(pairs, [GENERATOR], training=None, seed=seed)
    return pl.concat(
        [
            predict_attacks(pairs, [GENERATOR], training=generated, seed=seed).with_columns(
                attack=pl.lit(f"{GENERATOR}@{corpus}", dtype=pl.String)
            )
            for corpus, generated in training.items()
        ]
    )


def pair_decisions(
    pairs: pl.DataFrame, predictions: pl.DataFrame, variant: str, panel: str
) -> pl.DataFrame:
    """The predictions as the certificate writes them (``DECISIONS_SCHEMA``)."""
    keys = pairs.select("benchmark", "pair_id", "part", "type").with_columns(
        positive_key=pl.Series([text_key(t) for t in pairs["positive"]], dtype=pl.String),
        negative_key=pl.Series([text_key(t) for t in pairs["negative"]], dtype=pl.String),
    )
    return (
        predictions.join(keys, on=["benchmark", "pair_id"], how="left")
        .with_columns(
            variant=pl.lit(variant, dtype=pl.String), panel=pl.lit(panel, dtype=pl.String)
        )
        .select(list(DECISIONS_SCHEMA))
    )


# ------------------------------------------------------------------------ results


def attack_accuracy(
    pairs: pl.DataFrame,
    predictions: pl.DataFrame,
    resamples: int = 1000,
    seed: int = 0,
    unit: str | None = None,
) -> pl.DataFrame:
    """Accuracy of each attack per (part, type) and per part over all types (type "all"),
    with a bootstrap interval over items (``RESULTS_SCHEMA``), or over the groups of items
    that ``pairs``' column ``unit`` names (items that share a text are not independent).
    The units drawn depend only on (seed, part, type), so all attacks of a cell are
    resampled alike."""
    keys = ["benchmark", "pair_id", "part", "type", *([unit] if unit else [])]
    scored = predictions.join(pairs.select(keys), on=["benchmark", "pair_id"]).with_columns(
        credit=credit(pl.col("d")),
        answered=pl.col("d") != 0,
        _unit=pl.col(unit) if unit else pl.concat_str(ITEM_KEY, separator="\x1f"),
    )
    per_item = scored.group_by("part", "type", "attack", *ITEM_KEY).agg(
        credit=pl.col("credit").sum(),
        n=pl.len(),
        answered=pl.col("answered").sum(),
        note=pl.col("note").drop_nulls().unique(),
        _unit=pl.col("_unit").first(),
    )
    # an item with negatives of several types is one item of the "all" cell
    over_types = (
        per_item.group_by("part", "attack", *ITEM_KEY)
        .agg(
            credit=pl.col("credit").sum(),
            n=pl.col("n").sum(),
            answered=pl.col("answered").sum(),
            note=pl.col("note").list.explode(keep_nulls=False, empty_as_null=False).unique().sort(),
            _unit=pl.col("_unit").first(),
        )
        .with_columns(type=pl.lit(ALL, dtype=pl.String))
    )
    cells = pl.concat([per_item, over_types.select(per_item.columns)])
    rows = []
    for (part, kind, attack), cell in cells.sort("part", "type", "attack", *ITEM_KEY).group_by(
        ["part", "type", "attack"], maintain_order=True
    ):
        units = cell.group_by("_unit").agg(pl.col("credit").sum(), pl.col("n").sum()).sort("_unit")
        credits, counts = units["credit"].to_numpy(), units["n"].to_numpy()
        rng = np.random.default_rng([seed, stable_int(part, kind) % 2**32])
        low, high = bootstrap_interval(credits, counts, resamples, rng)
        notes = cell["note"].explode().drop_nulls().unique().sort().to_list()
        rows.append(
            (part, kind, attack, credits.sum() / counts.sum(), low, high)
            + (int(counts.sum()), cell.height, int(cell["answered"].sum()))
            + ("; ".join(notes) or None,)
        )
    table = pl.DataFrame(rows, schema=RESULTS_SCHEMA, orient="row")
    return _ordered(table, predictions["attack"].unique(maintain_order=True).to_list())


def _ordered(table: pl.DataFrame, attacks: Sequence[str]) -> pl.DataFrame:
    rank = {a: i for i, a in enumerate(attacks)}
    return table.sort(
        "part",
        pl.col("type") == ALL,
        "type",
        pl.col("attack").replace_strict(rank, default=len(rank), return_dtype=pl.Int64),
    )


def balanced_by_design(
    sets: pl.DataFrame, shape: str = TWO_IMAGES, attacks: Sequence[str] = ATTACKS
) -> pl.DataFrame:
    """Rows (``RESULTS_SCHEMA``) for a set the panel does not apply to: per (part, type)
    and part, each attack with n = the sets, nothing answered, and the reason."""
    counted = sets.select(_part_and_type(sets)).group_by("part", "type").len()
    cells = pl.concat(
        [counted, counted.group_by("part").agg(pl.lit(ALL).alias("type"), pl.col("len").sum())]
    )
    table = cells.join(pl.DataFrame({"attack": list(attacks)}), how="cross").select(
        "part",
        "type",
        "attack",
        *(pl.lit(None, dtype=pl.Float64).alias(c) for c in ("accuracy", "ci_low", "ci_high")),
        pl.col("len").cast(pl.Int64).alias("n"),
        pl.col("len").cast(pl.Int64).alias("items"),
        pl.lit(0, dtype=pl.Int64).alias("answered"),
        pl.lit(BALANCED_BY_DESIGN[shape], dtype=pl.String).alias("note"),
    )
    return _ordered(table, attacks)


def attack_panel(
    table: pl.DataFrame,
    shape: str = CANDIDATES,
    attacks: Sequence[str] | None = None,
    scores: pl.DataFrame | None = None,
    training: pl.DataFrame | None = None,
    k: int = 5,
    seed: int = 0,
    per_type: bool = True,
    resamples: int = 1000,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The blind-attack panel of a benchmark table of ``shape``: (results, predictions)."""
    names = list(attacks) if attacks is not None else panel_attacks(scores)
    if shape in BALANCED_BY_DESIGN:
        return balanced_by_design(table, shape, names), pl.DataFrame(schema=PREDICTIONS_SCHEMA)
    pairs = attack_pairs(table, shape, k, seed)
    predictions = predict_attacks(pairs, names, scores, training, per_type, seed)
    return attack_accuracy(pairs, predictions, resamples, seed), predictions
