"""CREPE systematicity hard negatives (Ma et al., CVPR 2023): HN-ATOM and HN-COMP.

Each evaluation item (``EVAL_ITEMS_SCHEMA``: a region's text and its scene graph) gets a
*target compound*, an ``attr_obj`` (attribute, object) or ``obj_rel_obj`` (subject,
predicate, object) compound of its graph (``vlcomp.counts.units`` definitions), and
up to two retrieval sets, each one candidate item of ``CANDIDATES_SCHEMA``:

- **HN-ATOM** (family ``atom``, item ``<item_id>/atom``): the caption with one atom of the
  target compound replaced by a WordNet foil (``wordnet_foils``): "a red car" -> "a blue
  car", "a red bike". Default 1 positive + 4 negatives. Negatives take the atom positions
  in turn (a seeded order), each position's foils best first;
- **HN-COMP** (family ``comp``, item ``<item_id>/comp``): the target compound split into two
  compounds, each holding one atomic foil, joined by "and": "a red car" -> "a red bike and
  a blue car" (CREPE's construction: every atom of the original occurs, never together).
  For ``obj_rel_obj`` the two foiled positions are (object, subject), (predicate,
  subject) or (object, predicate): "dog on table" -> "dog on chair and cat on table".
  Default 1 + 6.

Foils of an atom are never atoms of the item's graph (same kind), and a foiled compound
that is true somewhere in the item's image (the union of the graphs of all items with the
same ``image_id``, when ``image_scope``) is dropped. Foils of one position are ranked by
relation tier (antonyms first) and then by a text-only scorer on the edited caption
(higher = more plausible); HN-COMP candidates are the combinations of the ``comp_foils``
best foils per position, ranked by summed tier and score, preferring unused foils.

Which compound: CREPE builds its systematicity negatives from region descriptions with
one compound. ``compounds: single`` keeps exactly that (items whose graph has another
number of distinct compounds fail as ``not_one_compound``). The default ``target`` takes
every item with a compound: the target is a compound the caption states unambiguously,
unseen compounds first when the split assignments are given (so a UC item's negatives
test its novel compound), then in a seeded order; the first target with enough foils is
used. The rest of the caption is left as it is. A compound with a depiction noun
(``lexicon.META_NOUNS``: "image", "photo", "background", ...) is never a target, and no
such noun is an object foil (``wordnet_foils.vocabulary_from``).

Text edits act on the caption's words: an atom is replaced where the compound is stated
as a phrase (attributes directly before their noun, possibly with other attributes of the
same object in between: "large green triangle"; a relation as subject, up to two filler
words, predicate, then the object after at most five determiners/attributes). A compound
stated twice or not as such a phrase is not a target. Plural nouns get plural foils, "a"/
"an" before a replaced word are fixed, the case of a capitalised word is kept. Relation
predicates may appear as any phrasing of their lexicon class ("over" for "above").

Candidate rows: ``benchmark`` the benchmark's name (default "crepe_systematicity"),
``image`` the item's image_id (or ``image_id#xywh=x,y,w,h`` with ``image_ref: xywh``),
``generator`` "template:wordnet",
``target`` null for the positive, for an HN-ATOM negative the replaced position (``att``,
``obj``, ``rel``), for an HN-COMP negative the compound kind (``att`` for attr_obj, ``rel``
for obj_rel_obj); ``provenance`` JSON with ``foil``, ``original``, ``position``,
``relation`` (antonym, cohyponym, ...), ``via`` (the shared hypernym), ``compound`` and
``seed`` (lists of two for HN-COMP).

Items without valid negatives are never dropped silently: the failures table counts, per
family, each item without a retrieval set by reason (level ``item``), items kept with fewer
negatives when ``allow_fewer`` (level ``kept_short``), the foil look-ups of the targets
by atom kind and outcome (level ``foil``) and, with a ``context.ContextCheck``, the
negatives passed over because they tokenise like the positive within the text encoders'
context (level ``negative``, reason ``context: identical within N tokens``; the next
candidate in rank order takes the place). The region box of each candidate item goes to a
side table (``REGIONS_SCHEMA``) keyed by the candidate item_id.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA, GRAPH_SCHEMA, conform
from vlcomp.io import write_parquet
from vlcomp.negatives import lexicon
from vlcomp.negatives.context import ContextCheck
from vlcomp.negatives.wordnet_foils import (
    DEFAULT_RELATIONS,
    Foil,
    FoilFinder,
    Rejection,
    score_captions,
)
from vlcomp.scorers.base import TextScorer
from vlcomp.text import indefinite_article, normalise_or_none, plural, word_spans
from vlcomp.text.lemma import load_lemmatizer

log = logging.getLogger(__name__)

BENCHMARK = "crepe_systematicity"
GENERATOR = "template:wordnet"
ATOM, COMP = "atom", "comp"
# Failure of an item whose every compound has a depiction noun ("a blue image"): never a
# target (``lexicon.META_NOUNS``).
META_COMPOUND = "compound_of_meta_noun"
FAMILIES: tuple[str, ...] = (ATOM, COMP)

REGIONS_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,  # candidate item: <eval item_id>/<family>
    "eval_item_id": pl.String,
    "family": pl.String,
    "image_id": pl.String,
    "region_id": pl.String,
    "x": pl.Int64,
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "compound_kind": pl.String,  # attr_obj | obj_rel_obj
    "compound": pl.List(pl.String),  # the target compound's parts
}
FAILURES_SCHEMA: dict[str, pl.DataType] = {
    "level": pl.String,  # item | kept_short | foil | negative
    "family": pl.String,
    "reason": pl.String,
    "count": pl.Int64,
}

DEFAULT_SETTINGS: dict[str, Any] = {
    "min_count": 10,  # vocabulary: training atoms seen at least this often
    "atom_negatives": 4,  # HN-ATOM retrieval set: 1 positive + 4
    "comp_negatives": 6,  # HN-COMP retrieval set: 1 positive + 6
    "compounds": "target",  # or "single" (CREPE: items with exactly one compound)
    "allow_fewer": False,  # keep items with fewer negatives than asked
    "max_foils": 20,  # foils per atom position scored (best tiers/closest kin first)
    "comp_foils": 6,  # best foils per position combined into HN-COMP candidates
    "image_scope": True,  # drop foiled compounds true elsewhere in the image
    "senses": "coherent",  # WordNet senses: coherent | all | <int> (tools/senses_check.py)
    "max_hops": 2,
    "min_depth": 3,
    "image_ref": "image_id",  # candidates' image: image_id | xywh (image_id#xywh=x,y,w,h)
}

# Target labels (CANDIDATES_SCHEMA.target) and atom kinds of each compound position.
POSITIONS: dict[str, tuple[str, ...]] = {
    "attr_obj": ("att", "obj"),
    "obj_rel_obj": ("subj", "pred", "obj"),
}
POSITION_KIND = {"att": "attribute", "obj": "object", "subj": "object", "pred": "relation"}
POSITION_TARGET = {"att": "att", "obj": "obj", "subj": "obj", "pred": "rel"}
COMP_TARGET = {"attr_obj": "att", "obj_rel_obj": "rel"}
# HN-COMP: (position foiled in the first compound, position foiled in the second).
COMP_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "attr_obj": (("obj", "att"),),
    "obj_rel_obj": (("obj", "subj"), ("pred", "subj"), ("obj", "pred")),
}

FILLERS = frozenset("is are was were be being been that which who".split())
DETERMINERS = frozenset(
    """a an the one two three four five six seven eight nine ten some several many few
    this that these those another its his her their other""".split()
)
MAX_MODIFIERS = 4
MAX_OBJECT_GAP = 5

# ----------------------------------------------------------------------------- settings


def resolve_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``DEFAULT_SETTINGS`` updated with ``settings``; unknown keys and bad values raise."""
    out = dict(DEFAULT_SETTINGS)
    unknown = sorted(set(settings or {}) - set(out))
    if unknown:
        raise ValueError(f"unknown CREPE negatives setting(s) {unknown}; known: {sorted(out)}")
    out.update(settings or {})
    for key in ("min_count", "atom_negatives", "comp_negatives", "max_foils", "comp_foils"):
        if not isinstance(out[key], int) or isinstance(out[key], bool) or out[key] < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {out[key]!r}")
    if out["compounds"] not in ("target", "single"):
        raise ValueError(f"compounds must be 'target' or 'single', got {out['compounds']!r}")
    if out["image_ref"] not in ("image_id", "xywh"):
        raise ValueError(f"image_ref must be 'image_id' or 'xywh', got {out['image_ref']!r}")
    for key in ("allow_fewer", "image_scope"):
        if not isinstance(out[key], bool):
            raise ValueError(f"{key} must be true or false, got {out[key]!r}")
    return out


