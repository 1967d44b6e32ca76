"""Caption -> scene graph parser (the ``parse`` stage) and its measurements.

Public API: ``CaptionParser`` (backend + rules), ``extract_graph`` on ``Tokens``,
``ExtractOptions`` / ``make_options``, ``PredicateMap``, and
the job functions ``parse_captions`` and ``parser_quality`` (the parser's throughput
benchmark is ``vlcomp_dev.bench.parse``).
"""

from vlcomp.text.lemma import Lemmatizer

from .backends import (
    DEFAULT_SPACY_MODEL,
    ParserUnavailable,
    SpacyBackend,
    StanzaBackend,
    UDWord,
    make_backend,
    ud_to_tokens,
)
from .extract import extract_graph
from .jobs import parse_captions
from .lexicon import DEFAULT_STOP_OBJECTS
from .parser import RULES_VERSION, CaptionParser, make_options
from .predicates import (
    DEFAULT_PREDICATE_MAP,
    PredicateMap,
    resolve_predicate_map,
)
from .quality import parser_quality
from .scene_graph import EMPTY_GRAPH, ExtractOptions, SceneGraph
from .tokens import Tokens

__all__ = [
    "DEFAULT_PREDICATE_MAP",
    "DEFAULT_SPACY_MODEL",
    "DEFAULT_STOP_OBJECTS",
    "EMPTY_GRAPH",
    "RULES_VERSION",
    "CaptionParser",
    "ExtractOptions",
    "Lemmatizer",
    "ParserUnavailable",
    "PredicateMap",
    "SceneGraph",
    "SpacyBackend",
    "StanzaBackend",
    "Tokens",
    "UDWord",
    "extract_graph",
    "make_backend",
    "make_options",
    "parse_captions",
    "parser_quality",
    "resolve_predicate_map",
    "ud_to_tokens",
]
