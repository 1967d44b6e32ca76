"""The certification panel: a benchmark's verdict from attacks that never decide what it keeps.

The debiasing (``blind.debias``) filters and balances against the *debiasing panel*
(``blind.attacks``: length, word prior, changed words and their context, the corpora's text
scorers, the generator's context model). A filter tuned against a panel makes that panel
fail on what is left and nothing else (Phang et al. 2022 on AFLite), so the verdict comes
from a second panel, the *certification panel* (``blind.families``), whose families read
the whole text and are never consulted by the debiasing. Its protocol:

- every attack is refitted from scratch on the variant it judges (as generated, debiased),
  per part and negative type, on at most ``max_pairs`` pairs of it (a seeded sample; the
  sentence encoder on at most ``encoder_pairs``, its fine-tuned twin on ``tuned.pairs``);
- folds are its own: drawn with a salt the debiasing never uses (``SALT``) and grouped by
  item *and* by text (``grouped_folds``): items that share a text, positive or negative,
  form one group, so a text that recurs lands in one fold and cannot be learned in one
  fold and recognised in another;
- *generator-trained* attacks (``generator:<corpus>/<family>``): each transferable family
  fitted on a corpus's generated training negatives (at most ``generator_pairs`` per type,
  a seeded sample) and applied to the benchmark unchanged, no cross-fitting;
- accuracy over (positive, negative) pairs, a tie counts 1/2, with a bootstrap 95 %
  interval over the same groups of items (``blind.attacks.attack_accuracy``): items that
  share a text are decided together, so they are drawn together.

The verdict (``vlcomp.certificate``) reads only this panel: *certified* when the best attack
is at most chance + margin and its interval covers chance.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from vlcomp.blind.attacks import PREDICTIONS_SCHEMA, pair_type, stable_int
from vlcomp.blind.families import (
    DEFAULT_PANEL,
    EncoderTuning,
    Family,
    Resources,
    SentenceEncoder,
    SurfaceRule,
    TunedEncoder,
    panel_families,
)

SALT = "certification panel"  # the debiasing's folds never use it
GENERATOR_PREFIX = "generator:"
CERTIFY, DEBIAS = "certify", "debias"  # attacks.parquet's ``panel``
PANELS = (DEBIAS, CERTIFY)


@dataclass(frozen=True)
class CertifySettings:
    """Config ``attacks.certify``."""

    folds: int = 5
    families: tuple[str, ...] | None = None  # default: families.DEFAULT_PANEL
    generator_attacks: bool = True
    # the sentence encoder's generator-trained twin embeds each corpus's sampled training
    # negatives in every benchmark's job: off by default (the default run's time)
    generator_encoder: bool = False
    generator_pairs: int = 2000  # per negative type, a seeded sample of a corpus's
    max_pairs: int | None = 2000  # per part and type, pairs every family reads at most
    encoder_pairs: int | None = 300  # per part and type, pairs the sentence encoder reads
    lm_captions: int = 200_000  # a corpus's captions the language model reads at most
    tuned: EncoderTuning = EncoderTuning()  # the fine-tuned sentence encoder's training

    def without(self, family: str) -> CertifySettings:
        """These settings with ``family`` left out of the panel."""
        names = tuple(self.families) if self.families is not None else DEFAULT_PANEL
        return replace(self, families=tuple(n for n in names if n != family))


def text_groups(pairs: pl.DataFrame) -> list[tuple]:
    """The group of each pair: per part, the connected groups of items that share a text
    (positive or negative), each named by its least node (("item", part, benchmark,
    item_id) or ("text", part, text)). Depends only on the pairs' contents."""
    parent: dict[tuple, tuple] = {}

    def find(x: tuple) -> tuple:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    rows = list(zip(pairs["part"], pairs["benchmark"], pairs["item_id"], pairs["positive"],
                    pairs["negative"], strict=True))  # fmt: skip
    for part, benchmark, item, positive, negative in rows:
        node = ("item", part, benchmark, item)
        for text in (positive, negative):
            a, b = find(node), find(("text", part, text))
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(("item", p, b, i)) for p, b, i, _, _ in rows]


def grouped_folds(pairs: pl.DataFrame, k: int, seed: int) -> np.ndarray:
    """The fold (0..k-1) of each pair: per part, the ``text_groups`` are dealt to folds,
    largest first, each to the fold with fewest pairs so far (ties: the group's salted
    hash, then the lower fold). Depends only on the pairs' contents, never their row order."""
    if k < 2:
        raise ValueError(f"cross-fitting needs k >= 2 folds, got {k}")
    group = text_groups(pairs)
    sizes = Counter(group)
    fold_of: dict[tuple, int] = {}
    load: dict[str, list[int]] = {}
    order = sorted(sizes, key=lambda g: (-sizes[g], stable_int(SALT, seed, *g), g))
    for g in order:
        counts = load.setdefault(g[1], [0] * k)
        fold = min(range(k), key=lambda f: (counts[f], f))
        counts[fold] += sizes[g]
        fold_of[g] = fold
    return np.array([fold_of[g] for g in group], dtype=np.int64)


