"""The checks of a benchmark audit, as pure functions of tables (no files, no parser), and
:func:`audit_tables`, which runs them all.

Every table has a ``variant`` column (which candidate set) and a ``type`` column (the
negative type, ``all``, ``macro``): see ``variants``, which also says what each candidate
set is (:func:`describe_variant`).

Checks, one module per kind:

``blind_checks``
    - :func:`blind_table`: blind (text-only) accuracy of each scorer per type; an item is
      correct when its positive scores strictly above every negative (ties count as wrong
      under the default policy, see ``vlcomp.refine.blind``).
    - :func:`order_blind_table`: pairs whose positive and negative are the same multiset of
      words (``vlcomp.refine.words``) and the resulting ceiling of any order-blind model.
      Such a model scores both texts of such a pair identically, so it must tie on the
      item: with ties counted wrong it can at best get every *other* item right, ceiling =
      1 - (items with a same-words negative) / items (for one negative per item: 1 -
      share); with ties broken at random it gets 1 / (1 + k) of an item with k same-words
      negatives, ceiling = mean 1 / (1 + k) (for pairs: 1 - share / 2).
``bindsplit``
    - :func:`reference_status`: whether the reference corpus is large enough to audit
      against.
    - :func:`bindsplit_items` (``vlcomp.splits.assign.assign``: the labels, buckets and
      STRICT / LOOSE splits of the splits stage, not reimplemented) and the tables built
      from it: :func:`composition_table` (seen / mixed / unseen / no_binding per side,
      BindSplit Table 1), :func:`seen_share_table` (positives vs negatives whose bindings
      are all seen, BindSplit Fig. 3), :func:`binding_label_table` (perfect / close / none
      share of the bindings), :func:`bucket_table` (the seven buckets per side).
``familiarity``
    - :func:`binding_familiarity_scores` + :func:`familiarity_table`: "pick the more
      familiar caption" rules (binding counts in the reference corpus; the n-gram scorer)
      next to the models' accuracies (:func:`model_accuracy_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from vlcomp.contracts import SCORES_SCHEMA
from vlcomp.refine.blind import TiePolicy

from .bindsplit import (
    ReferenceStatus,
    binding_label_table,
    bindsplit_items,
    bucket_table,
    composition_table,
    seen_share_table,
)
from .blind_checks import blind_table, order_blind_table
from .familiarity import binding_familiarity_scores, familiarity_table
from .variants import VariantInfo, describe_variant, prepare_candidates


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
