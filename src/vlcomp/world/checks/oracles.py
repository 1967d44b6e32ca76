"""Ground-truth oracles: score (image, caption) pairs from the scene alone.

The world knows every scene, so a benchmark's candidates can be checked exactly. A caption
is read with the world's own vocabulary and caption grammar (``read_caption``: both
caption styles of ``captions``, the productivity template, region phrases), never with the
project's parser, so that an oracle's error is the generator's, never a parser's. A text
the grammar cannot read raises ``Unreadable`` with a reason; the job counts those by reason
and scores none of them.

A reading is a set of nodes (an object word with a count, attributes and negated
attributes) and relations between nodes (possibly negated). It *holds* in a scene when its
nodes can be mapped to disjoint sets of visible objects (``count`` objects each, at least:
"two red circles" needs two) with the node's shape and attributes and none of its negated
attributes, such that every member pair of each relation has the predicate (a negated one:
none has it). The definite "the X" after an "X" and the pronouns "it"/"them" refer back;
"another X" and every other noun phrase is a new node.

Oracles (``ORACLES``):

- ``truth``: 1 when the reading holds; otherwise half the share of its facts (each node,
  each relation with its two nodes) that hold one at a time: a perfect binder.
- ``bag_of_words``: the share of the caption's shape, attribute and relation words that
  the scene holds anywhere (a relation word when some ordered pair has it), regardless of
  binding, counts and negation.
- ``objects_only``: the share of the caption's shape words the scene holds.

A crop's scene is the objects whose box overlaps the crop (relations come from the whole
boxes). The false-negative rate of a negative type is the share of its negatives that
hold in the scene (the truth oracle cannot reject them), with a Wilson interval.

The spatial words have two readings (``READINGS``). The world's own, ``dominant_axis``
(``scenes.relation_between``), is the one its captions are written with and the oracles
score with: a pair has exactly one relation, that of the dominant axis of its centres'
offset. The second, ``apart`` (``scenes.relations_apart``), is how a reader may take the
words: a relation holds when the boxes are apart along its axis, so a pair may have two
relations or none. The false-negative table gives the rates under both, and how many
positives the second reading makes false.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import sqrt
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.evaluate.embed import text_key
from vlcomp.evaluate.metrics import EvalSettings, add_flag_counts, set_flags
from vlcomp.evaluate.retrieval_sets import (
    SCORES_SCHEMA,
    item_boxes,
    rank_sets,
    set_metric_table,
)
from vlcomp.io import write_parquet
from vlcomp.refine.words import word_prior_accuracy
from vlcomp.settings import settings_from
from vlcomp.text import plural
from vlcomp.vocabulary import negative_type
from vlcomp.world.captions import ALT_PREFIXES, ALT_SUFFIXES
from vlcomp.world.scenes import SceneObject, relation_between, relations_apart
from vlcomp.world.vocab import NUMBER_WORDS, SURFACE_TO_PREDICATE

Log = Callable[[str], None]

ORACLES: tuple[str, ...] = ("truth", "bag_of_words", "objects_only")
DOMINANT_AXIS, APART = "dominant_axis", "apart"
READINGS: tuple[str, ...] = (DOMINANT_AXIS, APART)  # of the spatial words; see the docstring
ORACLE_PREFIX = "oracle:"


class Unreadable(ValueError):
    """A text the world grammar cannot read; ``reason`` is its category."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class NodeReading:
    shape: str
    count: int
    attributes: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelationReading:
    subj: int
    pred: str
    obj: int
    negated: bool = False


@dataclass(frozen=True)
class Reading:
    nodes: tuple[NodeReading, ...]
    relations: tuple[RelationReading, ...]

    def words(self) -> set[str]:
        out = {n.shape for n in self.nodes}
        out |= {a for n in self.nodes for a in (*n.attributes, *n.negated)}
        return out | {r.pred for r in self.relations}


# ------------------------------------------------------------------------------ grammar

