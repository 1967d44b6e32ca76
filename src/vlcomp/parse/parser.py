"""``CaptionParser``: a backend plus the graph extraction, over many captions."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from vlcomp.text import normalise
from vlcomp.text.canon import GraphCanon
from vlcomp.text.lemma import DEFAULT_SPACY_MODEL, load_lemmatizer

from .backends import Backend, make_backend
from .extract import extract_graph
from .predicates import PredicateMap, resolve_predicate_map
from .scene_graph import ExtractOptions, SceneGraph
from .tokens import Tokens

# Bump when the extraction rules change what they produce for the same parse: the parse
# rule has it as a param, so the corpora are parsed again.
RULES_VERSION = "3"


class CaptionParser:
    """Caption -> ``SceneGraph``. ``parser_name`` identifies backend, model and versions
    (the ``parser`` column of the ``graphs`` contract)."""

    def __init__(
        self,
        backend: str | Backend = "spacy",
        options: ExtractOptions | None = None,
        **backend_kwargs: Any,
    ) -> None:
        self.backend = (
            make_backend(backend, **backend_kwargs) if isinstance(backend, str) else backend
        )
        self.options = options or ExtractOptions()

    @property
    def parser_name(self) -> str:
        return self.backend.parser_name

    def parse(
        self, texts: Iterable[str | None], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[SceneGraph]:
        """Graphs of ``texts``, in order; a missing or empty text gives an empty graph.

        With ``n_process`` > 1, worker processes (forked: they share the loaded model) each
        parse and extract whole chunks of ``CHUNK_BATCHES`` batches and send back only the
        graphs, so the work scales with the processes; the batches are those of one
        process, so the graphs are the same.
        """
        if n_process > 1:
            yield from self._parse_in_processes(texts, batch_size, n_process)
            return
        for _, graph in self.parse_with_tokens(texts, batch_size):
            yield graph

    def parse_with_tokens(
        self, texts: Iterable[str | None], batch_size: int = 256
    ) -> Iterator[tuple[Tokens, SceneGraph]]:
        """(tokens, graph) of ``texts``, in order, in one process: for checks that read the
        parse itself as well as the graph."""
        lemmatizer = self.backend.lemmatizer
        for tokens in self.backend.tokens(texts, batch_size=batch_size, n_process=1):
            yield tokens, extract_graph(tokens, lemmatizer, self.options)

    def _parse_in_processes(
        self, texts: Iterable[str | None], batch_size: int, n_process: int
    ) -> Iterator[SceneGraph]:
        global _FORKED
        size = batch_size * CHUNK_BATCHES
        remaining = iter(texts)
        chunks = iter(lambda: list(islice(remaining, size)), [])
        _FORKED = self
        try:
            with multiprocessing.get_context("fork").Pool(n_process) as pool:
                for graphs in pool.imap(_parse_chunk, ((c, batch_size) for c in chunks)):
                    yield from graphs
        finally:
            _FORKED = None

    def parse_one(self, text: str | None) -> SceneGraph:
        return next(self.parse([text], batch_size=1))

    def metadata(self) -> dict[str, Any]:
        """Versions and settings, for output metadata."""
        return {
            "parser": self.parser_name,
            "rules_version": RULES_VERSION,
            **self.backend.versions(),
            "options": self.options.describe(),
        }


# The parser a forked worker process inherits (set just before the pool forks).
_FORKED: CaptionParser | None = None
CHUNK_BATCHES = 16


def _parse_chunk(job: tuple[list[str | None], int]) -> list[SceneGraph]:
    texts, batch_size = job
    assert _FORKED is not None, "parse workers must be forked from the parsing process"
    return list(_FORKED.parse(texts, batch_size=batch_size))


def make_options(
    predicate_map: str | Path | Mapping[str, str] | PredicateMap | None = None,
    *,
    strip_verbs: bool | None = None,
    stop_objects: Iterable[str] | None = None,
    frame_objects: Iterable[str] | None = None,
    numerals: bool = False,
    of_as_have: bool = True,
) -> ExtractOptions:
    """``ExtractOptions`` from config-like values (see ``resolve_predicate_map``);
    ``stop_objects``/``frame_objects`` of ``None`` keep the default lists."""
    kwargs: dict[str, Any] = {
        "predicates": resolve_predicate_map(predicate_map, strip_verbs),
        "numerals": numerals,
        "of_as_have": of_as_have,
    }
    if stop_objects is not None:
        kwargs["stop_objects"] = frozenset(normalise(s) for s in stop_objects)
    if frame_objects is not None:
        kwargs["frame_objects"] = frozenset(normalise(s) for s in frame_objects)
    return ExtractOptions(**kwargs)


def graph_canon(settings: Mapping[str, Any]) -> GraphCanon:
    """Annotated graphs in the form the parser configured by ``settings`` (a ``parse``
    config mapping) writes: its lemmatiser, predicate map and "of" rule."""
    options = make_options(
        settings.get("predicate_map"),
        strip_verbs=settings.get("strip_verbs"),
        stop_objects=settings.get("stop_objects"),
    )
    model = settings.get("model") or DEFAULT_SPACY_MODEL
    return GraphCanon(
        load_lemmatizer(model),
        options.predicates,
        of_as_have=options.of_as_have,
        containers=options.containers,
        stop_objects=options.stop_objects,
    )
