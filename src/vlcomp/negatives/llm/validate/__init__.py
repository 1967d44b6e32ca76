"""Validation of every LLM output: text checks, then a graph check with OUR parser.

- ``text``: the text checks of every output (empty, equal to the positive, non-English, too
  long, markup, quotes, framing or an explanation added), before any parse;
- ``graph``: the parser's reader (``GraphReader``) and the graph check of a SugarCrepe
  negative against its positive, one rule per (family, target) (``RULES``, ``graph_reason``);
- ``grammar``: number disagreement, a/an before the wrong sound and subject-verb agreement
  on a parse;
- ``edit``: the words-level view of a pair (``EditView``), the clean edit that overrules a
  graph rejection (``clean_edit``) and the edit checks after the graph check;
- ``pairs``: ``PairValidator``, all of the above for many SugarCrepe pairs at once;
- ``productivity``: ``ProductivityValidator``, a productivity caption against the walk's
  ``Pattern`` it must state.

Each module's docstring has its rules and rejection reasons.
"""

from __future__ import annotations

from .edit import (
    CLAUSE,
    EDIT_REASONS,
    NOT_ONE_CHANGE,
    SWAP_WORDS,
    SYNONYM,
    VERB_CHANGED,
    EditView,
    SynonymCheck,
    clean_edit,
    hunks,
    replaced_concept,
    verb_reason,
)
from .grammar import (
    AGREEMENT,
    ARTICLE,
    NUMBER,
    agreement_errors,
    article_errors,
    article_for,
    number_errors,
)
from .graph import NO_OBJECTS, RULES, Graph, GraphReader, Rule, graph_reason
from .pairs import PairCheck, PairValidator
from .productivity import (
    ADDS,
    ADDS_NEGATION,
    OMITS,
    OMITS_NEGATION,
    ProductivityValidator,
    Reference,
    negation_count,
)
from .text import (
    EMPTY,
    EQUAL,
    EXPLANATION,
    FRAMING,
    MARKUP,
    NON_ENGLISH,
    QUOTES,
    TEXT_REASONS,
    TOO_LONG,
    asides,
    english_rules,
    framing,
    framing_added,
    markup,
    quote_marks,
    same_text,
    text_reason,
)

__all__ = [
    "ADDS",
    "ADDS_NEGATION",
    "AGREEMENT",
    "ARTICLE",
    "CLAUSE",
    "EDIT_REASONS",
    "EMPTY",
    "EQUAL",
    "EXPLANATION",
    "FRAMING",
    "MARKUP",
    "NON_ENGLISH",
    "NOT_ONE_CHANGE",
    "NO_OBJECTS",
    "NUMBER",
    "OMITS",
    "OMITS_NEGATION",
    "QUOTES",
    "RULES",
    "SWAP_WORDS",
    "SYNONYM",
    "TEXT_REASONS",
    "TOO_LONG",
    "VERB_CHANGED",
    "EditView",
    "Graph",
    "GraphReader",
    "PairCheck",
    "PairValidator",
    "ProductivityValidator",
    "Reference",
    "Rule",
    "SynonymCheck",
    "agreement_errors",
    "article_errors",
    "article_for",
    "asides",
    "clean_edit",
    "english_rules",
    "framing",
    "framing_added",
    "graph_reason",
    "hunks",
    "markup",
    "negation_count",
    "number_errors",
    "quote_marks",
    "replaced_concept",
    "same_text",
    "text_reason",
    "verb_reason",
]