# Frames of ``captions`` (listing prefixes and suffixes, alt-text prefixes and suffixes)
# that carry no graph; removed before reading.
_FRAMES: tuple[str, ...] = (
    "on a grey background",
    "in the picture",
    "a picture of",
    "an image of",
    "a drawing of",
    "this image shows",
    *(p.strip(" :") for p in ALT_PREFIXES if p.strip()),
    *(s.strip(" -|") for s in ALT_SUFFIXES),
)
_FILLERS = frozenset({"there", "is", "are", "sit", "sits", "also", "plus", "with", "has", "have"})
_SEPARATORS = {
    ",": "comma",
    ";": "stop",
    ".": "stop",
    "and": "and",
    "&": "and",
    "+": "and",
    "/": "and",
}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_MAX_COUNT_DIGITS = 9  # larger numbers are stock-photo ids of alt texts, not counts


@dataclass(frozen=True)
class WorldVocab:
    shapes: tuple[str, ...]
    colours: tuple[str, ...]
    sizes: tuple[str, ...]

    @staticmethod
    def from_config(world_cfg: Mapping[str, Any]) -> WorldVocab:
        """The vocabulary of a ``world`` block as validated (its other keys are not read)."""
        return settings_from(WorldVocab, world_cfg, "world", shared=True)


class _Grammar:
    def __init__(self, vocab: WorldVocab) -> None:
        self.vocab = vocab
        self.noun: dict[str, tuple[str, bool]] = {s: (s, False) for s in vocab.shapes}
        self.noun.update({plural(s): (s, True) for s in vocab.shapes})
        self.adjectives = frozenset(vocab.colours) | frozenset(vocab.sizes)
        frames = sorted({f for f in _FRAMES if f}, key=len, reverse=True)
        self.frames = re.compile(r"\b(?:" + "|".join(re.escape(f) for f in frames) + r")\b")
        self.surfaces: dict[str, list[tuple[str, ...]]] = {}  # by first word, longest first
        for surface in sorted((tuple(s.split()) for s in SURFACE_TO_PREDICATE), key=len)[::-1]:
            self.surfaces.setdefault(surface[0], []).append(surface)


_GRAMMARS: dict[WorldVocab, _Grammar] = {}


def _tokens(text: str, grammar: _Grammar) -> list[str]:
    lowered = grammar.frames.sub(" ", text.lower())
    return re.findall(r"[a-z]+|\d+|[,;.&+/]", lowered)


def read_caption(text: str, vocab: WorldVocab) -> Reading:
    """The graph a caption states, read with the world grammar (see module docstring)."""
    grammar = _GRAMMARS.setdefault(vocab, _Grammar(vocab))
    return _Reader(_tokens(text, grammar), grammar, text).read()


