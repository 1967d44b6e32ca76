"""HN-COMP candidates of the systematicity negatives: the combinations of the best atom
edits of two positions of the target compound (``comp_candidates``, "a red car" -> "a red
bike and a blue car") and the choice of an item's HN-COMP negatives once they are scored
(``select_comp``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .atoms import AtomCandidate, ItemPlan
from .caption import comp_text, tokenize
from .settings import COMP, COMP_PAIRS


@dataclass(frozen=True)
class CompCandidate:
    """Two atom edits of one target, each in its own copy of the compound's phrase."""

    first: AtomCandidate
    second: AtomCandidate
    text: str

    @property
    def tier(self) -> int:
        return self.first.foil.tier + self.second.foil.tier


def comp_candidates(
    plan: ItemPlan, scores: Mapping[str, float], comp_foils: int
) -> list[CompCandidate]:
    """Every combination of the ``comp_foils`` best edits (tier, then score) of the two
    positions of each ``COMP_PAIRS`` pair, as an HN-COMP text."""
    target = plan.targets[COMP]
    mention = target.mention
    text = plan.row["text"]
    tokens = tokenize(text)
    best = {
        p: sorted(cs, key=lambda c: (c.foil.tier, -scores[c.text], c.text))[:comp_foils]
        for p, cs in target.candidates.items()
    }
    out = []
    for a, b in COMP_PAIRS[mention.compound.kind]:
        for first in best[a]:
            for second in best[b]:
                composed = comp_text(
                    text, tokens, mention, (a, first.foil.value), (b, second.foil.value)
                )
                out.append(CompCandidate(first, second, composed))
    return out


def select_comp(
    candidates: Sequence[CompCandidate],
    scores: Mapping[str, float],
    n: int,
    positive: str,
    readable: Callable[[str], bool] = lambda _: True,
) -> list[CompCandidate]:
    """The ``n`` best HN-COMP candidates (summed tier, then score), those whose foils are
    all unused first; a text equal to the positive, repeated or unreadable is passed over."""
    ranked = sorted(candidates, key=lambda c: (c.tier, -scores[c.text], c.text))
    chosen: list[CompCandidate] = []
    texts, used = {positive}, set()
    for fresh_only in (True, False):
        for candidate in ranked:
            if len(chosen) >= n:
                return chosen
            keys = {
                (candidate.first.position, candidate.first.foil.value),
                (candidate.second.position, candidate.second.foil.value),
            }
            if candidate.text in texts or (fresh_only and keys & used):
                continue
            if not readable(candidate.text):
                texts.add(candidate.text)  # passed over once, counted once
                continue
            chosen.append(candidate)
            texts.add(candidate.text)
            used |= keys
    return chosen
