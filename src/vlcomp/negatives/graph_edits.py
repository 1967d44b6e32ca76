"""Hard negatives by editing a caption's words where its scene graph says what they mean.

Given a caption, its scene graph (from a data set's annotation or parsed) and what its
image contains (``ImageContents``: the union of the graphs of every caption or region of
that image), each edit changes one thing:

- replace/att: one attribute word -> a value of the same kind (``lexicon.attribute_kind``)
  that nothing in the image has (synonyms included: no "big" where the image has "large");
  a value of no known kind is never replaced;
- replace/obj: one object noun -> an object type absent from the image (plural kept);
  only object types of the set's ``Vocabulary`` are replaced or put in (no colour the
  parser made a noun, no depiction noun: ``lexicon.substitute_objects``);
- swap/att: the same-kind attributes of two objects exchanged (rejected if the result is
  true of the image: both swapped bindings are stated for it);
- replace/rel: one spatial relation phrase -> the converse phrase ("to the left of" ->
  "to the right of"), false for the pair whenever the original is true; rejected when the
  two ends are described alike ("a circle left of a circle") or the image states the
  converse for the same object types.

The foils come from ``Vocabulary``: what the evaluation set itself states. An edit is made
only where the word to change occurs exactly once in the caption, so the change is
unambiguous; "a"/"an" before a replaced word is fixed. An item with no valid edit of a
kind is counted by the furthest reason it got to (``REASONS``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from vlcomp.text import indefinite_article, normalise, plural

from . import lexicon

Graph = Mapping[str, Sequence[Mapping[str, Any]] | None]

# Failure reasons, per edit kind, in the order an edit gets further.
NO_ATTRIBUTE = "replace att: no attribute"
UNKNOWN_KIND = "replace att: attribute of unknown kind"
ATTRIBUTE_NOT_ONCE = "replace att: attribute not once in the text"
NO_ATTRIBUTE_FOIL = "replace att: no absent same-kind foil"
NO_OBJECT = "replace obj: no object"
NO_OBJECT_TYPE = "replace obj: no object of a substitutable type"
OBJECT_NOT_ONCE = "replace obj: no object once in the text"
NO_OBJECT_FOIL = "replace obj: no absent object type"
NO_PAIR = "swap att: no two objects with same-kind attributes"
PAIR_NOT_ONCE = "swap att: attributes not once in the text"
SWAP_TRUE = "swap att: swap true of the image"
NO_RELATION = "replace rel: no relation"
NO_CONVERSE = "replace rel: no spatial relation with a converse"
RELATION_NOT_ONCE = "replace rel: relation not once in the text"
CONVERSE_TRUE = "replace rel: converse true of the image"
REASONS: tuple[str, ...] = (
    NO_ATTRIBUTE,
    UNKNOWN_KIND,
    ATTRIBUTE_NOT_ONCE,
    NO_ATTRIBUTE_FOIL,
    NO_OBJECT,
    NO_OBJECT_TYPE,
    OBJECT_NOT_ONCE,
    NO_OBJECT_FOIL,
    NO_PAIR,
    PAIR_NOT_ONCE,
    SWAP_TRUE,
    NO_RELATION,
    NO_CONVERSE,
    RELATION_NOT_ONCE,
    CONVERSE_TRUE,
)


def _rows(graph: Graph, key: str) -> Sequence[Mapping[str, Any]]:
    return graph.get(key) or ()


def _lemmas(graph: Graph) -> dict[int, str]:
    return {o["idx"]: normalise(o["lemma"] or o["name"]) for o in _rows(graph, "objects")}


def object_keys(lemma: str) -> frozenset[str]:
    """An object type and its head noun ("tennis racket" -> also "racket")."""
    return frozenset({normalise(lemma), lexicon.head_word(lemma)}) - {""}


@dataclass(frozen=True)
class Vocabulary:
    """What an edit may substitute: attribute values by kind, object lemmas and the
    canonical spatial predicates the evaluation set states."""

    attributes: Mapping[str, Sequence[str]]  # kind -> values, e.g. {"colour": [...], ...}
    objects: Sequence[str]
    predicates: frozenset[str] = frozenset()
    _object_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_object_set", frozenset(self.objects))

    @classmethod
    def from_graphs(cls, graphs: Iterable[Graph]) -> Vocabulary:
        """Everything the graphs state: object lemmas (``lexicon.substitute_objects`` of
        the graphs' object and attribute counts), attribute values of a known kind grouped
        by kind, spatial predicates (all sorted, so the order is fixed)."""
        object_counts: Counter[str] = Counter()
        attribute_counts: Counter[str] = Counter()
        attributes: dict[str, set[str]] = {}
        predicates: set[str] = set()
        for graph in graphs:
            object_counts.update(v for v in _lemmas(graph).values() if v)
            for attribute in _rows(graph, "attributes"):
                value = normalise(attribute["value"])
                attribute_counts[value] += 1
                kind = lexicon.attribute_kind(value)
                if kind is not None:
                    attributes.setdefault(kind, set()).add(value)
            for relation in _rows(graph, "relations"):
                canonical = lexicon.predicate_of(relation["pred"])
                if canonical is not None:
                    predicates.add(canonical)
        return cls(
            attributes={k: sorted(v) for k, v in sorted(attributes.items())},
            objects=sorted(lexicon.substitute_objects(object_counts, attribute_counts)),
            predicates=frozenset(predicates),
        )

    def is_object(self, lemma: str) -> bool:
        """Whether an edit may replace an object of this lemma."""
        return normalise(lemma) in self._object_set

    def attribute_kind(self, value: str) -> str | None:
        return lexicon.attribute_kind(value)

    def converse(self, pred: str) -> tuple[str, str] | None:
        """(canonical, converse) of a spatial predicate whose converse the set states."""
        canonical = lexicon.predicate_of(pred)
        if canonical is None or lexicon.CONVERSE[canonical] not in self.predicates:
            return None
        return canonical, lexicon.CONVERSE[canonical]


# An object as a caption describes it: its lemma and its attribute values.
Description = tuple[str, frozenset[str]]


def describe(graph: Graph, idx: int) -> Description:
    values = {normalise(a["value"]) for a in _rows(graph, "attributes") if a["obj"] == idx}
    return _lemmas(graph).get(idx, ""), frozenset(values)


def _keys_by_kind(values: Iterable[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for value in values:
        kind = lexicon.attribute_kind(value)
        if kind is not None:
            out.setdefault(kind, set()).update(lexicon.value_keys(value))
    return out


def compatible(a: Description, b: Description) -> bool:
    """Whether two descriptions could be of the same object: the same lemma, and no
    attribute kind for which both state values and none agree ("red circle" and "large
    circle" could be; "red circle" and "blue circle" could not)."""
    if a[0] != b[0]:
        return False
    kinds_a, kinds_b = _keys_by_kind(a[1]), _keys_by_kind(b[1])
    return all(kinds_a[k] & kinds_b[k] for k in kinds_a.keys() & kinds_b.keys())


@dataclass
class ImageContents:
    """What is stated of one image (by any of its captions or regions)."""

    objects: set[str] = field(default_factory=set)  # object_keys
    attributes: set[str] = field(default_factory=set)  # lexicon.value_keys
    bindings: set[tuple[str, str]] = field(default_factory=set)  # (value key, lemma)
    # (subject, canonical predicate, object), both ways round ("A left of B" also as
    # "B right of A"); subject and object as ``Description``s
    relations: set[tuple[Description, str, Description]] = field(default_factory=set)

    def add(self, graph: Graph) -> None:
        lemma = _lemmas(graph)
        for name in lemma.values():
            self.objects |= object_keys(name)
        for attribute in _rows(graph, "attributes"):
            keys = lexicon.value_keys(attribute["value"])
            self.attributes |= keys
            target = lemma.get(attribute["obj"])
            if target is not None:
                self.bindings |= {(k, o) for k in keys for o in object_keys(target)}
        for relation in _rows(graph, "relations"):
            canonical = lexicon.predicate_of(relation["pred"])
            if canonical is None or relation["subj"] not in lemma or relation["obj"] not in lemma:
                continue
            s, o = describe(graph, relation["subj"]), describe(graph, relation["obj"])
            self.relations.add((s, canonical, o))
            self.relations.add((o, lexicon.CONVERSE[canonical], s))

    def has_attribute(self, value: str) -> bool:
        return bool(lexicon.value_keys(value) & self.attributes)

    def has_object(self, lemma: str) -> bool:
        return bool(object_keys(lemma) & self.objects)

    def has_binding(self, value: str, lemma: str) -> bool:
        return any((k, normalise(lemma)) in self.bindings for k in lexicon.value_keys(value))

    def may_hold(self, subject: Description, predicate: str, object_: Description) -> bool:
        """Whether a stated relation could be this one: same predicate, and ends that
        could be the same objects (``compatible``)."""
        return any(
            p == predicate and compatible(subject, s) and compatible(object_, o)
            for s, p, o in self.relations
        )


@dataclass(frozen=True)
class Edit:
    family: str
    target: str
    text: str
    detail: str


@lru_cache(maxsize=1 << 14)
def _word_pattern(word: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in word.split())
    return re.compile(rf"(?<![\w-]){words}(?![\w-])", re.IGNORECASE)


def _occurrences(text: str, word: str) -> int:
    words = word.split()
    if not words or words[0].lower() not in text.lower():
        return 0
    return len(_word_pattern(word).findall(text))


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _replace_once(text: str, word: str, replacement: str) -> str:
    return _word_pattern(word).sub(lambda m: _match_case(m.group(0), replacement), text, count=1)


def _fix_article(text: str, word: str) -> str:
    """'a orange' -> 'an orange' (and back) right before the replaced word."""

    def fix(match: re.Match[str]) -> str:
        article, following = match.group(1), match.group(2)
        return _match_case(article, indefinite_article(following)) + " " + following

    return re.sub(rf"\b(an?)\s+({re.escape(word)})\b", fix, text, flags=re.IGNORECASE)


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


SAMPLE_TRIES = 64


def _absent(
    rng: np.random.Generator, pool: Sequence[str], present: Callable[[str], bool]
) -> str | None:
    """A value of ``pool`` drawn uniformly among those not ``present`` (None if none).

    A large pool (an open vocabulary of object types) is sampled with rejection first, so
    the cost does not grow with the pool; a small one is filtered."""
    if len(pool) > SAMPLE_TRIES:
        for _ in range(SAMPLE_TRIES):
            value = _pick(rng, pool)
            if not present(value):
                return value
    options = [v for v in pool if not present(v)]
    return _pick(rng, options) if options else None


def replace_attribute(
    text: str, graph: Graph, image: ImageContents, vocab: Vocabulary, rng: np.random.Generator
) -> Edit | str:
    """One attribute -> a value of the same kind that nothing in the image has."""
    attributes = _rows(graph, "attributes")
    if not attributes:
        return NO_ATTRIBUTE
    reason, options = UNKNOWN_KIND, []
    for value in dict.fromkeys(a["value"] for a in attributes):
        kind = vocab.attribute_kind(value)
        if kind is None:
            continue
        if _occurrences(text, value) != 1:
            reason = max(reason, ATTRIBUTE_NOT_ONCE, key=REASONS.index)
            continue
        foils = [v for v in vocab.attributes.get(kind, ()) if not image.has_attribute(v)]
        if not foils:
            reason = NO_ATTRIBUTE_FOIL
            continue
        options.append((value, foils))
    if not options:
        return reason
    value, foils = _pick(rng, options)
    foil = _pick(rng, foils)
    edited = _fix_article(_replace_once(text, value, foil), foil)
    return Edit("replace", "att", edited, f"{value}->{foil}")


def replace_object(
    text: str, graph: Graph, image: ImageContents, vocab: Vocabulary, rng: np.random.Generator
) -> Edit | str:
    """One object noun -> an object type absent from the image, keeping its number."""
    objects = _rows(graph, "objects")
    if not objects:
        return NO_OBJECT
    objects = [o for o in objects if vocab.is_object(o["lemma"] or o["name"] or "")]
    if not objects:
        return NO_OBJECT_TYPE
    candidates = [o for o in objects if o["name"] and _occurrences(text, o["name"]) == 1]
    if not candidates:
        return OBJECT_NOT_ONCE
    obj = _pick(rng, candidates)
    foil = _absent(rng, vocab.objects, image.has_object)
    if foil is None:
        return NO_OBJECT_FOIL
    is_plural = normalise(obj["name"]) != normalise(obj["lemma"] or obj["name"])
    replacement = plural(foil) if is_plural else foil
    edited = _fix_article(_replace_once(text, obj["name"], replacement), replacement)
    return Edit("replace", "obj", edited, f"{obj['name']}->{replacement}")


def swap_attributes(
    text: str, graph: Graph, image: ImageContents, vocab: Vocabulary, rng: np.random.Generator
) -> Edit | str:
    """Exchange same-kind attributes of two objects; reject swaps still true of the image."""
    lemma = _lemmas(graph)
    by_object: dict[int, list[str]] = {}
    for attribute in _rows(graph, "attributes"):
        by_object.setdefault(attribute["obj"], []).append(attribute["value"])
    reason, pairs = NO_PAIR, []
    objects = sorted(by_object)
    for i, a in enumerate(objects):
        for b in objects[i + 1 :]:
            for va in by_object[a]:
                for vb in by_object[b]:
                    kind = vocab.attribute_kind(va)
                    if kind is None or kind != vocab.attribute_kind(vb):
                        continue
                    if lexicon.value_keys(va) & lexicon.value_keys(vb):
                        continue
                    if _occurrences(text, va) != 1 or _occurrences(text, vb) != 1:
                        reason = max(reason, PAIR_NOT_ONCE, key=REASONS.index)
                        continue
                    if image.has_binding(vb, lemma.get(a, "")) and image.has_binding(
                        va, lemma.get(b, "")
                    ):
                        reason = SWAP_TRUE  # the swapped caption would still be true
                        continue
                    pairs.append((va, vb))
    if not pairs:
        return reason
    va, vb = _pick(rng, pairs)
    placeholder = "\u0000"
    edited = _replace_once(text, va, placeholder)
    edited = _replace_once(edited, vb, va)
    edited = edited.replace(placeholder, vb)
    return Edit("swap", "att", edited, f"{va}<->{vb}")


class RelationBalance:
    """Which converse phrase an above/below edit writes, chosen so that each phrase is the
    negative's as often as the positive's over a benchmark: a phrase that only ever became
    a negative ("beneath" -> "above", never "above" -> "beneath") would tell a text-only
    model which caption is the positive. The left/right phrases keep their frame ("to the
    left of" <-> "to the right of"), which is already symmetric. Only phrases the set's own
    captions write are chosen (a phrase seen only in negatives would give them away too).
    Counts run over the edits in the order they are made, so a fixed order of captions gives
    fixed choices."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.surplus: Counter[str] = Counter()  # uses as the negative's minus the positive's
        joined = "\n".join(normalise(t) for t in texts)
        self.written = frozenset(
            s for s in lexicon.VERTICAL_SURFACES if re.search(rf"\b{re.escape(s)}\b", joined)
        )

    def choose(self, surface: str, default: str) -> str:
        """The converse phrase for ``surface``: when the default one is vertical, among the
        converse predicate's phrases that the set writes (the default where it writes none),
        the one written least often as a negative so far, ``default`` on ties."""
        options = [default]
        canonical = lexicon.predicate_of(surface)
        if default in lexicon.VERTICAL_SURFACES and canonical is not None:
            converse = lexicon.CONVERSE[canonical]
            # "on top of" is false wherever "above" is: a phrase of the converse too
            also = lexicon.surfaces_of("on top of") if converse == "above" else ()
            phrases = [*lexicon.surfaces_of(converse), *also]
            options = [p for p in phrases if p in self.written] or options
        self.surplus[surface] -= 1
        foil = min(options, key=lambda f: (self.surplus[f], f != default, f))
        self.surplus[foil] += 1
        return foil


def replace_relation(
    text: str,
    graph: Graph,
    image: ImageContents,
    vocab: Vocabulary,
    rng: np.random.Generator,
    balance: RelationBalance | None = None,
) -> Edit | str:
    """One spatial relation phrase -> its converse phrase, written the same way (with
    ``balance``: the converse phrase it chooses)."""
    relations = _rows(graph, "relations")
    if not relations:
        return NO_RELATION
    lemma = _lemmas(graph)
    reason, options = NO_CONVERSE, []
    for relation in relations:
        pair = vocab.converse(relation["pred"])
        if pair is None:
            continue
        canonical, converse = pair
        surface = next(
            (s for s in lexicon.surfaces_of(canonical) if _occurrences(text, s) == 1), None
        )
        if surface is None:
            reason = max(reason, RELATION_NOT_ONCE, key=REASONS.index)
            continue
        if relation["subj"] not in lemma or relation["obj"] not in lemma:
            continue
        s, o = describe(graph, relation["subj"]), describe(graph, relation["obj"])
        if image.may_hold(s, converse, o):  # also "a circle left of a circle"
            reason = CONVERSE_TRUE
            continue
        if surface not in [opt[0] for opt in options]:
            options.append((surface, lexicon.CONVERSE_SURFACE[surface]))
    if not options:
        return reason
    surface, foil = _pick(rng, options)
    if balance is not None:
        foil = balance.choose(surface, foil)
    edited = _replace_once(text, surface, foil)
    return Edit("replace", "rel", edited, f"{surface}->{foil}")


EDITS = (replace_attribute, replace_object, swap_attributes, replace_relation)


def edit_caption(
    text: str,
    graph: Graph,
    image: ImageContents,
    vocab: Vocabulary,
    rng: np.random.Generator,
    balance: RelationBalance | None = None,
) -> tuple[list[Edit], Counter[str]]:
    """Every edit kind for one caption; failures counted by reason. ``balance``: the
    benchmark's ``RelationBalance`` (None: each phrase's fixed converse)."""
    results = [
        replace_relation(text, graph, image, vocab, rng, balance)
        if edit is replace_relation
        else edit(text, graph, image, vocab, rng)
        for edit in EDITS
    ]
    edits = [r for r in results if isinstance(r, Edit) and r.text != text]
    failures = Counter(r for r in results if isinstance(r, str))
    return edits, failures
