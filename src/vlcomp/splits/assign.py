"""Split assignment per (evaluation set, training corpus): CREPE and BindSplit.

A unit (atom, compound, binding) is *seen* when its training count (caption document
frequency, see ``counts``) is at least ``min_count`` (default 1).

CREPE systematicity (Ma et al., CVPR 2023, §3.2), per item, over the item's graph:

- ``UA`` (Unseen Atoms): some atom of the item (object, attribute or relation) is unseen;
- ``UC`` (Unseen Compounds): every atom is seen and at least one compound is unseen;
- ``SC`` (Seen Compounds): every atom and every compound is seen.

An item may hold several compounds; the rules above quantify over all of them (one unseen
compound makes the item UC). CREPE's test sets only hold items with at least one compound:
an item with none gets no split (null) and is reported as ``no_compound``.

BindSplit (Peng et al., 2026; the exact rules are not public, so they are defined here).
Each distinct (attribute, object) binding of a text gets a label from the training
bindings table: ``perfect`` when seen as a perfect binding (``perfect_count >= min_count``),
``close`` (close-only) when seen only as a close binding (``close_count >= min_count``),
else ``none``. A *sample* is an item's positive text together with its attribute-swapped
negative(s), when given; its bindings are those of both texts (an item with several
negatives pools them all). The sample's *bucket* is the set of labels that occur among its
bindings, one of the seven non-empty subsets of {perfect, close, none}, written in that
order and joined by "+" ("perfect", "perfect+close", ..., "perfect+close+none"). A bucket
collapses to a split under a rule that says which labels count as seen:

- STRICT: only ``perfect`` is seen;
- LOOSE: ``perfect`` and ``close`` are seen;

and the split is ``seen`` when every binding is seen, ``unseen`` when none is, else
``mixed``. Texts without any binding get no bucket and no split (``no_binding``). The same
is computed for the positive and the negative side alone (``pos_*``, ``neg_*``), which gives
the positive/negative overlap asymmetry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA
from vlcomp.counts.counts import COUNT_UNIT, read_counts, read_totals
from vlcomp.counts.units import ATOM_KINDS, COMPOUND_KINDS, GraphUnits, graph_units
from vlcomp.io import write_parquet
from vlcomp.text import TEXT_LAYER_VERSION as NORMALIZATION_VERSION
from vlcomp.text import normalise_or_none
from vlcomp.text.lemma import load_lemmatizer
from vlcomp.vocabulary import (
    BINDSPLIT_SPLITS,
    BUCKETS,
    CLOSE,
    CREPE_SPLITS,
    LABELS,
    MIXED,
    NO_BINDING,
    NO_COMPOUND,
    NONE,
    PERFECT,
    RULES,
    SC,
    SEEN,
    UA,
    UC,
    UNSEEN,
)

log = logging.getLogger(__name__)

Binding = tuple[str, str]  # (attribute, object lemma), normalized

_BINDING_STRUCT = pl.Struct({"attr": pl.String, "obj_lemma": pl.String, "label": pl.String})
ASSIGNMENTS_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "corpus": pl.String,
    "n_atoms": pl.Int64,
    "n_compounds": pl.Int64,
    "unseen_atoms": pl.List(pl.Struct({"kind": pl.String, "value": pl.String})),
    "unseen_compounds": pl.List(pl.Struct({"kind": pl.String, "parts": pl.List(pl.String)})),
    "crepe_split": pl.String,  # SC | UC | UA | null (no compound)
    "pos_bindings": pl.List(_BINDING_STRUCT),
    "neg_bindings": pl.List(_BINDING_STRUCT),  # null: the item has no negative
    "pos_bucket": pl.String,
    "neg_bucket": pl.String,
    "bucket": pl.String,  # of the sample (positive + negatives)
    "split_strict": pl.String,
    "split_loose": pl.String,
    "pos_split_strict": pl.String,
    "pos_split_loose": pl.String,
    "neg_split_strict": pl.String,
    "neg_split_loose": pl.String,
}

SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "corpus": pl.String,
    "section": pl.String,
    "rule": pl.String,  # strict | loose (BindSplit sections), else null
    "side": pl.String,  # sample | positive | negative (BindSplit sections), else null
    "split": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Int64,  # the count the value is taken over (denominator of a share)
}


# ------------------------------------------------------------------ pure definitions


def crepe_split(atoms_seen: Iterable[bool], compounds_seen: Iterable[bool]) -> str | None:
    """CREPE split of one item from the seen flags of its atoms and compounds."""
    atoms, compounds = list(atoms_seen), list(compounds_seen)
    if not compounds:
        return None
    if not all(atoms):
        return UA
    return SC if all(compounds) else UC


def binding_label(perfect_count: int, close_count: int, min_count: int = 1) -> str:
    """perfect / close (close-only) / none for one binding's training counts."""
    if perfect_count >= min_count:
        return PERFECT
    return CLOSE if close_count >= min_count else NONE


