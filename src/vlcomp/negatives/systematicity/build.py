"""HN-ATOM and HN-COMP retrieval sets of every eval item, with their failure accounting
(``build_systematicity_negatives``, pure; see ``vlcomp.negatives.systematicity``): the items
are planned (``atoms.plan_item``) against the facts of their image, every atom edit and then
every HN-COMP combination is scored, and each family's best negatives are chosen; whatever
an item lacks is counted by level, family and reason (``FAILURES_SCHEMA``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA, GRAPH_SCHEMA, conform
from vlcomp.negatives.context import ContextCheck
from vlcomp.negatives.wordnet_foils import FoilFinder, score_captions
from vlcomp.scorers.base import TextScorer

from .atoms import FoilBalance, ItemPlan, Target, plan_item, select_atom
from .compounds import CompCandidate, comp_candidates, select_comp
from .graph import CompoundKey, SceneFacts, parse_graph
from .settings import (
    ATOM,
    BENCHMARK,
    COMP,
    COMP_PAIRS,
    FAMILIES,
    POSITION_KIND,
    POSITIONS,
    resolve_settings,
)
from .tables import (
    FAILURES_SCHEMA,
    REGIONS_SCHEMA,
    Negative,
    SystematicityNegatives,
    atom_negative,
    candidate_rows,
    comp_negative,
    region_row,
)

Failures = Counter[tuple[str, str, str]]  # (level, family, reason) -> count


def _check_items(items: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in ("item_id", "image_id", "text", *GRAPH_SCHEMA) if c not in items.columns]
    if missing:
        raise ValueError(f"eval items: missing column(s) {missing} (EVAL_ITEMS_SCHEMA)")
    if items["item_id"].null_count():
        raise ValueError("eval items: null item_id")
    dup = items["item_id"].is_duplicated()
    if dup.any():
        raise ValueError(f"eval items: duplicate item_id {items['item_id'].filter(dup)[0]!r}")
    for column in ("region_id", "x", "y", "width", "height"):
        if column not in items.columns:
            items = items.with_columns(pl.lit(None, EVAL_ITEMS_SCHEMA[column]).alias(column))
    return items


def build_systematicity_negatives(
    items: pl.DataFrame,
    finder: FoilFinder,
    scorer: TextScorer,
    settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    unseen: Mapping[str, set[CompoundKey]] | None = None,
    benchmark: str = BENCHMARK,
    context: ContextCheck | None = None,
) -> SystematicityNegatives:
    """HN-ATOM and HN-COMP candidates for every item (pure; see the package docstring).

    ``unseen``: eval item_id -> unseen compound keys ``(kind, parts)`` (from the split
    assignments), preferred as targets. ``benchmark``: the candidates' benchmark name.
    ``context``: pass over negatives identical to the positive within its context.
    """
    cfg = resolve_settings(settings)
    items = _check_items(items)
    plans = _plan_items(items.to_dicts(), finder, cfg, seed, unseen)
    _cap_recurrence(plans, cfg["max_recurrence"])
    scores, comp_by_item = _score(plans, scorer, cfg["comp_foils"])

    candidates: list[dict[str, Any]] = []
    regions: list[dict[str, Any]] = []
    failures: Failures = Counter()
    balance = FoilBalance(cfg["balance"], scores) if cfg["balance"] else None
    # where captions are one item per text, so is every text: a foil is neither another
    # item's foil nor any item's caption (a text held by two items is the positive of
    # 1+N pairs and the foil of one: "the text more items hold wins")
    taken: set[str] | None = None
    if cfg["max_recurrence"] == 1:
        taken = {plan.row["text"] or "" for plan in plans}
    for k, plan in enumerate(plans):
        for family in FAMILIES:
            target = plan.targets.get(family)
            if target is not None:
                _count_foils(failures, target, family)
            if family in plan.failure or target is None:
                failures[("item", family, plan.failure.get(family, "no_compound"))] += 1
                continue
            need = cfg[f"{family}_negatives"]
            comps = comp_by_item.get(k, [])
            negatives = _negatives(
                plan, family, comps, scores, need, context, failures, balance, taken
            )
            if not negatives or (len(negatives) < need and not cfg["allow_fewer"]):
                failures[("item", family, "too_few_negatives")] += 1
                continue
            if len(negatives) < need:
                failures[("kept_short", family, f"{len(negatives)}_of_{need}")] += 1
            candidates += candidate_rows(plan.row, family, target, negatives, cfg, seed, benchmark)
            regions.append(region_row(plan.row, family, target.mention.compound))

    failure_table = pl.DataFrame(
        [(lv, fam, reason, n) for (lv, fam, reason), n in sorted(failures.items())],
        schema=FAILURES_SCHEMA,
        orient="row",
    )
    return SystematicityNegatives(
        conform(
            pl.DataFrame(candidates, schema=CANDIDATES_SCHEMA), CANDIDATES_SCHEMA, "candidates"
        ),
        pl.DataFrame(regions, schema=REGIONS_SCHEMA),
        failure_table,
    )


def _plan_items(
    rows: Sequence[dict[str, Any]],
    finder: FoilFinder,
    cfg: Mapping[str, Any],
    seed: int,
    unseen: Mapping[str, set[CompoundKey]] | None,
) -> list[ItemPlan]:
    """Every item's plan (``plan_item``), against the facts of its image (the union of the
    graphs of the items with its image_id, when ``image_scope``; else its own graph)."""
    scenes: dict[str, SceneFacts] = {}
    for row in rows:
        key = str(row["image_id"]) if cfg["image_scope"] else f"item:{row['item_id']}"
        graph = parse_graph(row.get("objects"), row.get("attributes"), row.get("relations"))
        scenes.setdefault(key, SceneFacts()).add(graph)
    plans = []
    for row in rows:
        key = str(row["image_id"]) if cfg["image_scope"] else f"item:{row['item_id']}"
        plans.append(
            plan_item(
                row,
                finder,
                scenes[key],
                cfg,
                seed,
                (unseen or {}).get(str(row["item_id"])),
            )
        )
    return plans


RECURRING = "recurring_text"


def _cap_recurrence(plans: Sequence[ItemPlan], most: int) -> None:
    """Items past the first ``most`` (in item order) whose caption is the same text (case
    and spacing folded) fail as ``recurring_text`` (0: no cap): a caption that recurs as the
    positive of many items is a text a blind attack learns once and recognises everywhere."""
    if most < 1:
        return
    seen: Counter[str] = Counter()
    for plan in plans:
        if plan.failure.keys() >= set(FAMILIES):
            continue
        key = " ".join((plan.row["text"] or "").lower().split())
        seen[key] += 1
        if seen[key] > most:
            plan.failure = dict.fromkeys(FAMILIES, RECURRING)


def _score(
    plans: Sequence[ItemPlan], scorer: TextScorer, comp_foils: int
) -> tuple[dict[str, float], dict[int, list[CompCandidate]]]:
    """(text -> score, plan index -> HN-COMP candidates): every atom edit and its positive
    are scored, the HN-COMP candidates are built from the best ones, then scored in turn."""
    atom_texts = [
        *(plan.row["text"] or "" for plan in plans if set(FAMILIES) - plan.failure.keys()),
        *(
            c.text
            for plan in plans
            for family, target in plan.targets.items()
            if family not in plan.failure
            for cs in target.candidates.values()
            for c in cs
        ),
    ]
    scores = dict(score_captions(atom_texts, scorer)) if atom_texts else {}
    comp_by_item = {
        k: comp_candidates(plan, scores, comp_foils)
        for k, plan in enumerate(plans)
        if COMP not in plan.failure
    }
    comp_texts = [c.text for cs in comp_by_item.values() for c in cs]
    scores.update(score_captions(comp_texts, scorer) if comp_texts else {})
    return scores, comp_by_item


def _family_positions(target: Target, family: str) -> tuple[str, ...]:
    kind = target.mention.compound.kind
    if family == ATOM:
        return POSITIONS[kind]
    used = {p for pair in COMP_PAIRS[kind] for p in pair}
    return tuple(p for p in POSITIONS[kind] if p in used)


def _count_foils(failures: Failures, target: Target, family: str) -> None:
    """Count the foil look-ups of the family's positions of the target by atom kind and
    outcome (level ``foil``)."""
    for position in _family_positions(target, family):
        outcome = f"{POSITION_KIND[position]}/{target.outcomes[position]}"
        failures[("foil", family, outcome)] += 1


def _readable(
    context: ContextCheck | None, positive: str, passed: Counter[str]
) -> Callable[[str], bool]:
    """Whether a negative text differs from ``positive`` within the context; one that does
    not is counted in ``passed`` under the check's reason."""

    def readable(text: str) -> bool:
        if context is None or not context.identical(positive, text):
            return True
        passed[context.reason] += 1
        return False

    return readable


def _negatives(
    plan: ItemPlan,
    family: str,
    comps: Sequence[CompCandidate],
    scores: Mapping[str, float],
    need: int,
    context: ContextCheck | None,
    failures: Failures,
    balance: FoilBalance | None = None,
    taken: set[str] | None = None,
) -> list[Negative]:
    """The ``need`` best negatives of the family's retrieval set (``comps``: the item's
    HN-COMP candidates); those passed over for the context are counted (level
    ``negative``)."""
    passed: Counter[str] = Counter()
    readable = _readable(context, plan.row["text"], passed)
    if family == ATOM:
        chosen_atoms = select_atom(plan, scores, need, readable, balance, taken)
        negatives = [atom_negative(c) for c in chosen_atoms]
    else:
        chosen = select_comp(comps, scores, need, plan.row["text"], readable)
        negatives = [comp_negative(c, plan.targets[family].mention.compound) for c in chosen]
    for reason, count in passed.items():
        failures[("negative", family, reason)] += count
    return negatives