class _Reader:
    def __init__(self, tokens: list[str], grammar: _Grammar, text: str) -> None:
        self.t, self.g, self.text = tokens, grammar, text
        self.i = 0
        self.nodes: list[NodeReading] = []
        # ("np", node), ("rel", (pred, negated)), ("pron", word), ("sep", kind)
        self.items: list[tuple[str, Any]] = []
        self.existential: set[int] = set()  # items of noun phrases after "there is/are"
        self.there = False

    def fail(self, reason: str, detail: str) -> Unreadable:
        return Unreadable(reason, f"{detail} in {self.text!r}")

    def peek(self, k: int = 0) -> str | None:
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def relation_at(self) -> tuple[str, int] | None:
        for surface in self.g.surfaces.get(self.t[self.i], ()) if self.i < len(self.t) else ():
            if tuple(self.t[self.i : self.i + len(surface)]) == surface:
                return SURFACE_TO_PREDICATE[" ".join(surface)], len(surface)
        return None

    def read(self) -> Reading:
        while self.i < len(self.t):
            word = self.t[self.i]
            if word == "that" and self.t[self.i + 1 : self.i + 3] == ["is", "not"]:
                self.i += 3
                rel = self.relation_at()
                if rel is None:
                    raise self.fail("negation without a relation", "'that is not'")
                self.items.append(("rel", (rel[0], True)))
                self.i += rel[1]
                continue
            rel = self.relation_at()
            if rel is not None:
                self.items.append(("rel", (rel[0], False)))
                self.i += rel[1]
            elif word in _SEPARATORS:
                kind = _SEPARATORS[word]
                if kind == "and" and self.items and self.items[-1] == ("sep", "comma"):
                    self.items[-1] = ("sep", "stop")  # the ", and " joining two sentences
                else:
                    self.items.append(("sep", kind))
                self.i += 1
            elif word in ("it", "them"):
                self.items.append(("pron", word))
                self.i += 1
            elif word == "there" and self.peek(1) in ("is", "are"):
                self.there = True
                self.i += 2
            elif word in _FILLERS or word.isdigit() and int(word) > _MAX_COUNT_DIGITS:
                self.i += 1
            else:
                node = self.noun_phrase()
                self.items.append(("np", node))
                if self.there:
                    self.existential.add(len(self.items) - 1)
                self.there = False
        if not self.nodes:
            raise self.fail("no object word", "nothing to check")
        return Reading(tuple(self.nodes), tuple(self.relations()))

    def noun_phrase(self) -> int:
        det = self.t[self.i]
        count: int | None = None
        definite = ordinal = None
        if det in ("a", "an", "one", "another"):
            count, self.i = 1, self.i + 1
        elif det == "the":
            definite, self.i = True, self.i + 1
            if self.peek() in _ORDINALS:
                ordinal = _ORDINALS.index(str(self.peek())) + 1
                self.i += 1
        word = self.peek()
        if word in NUMBER_WORDS.values():
            count = next(k for k, w in NUMBER_WORDS.items() if w == word)
            self.i += 1
        elif word is not None and word.isdigit():
            count = int(word)
            self.i += 1
        elif word == "several":
            count = 2
            self.i += 1
        attrs: list[str] = []
        negated: list[str] = []
        while True:
            word = self.peek()
            if word is None:
                raise self.fail("noun phrase without an object word", "text ends")
            if word == "not" and self.peek(1) in self.g.adjectives:
                negated.append(str(self.peek(1)))
                self.i += 2
            elif word in self.g.adjectives:
                attrs.append(word)
                self.i += 1
            elif word in self.g.noun:
                self.i += 1
                break
            elif word.isalpha() and word not in _SEPARATORS and self.relation_at() is None:
                raise self.fail("unknown word", repr(word))
            else:
                raise self.fail("noun phrase without an object word", f"before {word!r}")
        shape, is_plural = self.g.noun[word]
        if count is None:
            count = 2 if is_plural else 1
        if (count > 1) != is_plural:
            raise self.fail("count and noun disagree", f"{count} {word}")
        if definite and ordinal is None:
            phrase = (shape, tuple(attrs), tuple(negated))
            exact = [
                k for k, n in enumerate(self.nodes) if (n.shape, n.attributes, n.negated) == phrase
            ]
            named = [k for k, n in enumerate(self.nodes) if n.shape == shape]
            earlier = exact or (named if not attrs and not negated else [])
            if len(earlier) == 1:
                return earlier[0]
            if len(earlier) > 1:
                raise self.fail("ambiguous reference", f"'the {word}'")
        if ordinal is not None:
            same = [
                k
                for k, n in enumerate(self.nodes)
                if (n.shape, n.attributes, n.negated) == (shape, tuple(attrs), tuple(negated))
            ]
            if len(same) < ordinal:
                raise self.fail("unresolved reference", f"'the {_ORDINALS[ordinal - 1]} {word}'")
            return same[ordinal - 1]
        self.nodes.append(NodeReading(shape, count, tuple(attrs), tuple(negated)))
        return len(self.nodes) - 1

    def relations(self) -> list[RelationReading]:
        items = self.items
        out: list[RelationReading] = []
        clause_subject: int | None = None
        for k, (kind, value) in enumerate(items):
            if kind == "sep" and value in ("stop", "comma"):
                clause_subject = None
            if kind != "rel":
                continue
            pred, negated = value
            prev = items[k - 1] if k else None
            nxt = items[k + 1] if k + 1 < len(items) else None
            if nxt is not None and nxt[0] == "pron":
                # "<obj> with <subj> above it", "<obj> has <subj> above it": the clause's
                # first noun phrase is the antecedent
                first = self._clause_start(k)
                if prev is None or prev[0] != "np" or items[first][0] != "np" or first >= k - 1:
                    raise self.fail("pronoun without an antecedent", f"'{pred} {nxt[1]}'")
                subj, obj = prev[1], items[first][1]
            elif prev is not None and prev[0] == "np":
                subj, obj = prev[1], self._np(nxt, pred)
            elif prev is None or prev == ("sep", "stop") or prev == ("sep", "comma"):
                # fronted: "above the square there is a circle"
                obj = self._np(nxt, pred)
                after = min((j for j in self.existential if j > k + 1), default=k + 2)
                subj = self._np(items[after] if after < len(items) else None, pred)
            elif prev == ("sep", "and") and clause_subject is not None:
                # "a circle is above a square and left of a star"
                subj, obj = clause_subject, self._np(nxt, pred)
            else:
                raise self.fail("relation without a subject", repr(pred))
            if subj == obj:
                raise self.fail("relation of a node with itself", repr(pred))
            clause_subject = subj
            out.append(RelationReading(subj, pred, obj, negated))
        return out

    def _clause_start(self, k: int) -> int:
        j = k
        while j > 0 and self.items[j - 1] not in (("sep", "stop"), ("sep", "comma")):
            j -= 1
        return j

    def _np(self, item: tuple[str, Any] | None, pred: str) -> int:
        if item is None or item[0] != "np":
            raise self.fail("relation without an object", repr(pred))
        return int(item[1])


