"""The checks of a benchmark audit, as pure functions of tables (no files, no parser).

Every table has a ``variant`` column (which candidate set, a key that says what it is:
``published_refined``, ``published_unrefined``, ``published``, ``generated``, ``re-refined``;
see :func:`describe_variant`) and a ``type`` column: the negative type ``<family>_<target>``
(``<family>`` when the target is null), and ``all`` for the micro average over every item of
the variant.

Checks:

- :func:`blind_table`: blind (text-only) accuracy of each scorer per type; an item is
  correct when its positive scores strictly above every negative (ties count as wrong under
  the default policy, see ``vlcomp.refine.blind``).
- :func:`order_blind_table`: pairs whose positive and negative are the same multiset of words
  (``vlcomp.refine.words``) and the resulting ceiling of any order-blind model. Such a model
  scores both texts of such a pair identically, so it must tie on the item: with ties counted
  wrong it can at best get every *other* item right, ceiling = 1 - (items with a same-words
  negative) / items (for one negative per item: 1 - share); with ties broken at random it
  gets 1 / (1 + k) of an item with k same-words negatives, ceiling = mean 1 / (1 + k)
  (for pairs: 1 - share / 2).
- :func:`bindsplit_items` (``vlcomp.splits.assign.assign``: the labels, buckets and
  STRICT / LOOSE splits of the splits stage, not reimplemented) and the tables built from it:
  :func:`composition_table` (seen / mixed / unseen / no_binding per side, BindSplit Table 1),
  :func:`seen_share_table` (positives vs negatives whose bindings are all seen, BindSplit
  Fig. 3), :func:`binding_label_table` (perfect / close / none share of the bindings),
  :func:`bucket_table` (the seven buckets per side).
- :func:`binding_familiarity_scores` + :func:`familiarity_table`: "pick the more familiar
  caption" rules (binding counts in the reference corpus; the n-gram scorer) next to the
  models' accuracies.
- :func:`reference_status`: whether the reference corpus is large enough to audit against.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, GRAPH_SCHEMA, SCORES_SCHEMA, conform
from vlcomp.counts.units import graph_units
from vlcomp.importers.sugarcrepe import BENCHMARKS as SUGARCREPE_RELEASES
from vlcomp.importers.sugarcrepe import GENERATOR as SUGARCREPE_GENERATOR
from vlcomp.refine.blind import TiePolicy, blind_accuracy
from vlcomp.refine.candidates import ITEM_KEY, check_items
from vlcomp.refine.scores import scorer_names, with_text_keys
from vlcomp.refine.words import words
from vlcomp.splits.assign import assign
from vlcomp.vocabulary import (
    ALL,
    BINDSPLIT_SPLITS,
    BUCKETS,
    LABELS,
    MACRO,
    NO_BINDING,
    RULES,
    SEEN,
    negative_type,
)

SIDES: dict[str, str] = {"positive": "pos_", "negative": "neg_", "sample": ""}
COMPOSITION: tuple[str, ...] = (*BINDSPLIT_SPLITS, NO_BINDING)
BINDING_RULES: dict[str, str] = {
    # familiarity rule -> the count summed (log1p) over a caption's distinct bindings
    "bindings_strict": "perfect_count",
    "bindings_loose": "perfect_count + close_count",
}
DEFAULT_MIN_REFERENCE_CAPTIONS = 1000
# How each rule is written wherever a STRICT / LOOSE number is shown (tables, figures, text).
RULE_TEXT: dict[str, str] = {
    "strict": "STRICT = perfect only",
    "loose": "LOOSE = perfect or close",
}
# The items left out of the seen shares, one name per reason (columns of SEEN_SHARE_SCHEMA,
# used verbatim in the report and the figures).
PAIRED = "paired"
EXCLUSIONS: dict[str, str] = {
    "no_binding_positive_only": "the positive has no binding, its negative(s) do",
    "no_binding_negative_only": "the negative(s) have no binding, the positive does",
    "no_binding_both": "neither side has a binding (the sample is no_binding)",
}

BLIND_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "scorer": pl.String,
    "type": pl.String,  # family_target, "all" (micro) or "macro" (mean over types)
    "n": pl.Int64,
    "ties": pl.Int64,
    "correct": pl.Float64,  # credit summed over items (wins, plus tie credit under chance)
    "accuracy": pl.Float64,
    "tie_policy": pl.String,
}
ORDER_BLIND_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "n_items": pl.Int64,
    "n_pairs": pl.Int64,  # (positive, negative) pairs: one per negative
    "same_words": pl.Int64,  # pairs whose two texts are the same multiset of words
    "identical": pl.Int64,  # of those, pairs whose two texts are equal
    "share": pl.Float64,  # same_words / n_pairs
    "items_same_words": pl.Int64,  # items with at least one same-words negative
    "ceiling_ties_wrong": pl.Float64,  # 1 - items_same_words / n_items
    "ceiling_ties_chance": pl.Float64,  # mean over items of 1 / (1 + k same-words negatives)
}
COMPOSITION_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "rule": pl.String,  # strict | loose
    "side": pl.String,  # positive | negative (pooled negatives of an item) | sample (both)
    "split": pl.String,  # seen | mixed | unseen | no_binding
    "count": pl.Int64,
    "n": pl.Int64,  # items of the type
    "share": pl.Float64,
}
SEEN_SHARE_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "rule": pl.String,
    "n_items": pl.Int64,
    "n_paired": pl.Int64,  # items with a binding on both sides: the shares' denominator
    # items left out, by reason; n_items = n_paired + the three
    "no_binding_positive_only": pl.Int64,
    "no_binding_negative_only": pl.Int64,
    "no_binding_both": pl.Int64,
    "positive_seen": pl.Int64,
    "negative_seen": pl.Int64,
    "positive_seen_share": pl.Float64,
    "negative_seen_share": pl.Float64,
    "seen_gap": pl.Float64,  # positive minus negative share
}
BUCKET_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "side": pl.String,  # positive | negative | sample
    "bucket": pl.String,  # one of splits.assign.BUCKETS, or no_binding
    "count": pl.Int64,
    "n": pl.Int64,  # items of the type
    "share": pl.Float64,
}
LABEL_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "side": pl.String,
    "label": pl.String,  # perfect | close | none
    "bindings": pl.Int64,
    "n": pl.Int64,  # bindings of that side
    "share": pl.Float64,
}
FAMILIARITY_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "predictor": pl.String,
    "kind": pl.String,  # familiarity rule | text scorer | model | chance
    "n": pl.Int64,
    "ties": pl.Int64,  # null for models (their tables carry no tie count)
    "decided": pl.Int64,  # n - ties (null for models)
    "correct": pl.Float64,  # credit summed over items (accuracy * n for models)
    "wins": pl.Int64,  # items won outright (null for models)
    "accuracy": pl.Float64,
    "accuracy_decided": pl.Float64,  # wins / decided (null for models)
    "tie_policy": pl.String,
}
REFERENCE_SCHEMA: dict[str, pl.DataType] = {
    "reference": pl.String,
    "n_captions": pl.Int64,
    "n_bindings": pl.Int64,  # distinct (attribute, object) bindings in the counts
    "n_atoms": pl.Int64,
    "min_captions": pl.Int64,
    "usable": pl.Boolean,
    "warning": pl.String,
}


def type_expr() -> pl.Expr:
    """The negative type (``family_target``) as column ``type``."""
    return negative_type(pl.col("family"), pl.col("target")).alias("type")


def type_order(types: Sequence[str]) -> list[str]:
    """Types sorted, then ``all`` and ``macro`` last."""
    present = set(types)
    return [*sorted(present - {ALL, MACRO}), *(t for t in (ALL, MACRO) if t in present)]


def _sort_types(frame: pl.DataFrame, *first: str, then: Sequence[str] = ()) -> pl.DataFrame:
    order = {t: i for i, t in enumerate(type_order(frame["type"].unique().to_list()))}
    return frame.sort(*first, pl.col("type").replace_strict(order, return_dtype=pl.Int64), *then)


def prepare_candidates(candidates: pl.DataFrame, what: str = "candidates") -> pl.DataFrame:
    """Candidates conformed to the contract and checked (one positive, >= 1 negative, one
    family/target per item). Items are keyed by (benchmark, item_id)."""
    frame = conform(candidates, CANDIDATES_SCHEMA, what)
    if frame["text"].null_count():
        raise ValueError(f"{what}: {frame['text'].null_count()} candidate(s) without text")
    check_items(frame)
    return frame


# ------------------------------------------------------------------------ variants


@dataclass(frozen=True)
class VariantInfo:
    """What one candidate set of an audit is. ``key``: its ``variant`` value in every table;
    ``label``: the words the report and the figures use for it; ``balanced``: the scorers
    whose blind accuracy on it is 0.5 by construction (those its refinement balanced);
    ``note``: why, or None."""

    key: str
    label: str
    balanced: tuple[str, ...] = ()
    note: str | None = None


RELEASE_LABELS: dict[str, tuple[str, str]] = {
    # release -> (key, label)
    "refined": ("published_refined", "as published (refined by its authors)"),
    "unrefined": ("published_unrefined", "as published (unrefined)"),
    "published": ("published", "as published"),
    "generated": ("generated", "as generated here (before refinement)"),
}


def releases(candidates: pl.DataFrame) -> dict[str, int]:
    """Items per release of ``candidates``: ``generated`` (made by this workflow),
    ``refined`` / ``unrefined`` (a SugarCrepe release, from the folder the importer read:
    ``sugarcrepe/<folder>/<type>/<key>``; SugarCrepe's published benchmark is the refined
    one), ``published`` (another imported set, which carries no refinement of its own) or
    ``folder <name>`` (SugarCrepe files from a folder whose name does not say which)."""
    rows = (
        candidates.filter(pl.col("is_positive"))
        .unique(ITEM_KEY, keep="first")
        .select("generator", "item_id")
        .rows()
    )
    out: dict[str, int] = {}
    for generator, item_id in rows:
        if not (generator or "").startswith("imported:"):
            release = "generated"
        elif generator == SUGARCREPE_GENERATOR:
            parts = item_id.split("/")
            folder = parts[1] if len(parts) > 2 else ""
            release = folder if folder in SUGARCREPE_RELEASES else f"folder {folder!r}"
        else:
            release = "published"
        out[release] = out.get(release, 0) + 1
    return dict(sorted(out.items()))


def describe_variant(
    candidates: pl.DataFrame,
    refinement: Mapping[str, str] | None = None,
    corpus: str | None = None,
    refined_subset: bool = False,
) -> VariantInfo:
    """What ``candidates`` are. With ``refinement`` (the metadata ``refine`` writes:
    ``scorer_1``, ``scorer_2``) they are our own refinement with those two scorers trained on
    ``corpus``; else their release (:func:`releases`) says it. ``refined_subset``: the set
    was handed to the audit as a refined subset; generated items without refinement metadata
    are then a refined subset of unknown making, not the generated set."""
    if refinement and refinement.get("scorer_1") and refinement.get("scorer_2"):
        scorers = (refinement["scorer_1"], refinement["scorer_2"])
        label = f"re-refined here with {scorers[0]} and {scorers[1]} trained on {corpus}"
        note = (
            f"Refinement kept the pairs on which {scorers[0]} and {scorers[1]} (the blind "
            f"scorers trained on {corpus}) are balanced: within each type each wins exactly "
            "half of the pairs it does not tie on. Their blind accuracy on this variant is "
            "therefore 0.5 by construction (ties, counted wrong, can only pull it below) and "
            "says nothing about the benchmark; other scorers and models do."
        )
        return VariantInfo("re-refined", label, scorers, note)
    found = releases(candidates)
    if not found:
        return VariantInfo("refined", "an empty refined subset" if refined_subset else "empty")
    if refined_subset and set(found) == {"generated"}:
        return VariantInfo("refined", "a refined subset (its file does not say how it was refined)")
    if len(found) == 1:
        (release,) = found
        if release in RELEASE_LABELS:
            return VariantInfo(*RELEASE_LABELS[release])
        return VariantInfo(
            "published",
            f"as published (SugarCrepe files from {release}: whether refined is unknown)",
        )
    parts = [
        f"{n} items {RELEASE_LABELS.get(r, ('', r))[1]}" for r, n in found.items()
    ]  # fmt: skip
    return VariantInfo("mixed", "mixed: " + "; ".join(parts))


def unique_keys(infos: Sequence[VariantInfo]) -> list[VariantInfo]:
    """``infos`` with repeated keys made unique (``<key>_2``, ...), first one unchanged."""
    out, used = [], set()
    for info in infos:
        key, k = info.key, 1
        while key in used:
            k += 1
            key = f"{info.key}_{k}"
        used.add(key)
        out.append(VariantInfo(key, info.label, info.balanced, info.note))
    return out


# --------------------------------------------------------------------------- blind


def blind_table(
    variants: Mapping[str, pl.DataFrame],
    scores: pl.DataFrame,
    scorers: Sequence[str] | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> tuple[pl.DataFrame, list[str]]:
    """(``BLIND_SCHEMA`` table, notes). A scorer without a score for some text of a variant
    is left out of that variant, with a note saying how many texts it lacks."""
    names = list(scorers) if scorers is not None else scorer_names(scores)
    parts, notes = [], []
    for variant, candidates in variants.items():
        keyed = with_text_keys(candidates.select("text").unique())
        usable = []
        for name in names:
            have = scores.filter(pl.col("scorer") == name).select("text_key")
            lacking = keyed.join(have, on="text_key", how="anti").height
            if lacking:
                notes.append(
                    f"scorer {name!r} has no score for {lacking} of the {keyed.height} texts of "
                    f"variant {variant!r}: left out of that variant"
                )
            else:
                usable.append(name)
        if not usable:
            continue
        table = blind_accuracy(_one_benchmark(candidates), scores, usable, tie_policy)
        parts.append(
            table.with_columns(
                pl.when(pl.col("average") == "group")
                .then(type_expr())
                .when(pl.col("average") == "micro")
                .then(pl.lit(ALL))
                .otherwise(pl.lit(MACRO))
                .alias("type"),
                variant=pl.lit(variant),
            ).select(list(BLIND_SCHEMA))
        )
    if not parts:
        return pl.DataFrame(schema=BLIND_SCHEMA), notes
    table = pl.concat(parts).select([pl.col(c).cast(t) for c, t in BLIND_SCHEMA.items()])
    order = {v: i for i, v in enumerate(variants)}
    return _sort_types(
        table.with_columns(_v=pl.col("variant").replace_strict(order, return_dtype=pl.Int64)),
        "_v",
        "scorer",
    ).drop("_v"), notes


def _one_benchmark(candidates: pl.DataFrame) -> pl.DataFrame:
    """One benchmark name per variant (items of several benchmarks get ``<benchmark>/<id>``
    ids) so that averages are over the variant's items."""
    if candidates["benchmark"].n_unique() <= 1:
        return candidates
    return candidates.with_columns(
        item_id=pl.concat_str("benchmark", "item_id", separator="/"),
        benchmark=pl.lit("+".join(sorted(candidates["benchmark"].unique().to_list()))),
    )