# --------------------------------------------------------------------------- the graph


CompoundKey = tuple[str, tuple[str, ...]]  # (compound kind, parts)


@dataclass(frozen=True)
class ObjectNode:
    idx: int
    atom: str  # normalized lemma (or normalized name)
    surfaces: tuple[str, ...]  # how the caption may write it, longest first
    attributes: tuple[str, ...]  # normalized attribute values on this node


@dataclass(frozen=True)
class Compound:
    kind: str  # attr_obj | obj_rel_obj
    parts: tuple[str, ...]  # (attr, obj) | (subj, pred, obj), normalized atoms
    nodes: tuple[int, ...]  # attr_obj: (obj,), obj_rel_obj: (subj, obj)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, self.parts


@dataclass(frozen=True)
class Graph:
    objects: dict[int, ObjectNode]
    compounds: tuple[Compound, ...]  # distinct, in graph order
    atoms: dict[str, frozenset[str]]  # kind -> atoms of the graph


def parse_graph(
    objects: Sequence[Mapping], attributes: Sequence[Mapping], relations: Sequence[Mapping]
) -> Graph:
    """Nodes, distinct compounds and atoms of one graph (the units' normalization: an
    object's atom is its normalised lemma, else its normalised name)."""
    lemmatizer = load_lemmatizer()
    nodes: dict[int, ObjectNode] = {}
    attrs: dict[int, list[str]] = {}
    for a in attributes or []:
        value = normalise_or_none(a.get("value"))
        if value is not None and isinstance(a.get("obj"), int):
            attrs.setdefault(a["obj"], [])
            if value not in attrs[a["obj"]]:
                attrs[a["obj"]].append(value)
    atoms: dict[str, set[str]] = {"object": set(), "attribute": set(), "relation": set()}
    for o in objects or []:
        idx = o.get("idx")
        name, lemma = normalise_or_none(o.get("name")), normalise_or_none(o.get("lemma"))
        atom = lemma or name
        if atom is None or not isinstance(idx, int) or idx in nodes:
            continue
        singular = lemmatizer.phrase(name) if name else None
        surfaces = {s for s in (name, atom, plural(atom), singular) if s}
        ordered = tuple(sorted(surfaces, key=lambda s: (-len(s.split()), -len(s), s)))
        nodes[idx] = ObjectNode(idx, atom, ordered, tuple(attrs.get(idx, ())))
        atoms["object"].add(atom)
    compounds: list[Compound] = []
    for a in attributes or []:
        value, obj = normalise_or_none(a.get("value")), a.get("obj")
        if value is not None:
            atoms["attribute"].add(value)
            if obj in nodes:
                compounds.append(Compound("attr_obj", (value, nodes[obj].atom), (obj,)))
    for r in relations or []:
        pred, subj, obj = normalise_or_none(r.get("pred")), r.get("subj"), r.get("obj")
        if pred is None:
            continue
        atoms["relation"].add(pred)
        if subj in nodes and obj in nodes and subj != obj:
            parts = (nodes[subj].atom, pred, nodes[obj].atom)
            compounds.append(Compound("obj_rel_obj", parts, (subj, obj)))
    distinct: dict[tuple, Compound] = {}
    for compound in compounds:
        distinct.setdefault(compound.key, compound)
    return Graph(nodes, tuple(distinct.values()), {k: frozenset(v) for k, v in atoms.items()})