def bucket_of(labels: Iterable[str]) -> str | None:
    """The bucket (set of labels present, in LABELS order) or None without bindings."""
    present = set(labels)
    unknown = present - set(LABELS)
    if unknown:
        raise ValueError(f"unknown binding label(s) {sorted(unknown)}")
    return "+".join(label for label in LABELS if label in present) or None


def collapse(bucket: str | None, rule: str) -> str | None:
    """seen / mixed / unseen for a bucket under the STRICT or LOOSE rule."""
    if rule not in RULES:
        raise ValueError(f"unknown BindSplit rule {rule!r}; expected one of {sorted(RULES)}")
    if bucket is None:
        return None
    labels = set(bucket.split("+"))
    seen = labels & RULES[rule]
    if seen == labels:
        return SEEN
    return MIXED if seen else UNSEEN


BindingCounts = Mapping[Binding, tuple[int, int]] | Callable[[Binding], tuple[int, int]]


@dataclass(frozen=True)
class BindSplitSample:
    positive_labels: dict[Binding, str]
    negative_labels: dict[Binding, str] | None
    positive_bucket: str | None
    negative_bucket: str | None
    bucket: str | None

    def split(self, rule: str, side: str = "sample") -> str | None:
        bucket = {
            "sample": self.bucket,
            "positive": self.positive_bucket,
            "negative": self.negative_bucket,
        }[side]
        return collapse(bucket, rule)


def bindsplit_sample(
    positive: Iterable[Binding],
    negative: Iterable[Binding] | None,
    counts: BindingCounts,
    min_count: int = 1,
) -> BindSplitSample:
    """BindSplit labels and buckets of one sample.

    ``positive``/``negative``: (attribute, object) bindings of the two texts (normalize
    them with ``normalize_binding`` or take them from ``graph_bindings``); ``negative`` is
    None when the sample has no negative. ``counts`` maps a binding to its training
    (perfect_count, close_count), as a mapping (missing: unseen) or a function.
    """

    def lookup(b: Binding) -> tuple[int, int]:
        if callable(counts):
            return counts(b)
        return counts.get(b, (0, 0))

    def labels(bindings: Iterable[Binding]) -> dict[Binding, str]:
        return {b: binding_label(*lookup(b), min_count=min_count) for b in sorted(set(bindings))}

    pos = labels(positive)
    neg = labels(negative) if negative is not None else None
    return BindSplitSample(
        positive_labels=pos,
        negative_labels=neg,
        positive_bucket=bucket_of(pos.values()),
        negative_bucket=bucket_of(neg.values()) if neg is not None else None,
        bucket=bucket_of([*pos.values(), *(neg.values() if neg else [])]),
    )


def normalize_binding(attr: str, obj: str) -> Binding:
    """A raw (attribute, object noun) pair as the bindings table keys it (the noun
    lemmatised by the parser's lemmatiser)."""
    a, o = normalise_or_none(attr), normalise_or_none(obj)
    o = load_lemmatizer().phrase(o) if o is not None else None
    if a is None or o is None:
        raise ValueError(f"blank binding ({attr!r}, {obj!r})")
    return a, o


