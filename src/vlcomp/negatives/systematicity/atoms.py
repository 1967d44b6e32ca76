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
from vlcomp.text import distinct_words

from .caption import Mention, Token, atom_text, locate, tokenize
from .graph import CompoundKey, Graph, SceneFacts, foiled_claim, parse_graph
from .settings import (
    ATOM,
    BALANCES,
    COMP,
    COMP_PAIRS,
    FAMILIES,
    META_COMPOUND,
    POSITION_KIND,
    POSITION_TARGET,
    POSITIONS,
)


@dataclass(frozen=True)
class AtomCandidate:
    position: str
    foil: Foil
    original: str
    text: str
    compound: tuple[str, ...] = ()  # the positive's compound (parts)
    foiled: tuple[str, ...] = ()  # the compound the foil claims instead


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
    scene_foils: bool = False,
) -> Target:
    """The atom edits of each position of ``mention``'s compound. ``scene_foils``: an atom
    of the item's own graph may be a foil (where the foiled compound is not true of the
    image), so that a foil can reuse a word the caption holds."""
    compound = mention.compound
    candidates: dict[str, list[AtomCandidate]] = {}
    outcomes: dict[str, str] = {}
    for index, position in enumerate(POSITIONS[compound.kind]):
        kind = POSITION_KIND[position]
        original = compound.parts[index]
        found = finder.foils(kind, original, () if scene_foils else graph.atoms[kind])
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
            foiled = (*compound.parts[:index], foil.value, *compound.parts[index + 1 :])
            candidates[position].append(
                AtomCandidate(position, foil, original, edited, compound.parts, foiled)
            )
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
    targets = [
        _target(text, tokens, graph, m, finder, facts, settings["max_foils"],
                settings["scene_foils"])
        for m in order
    ]  # fmt: skip
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


class FoilBalance:
    """Which foil a position takes, so that over a benchmark the chosen foils carry no
    whole-text tell (``vlcomp.blind.families``). Each balance keeps running ledgers, per
    target (att, obj, rel), over the foils chosen so far:

    - ``distinct_words``: the sum of distinct(foil) - distinct(positive). A foil brings in a
      word; where it is new to the caption the foil has one distinct word more, where it
      repeats one ("a cross left of a cross" from "a cross left of a circle") one fewer, and
      a positive that repeats a word gets a foil with one more whatever replaces it. Left
      alone the foil is the text with more distinct words far more often than not.
    - ``atoms``: per atom, (pairs whose foil brings it in) - (pairs whose positive holds it
      where the foil changes it). Left alone an atom of the eval captions that is rare in
      training (a held-out atom: never a foil) is always on the positive side, and a common
      one mostly on the foil side: a word prior.
    - ``compounds``: the same per compound (the positive's, the one the foil claims): a
      compound only ever on the positive side is a tell as plain as an atom's.
    - ``plausibility``: the sum of sign(score(foil) - score(positive)), the generator's own
      LM scores. Foils are ranked most plausible first while a systematicity positive holds
      a compound training never saw, so left alone the foil is the more probable text.

    A candidate's move is the change it makes to the sum of the ledgers' absolute values;
    the next foil is the best-ranked one of least move, where that move is at most 0 (a
    foil that would unbalance the ledgers waits until the item would otherwise go short,
    ``away``). Ledgers run in the order the foils are chosen, so a fixed order of items
    gives fixed choices."""

    def __init__(self, balances: Sequence[str], scores: Mapping[str, float] | None = None):
        unknown = sorted(set(balances) - set(BALANCES))
        if unknown:
            raise ValueError(f"unknown foil balance(s) {unknown}; known: {list(BALANCES)}")
        if "plausibility" in balances and scores is None:
            raise ValueError("the plausibility balance needs the generator's scores")
        self.balances, self.scores = tuple(balances), scores or {}
        self.ledger: Counter[tuple[str, ...]] = Counter()

    def _changes(self, position: str, positive: str, candidate: AtomCandidate):
        """(ledger key, change) of choosing ``candidate``."""
        target = POSITION_TARGET[position]
        if "distinct_words" in self.balances:
            delta = distinct_words(candidate.text) - distinct_words(positive)
            yield ("distinct_words", target), delta
        if "atoms" in self.balances:
            yield ("atoms", target, candidate.foil.value), 1
            yield ("atoms", target, candidate.original), -1
        if "compounds" in self.balances and candidate.compound:
            yield ("compounds", target, *candidate.foiled), 1
            yield ("compounds", target, *candidate.compound), -1
        if "plausibility" in self.balances:
            gap = self.scores[candidate.text] - self.scores[positive]
            yield ("plausibility", target), int(np.sign(gap))

    def move(self, position: str, positive: str, candidate: AtomCandidate) -> int:
        """How much choosing ``candidate`` changes the sum of the ledgers' absolute values."""
        after: Counter[tuple[str, ...]] = Counter()
        for key, change in self._changes(position, positive, candidate):
            after[key] += change
        return sum(abs(self.ledger[k] + c) - abs(self.ledger[k]) for k, c in after.items())

    def pick(
        self, position: str, positive: str, queue: Sequence[AtomCandidate], away: bool = True
    ) -> int | None:
        """The index in ``queue`` (best first) of the foil to take next; None when every
        foil moves the ledgers away from balance and ``away`` is false."""
        if not queue:
            return 0
        moves = [self.move(position, positive, c) for c in queue]
        least = min(moves)
        return moves.index(least) if away or least <= 0 else None

    def record(self, position: str, positive: str, chosen: AtomCandidate) -> None:
        for key, change in self._changes(position, positive, chosen):
            self.ledger[key] += change

    def surplus(self, balance: str, target: str) -> int:
        """The ``distinct_words`` or ``plausibility`` ledger of ``target``."""
        return self.ledger[(balance, target)]


def select_atom(
    plan: ItemPlan,
    scores: Mapping[str, float],
    n: int,
    readable: Callable[[str], bool] = lambda _: True,
    balance: FoilBalance | None = None,
    taken: set[str] | None = None,
) -> list[AtomCandidate]:
    """The ``n`` best HN-ATOM edits: the positions take turns (``plan.position_order``),
    each position's edits best first (tier, then score), or the one ``balance`` picks; a
    repeated or unreadable text is passed over, and so is one in ``taken`` (the items'
    captions and the foils of the items before, which the chosen ones join: a text that
    recurs across items is a text a blind attack learns once)."""
    target = plan.targets[ATOM]
    positive = plan.row["text"] or ""
    queues = {
        p: sorted(cs, key=lambda c: (c.foil.tier, -scores[c.text], c.text))
        for p, cs in target.candidates.items()
    }
    chosen: list[AtomCandidate] = []
    texts: set[str] = set()
    # with a balance, foils that move its surplus away from 0 wait for a second pass
    for away in (False, True) if balance is not None else (True,):
        popped = True
        while len(chosen) < n and popped:
            popped = False
            for position in plan.position_order:
                if len(chosen) >= n:
                    break
                queue = queues[position]
                while queue:
                    k = balance.pick(position, positive, queue, away) if balance else 0
                    if k is None:
                        break
                    candidate, popped = queue.pop(k), True
                    fresh = candidate.text not in texts and candidate.text not in (taken or ())
                    if fresh and readable(candidate.text):
                        chosen.append(candidate)
                        texts.add(candidate.text)
                        if balance is not None:
                            balance.record(position, positive, candidate)
                        break
    if taken is not None:
        taken.update(texts)
    return chosen