@dataclass(frozen=True)
class Described:
    """An object as a caption describes it: its atom and the attributes it is given."""

    atom: str
    attributes: frozenset[str]

    def within(self, other: Described) -> bool:
        """``other`` fits this description (same atom, at least these attributes)."""
        return self.atom == other.atom and self.attributes <= other.attributes


def _described(graph: Graph, idx: int) -> Described:
    node = graph.objects[idx]
    return Described(node.atom, frozenset(node.attributes))


@dataclass
class SceneFacts:
    """What is true of an image (or item): described objects and relations between them,
    relations by lexicon class with their converse/symmetric reading."""

    objects: list[Described] = field(default_factory=list)
    relations: list[tuple[Described, str, Described]] = field(default_factory=list)

    def add(self, graph: Graph) -> None:
        for idx in graph.objects:
            self.objects.append(_described(graph, idx))
        for compound in graph.compounds:
            if compound.kind != "obj_rel_obj":
                continue
            ends = {
                "S": _described(graph, compound.nodes[0]),
                "O": _described(graph, compound.nodes[1]),
            }
            for a, rel, b in DEFAULT_RELATIONS.facts("S", compound.parts[1], "O"):
                self.relations.append((ends[a], rel, ends[b]))

    def holds(self, claim: Described | tuple[Described, str, Described]) -> bool:
        """Whether a described object exists, or a relation holds between described
        objects (in any phrasing of its class, or conversely)."""
        if isinstance(claim, Described):
            return any(claim.within(o) for o in self.objects)
        subj, pred, obj = claim
        rel = DEFAULT_RELATIONS.canonical(pred)
        return any(rel == r and subj.within(a) and obj.within(b) for a, r, b in self.relations)


def foiled_claim(
    graph: Graph, compound: Compound, index: int, foil: str
) -> Described | tuple[Described, str, Described]:
    """What the caption claims after the compound's part ``index`` is replaced: the
    described object (attr_obj) or relation (obj_rel_obj), other attributes kept."""
    if compound.kind == "attr_obj":
        node = _described(graph, compound.nodes[0])
        if index == 0:
            attrs = (node.attributes - {compound.parts[0]}) | {foil}
            return Described(node.atom, frozenset(attrs))
        return Described(foil, node.attributes)
    subj, obj = (_described(graph, i) for i in compound.nodes)
    pred = compound.parts[1]
    if index == 0:
        subj = Described(foil, subj.attributes)
    elif index == 1:
        pred = foil
    else:
        obj = Described(foil, obj.attributes)
    return subj, pred, obj


# ----------------------------------------------------------------------- caption words


