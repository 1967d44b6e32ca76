"""HN-ATOM candidates of the systematicity negatives: the per item plan (``plan_item``:
locate the item's compounds, pick each family's target compound and build the atom edits of
its positions, unscored) and the choice of an item's HN-ATOM negatives once the edits are
scored (``select_atom``). HN-COMP combines the same atom edits (``compounds``)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlcomp.negatives import lexicon
from vlcomp.negatives.wordnet_foils import Foil, FoilFinder, Rejection

from .caption import Mention, Token, atom_text, locate, tokenize
from .graph import CompoundKey, Graph, SceneFacts, foiled_claim, parse_graph
from .settings import ATOM, COMP, COMP_PAIRS, FAMILIES, META_COMPOUND, POSITION_KIND, POSITIONS


@dataclass(frozen=True)
class AtomCandidate:
    position: str
    foil: Foil
    original: str
    text: str


@dataclass
class Target:
    """A located compound of an item and the atom edits of each of its positions."""

    mention: Mention
    candidates: dict[str, list[AtomCandidate]]  # position -> candidates (foil order)
    outcomes: dict[str, str]  # position -> "ok" | rejection reason | foils_true_in_image


@dataclass
class ItemPlan:
    """One item's target per family, or why a family has none (unscored)."""

    row: dict[str, Any]
    failure: dict[str, str] = field(default_factory=dict)  # family -> reason
    targets: dict[str, Target] = field(default_factory=dict)  # family -> target
    position_order: tuple[str, ...] = ()


def _item_rng(seed: int, item_id: str) -> np.random.Generator:
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def _target(
    text: str,
    tokens: Sequence[Token],
    graph: Graph,
    mention: Mention,
    finder: FoilFinder,
    facts: SceneFacts,
    max_foils: int,
) -> Target:
    compound = mention.compound
    candidates: dict[str, list[AtomCandidate]] = {}
    outcomes: dict[str, str] = {}
    for index, position in enumerate(POSITIONS[compound.kind]):
        kind = POSITION_KIND[position]
        original = compound.parts[index]
        found = finder.foils(kind, original, graph.atoms[kind])
        candidates[position] = []
        if isinstance(found, Rejection):
            outcomes[position] = found.reason
            continue
        seen = {text}
        for foil in found:
            if facts.holds(foiled_claim(graph, compound, index, foil.value)):
                continue
            edited = atom_text(text, tokens, mention, position, foil.value)
            if edited in seen:
                continue
            seen.add(edited)
            candidates[position].append(AtomCandidate(position, foil, original, edited))
            if len(candidates[position]) >= max_foils:
                break
        outcomes[position] = "ok" if candidates[position] else "foils_true_in_image"
    return Target(mention, candidates, outcomes)


def _comp_capacity(target: Target, comp_foils: int) -> int:
    pairs = COMP_PAIRS[target.mention.compound.kind]
    return sum(
        min(comp_foils, len(target.candidates[a])) * min(comp_foils, len(target.candidates[b]))
        for a, b in pairs
    )


def _no_foil_reason(target: Target, positions: Iterable[str]) -> str:
    reasons = Counter(target.outcomes[p] for p in positions if target.outcomes[p] != "ok")
    if not reasons:
        return "too_few_negatives"
    top = max(reasons.values())
    return "no_foil:" + min(r for r, c in reasons.items() if c == top)


def plan_item(
    row: Mapping[str, Any],
    finder: FoilFinder,
    facts: SceneFacts,
    settings: Mapping[str, Any],
    seed: int,
    unseen: set[CompoundKey] | None = None,
) -> ItemPlan:
    """Locate the item's compounds, pick the targets and build the atom edits (unscored)."""
    plan = ItemPlan(dict(row))
    graph = parse_graph(row.get("objects"), row.get("attributes"), row.get("relations"))
    text = row["text"] or ""
    tokens = tokenize(text)
    if not graph.compounds:
        plan.failure = dict.fromkeys(FAMILIES, "no_compound")
        return plan
    if settings["compounds"] == "single" and len(graph.compounds) != 1:
        plan.failure = dict.fromkeys(FAMILIES, "not_one_compound")
        return plan
    mentions, why = [], Counter()
    for compound in graph.compounds:
        if any(lexicon.is_meta_noun(graph.objects[i].atom) for i in compound.nodes):
            why[META_COMPOUND] += 1
            continue
        found = locate(text, tokens, graph, compound)
        if isinstance(found, str):
            why[found] += 1
        else:
            mentions.append(found)
    if not mentions:
        if why[META_COMPOUND] == len(graph.compounds):
            reason = META_COMPOUND
        elif why["compound_ambiguous"]:
            reason = "compound_ambiguous"
        else:
            reason = "compound_not_in_text"
        plan.failure = dict.fromkeys(FAMILIES, reason)
        return plan
    rng = _item_rng(seed, str(row["item_id"]))
    order = [mentions[k] for k in rng.permutation(len(mentions))]
    if unseen:
        order.sort(key=lambda m: m.compound.key not in unseen)  # stable: unseen first
    targets = [_target(text, tokens, graph, m, finder, facts, settings["max_foils"]) for m in order]
    atom_counts = [sum(len(c) for c in t.candidates.values()) for t in targets]
    comp_counts = [_comp_capacity(t, settings["comp_foils"]) for t in targets]
    for family, counts, need in (
        (ATOM, atom_counts, settings["atom_negatives"]),
        (COMP, comp_counts, settings["comp_negatives"]),
    ):
        enough = [k for k, c in enumerate(counts) if c >= need]
        best = enough[0] if enough else int(np.argmax(counts))
        if counts[best] == 0:
            target = targets[0]
            positions = (
                POSITIONS[target.mention.compound.kind]
                if family == ATOM
                else {p for pair in COMP_PAIRS[target.mention.compound.kind] for p in pair}
            )
            plan.failure[family] = _no_foil_reason(target, positions)
            plan.targets[family] = target  # kept for the foil-level counts
        else:
            plan.targets[family] = targets[best]
    kind = plan.targets[ATOM].mention.compound.kind
    plan.position_order = tuple(POSITIONS[kind][k] for k in rng.permutation(len(POSITIONS[kind])))
    return plan


def select_atom(
    plan: ItemPlan,
    scores: Mapping[str, float],
    n: int,
    readable: Callable[[str], bool] = lambda _: True,
) -> list[AtomCandidate]:
    """The ``n`` best HN-ATOM edits: the positions take turns (``plan.position_order``),
    each position's edits best first (tier, then score); a repeated or unreadable text is
    passed over."""
    target = plan.targets[ATOM]
    queues = {
        p: sorted(cs, key=lambda c: (c.foil.tier, -scores[c.text], c.text))
        for p, cs in target.candidates.items()
    }
    chosen: list[AtomCandidate] = []
    texts: set[str] = set()
    while len(chosen) < n and any(queues.values()):
        for position in plan.position_order:
            if len(chosen) >= n:
                break
            while queues[position]:
                candidate = queues[position].pop(0)
                if candidate.text not in texts and readable(candidate.text):
                    chosen.append(candidate)
                    texts.add(candidate.text)
                    break
    return chosen
