"""The tables' vocabulary: the values that rows of every stage's tables carry.

One home for split labels, negative types and metric names, beside ``contracts`` (which
names the columns). A stage that writes one of these values and the report that reads it
take it from here; adding a negative type or a metric starts with one row below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

# ------------------------------------------------------------------------ cells

ALL = "all"  # a cell over every split / negative type
CHANCE = "chance"  # the model column of a chance row
MACRO = "macro"  # a cell averaged over negative types
TIE_POLICY = "tie_counts_as_wrong"

# ----------------------------------------------------------------------- splits

# CREPE systematicity: seen compounds, unseen compounds, unseen atoms
SC, UC, UA = "SC", "UC", "UA"
CREPE_SPLITS: tuple[str, ...] = (SC, UC, UA)
NO_COMPOUND = "no_compound"  # CREPE: an item without a compound has no split

# BindSplit: a binding's label, a sample's bucket (its labels), the bucket's split
PERFECT, CLOSE, NONE = "perfect", "close", "none"
LABELS: tuple[str, ...] = (PERFECT, CLOSE, NONE)
BUCKETS: tuple[str, ...] = (
    "perfect",
    "close",
    "none",
    "perfect+close",
    "perfect+none",
    "close+none",
    "perfect+close+none",
)
SEEN, MIXED, UNSEEN = "seen", "mixed", "unseen"
BINDSPLIT_SPLITS: tuple[str, ...] = (SEEN, MIXED, UNSEEN)
RULES: dict[str, frozenset[str]] = {
    "strict": frozenset({PERFECT}),
    "loose": frozenset({PERFECT, CLOSE}),
}
NO_BINDING = "no_binding"  # BindSplit: a text without an attribute-object binding

# Ground truth of a generated world: items with / without a held-out compound
HELD_IN, HELD_OUT = "held_in", "held_out"

# An evaluated item's split when its splits table has none for it / lacks it
NO_SPLIT = "no_split"
NOT_IN_SPLITS = "not_in_splits"

# Canonical split order (tables and tests); other split names follow alphabetically.
SPLIT_ORDER: tuple[str, ...] = (*CREPE_SPLITS, *BINDSPLIT_SPLITS, HELD_IN, HELD_OUT)
# The split each comparison of a split table is made against.
REFERENCE_SPLITS: tuple[str, ...] = (SC, SEEN, HELD_IN)

# --------------------------------------------------------------- negative types

FAMILIES: tuple[str, ...] = ("atom", "comp", "swap", "neg", "replace", "add")
TARGETS: tuple[str, ...] = ("obj", "att", "rel")
UNLABELLED = "unlabelled"  # the type of an item whose family is null (two-image sets)


@dataclass(frozen=True)
class NegativeType:
    """One kind of hard negative: ``family`` (how the text changes) x ``target`` (what)."""

    family: str
    target: str | None
    sugarcrepe: str | None = None  # SugarCrepe's subset name, where SugarCrepe has the type

    @property
    def name(self) -> str:
        return negative_type_name(self.family, self.target)


# In display order: SugarCrepe's seven, then CREPE's.
NEGATIVE_TYPES: tuple[NegativeType, ...] = (
    NegativeType("replace", "obj", "replace_obj"),
    NegativeType("replace", "att", "replace_att"),
    NegativeType("replace", "rel", "replace_rel"),
    NegativeType("swap", "obj", "swap_obj"),
    NegativeType("swap", "att", "swap_att"),
    NegativeType("add", "obj", "add_obj"),
    NegativeType("add", "att", "add_att"),
    NegativeType("atom", "obj"),
    NegativeType("atom", "att"),
    NegativeType("atom", "rel"),
    NegativeType("comp", "att"),
    NegativeType("comp", "rel"),
    NegativeType("swap", None),
    NegativeType("neg", "att"),
    NegativeType("neg", "rel"),
    NegativeType("neg", None),
)
# SugarCrepe's subset name -> (family, target)
SUGARCREPE_TYPES: dict[str, tuple[str, str]] = {
    t.sugarcrepe: (t.family, t.target or "") for t in NEGATIVE_TYPES if t.sugarcrepe
}


def negative_type_name(family: str, target: str | None) -> str:
    """``family_target``, or ``family`` alone when the target is null."""
    return family if target is None else f"{family}_{target}"


def negative_type(family: pl.Expr, target: pl.Expr) -> pl.Expr:
    """``negative_type_name`` as a polars expression."""
    return (
        pl.when(target.is_null())
        .then(family)
        .otherwise(pl.concat_str(family, target, separator="_"))
    )


# ------------------------------------------------------ blind-attack certificates

AS_GENERATED, DEBIASED = "as_generated", "debiased"  # a benchmark's variants
# A type is at chance when every attack is at most chance + CERTIFICATE_MARGIN with its 95 %
# interval covering chance; a type with fewer pairs than CERTIFICATE_MIN_PAIRS is reported,
# not certified.
CERTIFICATE_MARGIN = 0.05
CERTIFICATE_MIN_PAIRS = 50
AT_CHANCE, HACKABLE = "at chance", "hackable"
TOO_FEW, BY_DESIGN = "not certified: too few pairs", "balanced by design"


def above_chance(chance: float | pl.Expr = 0.5, margin: float = CERTIFICATE_MARGIN) -> pl.Expr:
    """An attack's row (accuracy, ci_low) beats chance: by more than the margin, or with
    its interval above it."""
    return (pl.col("accuracy") > chance + margin) | (pl.col("ci_low") > chance)


def below_chance(chance: float | pl.Expr = 0.5) -> pl.Expr:
    """An attack's row is reliably below chance (its texts still tell the two apart)."""
    return pl.col("ci_high") < chance


# ---------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metric:
    """A metric a benchmark's table reports (``metric`` column; ``_micro`` / ``_macro``
    suffixes name the average). ``chance``: how its chance row is had."""

    name: str
    chance: str
    higher_is_better: bool = True


# In display order (the all-benchmarks table's columns).
METRICS: tuple[Metric, ...] = (
    Metric("R@1", "1 / candidates in the set"),
    Metric("accuracy", "1 / candidates (1/2 for a pair)"),
    Metric("i2t_R@1", "K / texts in the gallery"),
    Metric("t2i_R@1", "K / images in the gallery"),
    Metric("text_score", "1/4 (Winoground)"),
    Metric("image_score", "1/4 (Winoground)"),
    Metric("group_score", "1/6 (Winoground)"),
    Metric("itt_accuracy", "1/3 (SugarCrepe++)"),
    Metric("tot_accuracy", "1/3 (SugarCrepe++)"),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
TWO_IMAGE_METRICS: tuple[str, ...] = ("text_score", "image_score", "group_score")
TWO_POSITIVE_METRICS: tuple[str, ...] = ("itt_accuracy", "tot_accuracy")


def metric_order(metric: str) -> tuple[int, str]:
    """Sort key: the ``METRICS`` order (``_micro`` ignored), unknown metrics last by name."""
    name = metric.removesuffix("_micro")
    return (METRIC_NAMES.index(name) if name in METRIC_NAMES else len(METRIC_NAMES), name)


def known_first(values: Sequence[str], known: Sequence[str]) -> list[str]:
    """``values`` (distinct) in ``known``'s order, then the rest alphabetically."""
    present = set(values)
    first = [v for v in known if v in present]
    return first + sorted(present - set(first))