@dataclass(frozen=True)
class Token:
    word: str  # lower case
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    return [Token(*span) for span in word_spans(text)]


def _occurrences(tokens: Sequence[Token], phrase: str) -> list[tuple[int, int]]:
    words = phrase.split()
    n = len(words)
    return [
        (i, i + n)
        for i in range(len(tokens) - n + 1)
        if all(tokens[i + k].word == words[k] for k in range(n))
    ]


def _joined(text: str, tokens: Sequence[Token], lo: int, hi: int) -> bool:
    """Tokens lo..hi-1 are separated by white space only (no punctuation)."""
    return all(not text[tokens[k].end : tokens[k + 1].start].strip() for k in range(lo, hi - 1))


@dataclass(frozen=True)
class Mention:
    """Where a compound is stated: token spans per position (``POSITIONS`` order), the
    phrase's token range (with the modifiers of its first noun) and a determiner before."""

    compound: Compound
    slots: tuple[tuple[int, int], ...]
    start: int
    end: int
    det: int | None
    plural: tuple[bool, ...]  # per position: the noun is written in the plural

    def slot(self, position: str) -> tuple[int, int]:
        return self.slots[POSITIONS[self.compound.kind].index(position)]


def _noun_occurrences(tokens: Sequence[Token], node: ObjectNode) -> list[tuple[int, int, bool]]:
    """(start, end, plural) of each mention of the node's noun; longest surface wins."""
    lemmatizer = load_lemmatizer()
    taken: dict[int, tuple[int, int, bool]] = {}
    for surface in node.surfaces:
        is_plural = surface != node.atom and lemmatizer.phrase(surface) == node.atom
        for start, end in _occurrences(tokens, surface):
            if not any(s <= start < e or s < end <= e for s, e, _ in taken.values()):
                taken[start] = (start, end, is_plural)
    return [taken[k] for k in sorted(taken)]


def _modifiers(
    text: str, tokens: Sequence[Token], noun_start: int, node: ObjectNode
) -> tuple[int, dict[str, tuple[int, int]]]:
    """Walk left from a noun over its node's attributes: (phrase start, value -> span)."""
    values = sorted(node.attributes, key=lambda v: (-len(v.split()), v))
    pos, found = noun_start, {}
    for _ in range(MAX_MODIFIERS):
        for value in values:
            n = len(value.split())
            lo = pos - n
            if (
                lo >= 0
                and value not in found
                and [t.word for t in tokens[lo:pos]] == value.split()
                and _joined(text, tokens, lo, pos + 1)
            ):
                found[value] = (lo, pos)
                pos = lo
                break
        else:
            break
    return pos, found


def _determiner(text: str, tokens: Sequence[Token], start: int) -> int | None:
    k = start - 1
    if k >= 0 and tokens[k].word in DETERMINERS and _joined(text, tokens, k, start + 1):
        return k
    return None


def locate(text: str, tokens: Sequence[Token], graph: Graph, compound: Compound) -> Mention | str:
    """The compound's unique phrase in the caption, or why there is none
    (``compound_not_in_text``, ``compound_ambiguous``)."""
    found: list[Mention] = []
    if compound.kind == "attr_obj":
        node = graph.objects[compound.nodes[0]]
        for ns, ne, is_plural in _noun_occurrences(tokens, node):
            start, mods = _modifiers(text, tokens, ns, node)
            if compound.parts[0] in mods:
                slots = (mods[compound.parts[0]], (ns, ne))
                det = _determiner(text, tokens, start)
                found.append(Mention(compound, slots, start, ne, det, (False, is_plural)))
    else:
        subj, obj = (graph.objects[i] for i in compound.nodes)
        surfaces = DEFAULT_RELATIONS.surfaces(compound.parts[1])
        preds = sorted({span for s in surfaces for span in _occurrences(tokens, s)})
        for ss, se, subj_plural in _noun_occurrences(tokens, subj):
            for ps, pe in preds:
                gap = tokens[se:ps]
                if ps < se or len(gap) > 2 or any(t.word not in FILLERS for t in gap):
                    continue
                for os_, oe, obj_plural in _noun_occurrences(tokens, obj):
                    between = tokens[pe:os_]
                    allowed = DETERMINERS | {w for v in obj.attributes for w in v.split()}
                    if os_ < pe or len(between) > MAX_OBJECT_GAP:
                        continue
                    if any(t.word not in allowed for t in between):
                        continue
                    if not _joined(text, tokens, ss, oe):
                        continue
                    start, _ = _modifiers(text, tokens, ss, subj)
                    det = _determiner(text, tokens, start)
                    slots = ((ss, se), (ps, pe), (os_, oe))
                    plurals = (subj_plural, False, obj_plural)
                    found.append(Mention(compound, slots, start, oe, det, plurals))
    if not found:
        return "compound_not_in_text"
    if len(found) > 1:
        return "compound_ambiguous"
    return found[0]


