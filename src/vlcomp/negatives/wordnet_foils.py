"""WordNet foils: which vocabulary words may replace an atom of a caption (CREPE's
template hard negatives: HN-ATOM, HN-COMP, and the productivity negatives).

Public API (stable; other generators import it)::

    finder = FoilFinder.from_atoms("results/counts/cc12m/atoms.parquet", min_count=10)
    finder.candidates("attribute", "large", forbidden={"red"})  # ["small", ...] or Rejection
    finder.foils("object", "dog", forbidden)  # [Foil(value, relation, tier, via, depth)]
    finder.relation("object", "dog", "puppy")  # "hyponym"; explain(): with the evidence
    finder.stats                               # Counter of (kind, outcome) of foils()
    order = rank(captions, scorer)             # indices, most plausible caption first
    DEFAULT_RELATIONS.facts("a", "left of", "b")  # {(a,<left>,b), (b,<right>,a)}

Foils come best first: by tier (below), then closest kin (deepest shared hypernym), then
alphabetically; rank the captions they make with ``rank`` (or a scorer) afterwards.

A **foil** for an atom ``o`` of kind ``object`` (noun), ``attribute`` (adjective, or noun:
colours are nouns in WordNet) or ``relation`` (spatial preposition or verb) is a word ``f``
of the vocabulary of that kind (the training corpus's atoms seen at least ``min_count``
times; objects only where ``lexicon.substitute_objects`` keeps them: used as an object
more often than as an attribute when counts are given, and no depiction noun such as
"image") such that:

1. ``f`` is *related* to ``o`` by one of, in order of preference (``Foil.tier``):

   - ``antonym`` (tier 0): a WordNet antonym of the lemma ``o`` (``large`` -> ``small``);
     for relations, the opposite class of the curated lexicon (``left of`` -> ``right of``,
     ``on`` -> ``under``);
   - ``indirect_antonym`` (tier 1): adjectives only, through a satellite's head
     (``huge`` -> ``small``) or a satellite of the antonym (``large`` -> ``tiny``);
   - ``cohyponym`` (tier 2): ``o`` and ``f`` have a common hypernym at most ``max_hops``
     (default 2) levels above a sense of each: siblings (``red``/``blue`` under
     ``chromatic_color``), cousins (same grand-hypernym, CREPE's rule) and uncle/nephew
     pairs. The common hypernym must lie at least ``min_depth`` (default 3; verbs: 0, their
     hierarchies are shallow) below the root, so ``entity``/``abstraction``/``attribute``
     relate nothing. Instance hypernyms count as hypernyms. ``senses`` (default "all")
     can restrict which senses count here, see ``FoilFinder``;
   - ``same_attribute`` (tier 2): adjectives that WordNet links to the same attribute noun
     (``wet``/``dry`` -> ``wetness``);

2. ``f`` is *never* the same lemma, a synonym (shares a synset, any sense), a hypernym or
   hyponym (transitively, any sense) of ``o``, an adjective ``similar_to`` ``o`` (WordNet's
   near-synonyms: ``large``/``huge``), or a relation of ``o``'s own lexicon class
   (``above``/``over``/``on``). These exclusions use *all* senses, whatever ``senses``
   says;

3. ``f`` is not in ``forbidden``: the atoms already true of the item's scene graph.

Relations: WordNet has no prepositions, so spatial relations come from ``RelationLexicon``
(classes of equivalent or mutually implied phrasings, and opposite classes);
``DEFAULT_RELATIONS`` covers left/right, above/below (over, on, under, beneath ...), in
front of/behind, inside/outside and near/far. Spatial classes of different dimensions are
not foils of each other (an object can be both above and left of another). Any other
relation is read as a verb phrase: its first word, lemmatized by WordNet (``sitting on`` ->
``sit``), is compared with WordNet's verb hierarchy, and a foil must keep the same
remaining words (``sitting on`` -> ``standing on``; inflection is not changed, the foil is
used as the vocabulary writes it).

Rejections (``Rejection.reason``), counted per (kind, reason) in ``FoilFinder.stats``:
``empty_vocabulary`` (no atom of that kind reaches ``min_count``), ``not_in_wordnet`` (the
original has no WordNet sense of the kind's parts of speech and no lexicon entry),
``no_antonym_or_cohyponym`` (no vocabulary word is related), ``all_foils_true`` (every
related word is forbidden). Successful look-ups count as ``ok``.

Ranking: ``rank`` orders captions by a text-only scorer (``vlcomp.scorers.TextScorer``:
higher = more plausible), best first. The default offline scorer is the corpus n-gram LM
(``vlcomp.scorers.NgramLM``); any other ``TextScorer`` (a masked or causal LM a user has,
via ``vlcomp.scorers.make_scorer``) is passed the same way.

WordNet 3.0 is read with NLTK from ``<repo>/resources/nltk_data`` (written by ``make
setup``), ``$NLTK_DATA`` or NLTK's default paths; ``load_wordnet`` says how to install it.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from vlcomp.negatives import lexicon
from vlcomp.scorers.base import TextScorer
from vlcomp.text import normalise_or_none

KINDS: tuple[str, ...] = ("object", "attribute", "relation")

# Relations of a candidate to the original, best first; tier = preference.
RELATED: dict[str, int] = {
    "antonym": 0,
    "indirect_antonym": 1,
    "cohyponym": 2,
    "same_attribute": 2,
}
EXCLUDED: tuple[str, ...] = ("same", "synonym", "hypernym", "hyponym", "similar", "same_class")
UNRELATED = "unrelated"
UNKNOWN = "unknown"

# Rejection reasons.
EMPTY_VOCABULARY = "empty_vocabulary"
NOT_IN_WORDNET = "not_in_wordnet"
NO_RELATED = "no_antonym_or_cohyponym"
ALL_FORBIDDEN = "all_foils_true"
REJECTION_REASONS: tuple[str, ...] = (EMPTY_VOCABULARY, NOT_IN_WORDNET, NO_RELATED, ALL_FORBIDDEN)

SETUP_HINT = "run `make setup` or `python -m vlcomp.wordnet_setup resources/nltk_data`"
_REPO = Path(__file__).resolve().parents[3]


class WordNetMissingError(RuntimeError):
    """WordNet 3.0 cannot be read by NLTK."""


def nltk_data_dirs() -> list[Path]:
    """Where ``load_wordnet`` looks, first wins: ``$NLTK_DATA`` entries, the repository's
    ``resources/nltk_data`` and the working directory's ``resources/nltk_data``."""
    dirs = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    dirs += [_REPO / "resources" / "nltk_data", Path.cwd() / "resources" / "nltk_data"]
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in out:
            out.append(d.resolve())
    return out