def graph_bindings(
    graph: Mapping[str, Sequence[Mapping[str, object]]],
) -> list[tuple[Binding, bool]]:
    """((attr, obj_lemma), perfect) of one graph given as dicts (``objects``,
    ``attributes``), e.g. a negative's graph. Same rules as ``units.graph_units``."""

    nodes: dict[int, str] = {}
    for o in graph.get("objects") or []:
        name = normalise_or_none(o.get("lemma")) or normalise_or_none(o.get("name"))
        idx = o.get("idx")
        if name is not None and isinstance(idx, int):
            nodes.setdefault(idx, name)
    values: dict[int, set[str]] = {}
    for a in graph.get("attributes") or []:
        value, obj = normalise_or_none(a.get("value")), a.get("obj")
        if value is not None and isinstance(obj, int) and obj in nodes:
            values.setdefault(obj, set()).add(value)
    out = {((v, nodes[idx]), len(vs) == 1) for idx, vs in values.items() for v in vs}
    return sorted(out)


# ----------------------------------------------------------------- vectorized assignment


def _bucket_expr(p: pl.Expr, c: pl.Expr, n: pl.Expr) -> pl.Expr:
    joined = pl.concat_str(
        [
            pl.when(p).then(pl.lit(PERFECT)),
            pl.when(c).then(pl.lit(CLOSE)),
            pl.when(n).then(pl.lit(NONE)),
        ],
        separator="+",
        ignore_nulls=True,
    )
    return pl.when(joined == "").then(None).otherwise(joined)


def _collapse_expr(bucket: str, rule: str) -> pl.Expr:
    has = {label: pl.col(bucket).str.split("+").list.contains(label) for label in LABELS}
    seen_any = pl.any_horizontal([has[label] for label in RULES[rule]])
    unseen_any = pl.any_horizontal([has[label] for label in LABELS if label not in RULES[rule]])
    return (
        pl.when(pl.col(bucket).is_null())
        .then(None)
        .when(~unseen_any)
        .then(pl.lit(SEEN))
        .when(~seen_any)
        .then(pl.lit(UNSEEN))
        .otherwise(pl.lit(MIXED))
    )


def _side_bindings(units: GraphUnits, bindings: pl.DataFrame, min_count: int) -> pl.LazyFrame:
    """doc, bindings (sorted list of {attr, obj_lemma, label}), has_<label> flags."""
    label = (
        pl.when(pl.col("perfect_count").fill_null(0) >= min_count)
        .then(pl.lit(PERFECT))
        .when(pl.col("close_count").fill_null(0) >= min_count)
        .then(pl.lit(CLOSE))
        .otherwise(pl.lit(NONE))
    )
    return (
        units.decoded_bindings()
        .select("doc", "attr", "obj_lemma")
        .unique()
        .join(bindings.lazy(), on=["attr", "obj_lemma"], how="left")
        .with_columns(label.alias("label"))
        .sort("doc", "attr", "obj_lemma")
        .group_by("doc", maintain_order=True)
        .agg(
            pl.struct("attr", "obj_lemma", "label").alias("bindings"),
            *((pl.col("label") == lab).any().alias(f"has_{lab}") for lab in LABELS),
        )
    )