# ------------------------------------------------------------------------- text edits


def _cased(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


Edit = tuple[int, int, str]  # token span replaced by a string


def _splice(text: str, tokens: Sequence[Token], edits: Iterable[Edit], lo: int, hi: int) -> str:
    """``text[lo:hi]`` (character offsets) with each edit's token span replaced (case of
    its first letter kept), and an "a"/"an" right before an edit (inside the range) made
    to agree with the new word."""
    replace: dict[int, tuple[int, str]] = {}  # first token -> (end token, new text)
    for i, j, new in edits:
        replace[i] = (j, _cased(text[tokens[i].start : tokens[j - 1].end], new))
    for i, (_, new) in list(replace.items()):
        k = i - 1
        if (
            k >= 0
            and k not in replace
            and tokens[k].start >= lo
            and tokens[k].word in ("a", "an")
            and _joined(text, tokens, k, i + 1)
        ):
            replace[k] = (i, indefinite_article(new, text[tokens[k].start : tokens[k].end]))
    out, cursor = [], lo
    for i in sorted(replace):
        j, new = replace[i]
        out += [text[cursor : tokens[i].start], new]
        cursor = tokens[j - 1].end
    out.append(text[cursor:hi])
    return "".join(out)


def _surface(tokens: Sequence[Token], mention: Mention, position: str, foil: str) -> str:
    """How the foil is written: plural for a plural noun; a lexicon relation in the
    phrasing of its class closest to the caption's ("on the left side of" -> "on the right
    side of" rather than "right of")."""
    index = POSITIONS[mention.compound.kind].index(position)
    if POSITION_KIND[position] == "object":
        return plural(foil) if mention.plural[index] else foil
    cls = DEFAULT_RELATIONS.class_of(foil) if position == "pred" else None
    if cls is None:
        return foil
    i, j = mention.slot(position)
    written = [t.word for t in tokens[i:j]]

    def overlap(phrase: str) -> int:
        return len(set(phrase.split()) & set(written))

    best = max(sorted(DEFAULT_RELATIONS.classes[cls]), key=overlap)
    return best if overlap(best) > overlap(foil) else foil


def atom_text(
    text: str, tokens: Sequence[Token], mention: Mention, position: str, foil: str
) -> str:
    """The caption with one atom of the mention replaced."""
    i, j = mention.slot(position)
    return _splice(text, tokens, [(i, j, _surface(tokens, mention, position, foil))], 0, len(text))


def comp_text(
    text: str,
    tokens: Sequence[Token],
    mention: Mention,
    first: tuple[str, str],
    second: tuple[str, str],
) -> str:
    """The caption with the compound's phrase written twice, joined by "and", each copy
    with one atom replaced ((position, foil) pairs); a determiner before it is repeated."""
    lo, hi = tokens[mention.start].start, tokens[mention.end - 1].end
    copies = []
    for position, foil in (first, second):
        i, j = mention.slot(position)
        copies.append(
            _splice(text, tokens, [(i, j, _surface(tokens, mention, position, foil))], lo, hi)
        )
    c1, c2 = copies
    head = lo
    det = ""
    if mention.det is not None:
        det_tok = tokens[mention.det]
        head = det_tok.start
        det = text[det_tok.start : det_tok.end]
    sentence_start = not text[:head].strip() or text[:head].rstrip()[-1:] in ".!?"
    if sentence_start and c2[:1].isupper() and c2.split(" ", 1)[0] != "I":
        c2 = c2[:1].lower() + c2[1:]
    if det:
        det1 = indefinite_article(c1, det) if det.lower() in ("a", "an") else det
        det2 = det.lower() if sentence_start else det
        det2 = indefinite_article(c2, det2) if det2.lower() in ("a", "an") else det2
        joined = f"{det1} {c1} and {det2} {c2}"
    else:
        joined = f"{c1} and {c2}"
    return text[:head] + joined + text[hi:]


# ------------------------------------------------------------------------ per item plan


@dataclass(frozen=True)
class AtomCandidate:
    position: str
    foil: Foil
    original: str
    text: str


@dataclass
class _Target:
    mention: Mention
    candidates: dict[str, list[AtomCandidate]]  # position -> candidates (foil order)
    outcomes: dict[str, str]  # position -> "ok" | rejection reason | foils_true_in_image


@dataclass
class _ItemPlan:
    row: dict[str, Any]
    failure: dict[str, str] = field(default_factory=dict)  # family -> reason
    targets: dict[str, _Target] = field(default_factory=dict)  # family -> target
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
) -> _Target:
    compound = mention.compound
    candidates: dict[str, list[AtomCandidate]] = {}
    outcomes: dict[str, str] = {}
    for index, position in enumerate(POSITIONS[compound.kind]):
        kind = POSITION_KIND[position]
        original = compound.parts[index]
        found = finder.foils(kind, original, graph.atoms[kind])
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
            candidates[position].append(AtomCandidate(position, foil, original, edited))
            if len(candidates[position]) >= max_foils:
                break
        outcomes[position] = "ok" if candidates[position] else "foils_true_in_image"
    return _Target(mention, candidates, outcomes)