def recurrence(
    item_ids: Sequence[str], texts: Sequence[str], types: Sequence[str] | None = None
) -> dict[str, int]:
    """text -> the number of distinct items that hold it; with ``types`` (one per text),
    the most items of one type that hold it."""
    kinds = types if types is not None else [""] * len(texts)
    counts = Counter((k, t) for _, k, t in set(zip(item_ids, kinds, texts, strict=True)))
    most: dict[str, int] = {}
    for (_, text), n in counts.items():
        most[text] = max(most.get(text, 0), n)
    return most


class _Rows:
    """A family's feature rows of a set of texts, looked up by text."""

    def __init__(self, family: Family, texts: Sequence[str], recur: Mapping[str, int]):
        distinct = sorted(set(texts))
        self.index = {t: i for i, t in enumerate(distinct)}
        self.rows = family.features(distinct, recur)

    def __call__(self, texts: Sequence[str]):
        return self.rows[[self.index[t] for t in texts]]


def _sample(training: pl.DataFrame, limit: int, seed: int) -> pl.DataFrame:
    """At most ``limit`` training pairs per type, chosen by a salted hash of their texts."""
    kind = pl.col("type") if "type" in training.columns else pair_type()
    keyed = training.select("positive", "negative", kind.alias("type")).unique()
    order = [stable_int(SALT, seed, p, n) for p, n in keyed.select("positive", "negative").rows()]
    return (
        keyed.with_columns(_order=pl.Series(order, dtype=pl.UInt64))
        .sort("type", "_order", "positive", "negative")
        .filter(pl.int_range(pl.len()).over("type") < limit)
        .drop("_order")
    )


def _sampled(pairs: pl.DataFrame, limit: int | None, seed: int) -> np.ndarray:
    """Row positions of at most ``limit`` pairs per type (all with None), chosen by a salted
    hash of (benchmark, pair_id), in row order."""
    if limit is None:
        return np.arange(pairs.height)
    order = [stable_int(SALT, "sample", seed, b, p) for b, p in
             zip(pairs["benchmark"], pairs["pair_id"], strict=True)]  # fmt: skip
    ranked = (
        pairs.select("type", "benchmark", "pair_id")
        .with_row_index("_row")
        .with_columns(_order=pl.Series(order, dtype=pl.UInt64))
        .sort("type", "_order", "benchmark", "pair_id")
        .filter(pl.int_range(pl.len()).over("type") < limit)
    )
    return np.sort(ranked["_row"].to_numpy())


def _cross_fitted(
    family: Family, pairs: pl.DataFrame, rows: _Rows, seed: int
) -> tuple[np.ndarray, list[str | None]]:
    """d of every pair of one part from the family fitted on the other folds of its type."""
    pos, neg = rows(pairs["positive"].to_list()), rows(pairs["negative"].to_list())
    types, fold = pairs["type"].to_numpy(), pairs["fold"].to_numpy()
    d = np.zeros(pairs.height)
    notes: list[str | None] = [None] * pairs.height
    for kind in sorted(set(types.tolist())):
        of_type = types == kind
        for k in sorted(set(fold[of_type].tolist())):
            test, train = (
                np.flatnonzero(of_type & (fold == k)),
                np.flatnonzero(of_type & (fold != k)),
            )
            if not len(train):
                continue
            decide = family.fit(pos[train], neg[train], seed)
            d[test] = decide(pos[test], neg[test])
            if isinstance(family, SurfaceRule):
                rule = SurfaceRule.rule(pos[train], neg[train])
                for i in test:
                    notes[i] = rule
    return d, notes


def _transferred(
    family: Family, pairs: pl.DataFrame, rows: _Rows, training: pl.DataFrame, seed: int
) -> tuple[np.ndarray, list[str | None]]:
    """d of every pair from the family fitted on generated training pairs: per type where
    the training pairs have it, else one fit over all their types (noted)."""
    recur = recurrence(  # a caption and its negatives are one item, as in a benchmark
        [*training["positive"]] * 2,
        [*training["positive"], *training["negative"]],
        [*training["type"]] * 2,
    )
    train_rows = _Rows(family, [*training["positive"], *training["negative"]], recur)
    tpos, tneg = (
        train_rows(training["positive"].to_list()),
        train_rows(training["negative"].to_list()),
    )
    ttype = training["type"].to_numpy()
    pooled = None
    pos, neg = rows(pairs["positive"].to_list()), rows(pairs["negative"].to_list())
    types = pairs["type"].to_numpy()
    d = np.zeros(pairs.height)
    notes: list[str | None] = [None] * pairs.height
    for kind in sorted(set(types.tolist())):
        at = np.flatnonzero(types == kind)
        own = np.flatnonzero(ttype == kind)
        if len(own):
            decide = family.fit(tpos[own], tneg[own], seed)
        else:
            pooled = pooled or family.fit(tpos, tneg, seed)
            decide = pooled
            for i in at:
                notes[i] = "type not in the training negatives: one fit over all their types"
        d[at] = decide(pos[at], neg[at])
    return d, notes