# ------------------------------------------------------------------------------ scenes


@dataclass(frozen=True)
class OracleScene:
    """The visible objects of an image or crop; ``relations(i, j)`` from whole boxes, under
    one reading of the spatial words (``READINGS``)."""

    objects: tuple[SceneObject, ...]
    reading: str = DOMINANT_AXIS

    def relations(self, i: int, j: int) -> frozenset[str]:
        a, b = self.objects[i], self.objects[j]
        if self.reading == APART:
            return relations_apart(a, b)
        return frozenset({relation_between(a, b)})

    def words(self) -> set[str]:
        n = len(self.objects)
        out = {w for o in self.objects for w in (o.shape, o.colour, o.size)}
        return out.union(*(self.relations(i, j) for i in range(n) for j in range(n) if i != j))


def _overlaps(o: SceneObject, box: tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return o.x < x + w and x < o.x + o.side and o.y < y + h and y < o.y + o.side


def visible(
    objects: Sequence[SceneObject],
    box: tuple[int, int, int, int] | None,
    reading: str = DOMINANT_AXIS,
) -> OracleScene:
    if box is None:
        return OracleScene(tuple(objects), reading)
    return OracleScene(tuple(o for o in objects if _overlaps(o, box)), reading)


def scenes_from_table(table: pl.DataFrame) -> dict[str, list[SceneObject]]:
    """image_id (as text) -> objects, from the world's ``scenes.parquet``."""
    missing = [
        c
        for c in ("image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h")
        if c not in table.columns
    ]
    if missing:
        raise ValueError(f"scenes: missing column(s) {missing}")
    out: dict[str, list[SceneObject]] = {}
    for image, _, shape, colour, size, x, y, w, h in (
        table.sort("image_id", "object_idx")
        .select("image_id", "object_idx", "shape", "colour", "size", "x", "y", "w", "h")
        .iter_rows()
    ):
        if w != h:
            raise ValueError(f"scenes: image {image} has a non-square box ({w} x {h})")
        out.setdefault(str(image), []).append(
            SceneObject(shape, colour, size, int(x), int(y), int(w))
        )
    return out


# ------------------------------------------------------------------------------ oracles


def _candidates(node: NodeReading, scene: OracleScene) -> list[int]:
    out = []
    for i, o in enumerate(scene.objects):
        have = {o.colour, o.size}
        if o.shape == node.shape and set(node.attributes) <= have and not set(node.negated) & have:
            out.append(i)
    return out


def _relation_ok(
    rel: RelationReading, subj: Sequence[int], obj: Sequence[int], scene: OracleScene
) -> bool:
    same = [rel.pred in scene.relations(a, b) for a in subj for b in obj]
    return not any(same) if rel.negated else all(same)


def _assignments(
    nodes: Sequence[int], reading: Reading, scene: OracleScene, cands: Sequence[list[int]]
) -> Iterable[dict[int, tuple[int, ...]]]:
    """Disjoint assignments of ``nodes`` (count objects each) that pass the relations
    among them, depth first."""
    relations = [r for r in reading.relations if r.subj in nodes and r.obj in nodes]

    def extend(k: int, taken: frozenset[int], chosen: dict[int, tuple[int, ...]]):
        if k == len(nodes):
            yield dict(chosen)
            return
        node = nodes[k]
        free = [i for i in cands[node] if i not in taken]
        for members in itertools.combinations(free, reading.nodes[node].count):
            chosen[node] = members
            if all(
                _relation_ok(r, chosen[r.subj], chosen[r.obj], scene)
                for r in relations
                if r.subj in chosen and r.obj in chosen and node in (r.subj, r.obj)
            ):
                yield from extend(k + 1, taken | set(members), chosen)
            del chosen[node]

    return extend(0, frozenset(), {})


def holds(reading: Reading, scene: OracleScene) -> bool:
    """Whether the whole reading is true of the scene (see module docstring)."""
    cands = [_candidates(n, scene) for n in reading.nodes]
    order = sorted(range(len(reading.nodes)), key=lambda k: len(cands[k]))
    return next(iter(_assignments(order, reading, scene, cands)), None) is not None


def truth_score(reading: Reading, scene: OracleScene) -> float:
    if holds(reading, scene):
        return 1.0
    cands = [_candidates(n, scene) for n in reading.nodes]
    facts = [[k] for k in range(len(reading.nodes))]
    facts += [[r.subj, r.obj] for r in reading.relations]
    true = 0
    for nodes in facts:
        sub = Reading(
            reading.nodes, tuple(r for r in reading.relations if {r.subj, r.obj} <= set(nodes))
        )
        true += next(iter(_assignments(nodes, sub, scene, cands)), None) is not None
    return 0.5 * true / len(facts)


def bag_of_words_score(reading: Reading, scene: OracleScene) -> float:
    words = reading.words()
    return len(words & scene.words()) / len(words)


def objects_only_score(reading: Reading, scene: OracleScene) -> float:
    shapes = {n.shape for n in reading.nodes}
    return len(shapes & {o.shape for o in scene.objects}) / len(shapes)


SCORERS: dict[str, Callable[[Reading, OracleScene], float]] = {
    "truth": truth_score,
    "bag_of_words": bag_of_words_score,
    "objects_only": objects_only_score,
}


# ------------------------------------------------------------------------------ tables

FALSE_NEGATIVE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,  # e.g. the systematicity corpus; null: none
    "generator": pl.String,
    "family": pl.String,  # negative type (family_target); "all" over every type
    "n_negatives": pl.Int64,  # negatives read and checked
    "n_true": pl.Int64,  # negatives that hold in the scene: false negatives
    "false_negative_rate": pl.Float64,
    "ci_low": pl.Float64,  # Wilson interval
    "ci_high": pl.Float64,
    "n_unreadable": pl.Int64,  # negatives the world grammar could not read (not checked)
    "bag_of_words_accuracy": pl.Float64,  # binding-free solvable share (sets of this type)
    "objects_only_accuracy": pl.Float64,
    "truth_accuracy": pl.Float64,
    "n_sets": pl.Int64,
    "bag_of_words_tie_share": pl.Float64,
    # the changed words' prior without the image (refine.words.word_prior_accuracy, pairs of
    # complete sets, items in two folds by a hash of their id); 0.5: none
    "word_prior_accuracy": pl.Float64,
    # the same negatives under the second reading of the spatial words (READINGS: boxes
    # apart along the relation's axis), and the items' positives that reading makes false
    "n_true_apart": pl.Int64,
    "false_negative_rate_apart": pl.Float64,
    "ci_low_apart": pl.Float64,
    "ci_high_apart": pl.Float64,
    "n_positives": pl.Int64,
    "n_positives_false_apart": pl.Int64,
}