def _comp_capacity(target: _Target, comp_foils: int) -> int:
    pairs = COMP_PAIRS[target.mention.compound.kind]
    return sum(
        min(comp_foils, len(target.candidates[a])) * min(comp_foils, len(target.candidates[b]))
        for a, b in pairs
    )


def _no_foil_reason(target: _Target, positions: Iterable[str]) -> str:
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
) -> _ItemPlan:
    """Locate the item's compounds, pick the targets and build the atom edits (unscored)."""
    plan = _ItemPlan(dict(row))
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
    targets = [_target(text, tokens, graph, m, finder, facts, settings["max_foils"]) for m in order]
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


# ------------------------------------------------------------------------- selection


def _readable(
    context: ContextCheck | None, positive: str, passed: Counter[str]
) -> Callable[[str], bool]:
    """Whether a negative text differs from ``positive`` within the context; one that does
    not is counted in ``passed`` under the check's reason."""

    def readable(text: str) -> bool:
        if context is None or not context.identical(positive, text):
            return True
        passed[context.reason] += 1
        return False

    return readable


def _select_atom(
    plan: _ItemPlan,
    scores: Mapping[str, float],
    n: int,
    readable: Callable[[str], bool] = lambda _: True,
) -> list[AtomCandidate]:
    target = plan.targets[ATOM]
    queues = {
        p: sorted(cs, key=lambda c: (c.foil.tier, -scores[c.text], c.text))
        for p, cs in target.candidates.items()
    }
    chosen: list[AtomCandidate] = []
    texts: set[str] = set()
    while len(chosen) < n and any(queues.values()):
        for position in plan.position_order:
            if len(chosen) >= n:
                break
            while queues[position]:
                candidate = queues[position].pop(0)
                if candidate.text not in texts and readable(candidate.text):
                    chosen.append(candidate)
                    texts.add(candidate.text)
                    break
    return chosen


@dataclass(frozen=True)
class CompCandidate:
    first: AtomCandidate
    second: AtomCandidate
    text: str

    @property
    def tier(self) -> int:
        return self.first.foil.tier + self.second.foil.tier


def _comp_candidates(
    plan: _ItemPlan, scores: Mapping[str, float], comp_foils: int
) -> list[CompCandidate]:
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


def _select_comp(
    candidates: Sequence[CompCandidate],
    scores: Mapping[str, float],
    n: int,
    positive: str,
    readable: Callable[[str], bool] = lambda _: True,
) -> list[CompCandidate]:
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


# ------------------------------------------------------------------------------ tables


@dataclass(frozen=True)
class SystematicityNegatives:
    candidates: pl.DataFrame  # CANDIDATES_SCHEMA
    regions: pl.DataFrame  # REGIONS_SCHEMA
    failures: pl.DataFrame  # FAILURES_SCHEMA


def _image_ref(row: Mapping[str, Any], how: str) -> str | None:
    image = row.get("image_id")
    if image is None or how == "image_id":
        return image
    box = [row.get(k) for k in ("x", "y", "width", "height")]
    if any(v is None for v in box):
        return image
    return f"{image}#xywh={','.join(str(int(v)) for v in box)}"


def _compound_json(compound: Compound) -> dict[str, Any]:
    return {"kind": compound.kind, "parts": list(compound.parts)}


def _check_items(items: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in ("item_id", "image_id", "text", *GRAPH_SCHEMA) if c not in items.columns]
    if missing:
        raise ValueError(f"eval items: missing column(s) {missing} (EVAL_ITEMS_SCHEMA)")
    if items["item_id"].null_count():
        raise ValueError("eval items: null item_id")
    dup = items["item_id"].is_duplicated()
    if dup.any():
        raise ValueError(f"eval items: duplicate item_id {items['item_id'].filter(dup)[0]!r}")
    for column in ("region_id", "x", "y", "width", "height"):
        if column not in items.columns:
            items = items.with_columns(pl.lit(None, EVAL_ITEMS_SCHEMA[column]).alias(column))
    return items