@lru_cache(maxsize=1)
def load_wordnet() -> Any:
    """NLTK's WordNet reader, loaded; ``WordNetMissingError`` (saying how to install it)
    when it cannot be found. Adds ``nltk_data_dirs()`` to the front of ``nltk.data.path``."""
    import nltk

    for directory in reversed(nltk_data_dirs()):
        if str(directory) not in nltk.data.path:
            nltk.data.path.insert(0, str(directory))
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
        wordnet.synsets("dog")
    except LookupError as error:
        raise WordNetMissingError(
            f"WordNet 3.0 for NLTK not found (searched {nltk.data.path}); {SETUP_HINT}"
        ) from error
    return wordnet


def wordnet_version(wordnet: Any) -> str:
    try:
        return f"wordnet-{wordnet.get_version()}"
    except Exception:  # noqa: BLE001 - a reader without a version is still usable
        return "wordnet-unknown"


# ------------------------------------------------------------------------------ relations


@dataclass(frozen=True)
class RelationLexicon:
    """Relations WordNet lacks (prepositions): classes and their opposites.

    ``classes``: class name -> phrasings that mean the same or imply each other (never
    foils of one another). ``opposites``: class -> opposite class (give both directions).
    ``converses``: class -> class that holds with subject and object exchanged ("A left of
    B" = "B right of A"); ``symmetric``: classes that hold both ways ("near").
    """

    classes: Mapping[str, frozenset[str]]
    opposites: Mapping[str, str]
    converses: Mapping[str, str] = field(default_factory=dict)
    symmetric: frozenset[str] = frozenset()
    _index: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, str] = {}
        for name, members in self.classes.items():
            for member in members:
                key = normalise_or_none(member)
                if key is None:
                    continue
                if key in index and index[key] != name:
                    raise ValueError(f"relation {key!r} is in classes {index[key]} and {name}")
                index[key] = name
        for a, b in self.opposites.items():
            if a not in self.classes or b not in self.classes:
                raise ValueError(f"opposite classes {a!r}/{b!r} must both be classes")
            if self.opposites.get(b) != a:
                raise ValueError(f"opposites must be symmetric: {a!r} -> {b!r} but not back")
        for a, b in self.converses.items():
            if self.converses.get(b) != a or a not in self.classes:
                raise ValueError(f"converses must be symmetric classes: {a!r} -> {b!r}")
        if unknown := set(self.symmetric) - set(self.classes):
            raise ValueError(f"symmetric classes {sorted(unknown)} are not classes")
        object.__setattr__(self, "_index", index)

    def class_of(self, relation: str) -> str | None:
        key = normalise_or_none(relation)
        return self._index.get(key) if key else None

    def canonical(self, relation: str) -> str:
        """``<class>`` for a lexicon relation, else the normalized relation."""
        key = normalise_or_none(relation) or relation
        cls = self.class_of(key)
        return f"<{cls}>" if cls is not None else key

    def facts(self, subj: str, relation: str, obj: str) -> set[tuple[str, str, str]]:
        """Canonical (subject, relation, object) triples a triple asserts: the relation's
        class instead of its phrasing, plus the converse or symmetric reading. Two triples
        say the same when their ``facts`` intersect."""
        rel = self.canonical(relation)
        out = {(subj, rel, obj)}
        cls = self.class_of(relation)
        if cls in self.converses:
            out.add((obj, f"<{self.converses[cls]}>", subj))
        if cls in self.symmetric:
            out.add((obj, rel, subj))
        return out

    def surfaces(self, relation: str) -> tuple[str, ...]:
        """All phrasings of ``relation``'s class (itself alone when it has none), longest
        first: how a caption may state it."""
        cls = self.class_of(relation)
        key = normalise_or_none(relation) or relation
        members = set(self.classes[cls]) | {key} if cls else {key}
        return tuple(sorted(members, key=lambda s: (-len(s.split()), -len(s), s)))