UNREADABLE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "part": pl.String,
    "item_id": pl.String,
    "is_positive": pl.Boolean,
    "generator": pl.String,
    "family": pl.String,
    "reason": pl.String,
    "text": pl.String,
}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials (NaN for n = 0)."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)  # exact ends, not rounding noise
    return low, 1.0 if k == n else min(1.0, centre + half)


@dataclass
class ScoredPart:
    """One benchmark part read and scored by every oracle."""

    # SCORES_SCHEMA rows (model "oracle:<name>") with generator, holds and complete
    scores: pl.DataFrame
    unreadable: pl.DataFrame  # UNREADABLE_SCHEMA
    # every read positive the truth oracle rejects (item_id, image, text), sets or not
    rejected: pl.DataFrame


def score_part(
    candidates: pl.DataFrame,
    scenes: Mapping[str, Sequence[SceneObject]],
    vocab: WorldVocab,
    boxes: pl.DataFrame | None = None,
    label: str | None = None,
) -> ScoredPart:
    """Read every candidate text and score it with each oracle against its image or crop.

    An item with an unreadable positive (or no readable negative) is left out; an item
    with an unreadable negative is marked incomplete (``complete``): its readable negatives
    are checked for false negatives, but it forms no set. Every unreadable text is listed
    with its reason."""
    columns = (
        "benchmark",
        "item_id",
        "image",
        "text",
        "is_positive",
        "family",
        "target",
        "generator",
    )
    for column in columns:
        if column not in candidates.columns:
            raise ValueError(f"candidates: missing column {column!r}")
    box_of = item_boxes(boxes)
    readings: dict[str, Reading | Unreadable] = {}
    for text in candidates["text"].unique(maintain_order=True).to_list():
        try:
            readings[text] = read_caption(text, vocab)
        except Unreadable as error:
            readings[text] = error
    rows: list[tuple[Any, ...]] = []
    bad: list[tuple[Any, ...]] = []
    bad_items: set[str] = set()  # an unreadable positive: the item is left out
    partial_items: set[str] = set()  # an unreadable negative: no set, negatives still checked
    scene_cache: dict[tuple[str, Any, str], OracleScene] = {}
    for bench, item, image, text, positive, family, target, generator in candidates.select(
        columns
    ).iter_rows():
        reading = readings[text]
        ntype = family if target is None else f"{family}_{target}"
        if isinstance(reading, Unreadable):
            bad.append((bench, label, item, positive, generator, ntype, reading.reason, text))
            (bad_items if positive else partial_items).add(item)
            continue
        if str(image) not in scenes:
            raise ValueError(f"candidates: item {item!r} names image {image!r}, which no scene has")
        for spatial in READINGS:
            key = (str(image), box_of.get(item), spatial)
            if key not in scene_cache:
                scene_cache[key] = visible(scenes[str(image)], key[1], spatial)
        scene = scene_cache[(str(image), box_of.get(item), DOMINANT_AXIS)]
        scores = [SCORERS[name](reading, scene) for name in ORACLES]
        holds_apart = holds(reading, scene_cache[(str(image), box_of.get(item), APART)])
        rows.append(
            (
                bench,
                item,
                str(image),
                family,
                target,
                positive,
                text,
                generator,
                scores[0] == 1.0,
                holds_apart,
                *scores,
            )
        )
    frame = pl.DataFrame(
        rows,
        schema={
            "benchmark": pl.String,
            "item_id": pl.String,
            "image": pl.String,
            "family": pl.String,
            "target": pl.String,
            "is_positive": pl.Boolean,
            "text": pl.String,
            "generator": pl.String,
            "holds": pl.Boolean,
            "holds_apart": pl.Boolean,
            **{name: pl.Float64 for name in ORACLES},
        },
        orient="row",
    ).filter(~pl.col("item_id").is_in(sorted(bad_items)))
    rejected = frame.filter(pl.col("is_positive") & ~pl.col("holds")).select(
        "item_id", "image", "text"
    )
    # an item whose negatives were all unreadable is no set
    with_negatives = frame.filter(~pl.col("is_positive"))["item_id"].unique()
    frame = frame.filter(pl.col("item_id").is_in(with_negatives.to_list())).with_columns(
        complete=~pl.col("item_id").is_in(sorted(partial_items))
    )
    # complexities pooled: the oracles' rows sit beside the models' pooled rows
    complexity = pl.lit(None, pl.Int64)
    scores = pl.concat(
        [
            frame.select(
                model=pl.lit(ORACLE_PREFIX + name),
                benchmark="benchmark", item_id="item_id", image="image", family="family",
                target="target", is_positive="is_positive", complexity=complexity,
                text_key=pl.col("text").map_elements(text_key, return_dtype=pl.String),
                similarity=pl.col(name), generator="generator", holds="holds",
                holds_apart="holds_apart", complete="complete", text="text",
            )
            for name in ORACLES
        ]
    )  # fmt: skip
    unreadable = pl.DataFrame(bad, schema=UNREADABLE_SCHEMA, orient="row")
    return ScoredPart(scores, unreadable, rejected)