def build_systematicity_negatives(
    items: pl.DataFrame,
    finder: FoilFinder,
    scorer: TextScorer,
    settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    unseen: Mapping[str, set[CompoundKey]] | None = None,
    benchmark: str = BENCHMARK,
    context: ContextCheck | None = None,
) -> SystematicityNegatives:
    """HN-ATOM and HN-COMP candidates for every item (pure; see the module docstring).

    ``unseen``: eval item_id -> unseen compound keys ``(kind, parts)`` (from the split
    assignments), preferred as targets. ``benchmark``: the candidates' benchmark name.
    ``context``: pass over negatives identical to the positive within its context.
    """
    cfg = resolve_settings(settings)
    items = _check_items(items)
    rows = items.to_dicts()
    scenes: dict[str, SceneFacts] = {}
    for row in rows:
        key = str(row["image_id"]) if cfg["image_scope"] else f"item:{row['item_id']}"
        graph = parse_graph(row.get("objects"), row.get("attributes"), row.get("relations"))
        scenes.setdefault(key, SceneFacts()).add(graph)
    plans = []
    for row in rows:
        key = str(row["image_id"]) if cfg["image_scope"] else f"item:{row['item_id']}"
        plans.append(
            plan_item(
                row,
                finder,
                scenes[key],
                cfg,
                seed,
                (unseen or {}).get(str(row["item_id"])),
            )
        )

    atom_texts = [
        c.text
        for plan in plans
        for family, target in plan.targets.items()
        if family not in plan.failure
        for cs in target.candidates.values()
        for c in cs
    ]
    scores = dict(score_captions(atom_texts, scorer)) if atom_texts else {}
    comp_by_item = {
        k: _comp_candidates(plan, scores, cfg["comp_foils"])
        for k, plan in enumerate(plans)
        if COMP not in plan.failure
    }
    comp_texts = [c.text for cs in comp_by_item.values() for c in cs]
    scores.update(score_captions(comp_texts, scorer) if comp_texts else {})

    candidates: list[dict[str, Any]] = []
    regions: list[dict[str, Any]] = []
    failures: Counter[tuple[str, str, str]] = Counter()
    for k, plan in enumerate(plans):
        for family in FAMILIES:
            target = plan.targets.get(family)
            if target is not None:
                for position in _family_positions(target, family):
                    outcome = f"{POSITION_KIND[position]}/{target.outcomes[position]}"
                    failures[("foil", family, outcome)] += 1
            if family in plan.failure or target is None:
                failures[("item", family, plan.failure.get(family, "no_compound"))] += 1
                continue
            need = cfg[f"{family}_negatives"]
            passed: Counter[str] = Counter()
            readable = _readable(context, plan.row["text"], passed)
            if family == ATOM:
                negatives = [_atom_negative(c) for c in _select_atom(plan, scores, need, readable)]
            else:
                chosen = _select_comp(comp_by_item[k], scores, need, plan.row["text"], readable)
                negatives = [_comp_negative(c, target.mention.compound) for c in chosen]
            for reason, count in passed.items():
                failures[("negative", family, reason)] += count
            if not negatives or (len(negatives) < need and not cfg["allow_fewer"]):
                failures[("item", family, "too_few_negatives")] += 1
                continue
            if len(negatives) < need:
                failures[("kept_short", family, f"{len(negatives)}_of_{need}")] += 1
            candidates += _candidate_rows(plan.row, family, target, negatives, cfg, seed, benchmark)
            regions.append(_region_row(plan.row, family, target.mention.compound))

    failure_table = pl.DataFrame(
        [(lv, fam, reason, n) for (lv, fam, reason), n in sorted(failures.items())],
        schema=FAILURES_SCHEMA,
        orient="row",
    )
    return SystematicityNegatives(
        conform(
            pl.DataFrame(candidates, schema=CANDIDATES_SCHEMA), CANDIDATES_SCHEMA, "candidates"
        ),
        pl.DataFrame(regions, schema=REGIONS_SCHEMA),
        failure_table,
    )


Negative = tuple[str, str, dict[str, Any]]  # text, target label, provenance detail


def _family_positions(target: _Target, family: str) -> tuple[str, ...]:
    kind = target.mention.compound.kind
    if family == ATOM:
        return POSITIONS[kind]
    used = {p for pair in COMP_PAIRS[kind] for p in pair}
    return tuple(p for p in POSITIONS[kind] if p in used)


def _atom_negative(c: AtomCandidate) -> Negative:
    detail = {
        "foil": c.foil.value,
        "original": c.original,
        "position": c.position,
        "relation": c.foil.relation,
        "via": c.foil.via,
    }
    return c.text, POSITION_TARGET[c.position], detail


def _comp_negative(c: CompCandidate, compound: Compound) -> Negative:
    pair = (c.first, c.second)
    detail = {
        "foil": [a.foil.value for a in pair],
        "original": [a.original for a in pair],
        "position": [a.position for a in pair],
        "relation": [a.foil.relation for a in pair],
        "via": [a.foil.via for a in pair],
    }
    return c.text, COMP_TARGET[compound.kind], detail


def _candidate_rows(
    row: Mapping[str, Any],
    family: str,
    target: _Target,
    negatives: Sequence[Negative],
    cfg: Mapping[str, Any],
    seed: int,
    benchmark: str = BENCHMARK,
) -> list[dict[str, Any]]:
    """The positive and the negatives of one retrieval set, as CANDIDATES_SCHEMA rows."""
    eval_id = str(row["item_id"])
    compound = _compound_json(target.mention.compound)
    common = {
        "benchmark": benchmark,
        "item_id": f"{eval_id}/{family}",
        "image": _image_ref(row, cfg["image_ref"]),
        "family": family,
        "generator": GENERATOR,
    }
    texts: list[tuple[str, bool, str | None, dict[str, Any]]] = [
        (row["text"], True, None, {"item": eval_id})
    ]
    texts += [(text, False, label, detail) for text, label, detail in negatives]
    return [
        {
            **common,
            "text": text,
            "is_positive": positive,
            "target": label,
            "provenance": json.dumps(
                {**detail, "compound": compound, "seed": seed}, sort_keys=True
            ),
        }
        for text, positive, label, detail in texts
    ]