def _pairs(*pairs: tuple[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for a, b in pairs:
        out[a], out[b] = b, a
    return out


DEFAULT_RELATIONS = RelationLexicon(
    classes={
        "left": frozenset({"left of", "to the left of", "on the left of", "on the left side of"}),
        "right": frozenset(
            {"right of", "to the right of", "on the right of", "on the right side of"}
        ),
        "up": frozenset({"above", "over", "on", "on top of", "atop", "upon", "on top"}),
        "down": frozenset({"below", "under", "beneath", "underneath", "under the"}),
        "front": frozenset({"in front of", "before", "in the front of"}),
        "back": frozenset({"behind", "in back of", "in the back of", "at the back of"}),
        "in": frozenset({"in", "inside", "inside of", "within", "into"}),
        "out": frozenset({"outside", "outside of", "out of"}),
        "near": frozenset(
            {"near", "next to", "beside", "by", "close to", "near to", "adjacent to"}
        ),
        "far": frozenset({"far from", "away from", "far away from"}),
    },
    opposites=_pairs(
        ("left", "right"), ("up", "down"), ("front", "back"), ("in", "out"), ("near", "far")
    ),
    converses=_pairs(("left", "right"), ("up", "down"), ("front", "back")),
    symmetric=frozenset({"near", "far"}),
)


# ---------------------------------------------------------------------------- the finder


class Foil(NamedTuple):
    """A valid foil. ``via``: the shared hypernym (cohyponym), attribute noun
    (same_attribute) or lexicon classes (relation antonym); ``depth``: WordNet depth of the
    shared hypernym (deeper = closer kin; 0 where there is none)."""

    value: str
    relation: str  # a key of RELATED
    tier: int
    via: str = ""
    depth: int = 0


@dataclass(frozen=True)
class Rejection:
    """Why an atom has no foil: one of ``REJECTION_REASONS``, with a detail."""

    reason: str
    detail: str = ""

    def __bool__(self) -> bool:  # ``if finder.candidates(...)`` is False for a rejection
        return False


def _key(word: str) -> str:
    return "_".join(word.split())


def _hypernyms(synset: Any) -> list[Any]:
    return synset.hypernyms() + synset.instance_hypernyms()


VocabularyInput = pl.DataFrame | Mapping[str, Iterable[str]] | Mapping[str, Mapping[str, int]]


def vocabulary_from(vocabulary: VocabularyInput, min_count: int = 1) -> dict[str, tuple[str, ...]]:
    """kind -> sorted normalized values, from an atoms table (kind, value, count), a mapping
    kind -> {value: count} (both filtered by ``min_count``) or kind -> values (unfiltered).
    Objects are only those ``lexicon.substitute_objects`` keeps; the part-of-speech vote
    needs counts (all of them, before ``min_count``), so plain value lists get only the
    depiction-noun filter."""
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    counted = True
    if isinstance(vocabulary, pl.DataFrame):
        missing = {"kind", "value", "count"} - set(vocabulary.columns)
        if missing:
            raise ValueError(f"atoms table: missing column(s) {sorted(missing)}")
        for kind, value, count in vocabulary.select("kind", "value", "count").iter_rows():
            if kind in counts and (v := normalise_or_none(value)):
                counts[kind][v] += count
    else:
        for kind, values in vocabulary.items():
            if kind not in counts:
                raise ValueError(f"vocabulary kind {kind!r}; expected one of {KINDS}")
            if isinstance(values, Mapping):
                pairs = list(values.items())
            else:
                counted, pairs = False, [(value, min_count) for value in values]
            for value, count in pairs:
                if v := normalise_or_none(value):
                    counts[kind][v] += count
    out = {kind: {v for v, c in counts[kind].items() if c >= min_count} for kind in KINDS}
    attribute_counts = counts["attribute"] if counted else Counter()
    out["object"] &= lexicon.substitute_objects(counts["object"], attribute_counts)
    return {kind: tuple(sorted(values)) for kind, values in out.items()}


SENSE_POLICIES: tuple[str, ...] = ("coherent", "all")


class FoilFinder:
    """Foils for atoms from a vocabulary, by WordNet (see the module docstring).

    ``vocabulary``: atoms table (``kind, value, count``), kind -> {value: count} or kind
    -> values; ``wordnet``: an NLTK WordNet reader (default ``load_wordnet()``);
    ``min_count``: vocabulary atoms seen fewer times are not foils.

    ``senses``: which senses of a word may make it a co-hyponym of another:

    - ``"all"`` (default): every sense (CREPE's rule, no disambiguation; right for small
      domain vocabularies such as the synthetic world's shapes, whose geometric senses are
      rare ones);
    - ``"coherent"`` (recommended for large real vocabularies): the first (most frequent)
      sense, unless it shares no near hypernym with any other word of the same kind's
      vocabulary; then the sense(s) that share one with the most words. This keeps rare
      senses from relating unrelated words (dog as andiron ~ bus as busbar, both devices),
      but can also drop the one sense a small domain needs (circle as a shape);
    - an int ``k``: the first ``k`` senses.

    ``max_hops``/``min_depth``/``verb_min_depth``: the co-hyponym rule.
    """

    def __init__(
        self,
        vocabulary: VocabularyInput,
        wordnet: Any = None,
        min_count: int = 1,
        *,
        relations: RelationLexicon = DEFAULT_RELATIONS,
        senses: str | int = "all",
        max_hops: int = 2,
        min_depth: int = 3,
        verb_min_depth: int = 0,
    ) -> None:
        if min_count < 1 or max_hops < 1:
            raise ValueError("min_count and max_hops must be >= 1")
        if not (senses in SENSE_POLICIES or (isinstance(senses, int) and senses >= 1)):
            raise ValueError(f"senses must be one of {SENSE_POLICIES} or an int >= 1")
        self.wordnet = wordnet if wordnet is not None else load_wordnet()
        self.vocabulary = vocabulary_from(vocabulary, min_count)
        self.min_count = min_count
        self.relations = relations
        self.senses = senses
        self.max_hops = max_hops
        self.min_depth = min_depth
        self.verb_min_depth = verb_min_depth
        self.stats: Counter[tuple[str, str]] = Counter()
        self._synsets: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._closure: dict[tuple[str, str], frozenset[Any]] = {}
        self._near: dict[Any, frozenset[Any]] = {}
        self._active: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self._index: dict[tuple[str, str], dict[Any, frozenset[str]]] = {}
        self._related: dict[tuple[str, str], list[Foil] | Rejection] = {}

    @classmethod
    def from_atoms(
        cls, atoms: str | Path, min_count: int = 1, wordnet: Any = None, **options: Any
    ) -> FoilFinder:
        """From an atoms Parquet (``results/counts/<corpus>/atoms.parquet``)."""
        return cls(pl.read_parquet(atoms), wordnet, min_count, **options)

    def describe(self) -> dict[str, Any]:
        """Settings and vocabulary sizes, for output metadata."""
        return {
            "wordnet": wordnet_version(self.wordnet),
            "min_count": self.min_count,
            "senses": self.senses,
            "max_hops": self.max_hops,
            "min_depth": self.min_depth,
            "verb_min_depth": self.verb_min_depth,
            "vocabulary": {kind: len(values) for kind, values in self.vocabulary.items()},
        }

    # ------------------------------------------------------------------ WordNet lookups

    def synsets(self, word: str, pos: str) -> tuple[Any, ...]:
        """All senses of ``word`` for ``pos`` ("n", "v", or "a" = adjectives incl.
        satellites), in WordNet's order. Inflected forms are lemmatized by WordNet."""
        cache_key = (word, pos)
        if cache_key not in self._synsets:
            self._synsets[cache_key] = tuple(self.wordnet.synsets(_key(word), pos=pos))
        return self._synsets[cache_key]

    def _ancestors(self, word: str, pos: str) -> frozenset[Any]:
        """Every hypernym (transitively) of every sense."""
        cache_key = (word, pos)
        if cache_key not in self._closure:
            out: set[Any] = set()
            for synset in self.synsets(word, pos):
                out.update(synset.closure(_hypernyms))
            self._closure[cache_key] = frozenset(out)
        return self._closure[cache_key]

    def _near_of(self, synset: Any) -> frozenset[Any]:
        """Hypernyms at most ``max_hops`` above ``synset`` and at least the minimum depth."""
        if synset not in self._near:
            floor = self.verb_min_depth if synset.pos() == "v" else self.min_depth
            out: set[Any] = set()
            frontier = [synset]
            for _ in range(self.max_hops):
                frontier = [h for s in frontier for h in _hypernyms(s)]
                out.update(frontier)
            self._near[synset] = frozenset(s for s in out if s.min_depth() >= floor)
        return self._near[synset]

    def _head_words(self, kind: str) -> list[str]:
        if kind != "relation":
            return list(self.vocabulary[kind])
        heads = []
        for value in self.vocabulary[kind]:
            if self.relations.class_of(value) is None and (head := self._verb_head(value)):
                heads.append(head[0])
        return heads

    def _sense_index(self, kind: str, pos: str) -> dict[Any, frozenset[str]]:
        """Near hypernym -> vocabulary words (of ``kind``) with a sense under it."""
        cache_key = (kind, pos)
        if cache_key not in self._index:
            index: dict[Any, set[str]] = {}
            for word in self._head_words(kind):
                for synset in self.synsets(word, pos):
                    for ancestor in self._near_of(synset):
                        index.setdefault(ancestor, set()).add(word)
            self._index[cache_key] = {a: frozenset(ws) for a, ws in index.items()}
        return self._index[cache_key]

    def active_senses(self, word: str, pos: str, kind: str) -> tuple[Any, ...]:
        """The senses of ``word`` that may relate it to another word (``senses``)."""
        cache_key = (word, pos, kind)
        if cache_key not in self._active:
            senses = self.synsets(word, pos)
            if self.senses == "all" or not senses:
                chosen = senses
            elif isinstance(self.senses, int):
                chosen = senses[: self.senses]
            else:
                index = self._sense_index(kind, pos)
                coherence = []
                for synset in senses:
                    words: set[str] = set()
                    for ancestor in self._near_of(synset):
                        words |= index.get(ancestor, frozenset())
                    coherence.append(len(words - {word}))
                best = max(coherence)
                if coherence[0] > 0 or best == 0:
                    chosen = senses[:1]
                else:
                    chosen = tuple(s for s, c in zip(senses, coherence, strict=True) if c == best)
            self._active[cache_key] = tuple(chosen)
        return self._active[cache_key]

    def _shared_near(self, original: str, candidate: str, pos: str, kind: str) -> Any:
        """A common near hypernym of active senses (deepest, then by name), or None."""
        near_o = {a for s in self.active_senses(original, pos, kind) for a in self._near_of(s)}
        near_f = {a for s in self.active_senses(candidate, pos, kind) for a in self._near_of(s)}
        shared = near_o & near_f
        return min(shared, key=lambda a: (-a.min_depth(), a.name())) if shared else None

    def _antonyms(self, word: str, pos: str) -> tuple[set[str], set[str]]:
        """(direct, indirect) antonym lemma names of ``word`` (lower case, spaces)."""
        key = _key(word).lower()
        direct: set[str] = set()
        indirect: set[str] = set()
        for synset in self.synsets(word, pos):
            own = [lemma for lemma in synset.lemmas() if lemma.name().lower() == key]
            for lemma in own:
                for antonym in lemma.antonyms():
                    direct.add(antonym.name())
                    if pos == "a":  # satellites of the antonym's head: large -> tiny
                        for satellite in antonym.synset().similar_tos():
                            indirect.update(lm.name() for lm in satellite.lemmas())
            if pos == "a" and synset.pos() == "s":  # a satellite: its head's antonyms
                for head in synset.similar_tos():
                    for lemma in head.lemmas():
                        indirect.update(a.name() for a in lemma.antonyms())
        norm = {n.replace("_", " ").lower() for n in direct}
        return norm, {n.replace("_", " ").lower() for n in indirect} - norm

    def _taxonomy_relation(
        self, original: str, candidate: str, pos: str, kind: str
    ) -> tuple[str, str]:
        so, sf = self.synsets(original, pos), self.synsets(candidate, pos)
        if not so:
            return UNKNOWN, ""
        if not sf:
            return UNRELATED, ""
        if set(so) & set(sf):
            return "synonym", ""
        if set(sf) & self._ancestors(original, pos):
            return "hypernym", ""
        if set(so) & self._ancestors(candidate, pos):
            return "hyponym", ""
        direct, _ = self._antonyms(original, pos)
        if candidate.lower() in direct:
            return "antonym", ""
        via = self._shared_near(original, candidate, pos, kind)
        return ("cohyponym", via.name()) if via is not None else (UNRELATED, "")

    def _attribute_relation(self, original: str, candidate: str) -> tuple[str, str]:
        adj_o, adj_f = self.synsets(original, "a"), self.synsets(candidate, "a")
        noun_o, noun_f = self.synsets(original, "n"), self.synsets(candidate, "n")
        if not adj_o and not noun_o:
            return UNKNOWN, ""
        if (set(adj_o) & set(adj_f)) or (set(noun_o) & set(noun_f)):
            return "synonym", ""
        similar_o = {s for synset in adj_o for s in synset.similar_tos()}
        similar_f = {s for synset in adj_f for s in synset.similar_tos()}
        if similar_o & set(adj_f) or similar_f & set(adj_o):
            return "similar", ""
        if set(noun_f) & self._ancestors(original, "n"):
            return "hypernym", ""
        if set(noun_o) & self._ancestors(candidate, "n"):
            return "hyponym", ""
        direct, indirect = self._antonyms(original, "a")
        noun_direct, _ = self._antonyms(original, "n")
        name = candidate.lower()
        if name in direct or name in noun_direct:
            return "antonym", ""
        if name in indirect:
            return "indirect_antonym", ""
        if noun_o and noun_f:
            via = self._shared_near(original, candidate, "n", "attribute")
            if via is not None:
                return "cohyponym", via.name()
        scales_o = {
            a for s in self.active_senses(original, "a", "attribute") for a in s.attributes()
        }
        scales_f = {
            a for s in self.active_senses(candidate, "a", "attribute") for a in s.attributes()
        }
        if shared := scales_o & scales_f:
            return "same_attribute", min(a.name() for a in shared)
        return UNRELATED, ""

    def _verb_head(self, phrase: str) -> tuple[str, tuple[str, ...]] | None:
        words = phrase.split()
        if not words:
            return None
        lemma = self.wordnet.morphy(words[0], "v")
        return (lemma, tuple(words[1:])) if lemma else None

    def _relation_relation(self, original: str, candidate: str) -> tuple[str, str]:
        cls_o, cls_f = self.relations.class_of(original), self.relations.class_of(candidate)
        if cls_o is not None:
            if cls_f is None:
                return UNRELATED, ""
            if cls_f == cls_o:
                return "same_class", cls_o
            if self.relations.opposites.get(cls_o) == cls_f:
                return "antonym", f"{cls_o}/{cls_f}"
            return UNRELATED, ""
        head_o = self._verb_head(original)
        if head_o is None or not self.synsets(head_o[0], "v"):
            return UNKNOWN, ""
        head_f = self._verb_head(candidate) if cls_f is None else None
        if head_f is None or head_f[1] != head_o[1]:
            return UNRELATED, ""  # a foil keeps the particles: "sitting on" -> "standing on"
        if head_f[0] == head_o[0]:
            return "same", ""
        return self._taxonomy_relation(head_o[0], head_f[0], "v", "relation")

    def explain(self, kind: str, original: str, candidate: str) -> tuple[str, str]:
        """(relation, evidence): ``relation`` as for ``relation``; ``evidence`` names the
        shared hypernym, attribute noun or lexicon classes, when there is one."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        o, f = normalise_or_none(original), normalise_or_none(candidate)
        if o is None or f is None:
            raise ValueError("blank atom")
        if o == f:
            return "same", ""
        if kind == "object":
            return self._taxonomy_relation(o, f, "n", "object")
        if kind == "attribute":
            return self._attribute_relation(o, f)
        return self._relation_relation(o, f)

    def relation(self, kind: str, original: str, candidate: str) -> str:
        """How ``candidate`` relates to ``original``: a key of ``RELATED`` (a valid foil
        unless forbidden), one of ``EXCLUDED``, ``unrelated``, or ``unknown`` (the original
        is not in WordNet or the relation lexicon)."""
        return self.explain(kind, original, candidate)[0]

    def is_known(self, kind: str, value: str) -> bool:
        """Whether ``value`` has a WordNet sense (or lexicon entry) for ``kind``."""
        v = normalise_or_none(value) or ""
        if kind == "object":
            return bool(self.synsets(v, "n"))
        if kind == "attribute":
            return bool(self.synsets(v, "a") or self.synsets(v, "n"))
        if self.relations.class_of(v) is not None:
            return True
        head = self._verb_head(v)
        return head is not None and bool(self.synsets(head[0], "v"))

    # ----------------------------------------------------------------------- look-ups

    def related(self, kind: str, value: str) -> list[Foil] | Rejection:
        """Every related vocabulary word (before ``forbidden``), best first: by tier, then
        closest kin (deepest shared hypernym), then value; or the reason there is none.
        Cached per (kind, value); not counted in ``stats``."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        v = normalise_or_none(value)
        if v is None:
            raise ValueError("blank atom")
        cache_key = (kind, v)
        if cache_key not in self._related:
            self._related[cache_key] = self._compute_related(kind, v)
        return self._related[cache_key]

    def _compute_related(self, kind: str, value: str) -> list[Foil] | Rejection:
        vocabulary = self.vocabulary[kind]
        if not vocabulary:
            return Rejection(EMPTY_VOCABULARY, f"no {kind} atom with count >= {self.min_count}")
        if not self.is_known(kind, value):
            return Rejection(NOT_IN_WORDNET, f"{kind} {value!r}")
        foils = []
        for candidate in self._pool(kind, value):
            rel, via = self.explain(kind, value, candidate)
            if rel in RELATED:
                depth = self.wordnet.synset(via).min_depth() if "." in via else 0
                foils.append(Foil(candidate, rel, RELATED[rel], via, depth))
        if not foils:
            return Rejection(NO_RELATED, f"{kind} {value!r}")
        return sorted(foils, key=lambda f: (f.tier, -f.depth, f.value))

    def _pool(self, kind: str, value: str) -> list[str]:
        """The vocabulary words that may be related to ``value`` (a superset, found through
        indexes so that large vocabularies are not compared word by word); ``explain``
        decides."""
        vocabulary = self.vocabulary[kind]
        if kind == "relation":
            return [v for v in vocabulary if v != value]
        words = set(vocabulary)
        pool: set[str] = set()
        index = self._sense_index(kind, "n")
        for synset in self.active_senses(value, "n", kind):
            for ancestor in self._near_of(synset):
                pool |= index.get(ancestor, frozenset())
        direct, indirect = self._antonyms(value, "n")
        pool |= (direct | indirect) & words
        if kind == "attribute":
            direct, indirect = self._antonyms(value, "a")
            pool |= (direct | indirect) & words
            scales = self._scale_index()
            for synset in self.active_senses(value, "a", kind):
                for scale in synset.attributes():
                    pool |= scales.get(scale, frozenset())
        pool.discard(value)
        return sorted(pool)

    def _scale_index(self) -> dict[Any, frozenset[str]]:
        """Attribute noun -> vocabulary attributes with an active adjective sense on it."""
        if ("attribute", "scale") not in self._index:
            index: dict[Any, set[str]] = {}
            for word in self.vocabulary["attribute"]:
                for synset in self.active_senses(word, "a", "attribute"):
                    for scale in synset.attributes():
                        index.setdefault(scale, set()).add(word)
            self._index[("attribute", "scale")] = {k: frozenset(v) for k, v in index.items()}
        return self._index[("attribute", "scale")]

    def foils(
        self, kind: str, value: str, forbidden: Iterable[str] = frozenset()
    ) -> list[Foil] | Rejection:
        """Valid foils for ``value`` (in ``related`` order), none of them in
        ``forbidden`` (atoms true of the scene graph); the outcome is counted in
        ``stats[(kind, reason or "ok")]``."""
        related = self.related(kind, value)
        if isinstance(related, Rejection):
            self.stats[(kind, related.reason)] += 1
            return related
        banned = {n for word in forbidden if (n := normalise_or_none(word))}
        kept = [f for f in related if f.value not in banned]
        if not kept:
            self.stats[(kind, ALL_FORBIDDEN)] += 1
            return Rejection(ALL_FORBIDDEN, f"{kind} {value!r}: {len(related)} related")
        self.stats[(kind, "ok")] += 1
        return kept

    def candidates(
        self, kind: str, value: str, forbidden: Iterable[str] = frozenset()
    ) -> list[str] | Rejection:
        """``foils`` as plain words."""
        found = self.foils(kind, value, forbidden)
        return found if isinstance(found, Rejection) else [f.value for f in found]

    @staticmethod
    def rank(captions: Sequence[str], scorer: TextScorer) -> list[int]:
        """Same as the module's ``rank``."""
        return rank(captions, scorer)


# ------------------------------------------------------------------------------ ranking


def score_captions(
    captions: Sequence[str], scorer: TextScorer, batch_size: int = 4096
) -> dict[str, float]:
    """Score of each distinct caption (scored once, in sorted order, in batches)."""
    unique = sorted(set(captions))
    out: dict[str, float] = {}
    for start in range(0, len(unique), batch_size):
        batch = unique[start : start + batch_size]
        scores = np.asarray(scorer.score(batch), dtype=np.float64)
        if scores.shape != (len(batch),):
            raise ValueError(
                f"scorer {getattr(scorer, 'name', scorer)!r} returned {scores.shape} scores "
                f"for {len(batch)} texts"
            )
        for text, score in zip(batch, scores.tolist(), strict=True):
            if math.isnan(score):
                raise ValueError(f"scorer {scorer.name!r} gave NaN for {text!r}")
            out[text] = score
    return out


def rank(captions: Sequence[str], scorer: TextScorer) -> list[int]:
    """Indices of ``captions``, most plausible first (higher score); ties by text, then
    position, so the order is deterministic."""
    scores = score_captions(captions, scorer)
    return sorted(range(len(captions)), key=lambda i: (-scores[captions[i]], captions[i], i))