def oracle_tables(
    parts: Sequence[tuple[str | None, ScoredPart]], settings: EvalSettings
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Metric table (``METRIC_SCHEMA`` rows of every oracle and chance, the same ranking and
    tie policy as models get), per-set predictions, and the false-negative table."""
    predictions = []
    fn_rows: list[tuple[Any, ...]] = []
    for label, part in parts:
        scores = part.scores
        if not scores.height:
            continue
        # sets as the models get them: only items whose every candidate was read
        base = scores.filter("complete").select(list(SCORES_SCHEMA))
        # an oracle reads the text itself: texts are told apart when they differ
        flags = set_flags(base, {key: key for key in base["text_key"].unique()})
        ranked = (
            rank_sets(base)
            .join(
                flags,
                on=["model", "benchmark", "item_id", "family"],
                how="left",
                maintain_order="left",
            )
            .with_columns(part=pl.lit(label, pl.String))
        )
        predictions.append(ranked)
        fn_rows += _false_negatives(label, scores, ranked, part.unreadable)
    stacked = pl.concat(predictions) if predictions else pl.DataFrame()
    metrics = (
        add_flag_counts(set_metric_table(stacked, settings), stacked)
        if predictions
        else pl.DataFrame()
    )
    fn = pl.DataFrame(fn_rows, schema=FALSE_NEGATIVE_SCHEMA, orient="row")
    return metrics, stacked, fn


def _false_negatives(
    label: str | None, scores: pl.DataFrame, ranked: pl.DataFrame, unreadable: pl.DataFrame
) -> list[tuple[Any, ...]]:
    truth = scores.filter(pl.col("model") == ORACLE_PREFIX + "truth").with_columns(
        type=negative_type(pl.col("family"), pl.col("target"))
    )
    negatives = truth.filter(~pl.col("is_positive"))
    # a positive counts under each type of its item's negatives (a set's positive row has
    # no type of its own)
    positives = (
        truth.filter("is_positive")
        .select("item_id", "holds_apart")
        .unique("item_id", keep="first", maintain_order=True)
        .join(
            negatives.select("item_id", "type", generator_negative="generator").unique(
                ["item_id", "type"], maintain_order=True
            ),
            on="item_id",
            how="inner",
        )
    )
    generator_of = negatives.select("item_id", "type", "generator").unique(
        subset=["item_id", "type"]
    )
    sets = ranked.join(
        generator_of.rename({"type": "family"}), on=["item_id", "family"], how="left"
    )
    bad = unreadable.filter(~pl.col("is_positive"))
    prior_pairs = _prior_pairs(scores)
    bench = scores["benchmark"][0]
    out = []
    keys = negatives.select("generator", "type").unique().sort("generator", "type").iter_rows()
    for generator, ntype in [*keys, *((g, "all") for g in sorted(set(negatives["generator"])))]:
        sel = negatives.filter(pl.col("generator") == generator)
        in_sets = sets.filter(pl.col("generator") == generator)
        in_bad = bad.filter(pl.col("generator") == generator)
        if ntype != "all":
            sel = sel.filter(pl.col("type") == ntype)
            in_sets = in_sets.filter(pl.col("family") == ntype)
            in_bad = in_bad.filter(pl.col("family") == ntype)
        n, k, k_apart = sel.height, int(sel["holds"].sum()), int(sel["holds_apart"].sum())
        low, high = wilson(k, n)
        low_apart, high_apart = wilson(k_apart, n)
        own = positives.filter(pl.col("generator_negative") == generator)
        if ntype != "all":
            own = own.filter(pl.col("type") == ntype)
        own = own.unique("item_id")

        acc = {
            name: in_sets.filter(pl.col("model") == ORACLE_PREFIX + name)["correct"].mean()
            for name in ORACLES
        }
        bow = in_sets.filter(pl.col("model") == ORACLE_PREFIX + "bag_of_words")
        pairs = prior_pairs.filter(pl.col("generator") == generator)
        if ntype != "all":
            pairs = pairs.filter(pl.col("type") == ntype)
        prior = word_prior_accuracy(list(pairs.select("positive", "text", "fold").iter_rows()))
        out.append((
            bench, label, generator, ntype, n, k, k / n if n else None, low, high, in_bad.height,
            acc["bag_of_words"], acc["objects_only"], acc["truth"],
            bow.height, bow["tied"].mean(), prior,
            k_apart, k_apart / n if n else None, low_apart, high_apart,
            own.height, int((~own["holds_apart"]).sum()),
        ))  # fmt: skip
    return out


def _prior_pairs(scores: pl.DataFrame) -> pl.DataFrame:
    """(positive, negative text, type, generator, fold) of every negative of a complete set,
    the fold a hash of the item id (the same items fall together in every run)."""
    truth = scores.filter((pl.col("model") == ORACLE_PREFIX + "truth") & pl.col("complete"))
    positives = truth.filter("is_positive").select("item_id", positive="text")
    return (
        truth.filter(~pl.col("is_positive"))
        .join(positives, on="item_id", how="inner", maintain_order="left")
        .select(
            "positive", "text", "generator",
            type=negative_type(pl.col("family"), pl.col("target")),
            fold=pl.col("item_id").map_elements(
                lambda item: zlib.crc32(item.encode()) & 1, return_dtype=pl.Int64
            ),
        )
    )  # fmt: skip


def oracle_job(
    parts: Sequence[Mapping[str, Any]],
    scenes: str,
    world: Mapping[str, Any],
    settings: Mapping[str, Any],
    metrics_out: str,
    false_negatives_out: str,
    unreadable_out: str,
    log: Log = print,
) -> None:
    """Job: evaluate one world benchmark with the oracles.

    ``parts``: {"candidates", "boxes" (or None), "label"} per part (as the models' evaluation
    gets them). Writes the metric table (``METRIC_SCHEMA``, models ``oracle:<name>``), the
    false-negative table per part, generator and negative type (``FALSE_NEGATIVE_SCHEMA``)
    and the unreadable texts (``UNREADABLE_SCHEMA``). Fails when a positive cannot be read
    or the truth oracle rejects one: the self-check that the reading and the scenes
    agree."""
    vocab = WorldVocab.from_config(world)
    scene_objects = scenes_from_table(pl.read_parquet(scenes))
    eval_settings = EvalSettings.from_config(settings)
    scored: list[tuple[str | None, ScoredPart]] = []
    unreadable = []
    for part in parts:
        label = part.get("label")
        candidates = pl.read_parquet(part["candidates"])
        boxes = pl.read_parquet(part["boxes"]) if part.get("boxes") else None
        result = score_part(candidates, scene_objects, vocab, boxes, label)
        unread = result.unreadable.filter("is_positive")
        if unread.height:
            first = unread.row(0, named=True)
            raise ValueError(
                f"{part['candidates']}: {unread.height} positive(s) the world grammar cannot "
                f"read, e.g. item {first['item_id']!r}: {first['reason']} ({first['text']!r})"
            )
        if result.rejected.height:
            item, image, text = result.rejected.row(0)
            raise ValueError(
                f"{part['candidates']}: the truth oracle rejects {result.rejected.height} "
                f"positive(s), e.g. item {item!r} (image {image}: {text!r}); the reading or "
                "the scenes are wrong"
            )
        n_items = candidates["item_id"].n_unique()
        kept = result.scores["item_id"].n_unique()
        log(
            f"{part['candidates']}: {kept}/{n_items} items scored; {result.unreadable.height} "
            f"unreadable text(s); every positive holds"
        )
        for reason, n in result.unreadable.group_by("reason").len().sort("reason").iter_rows():
            log(f"  unreadable ({reason}): {n}")
        if not kept:
            raise ValueError(f"{part['candidates']}: no item could be read with the world grammar")
        scored.append((label, result))
        unreadable.append(result.unreadable)
    metrics, _, fn = oracle_tables(scored, eval_settings)
    meta = {
        **eval_settings.metadata(),
        "oracles": ",".join(ORACLES),
        "spatial_reading": (
            f"{DOMINANT_AXIS}: a pair's relation is the dominant axis of its centres' offset "
            f"(the world's; the oracles score with it); {APART} (the *_apart columns): a "
            "relation holds when the boxes are apart along its axis"
        ),
    }
    write_parquet(metrics, Path(metrics_out), metadata=meta)
    write_parquet(fn, Path(false_negatives_out), metadata=meta)
    write_parquet(
        pl.concat(unreadable).sort("part", "item_id", "text", nulls_last=True),
        Path(unreadable_out),
        metadata=meta,
    )
    for row in fn.filter(pl.col("family") == "all").iter_rows(named=True):
        log(
            f"{row['part'] or row['benchmark']} {row['generator']}: false negatives "
            f"{row['n_true']}/{row['n_negatives']}; bag-of-words accuracy "
            f"{row['bag_of_words_accuracy']} over {row['n_sets']} sets"
        )