# ---------------------------------------------------------------------- order-blind


def _pairs(candidates: pl.DataFrame) -> pl.DataFrame:
    pos = candidates.filter(pl.col("is_positive")).select(
        *ITEM_KEY, type_expr(), pl.col("text").alias("positive")
    )
    neg = candidates.filter(~pl.col("is_positive")).select(
        *ITEM_KEY, pl.col("text").alias("negative")
    )
    return pos.join(neg, on=ITEM_KEY, how="inner")


def order_blind_table(variants: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """``ORDER_BLIND_SCHEMA``: same-words pairs and the order-blind ceiling per type."""
    parts = []
    for variant, candidates in variants.items():
        pairs = _pairs(candidates)
        bags = {t: words(t) for t in {*pairs["positive"], *pairs["negative"]}}
        same = [
            bags[p] == bags[n] for p, n in zip(pairs["positive"], pairs["negative"], strict=True)
        ]
        pairs = pairs.with_columns(
            same=pl.Series(same, dtype=pl.Boolean),
            identical=pl.col("positive") == pl.col("negative"),
        )
        items = pairs.group_by(*ITEM_KEY, "type").agg(
            k=pl.col("same").sum().cast(pl.Int64), n_neg=pl.len()
        )
        for p, i in ((pairs, items), (pairs.with_columns(type=pl.lit(ALL)),
                                       items.with_columns(type=pl.lit(ALL)))):  # fmt: skip
            by_pair = p.group_by("type").agg(
                n_pairs=pl.len().cast(pl.Int64),
                same_words=pl.col("same").sum().cast(pl.Int64),
                identical=(pl.col("same") & pl.col("identical")).sum().cast(pl.Int64),
            )
            by_item = i.group_by("type").agg(
                n_items=pl.len().cast(pl.Int64),
                items_same_words=(pl.col("k") > 0).sum().cast(pl.Int64),
                # exact, order-free: sum over k of (items with k) / (1 + k), divided once
                _per_k=pl.col("k").value_counts(sort=True),
            )
            by_item = by_item.with_columns(
                ceiling_ties_chance=pl.Series(
                    [
                        math.fsum(e["count"] / (1 + e["k"]) for e in counts) / n
                        for counts, n in zip(by_item["_per_k"], by_item["n_items"], strict=True)
                    ],
                    dtype=pl.Float64,
                )
            ).drop("_per_k")
            parts.append(
                by_pair.join(by_item, on="type").with_columns(
                    variant=pl.lit(variant),
                    share=pl.col("same_words") / pl.col("n_pairs"),
                    ceiling_ties_wrong=1.0 - pl.col("items_same_words") / pl.col("n_items"),
                )
            )
    if not parts:
        return pl.DataFrame(schema=ORDER_BLIND_SCHEMA)
    table = pl.concat([p.select(list(ORDER_BLIND_SCHEMA)) for p in parts]).select(
        [pl.col(c).cast(t) for c, t in ORDER_BLIND_SCHEMA.items()]
    )
    return _variant_sorted(table, variants)


def _variant_sorted(
    table: pl.DataFrame, variants: Mapping[str, object], then: Sequence[str] = ()
) -> pl.DataFrame:
    order = {v: i for i, v in enumerate(variants)}
    frame = table.with_columns(_v=pl.col("variant").replace_strict(order, return_dtype=pl.Int64))
    return _sort_types(frame, "_v", then=then).drop("_v")


# ------------------------------------------------------------------------- BindSplit


@dataclass(frozen=True)
class ReferenceStatus:
    name: str
    n_captions: int
    n_bindings: int
    n_atoms: int
    min_captions: int

    @property
    def usable(self) -> bool:
        return self.n_captions >= self.min_captions and self.n_bindings > 0

    @property
    def warning(self) -> str | None:
        if self.usable:
            return None
        if self.n_captions == 0:
            why = "is empty (0 captions counted)"
        elif self.n_bindings == 0:
            why = f"has {self.n_captions} captions but no (attribute, object) binding"
        else:
            why = (
                f"is tiny: {self.n_captions} captions, fewer than the {self.min_captions} "
                "an audit needs"
            )
        return (
            f"The reference corpus {self.name!r} {why}. Against it nearly every binding would "
            "read 'unseen', which says nothing about the benchmark, so the BindSplit overlap "
            "and the binding-count familiarity rule are NOT reported. Count a real training "
            "corpus (or lower min_reference_captions deliberately)."
        )

    def table(self) -> pl.DataFrame:
        row = {
            "reference": self.name,
            "n_captions": self.n_captions,
            "n_bindings": self.n_bindings,
            "n_atoms": self.n_atoms,
            "min_captions": self.min_captions,
            "usable": self.usable,
            "warning": self.warning,
        }
        return pl.DataFrame([row], schema=REFERENCE_SCHEMA)


def reference_status(
    name: str,
    n_captions: int,
    counts: Mapping[str, pl.DataFrame],
    min_captions: int = DEFAULT_MIN_REFERENCE_CAPTIONS,
) -> ReferenceStatus:
    return ReferenceStatus(
        name, int(n_captions), counts["bindings"].height, counts["atoms"].height, min_captions
    )


def _graphs_of(texts: pl.DataFrame, graphs: pl.DataFrame, what: str) -> pl.DataFrame:
    joined = texts.join(graphs.select("text", *GRAPH_SCHEMA), on="text", how="left")
    missing = joined.filter(pl.col("objects").is_null())
    if missing.height:
        raise ValueError(
            f"{what}: no graph for {missing.height} text(s), e.g. {missing['text'][0]!r}"
        )
    return joined


def bindsplit_items(
    variants: Mapping[str, pl.DataFrame],
    graphs: pl.DataFrame,
    counts: Mapping[str, pl.DataFrame],
    reference: str,
    min_count: int = 1,
) -> pl.DataFrame:
    """Per item of each variant, the BindSplit assignment of ``vlcomp.splits.assign.assign``
    (the item's positive, its negatives pooled): bindings with their perfect / close / none
    label, buckets, and STRICT / LOOSE splits of the sample and of each side.

    ``graphs``: ``text`` + graph columns (``GRAPH_SCHEMA``) for every candidate text;
    ``counts``: the reference corpus's tables (``vlcomp.counts.read_counts``)."""
    parts = []
    for variant, candidates in variants.items():
        keyed = candidates.with_columns(_key=pl.struct(*ITEM_KEY).rank("dense").cast(pl.String))
        pos = keyed.filter(pl.col("is_positive"))
        neg = keyed.filter(~pl.col("is_positive"))
        items = _graphs_of(pos.select("_key", "text"), graphs, variant).rename({"_key": "item_id"})
        negatives = _graphs_of(neg.select("_key", "text"), graphs, variant).rename(
            {"_key": "item_id"}
        )
        assignments, _ = assign(
            items.drop("text"), counts, reference, negatives.drop("text"), min_count
        )
        info = pos.select("_key", *ITEM_KEY, type_expr(), pl.col("text").alias("positive"))
        parts.append(
            info.join(assignments, left_on="_key", right_on="item_id", how="left")
            .with_columns(variant=pl.lit(variant))
            .drop("_key", "corpus", "n_atoms", "n_compounds", "unseen_atoms", "unseen_compounds")
        )
    frame = pl.concat(parts, how="vertical_relaxed")
    first = ["variant", "benchmark", "item_id", "type", "positive"]
    frame = frame.select(*first, pl.exclude(first))
    return _variant_sorted(frame, variants, then=["benchmark", "item_id"])


def composition_table(items: pl.DataFrame, variants: Sequence[str]) -> pl.DataFrame:
    """``COMPOSITION_SCHEMA``: per variant, type, rule and side the items whose side is
    seen / mixed / unseen / no_binding, of all the type's items."""
    rows = []
    for frame in (items, items.with_columns(type=pl.lit(ALL))):
        for (variant, type_), group in frame.group_by("variant", "type"):
            n = group.height
            for rule in RULES:
                for side, prefix in SIDES.items():
                    values = group[f"{prefix}split_{rule}"].fill_null(NO_BINDING)
                    for split in COMPOSITION:
                        k = int((values == split).sum())
                        rows.append((variant, type_, rule, side, split, k, n, k / n if n else None))
    table = pl.DataFrame(rows, schema=COMPOSITION_SCHEMA, orient="row")
    return _ordered(table, variants, ["rule", "side", "split"], {
        "rule": list(RULES), "side": list(SIDES), "split": list(COMPOSITION)})  # fmt: skip


def _ordered(
    table: pl.DataFrame,
    variants: Sequence[str],
    then: Sequence[str] = (),
    orders: Mapping[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    orders = dict(orders or {})
    keys = [f"_{c}" for c in then]
    frame = table.with_columns(
        pl.col(c).replace_strict({v: i for i, v in enumerate(orders[c])}, return_dtype=pl.Int64)
        .alias(f"_{c}") if c in orders else pl.col(c).alias(f"_{c}")
        for c in then
    )  # fmt: skip
    return _variant_sorted(frame, dict.fromkeys(variants), then=keys).drop(keys)


def seen_share_table(items: pl.DataFrame, variants: Sequence[str]) -> pl.DataFrame:
    """``SEEN_SHARE_SCHEMA``: over the items with a binding on both sides (``n_paired``),
    the share of positives and of negatives whose bindings are all seen (split ``seen``), per
    rule; the items left out are counted by reason (``EXCLUSIONS``)."""
    rows = []
    for frame in (items, items.with_columns(type=pl.lit(ALL))):
        for (variant, type_), group in frame.group_by("variant", "type"):
            has_pos, has_neg = group["pos_bucket"].is_not_null(), group["neg_bucket"].is_not_null()
            paired = group.filter(has_pos & has_neg)
            m = paired.height
            excluded = (
                int((~has_pos & has_neg).sum()),
                int((has_pos & ~has_neg).sum()),
                int((~has_pos & ~has_neg).sum()),
            )
            for rule in RULES:
                pos = int((paired[f"pos_split_{rule}"] == SEEN).sum())
                neg = int((paired[f"neg_split_{rule}"] == SEEN).sum())
                ps, ns = (pos / m, neg / m) if m else (None, None)
                gap = ps - ns if m else None  # type: ignore[operator]
                rows.append(
                    (variant, type_, rule, group.height, m, *excluded, pos, neg, ps, ns, gap)
                )
    table = pl.DataFrame(rows, schema=SEEN_SHARE_SCHEMA, orient="row")
    return _ordered(table, variants, ["rule"], {"rule": list(RULES)})


def bucket_table(items: pl.DataFrame, variants: Sequence[str]) -> pl.DataFrame:
    """``BUCKET_SCHEMA``: per variant, type and side the items in each of the seven buckets
    (which of n_perfect, n_close, n_none are non-zero over the side's distinct bindings), and
    ``no_binding``, of all the type's items."""
    rows = []
    columns = {"positive": "pos_bucket", "negative": "neg_bucket", "sample": "bucket"}
    for frame in (items, items.with_columns(type=pl.lit(ALL))):
        for (variant, type_), group in frame.group_by("variant", "type"):
            n = group.height
            for side, column in columns.items():
                values = group[column].fill_null(NO_BINDING)
                for bucket in (*BUCKETS, NO_BINDING):
                    k = int((values == bucket).sum())
                    rows.append((variant, type_, side, bucket, k, n, k / n if n else None))
    table = pl.DataFrame(rows, schema=BUCKET_SCHEMA, orient="row")
    return _ordered(table, variants, ["side", "bucket"], {
        "side": list(columns), "bucket": [*BUCKETS, NO_BINDING]})  # fmt: skip


def binding_label_table(items: pl.DataFrame, variants: Sequence[str]) -> pl.DataFrame:
    """``LABEL_SCHEMA``: share of the positives' and of the negatives' bindings (distinct
    per item and side) per label."""
    rows = []
    for frame in (items, items.with_columns(type=pl.lit(ALL))):
        for (variant, type_), group in frame.group_by("variant", "type"):
            for side, column in (("positive", "pos_bindings"), ("negative", "neg_bindings")):
                labels = group.select(pl.col(column).explode().struct.field("label")).to_series()
                labels = labels.drop_nulls()
                n = labels.len()
                for label in LABELS:
                    k = int((labels == label).sum())
                    rows.append((variant, type_, side, label, k, n, k / n if n else None))
    table = pl.DataFrame(rows, schema=LABEL_SCHEMA, orient="row")
    return _ordered(table, variants, ["side", "label"], {
        "side": ["positive", "negative"], "label": list(LABELS)})  # fmt: skip


# ----------------------------------------------------------------------- familiarity


def binding_familiarity_scores(graphs: pl.DataFrame, bindings: pl.DataFrame) -> pl.DataFrame:
    """``SCORES_SCHEMA`` rows of the binding-count familiarity rules for every text of
    ``graphs`` (``text`` + graph columns): the sum over the caption's distinct (attribute,
    object) bindings (same extraction as the counts) of log(1 + count) in the reference
    ``bindings`` table, with count = ``perfect_count`` (``bindings_strict``) or
    ``perfect_count + close_count`` (``bindings_loose``). A caption without a binding, or
    with only unseen ones, scores 0."""
    texts = graphs.select("text", *GRAPH_SCHEMA).unique("text", keep="first").sort("text")
    keyed = with_text_keys(texts)
    units = graph_units(keyed.drop("text").lazy(), "text_key")
    found = (
        units.decoded_bindings()
        .select("doc", "attr", "obj_lemma")
        .unique()
        .join(bindings.lazy(), on=["attr", "obj_lemma"], how="left")
        .select(
            "doc",
            pl.col("perfect_count").fill_null(0).alias("strict"),
            (pl.col("perfect_count").fill_null(0) + pl.col("close_count").fill_null(0)).alias(
                "loose"
            ),
        )
        .collect()
    )
    # math.fsum is exactly rounded, hence independent of the order of a caption's bindings:
    # two captions with the same bindings get the same score (a float sum in a group_by
    # need not be, and a familiarity rule lives on exact ties).
    terms: dict[str, tuple[list[float], list[float]]] = {}
    for doc, strict, loose in found.iter_rows():
        pair = terms.setdefault(doc, ([], []))
        pair[0].append(math.log1p(strict))
        pair[1].append(math.log1p(loose))
    sums = {doc: (math.fsum(a), math.fsum(b)) for doc, (a, b) in terms.items()}
    key_list = keyed["text_key"].to_list()
    scored = pl.DataFrame(
        {
            "text_key": key_list,
            "bindings_strict": [sums.get(k, (0.0, 0.0))[0] for k in key_list],
            "bindings_loose": [sums.get(k, (0.0, 0.0))[1] for k in key_list],
        },
        schema={"text_key": pl.String, "bindings_strict": pl.Float64, "bindings_loose": pl.Float64},
    )
    parts = [
        scored.select(pl.lit(rule).alias("scorer"), "text_key", pl.col(rule).alias("score"))
        for rule in BINDING_RULES
    ]
    return (
        pl.concat(parts)
        .select([pl.col(c).cast(t) for c, t in SCORES_SCHEMA.items()])
        .sort("scorer", "text_key")
    )


MODEL_METRICS = (("accuracy", "accuracy_micro"), ("R@1", "R@1_micro"))


def model_accuracy_table(
    metrics: pl.DataFrame, variants: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """``FAMILIARITY_SCHEMA`` rows of the models (and chance) in ``METRIC_SCHEMA`` tables:
    the split ``all`` rows (every complexity) of each variant's benchmark(s), per type
    ``accuracy`` (or ``R@1`` for sets with several negatives) and its ``_micro`` average as
    type ``all``. A labelled part is shown as ``model [part]``."""
    out = []
    if metrics.height == 0:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    frame = metrics.filter(pl.col("split") == ALL)
    if "complexity" in frame.columns:
        frame = frame.filter(pl.col("complexity").is_null())
    if "part" not in frame.columns:
        frame = frame.with_columns(part=pl.lit(None, pl.String))
    for variant, candidates in variants.items():
        names = candidates["benchmark"].unique().to_list()
        rows = frame.filter(pl.col("benchmark").is_in(names))
        for per_type, micro in MODEL_METRICS:
            chosen = rows.filter(
                ((pl.col("metric") == per_type) & (pl.col("family") != ALL))
                | ((pl.col("metric") == micro) & (pl.col("family") == ALL))
            )
            if chosen.height:
                break
        if not chosen.height:
            continue
        out.append(
            chosen.select(
                pl.lit(variant).alias("variant"),
                pl.col("family").alias("type"),
                pl.when(pl.col("part").is_null())
                .then(pl.col("model"))
                .otherwise(pl.format("{} [{}]", "model", "part"))
                .alias("predictor"),
                pl.when(pl.col("model") == "chance")
                .then(pl.lit("chance"))
                .otherwise(pl.lit("model"))
                .alias("kind"),
                pl.col("n").cast(pl.Int64),
                pl.lit(None, pl.Int64).alias("ties"),
                pl.lit(None, pl.Int64).alias("decided"),
                (pl.col("value") * pl.col("n")).alias("correct"),
                pl.lit(None, pl.Int64).alias("wins"),
                pl.col("value").alias("accuracy"),
                pl.lit(None, pl.Float64).alias("accuracy_decided"),
                pl.col("tie_policy"),
            ).unique(["variant", "type", "predictor"], keep="first", maintain_order=True)
        )
    if not out:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    return pl.concat(out).select([pl.col(c).cast(t) for c, t in FAMILIARITY_SCHEMA.items()])


def familiarity_table(
    variants: Mapping[str, pl.DataFrame],
    scores: pl.DataFrame,
    rules: Sequence[str],
    text_scorers: Sequence[str],
    models: pl.DataFrame | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> pl.DataFrame:
    """``FAMILIARITY_SCHEMA``: accuracy of "pick the more familiar caption" per type: the
    familiarity ``rules`` and ``text_scorers`` (both scored in ``scores``, e.g. the
    ``binding_familiarity_scores`` and the n-gram's), then the models' accuracies
    (``models``). For the rules and scorers also ``decided`` (items where the predictor does
    not tie) and ``accuracy_decided`` (items won among those)."""
    parts = []
    names = [*rules, *text_scorers]
    if names:
        table, _ = blind_table(variants, scores, names, tie_policy)
        wrong = table
        if tie_policy != "tie_counts_as_wrong":
            wrong, _ = blind_table(variants, scores, names, "tie_counts_as_wrong")
        wins = wrong.select("variant", "scorer", "type", pl.col("correct").alias("_wins"))
        parts.append(
            table.join(wins, on=["variant", "scorer", "type"], how="left")
            .filter(pl.col("type") != MACRO)
            .with_columns(
                decided=pl.col("n") - pl.col("ties"),
                wins=pl.col("_wins").round().cast(pl.Int64),
                kind=pl.when(pl.col("scorer").is_in(list(rules)))
                .then(pl.lit("familiarity rule"))
                .otherwise(pl.lit("text scorer")),
            )
            .with_columns(
                accuracy_decided=pl.when(pl.col("decided") > 0).then(
                    pl.col("_wins") / pl.col("decided")
                )
            )
            .rename({"scorer": "predictor"})
        )
    if models is not None and models.height:
        parts.append(models)
    if not parts:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    table = pl.concat(
        [p.select(list(FAMILIARITY_SCHEMA)) for p in parts], how="vertical_relaxed"
    ).select([pl.col(c).cast(t) for c, t in FAMILIARITY_SCHEMA.items()])
    kinds = {"familiarity rule": 0, "text scorer": 1, "model": 2, "chance": 3}
    frame = table.with_columns(_k=pl.col("kind").replace_strict(kinds, return_dtype=pl.Int64))
    return _variant_sorted(frame, variants, then=["_k", "predictor"]).drop("_k")


# ------------------------------------------------------------------------- all checks


@dataclass(frozen=True)
class AuditTables:
    reference: ReferenceStatus
    blind: pl.DataFrame
    order_blind: pl.DataFrame
    bindsplit_items: pl.DataFrame | None  # None: reference corpus not usable
    composition: pl.DataFrame | None
    seen_shares: pl.DataFrame | None
    binding_labels: pl.DataFrame | None
    familiarity: pl.DataFrame
    notes: list[str]
    tie_policy: str
    min_count: int
    buckets: pl.DataFrame | None = None
    # variant key -> what it is (every key of the tables' ``variant`` column)
    variants: dict[str, VariantInfo] = field(default_factory=dict)

    def tables(self) -> dict[str, pl.DataFrame]:
        """The tables by file stem (those not computed are absent)."""
        out = {
            "reference": self.reference.table(),
            "blind": self.blind,
            "order_blind": self.order_blind,
            "bindsplit_items": self.bindsplit_items,
            "composition": self.composition,
            "seen_shares": self.seen_shares,
            "binding_labels": self.binding_labels,
            "buckets": self.buckets,
            "familiarity": self.familiarity,
        }
        return {k: v for k, v in out.items() if v is not None}


def audit_tables(
    variants: Mapping[str, pl.DataFrame],
    scores: pl.DataFrame,
    graphs: pl.DataFrame | None,
    counts: Mapping[str, pl.DataFrame],
    reference: ReferenceStatus,
    models: pl.DataFrame | None = None,
    *,
    scorers: Sequence[str] | None = None,
    familiarity_scorers: Sequence[str] = ("ngram",),
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    min_count: int = 1,
    descriptions: Mapping[str, VariantInfo] | None = None,
) -> AuditTables:
    """Every check on already loaded tables. ``variants``: key -> candidates (prepared);
    ``descriptions``: key -> what the set is (default: :func:`describe_variant` of it);
    ``scores``: pooled ``SCORES_SCHEMA`` rows; ``graphs``: ``text`` + graph columns for
    every candidate text (may be None when the reference is not usable); ``models``:
    ``model_accuracy_table`` rows or None."""
    variants = {k: prepare_candidates(v, f"candidates ({k})") for k, v in variants.items()}
    given = dict(descriptions or {})
    infos = {}
    for key, frame in variants.items():
        info = given.get(key) or describe_variant(frame)
        infos[key] = VariantInfo(key, info.label, info.balanced, info.note)
    blind, notes = blind_table(variants, scores, scorers, tie_policy)
    order_blind = order_blind_table(variants)
    names = list(variants)
    items = composition = seen = labels = buckets = None
    familiarity_scores = pl.DataFrame(schema=SCORES_SCHEMA)
    if reference.usable:
        if graphs is None:
            raise ValueError("audit: graphs of the candidate texts are needed for BindSplit")
        items = bindsplit_items(variants, graphs, counts, reference.name, min_count)
        composition = composition_table(items, names)
        seen = seen_share_table(items, names)
        labels = binding_label_table(items, names)
        buckets = bucket_table(items, names)
        familiarity_scores = binding_familiarity_scores(graphs, counts["bindings"])
        if not int(items["pos_bucket"].is_not_null().sum()):
            notes.append(
                "the parser found no (attribute, object) binding in any positive caption: "
                "every item is 'no_binding' in BindSplit"
            )
    present = [s for s in familiarity_scorers if s in set(blind["scorer"].to_list())]
    missing = [s for s in familiarity_scorers if s not in present]
    if missing:
        notes.append(f"familiarity scorer(s) {missing} not among the scores: left out")
    rules = sorted(familiarity_scores["scorer"].unique().to_list())
    familiarity = familiarity_table(
        variants,
        pl.concat([scores.select(list(SCORES_SCHEMA)), familiarity_scores]),
        rules,
        present,
        models,
        tie_policy,
    )
    return AuditTables(
        reference,
        blind,
        order_blind,
        items,
        composition,
        seen,
        labels,
        familiarity,
        notes,
        tie_policy,
        min_count,
        buckets,
        infos,
    )