def _seen_units(
    units: GraphUnits, counts: Mapping[str, pl.DataFrame], min_count: int
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    seen = (pl.col("count").fill_null(0) >= min_count).alias("seen")
    atoms = units.decoded_atoms().join(counts["atoms"].lazy(), on=["kind", "value"], how="left")
    compounds = units.decoded_compounds().join(
        counts["compounds"].lazy(), on=["kind", "parts"], how="left"
    )
    return atoms.with_columns(seen), compounds.with_columns(seen)


def _read_items(items: pl.DataFrame | pl.LazyFrame, what: str) -> pl.DataFrame:
    frame = items.lazy().collect() if isinstance(items, pl.LazyFrame) else items
    missing = [c for c in ("item_id", *GRAPH_SCHEMA) if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}")
    if frame["item_id"].null_count():
        raise ValueError(f"{what}: null item_id")
    return frame


def assign(
    items: pl.DataFrame,
    counts: Mapping[str, pl.DataFrame],
    corpus: str,
    negatives: pl.DataFrame | None = None,
    min_count: int = 1,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Assignments (``ASSIGNMENTS_SCHEMA``, in item order) and the summary table.

    ``items``: item_id + graph columns (eval-items contract); ``counts``: the merged
    training tables (``counts.read_counts``); ``negatives``: item_id + graph columns, any
    number of rows per item (pooled), or None.
    """
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    items = _read_items(items, "items")
    dup = items["item_id"].is_duplicated()
    if dup.any():
        raise ValueError(f"items: duplicate item_id {items['item_id'].filter(dup)[0]!r}")
    base = items.select(pl.col("item_id").cast(pl.String)).with_row_index("_order")

    units = graph_units(items.lazy().with_columns(pl.col("item_id").cast(pl.String)), "item_id")
    atoms, compounds = _seen_units(units, counts, min_count)
    atom_stats = (
        atoms.sort("doc", "kind", "value")
        .group_by("doc", maintain_order=True)
        .agg(
            pl.len().alias("n_atoms"),
            pl.struct("kind", "value").filter(~pl.col("seen")).alias("unseen_atoms"),
        )
    )
    compound_stats = (
        compounds.sort("doc", "kind", "parts")
        .group_by("doc", maintain_order=True)
        .agg(
            pl.len().alias("n_compounds"),
            pl.struct("kind", "parts").filter(~pl.col("seen")).alias("unseen_compounds"),
        )
    )
    pos = _side_bindings(units, counts["bindings"], min_count)

    neg: pl.LazyFrame | None = None
    if negatives is not None:
        negatives = _read_items(negatives, "negatives")
        neg_ids = negatives.select(pl.col("item_id").cast(pl.String)).unique()
        unknown = neg_ids.join(base, on="item_id", how="anti")
        if unknown.height:
            raise ValueError(f"negatives: item_id {unknown['item_id'][0]!r} is not an item")
        neg_units = graph_units(
            negatives.lazy().with_columns(pl.col("item_id").cast(pl.String)), "item_id"
        )
        neg_bind = _side_bindings(neg_units, counts["bindings"], min_count)
        # An item with a negative row but no binding in it has an empty negative side.
        neg = (
            neg_ids.lazy()
            .rename({"item_id": "doc"})
            .join(neg_bind, on="doc", how="left")
            .with_columns(
                pl.col("bindings").fill_null(pl.lit([], dtype=pl.List(_BINDING_STRUCT))),
                *(pl.col(f"has_{lab}").fill_null(False) for lab in LABELS),
            )
        )

    frame = (
        base.lazy()
        .join(atom_stats, left_on="item_id", right_on="doc", how="left")
        .join(compound_stats, left_on="item_id", right_on="doc", how="left")
        .join(
            pos.rename({"bindings": "pos_bindings"}), left_on="item_id", right_on="doc", how="left"
        )
    )
    frame = frame.rename({f"has_{lab}": f"pos_has_{lab}" for lab in LABELS})
    if neg is not None:
        frame = frame.join(
            neg.rename(
                {"bindings": "neg_bindings", **{f"has_{x}": f"neg_has_{x}" for x in LABELS}}
            ),
            left_on="item_id",
            right_on="doc",
            how="left",
        )
    else:
        frame = frame.with_columns(
            pl.lit(None, pl.List(_BINDING_STRUCT)).alias("neg_bindings"),
            *(pl.lit(None, pl.Boolean).alias(f"neg_has_{lab}") for lab in LABELS),
        )

    def flag(side: str, lab: str) -> pl.Expr:
        return pl.col(f"{side}_has_{lab}").fill_null(False)

    frame = (
        frame.with_columns(
            pl.col("n_atoms").fill_null(0).cast(pl.Int64),
            pl.col("n_compounds").fill_null(0).cast(pl.Int64),
            pl.col("unseen_atoms").fill_null(pl.lit([], ASSIGNMENTS_SCHEMA["unseen_atoms"])),
            pl.col("unseen_compounds").fill_null(
                pl.lit([], ASSIGNMENTS_SCHEMA["unseen_compounds"])
            ),
            pl.col("pos_bindings").fill_null(pl.lit([], pl.List(_BINDING_STRUCT))),
            pl.lit(corpus, pl.String).alias("corpus"),
            _bucket_expr(*(flag("pos", lab) for lab in LABELS)).alias("pos_bucket"),
            _bucket_expr(*(flag("neg", lab) for lab in LABELS)).alias("neg_bucket"),
            _bucket_expr(*(flag("pos", lab) | flag("neg", lab) for lab in LABELS)).alias("bucket"),
        )
        .with_columns(
            pl.when(pl.col("n_compounds") == 0)
            .then(None)
            .when(pl.col("unseen_atoms").list.len() > 0)
            .then(pl.lit(UA))
            .when(pl.col("unseen_compounds").list.len() > 0)
            .then(pl.lit(UC))
            .otherwise(pl.lit(SC))
            .alias("crepe_split"),
            *(
                _collapse_expr(f"{prefix}bucket", rule).alias(f"{prefix}split_{rule}")
                for prefix in ("", "pos_", "neg_")
                for rule in RULES
            ),
        )
        .sort("_order")
    )
    assignments = frame.collect().select([pl.col(c).cast(t) for c, t in ASSIGNMENTS_SCHEMA.items()])
    summary = summarize(assignments, atoms.collect(), compounds.collect(), corpus)
    return assignments, summary


# ---------------------------------------------------------------------------- summary


def _rows(
    corpus: str,
    section: str,
    rows: Iterable[tuple[str | None, str | None, str, str, float | None, int]],
) -> list[dict[str, object]]:
    keys = ("rule", "side", "split", "metric", "value", "n")
    return [{"corpus": corpus, "section": section, **dict(zip(keys, r, strict=True))} for r in rows]


def _share(k: int, n: int) -> float | None:
    """k / n, or None (null in the table) when there is nothing to take a share of."""
    return k / n if n else None


def summarize(
    assignments: pl.DataFrame, atoms: pl.DataFrame, compounds: pl.DataFrame, corpus: str
) -> pl.DataFrame:
    """Long summary table (``SUMMARY_SCHEMA``) with the sections:

    - ``crepe_split_sizes``: items per CREPE split (and ``no_compound``), with shares of the
      included items;
    - ``crepe_unique``: distinct atoms per kind and compounds per kind among each split's
      items, and how many of them are unseen (CREPE Table 7 style);
    - ``bindsplit_buckets``: samples per bucket, for the sample and each side;
    - ``bindsplit_split_sizes``: samples per split and rule (and ``no_binding``);
    - ``bindsplit_asymmetry``: over samples with a negative and bindings on both sides, the
      share of positives vs negatives per split and rule, and ``seen_gap`` (positive minus
      negative share seen; BindSplit Fig. 3);
    - ``bindsplit_binding_labels``: share of positive and negative bindings per label.
    """
    rows: list[dict[str, object]] = []
    n_items = assignments.height
    split_col = assignments["crepe_split"]
    n_included = int(split_col.is_not_null().sum())
    sizes = []
    for split in CREPE_SPLITS:
        k = int((split_col == split).sum())
        sizes += [(None, None, split, "items", float(k), n_items)]
        sizes += [(None, None, split, "share", _share(k, n_included), n_included)]
    sizes.append((None, None, NO_COMPOUND, "items", float(n_items - n_included), n_items))
    rows += _rows(corpus, "crepe_split_sizes", sizes)

    split_of = assignments.select(pl.col("item_id").alias("doc"), "crepe_split").filter(
        pl.col("crepe_split").is_not_null()
    )
    unique_rows = []
    for unit, frame, kinds, key in (
        ("atoms", atoms, ATOM_KINDS, "value"),
        ("compounds", compounds, COMPOUND_KINDS, "parts"),
    ):
        joined = frame.join(split_of, on="doc", how="inner")
        for split in (*CREPE_SPLITS, "all"):
            part = joined if split == "all" else joined.filter(pl.col("crepe_split") == split)
            n_split = part["doc"].n_unique()
            for kind in kinds:
                sub = part.filter(pl.col("kind") == kind).select(key, "seen").unique()
                unique_rows += [
                    (None, None, split, f"unique_{unit}_{kind}", float(sub.height), n_split),
                    (
                        None,
                        None,
                        split,
                        f"unique_unseen_{unit}_{kind}",
                        float((~sub["seen"]).sum()),
                        n_split,
                    ),
                ]
    rows += _rows(corpus, "crepe_unique", unique_rows)

    bucket_rows = []
    for side, col in (("sample", "bucket"), ("positive", "pos_bucket"), ("negative", "neg_bucket")):
        values = assignments[col]
        n = int(values.is_not_null().sum())
        for bucket in BUCKETS:
            bucket_rows.append((None, side, bucket, "samples", float((values == bucket).sum()), n))
    rows += _rows(corpus, "bindsplit_buckets", bucket_rows)

    size_rows = []
    for rule in RULES:
        values = assignments[f"split_{rule}"]
        n = int(values.is_not_null().sum())
        for split in BINDSPLIT_SPLITS:
            k = int((values == split).sum())
            size_rows += [(rule, "sample", split, "samples", float(k), n_items)]
            size_rows += [(rule, "sample", split, "share", _share(k, n), n)]
        size_rows.append((rule, "sample", NO_BINDING, "samples", float(n_items - n), n_items))
    rows += _rows(corpus, "bindsplit_split_sizes", size_rows)

    paired = assignments.filter(
        pl.col("pos_bucket").is_not_null() & pl.col("neg_bucket").is_not_null()
    )
    asym_rows = []
    if paired.height:
        n = paired.height
        for rule in RULES:
            shares = {}
            for side, prefix in (("positive", "pos_"), ("negative", "neg_")):
                values = paired[f"{prefix}split_{rule}"]
                for split in BINDSPLIT_SPLITS:
                    shares[(side, split)] = _share(int((values == split).sum()), n)
                    asym_rows.append((rule, side, split, "share", shares[(side, split)], n))
            gap = shares[("positive", SEEN)] - shares[("negative", SEEN)]  # type: ignore[operator]
            asym_rows.append((rule, "positive-negative", SEEN, "seen_gap", gap, n))
    rows += _rows(corpus, "bindsplit_asymmetry", asym_rows)

    label_rows = []
    for side, col in (("positive", "pos_bindings"), ("negative", "neg_bindings")):
        labels = assignments.select(pl.col(col).explode().struct.field("label")).to_series()
        labels = labels.drop_nulls()
        for label in LABELS:
            k = int((labels == label).sum())
            label_rows.append(
                (None, side, label, "share_bindings", _share(k, labels.len()), labels.len())
            )
    rows += _rows(corpus, "bindsplit_binding_labels", label_rows)
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA)


# ---------------------------------------------------------------------------- job level


def assign_splits(
    items: Path,
    counts_dir: Path,
    out: Path,
    summary_out: Path,
    corpus: str,
    *,
    negatives: Path | None = None,
    min_count: int = 1,
) -> None:
    """Assign CREPE and BindSplit splits to the items of one eval set for one corpus.

    ``items``: eval items Parquet (item_id + graph columns); ``counts_dir``: the corpus's
    merged counts (``merge_counts``); ``negatives``: optional Parquet of negative graphs
    (item_id + graph columns). Writes the assignments (``ASSIGNMENTS_SCHEMA``) to ``out``
    and the summary (``SUMMARY_SCHEMA``) to ``summary_out``.
    """
    totals, parsers = read_totals(Path(counts_dir))
    counts = read_counts(Path(counts_dir))
    item_frame = pl.read_parquet(items)
    neg_frame = pl.read_parquet(negatives) if negatives is not None else None
    assignments, summary = assign(item_frame, counts, corpus, neg_frame, min_count)
    meta = {
        "vlcomp.corpus": corpus,
        "vlcomp.min_count": str(min_count),
        "vlcomp.count_unit": COUNT_UNIT,
        "vlcomp.normalization": NORMALIZATION_VERSION,
        "vlcomp.training_captions": str(totals["n_captions"]),
        "vlcomp.parsers": json.dumps(parsers),
        "vlcomp.negatives": "yes" if negatives is not None else "no",
    }
    write_parquet(assignments, out, meta)
    write_parquet(summary, summary_out, meta)
    sizes = assignments["crepe_split"].fill_null(NO_COMPOUND).value_counts(sort=True).rows()
    log.info("%s / %s: %d items, CREPE %s", items, corpus, assignments.height, dict(sizes))
