"""BindSplit checks: the reference corpus's status, the BindSplit assignment of every item
(``vlcomp.splits.assign.assign``, not reimplemented) and the tables built from it
(composition, seen shares, binding labels, buckets); see ``checks``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.refine.candidates import ITEM_KEY
from vlcomp.splits.assign import assign
from vlcomp.vocabulary import ALL, BINDSPLIT_SPLITS, BUCKETS, LABELS, NO_BINDING, RULES, SEEN

from .variants import type_expr, variant_sorted

SIDES: dict[str, str] = {"positive": "pos_", "negative": "neg_", "sample": ""}
COMPOSITION: tuple[str, ...] = (*BINDSPLIT_SPLITS, NO_BINDING)
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
REFERENCE_SCHEMA: dict[str, pl.DataType] = {
    "reference": pl.String,
    "n_captions": pl.Int64,
    "n_bindings": pl.Int64,  # distinct (attribute, object) bindings in the counts
    "n_atoms": pl.Int64,
    "min_captions": pl.Int64,
    "usable": pl.Boolean,
    "warning": pl.String,
}


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
    return variant_sorted(frame, variants, then=["benchmark", "item_id"])


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
    return variant_sorted(frame, dict.fromkeys(variants), then=keys).drop(keys)


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