def certification_predictions(
    pairs: pl.DataFrame,
    resources: Resources,
    training: Mapping[str, pl.DataFrame] | None = None,
    settings: CertifySettings = CertifySettings(),
    seed: int = 0,
    log: Callable[[str], None] = lambda line: None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs with the certification folds and groups, per pair and attack d(positive,
    negative) (``PREDICTIONS_SCHEMA``)) of the certification panel on ``pairs``
    (``attacks.PAIRS_SCHEMA``; their ``fold`` column is replaced by ``grouped_folds``, a
    ``group`` column (``text_groups``) added: the certificate's bootstrap unit)."""
    pairs = pairs.sort("benchmark", "pair_id")
    pairs = pairs.with_columns(
        fold=pl.Series(grouped_folds(pairs, settings.folds, seed)),
        group=pl.Series([repr(g) for g in text_groups(pairs)], dtype=pl.String),
    )
    families = panel_families(resources, settings.families)
    if not families and pairs.height:
        raise ValueError(
            f"the certification panel has no family to run (attacks.certify.families: "
            f"{settings.families!r}, sentence encoder {'given' if resources.encode else 'none'}"
            f", corpora {sorted(resources.corpora)}): a certificate needs at least one"
        )
    generated = {
        corpus: _sample(frame, settings.generator_pairs, seed)
        for corpus, frame in sorted((training or {}).items())
        if settings.generator_attacks and frame.height
    }
    out: dict[str, tuple[np.ndarray, list[str | None]]] = {}
    seconds: Counter[str] = Counter()
    for part in sorted(set(pairs["part"].to_list())):
        at = np.flatnonzero((pairs["part"] == part).to_numpy())
        of_part = pairs[at.tolist()]
        # per type: a caption that is the positive of one item of each type (SugarCrepe's
        # layout) is no tell to a per-type evaluation; one that recurs within a type is
        recur = recurrence(
            [*of_part["item_id"]] * 2,
            [*of_part["positive"], *of_part["negative"]],
            [*of_part["type"]] * 2,
        )
        for family in families:
            started = time.perf_counter()
            limit = min((c for c in (family.max_pairs, settings.max_pairs) if c), default=None)
            chosen = _sampled(of_part, limit, seed)
            sample = of_part[chosen.tolist()]
            rows = _Rows(family, [*sample["positive"], *sample["negative"]], recur)
            runs = [(family.name, _cross_fitted(family, sample, rows, seed))]
            twin = family.transferable and (
                settings.generator_encoder or not isinstance(family, SentenceEncoder | TunedEncoder)
            )
            for corpus, training_pairs in generated.items() if twin else ():
                if getattr(family, "corpus", corpus) != corpus:
                    continue  # a corpus's language model meets its own generator only
                name = f"{GENERATOR_PREFIX}{corpus}/{family.name.split('@')[0]}"
                capped = _sample(training_pairs, limit or len(training_pairs), seed)
                runs.append((name, _transferred(family, sample, rows, capped, seed)))
            for name, (d, notes) in runs:
                whole = out.setdefault(name, (np.full(pairs.height, np.nan), [None] * pairs.height))
                whole[0][at[chosen]] = d
                for i, note in zip(at[chosen], notes, strict=True):
                    whole[1][i] = note
            seconds[family.name] += time.perf_counter() - started
    log("certification panel seconds: "
        + ", ".join(f"{name} {s:.1f}" for name, s in seconds.items()))  # fmt: skip
    keys = pairs.select("benchmark", "item_id", "pair_id")
    frames = [  # a pair a family did not sample has no row of it
        keys.with_columns(
            attack=pl.lit(name, dtype=pl.String),
            d=pl.Series(d + 0.0, dtype=pl.Float64),
            note=pl.Series(notes, dtype=pl.String),
        ).filter(pl.col("d").is_not_nan())
        for name, (d, notes) in out.items()
    ]
    predictions = pl.concat(frames) if frames else pl.DataFrame(schema=PREDICTIONS_SCHEMA)
    return pairs, predictions.select(list(PREDICTIONS_SCHEMA))
