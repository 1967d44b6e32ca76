"""Validation of SugarCrepe (positive, negative) pairs (``PairValidator``): the text checks
(``validate.text``), then the graph check (``validate.graph``) overruled by a clean edit,
then the edit checks (``validate.edit``, the grammar checks first); the first failing check
is the rejection reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from vlcomp.ingest.rules import CaptionRules
from vlcomp.text import collapse_spaces

from .edit import (
    NOT_ONE_CHANGE,
    SWAP_WORDS,
    SYNONYM,
    EditView,
    SynonymCheck,
    clean_edit,
    hunks,
    replaced_concept,
    verb_reason,
)
from .grammar import AGREEMENT, ARTICLE, NUMBER, agreement_errors, article_errors, number_errors
from .graph import GraphReader, graph_reason
from .text import english_rules, text_reason


@dataclass(frozen=True)
class PairCheck:
    positive: str
    negative: str | None
    family: str
    target: str


class PairValidator:
    """Text checks, then ``graph_reason`` (overruled by a clean edit), then the edit
    checks, for many (positive, negative) pairs at once (see the module docstring)."""

    def __init__(
        self,
        reader: GraphReader,
        max_chars: int,
        rules: CaptionRules | None = None,
        synonyms: SynonymCheck | None = None,
    ):
        self.reader = reader
        self.max_chars = max_chars
        self.rules = rules or english_rules()
        self.synonyms = synonyms or SynonymCheck()

    def check(self, pairs: Sequence[PairCheck]) -> list[str | None]:
        reasons: list[str | None] = [
            text_reason(p.negative, self.max_chars, self.rules, p.positive) for p in pairs
        ]
        todo = [i for i, r in enumerate(reasons) if r is None]
        positives = [pairs[i].positive for i in todo]
        negatives = [collapse_spaces(pairs[i].negative or "") for i in todo]
        graphs = self.reader.graphs(positives + negatives)
        tokens = self.reader.tokens(positives + negatives)
        for k, i in enumerate(todo):
            family, target = pairs[i].family, pairs[i].target
            pos_tokens, neg_tokens = tokens[k], tokens[len(todo) + k]
            pos = EditView.of(pos_tokens, self.reader.known_noun)
            neg = EditView.of(neg_tokens, self.reader.known_noun)
            reason = graph_reason(graphs[k], graphs[len(todo) + k], family, target)
            if reason is not None and clean_edit(pos, neg, family, target):
                reason = None  # the parser's slip, not the edit's
            reasons[i] = reason or self.edit_reason(pos, neg, family, target)
        return reasons

    def edit_reason(self, pos: EditView, neg: EditView, family: str, target: str) -> str | None:
        """The first edit check (``validate.edit``) the pair fails, or None."""
        if number_errors(neg.tokens) > number_errors(pos.tokens):
            return NUMBER
        if article_errors(neg.tokens) > article_errors(pos.tokens):
            return ARTICLE
        if agreement_errors(neg.tokens) > agreement_errors(pos.tokens):
            return AGREEMENT
        if reason := verb_reason(pos, neg, family, target):
            return reason
        if family == "replace":
            concept = replaced_concept(pos, neg, target, self.reader.lemma)
            if concept is not None and self.synonyms.same(target, *concept):
                return SYNONYM
        if family == "swap":
            return SWAP_WORDS if Counter(pos.forms) != Counter(neg.forms) else None
        changes = hunks(pos, neg)
        if len(changes) != 1 or (family == "add" and changes[0][0] != "insert"):
            return NOT_ONE_CHANGE
        return None