def _region_row(row: Mapping[str, Any], family: str, compound: Compound) -> dict[str, Any]:
    return {
        "item_id": f"{row['item_id']}/{family}",
        "eval_item_id": str(row["item_id"]),
        "family": family,
        **{k: row.get(k) for k in ("image_id", "region_id", "x", "y", "width", "height")},
        "compound_kind": compound.kind,
        "compound": list(compound.parts),
    }


# ---------------------------------------------------------------------------- job level


def _as_scorer(spec: TextScorer | Mapping[str, Any] | str | Path) -> TextScorer:
    if isinstance(spec, TextScorer):
        return spec
    if isinstance(spec, Mapping):
        from vlcomp.scorers.factory import make_scorer

        return make_scorer(dict(spec))
    from vlcomp.scorers.ngram import NgramLM

    return NgramLM.load(Path(spec))


def read_unseen(assignments: Path) -> dict[str, set[CompoundKey]]:
    """eval item_id -> unseen compound keys, from a split assignments table."""
    frame = pl.read_parquet(assignments, columns=["item_id", "unseen_compounds"])
    out: dict[str, set[CompoundKey]] = {}
    for item_id, unseen in frame.iter_rows():
        out[str(item_id)] = {(u["kind"], tuple(u["parts"])) for u in unseen or []}
    return out


def systematicity_negatives(
    items: Path,
    atoms: Path,
    scorer: TextScorer | Mapping[str, Any] | str | Path,
    out_candidates: Path,
    out_failures: Path,
    settings: Mapping[str, Any] | None,
    seed: int,
    *,
    out_regions: Path | None = None,
    assignments: Path | None = None,
    wordnet: Any = None,
    benchmark: str = BENCHMARK,
    context_length: int | None = None,
) -> None:
    """Write CREPE systematicity candidates, failure counts and (optionally) region boxes.

    ``items``: eval items Parquet (``EVAL_ITEMS_SCHEMA``); ``atoms``: the training corpus's
    atoms table (the foil vocabulary); ``scorer``: a ``TextScorer``, a scorer spec for
    ``vlcomp.scorers.make_scorer`` (``{kind: ngram, model: ...}``, or a masked/causal LM a
    user has), or the path of an n-gram model; ``settings``: ``DEFAULT_SETTINGS`` keys;
    ``assignments``: the split assignments for the same corpus (unseen compounds are
    preferred as targets); ``benchmark``: the benchmark's name (the config key), written
    in the candidates' ``benchmark`` column; ``context_length``: the text encoders' context
    (``negatives.context``; None: no context check).
    """
    cfg = resolve_settings(settings)
    text_scorer = _as_scorer(scorer)
    finder = FoilFinder.from_atoms(
        atoms,
        cfg["min_count"],
        wordnet,
        senses=cfg["senses"],
        max_hops=cfg["max_hops"],
        min_depth=cfg["min_depth"],
    )
    unseen = read_unseen(Path(assignments)) if assignments is not None else None
    context = None if context_length is None else ContextCheck(context_length)
    result = build_systematicity_negatives(
        pl.read_parquet(items), finder, text_scorer, cfg, seed, unseen, benchmark, context
    )
    meta = {
        "vlcomp.stage": "negatives/crepe_systematicity",
        "vlcomp.benchmark": benchmark,
        "vlcomp.generator": GENERATOR,
        "vlcomp.seed": str(seed),
        "vlcomp.settings": json.dumps(cfg, sort_keys=True),
        "vlcomp.foils": json.dumps(finder.describe(), sort_keys=True),
        "vlcomp.scorer": text_scorer.name,
        "vlcomp.vocabulary": f"{Path(atoms).parent.name}/{Path(atoms).name}",
        "vlcomp.assignments": "yes" if assignments is not None else "no",
    }
    if context_length is not None:
        meta["vlcomp.context_length"] = str(context_length)
    write_parquet(result.candidates, out_candidates, meta)
    write_parquet(result.failures, out_failures, meta)
    if out_regions is not None:
        write_parquet(result.regions, out_regions, meta)
    n_items = result.regions.group_by("family").len().sort("family").rows()
    dropped = result.failures.filter(pl.col("level") == "item")
    log.info(
        "%s: candidate items per family %s; without negatives %s",
        items,
        dict(n_items),
        dict(dropped.group_by("family").agg(pl.col("count").sum()).rows()),
    )
