"""Captions of scenes, each with its ground-truth scene graph.

Two styles:

- ``clean`` (CC12M-like; also the eval COCO captions): sentences with articles,
  number words for plurals, several relation surface forms (see ``vocab``) and
  word orders ("a red circle is above a blue square", "above the blue square there
  is a red circle", "a blue square with a red circle above it", ...).
- ``alt_text`` (LAION-like): noun phrases joined by separators, title case or
  lower case, stock-photo suffixes, sometimes one relation.

A caption mentions a set of *mentions*: objects of the scene that share shape and
colour (and, when split by size, size) are described together as one plural noun
phrase ("two red circles"), which is one node of the graph. Every mention occurs
once in the text (the pronoun of "... with a red circle above it" is not a node),
and graph nodes are numbered in order of appearance. A relation is stated between
two mentions only when every member pair has that relation, and only with a
predicate in ``allowed_predicates`` (the direction is flipped to the converse when
needed), so a held-out relation atom is never stated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vlcomp.text import indefinite_article, plural

from .scenes import Scene
from .vocab import ALT_RELATION_SURFACES, CONVERSE, NUMBER_WORDS, RELATION_SURFACES

# A piece of caption text; ``node`` is set on the segment holding a mention's noun.
Segment = tuple[str, int | None]


@dataclass(frozen=True)
class Mention:
    """Scene objects described by one noun phrase."""

    members: tuple[int, ...]
    shape: str
    colour: str | None
    size: str | None

    @property
    def is_plural(self) -> bool:
        return len(self.members) > 1


@dataclass(frozen=True)
class Caption:
    """Caption text with its ground-truth graph (the project's ``graphs`` contract)."""

    text: str
    objects: tuple[tuple[int, str, str], ...]  # (idx, name as written, lemma)
    attributes: tuple[tuple[int, str], ...]  # (obj idx, canonical value)
    relations: tuple[tuple[int, str, int], ...]  # (subj idx, canonical predicate, obj idx)

    def graph(self) -> dict[str, list[dict[str, object]]]:
        """The graph as lists of dicts: objects, attributes, relations."""
        return {
            "objects": [{"idx": i, "name": n, "lemma": lem} for i, n, lem in self.objects],
            "attributes": [{"obj": o, "value": v} for o, v in self.attributes],
            "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in self.relations],
        }


class _Text:
    """Assembles segments, numbering mentions as their nouns are written."""

    def __init__(self) -> None:
        self.node_of: dict[int, int] = {}  # mention id -> node idx
        self.mentions: dict[int, Mention] = {}
        self.relations: list[tuple[int, str, int]] = []  # by mention id

    def node(self, mid: int, mention: Mention) -> int:
        if mid not in self.node_of:
            self.node_of[mid] = len(self.node_of)
            self.mentions[mid] = mention
        return self.node_of[mid]

    def finish(self, segments: list[Segment]) -> Caption:
        text = " ".join("".join(s for s, _ in segments).split())
        names = {node: s for s, node in segments if node is not None}
        objects, attributes = [], []
        for mid, node in sorted(self.node_of.items(), key=lambda kv: kv[1]):
            m = self.mentions[mid]
            objects.append((node, names[node], m.shape))
            attributes += [(node, v) for v in (m.size, m.colour) if v is not None]
        relations = [(self.node_of[a], p, self.node_of[b]) for a, p, b in self.relations]
        return Caption(text, tuple(objects), tuple(attributes), tuple(relations))


def _choice(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _mentions(
    scene: Scene,
    members: Sequence[int],
    rng: np.random.Generator,
    size_prob: float,
    colour_prob: float = 1.0,
) -> list[Mention]:
    """Group the chosen objects into mentions (see module docstring)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i in members:
        o = scene.objects[i]
        groups.setdefault((o.shape, o.colour), []).append(i)
    out: list[Mention] = []
    for (shape, colour), idxs in groups.items():
        sizes = {scene.objects[i].size for i in idxs}
        said_colour = colour if rng.random() < colour_prob else None
        if len(sizes) > 1 and rng.random() < 0.5:
            by_size: dict[str, list[int]] = {}
            for i in idxs:
                by_size.setdefault(scene.objects[i].size, []).append(i)
            out += [Mention(tuple(g), shape, colour, size) for size, g in by_size.items()]
        else:
            size = next(iter(sizes)) if len(sizes) == 1 and rng.random() < size_prob else None
            out.append(Mention(tuple(idxs), shape, said_colour, size))
    order = rng.permutation(len(out))
    return [out[int(k)] for k in order]


def _group_relation(scene: Scene, a: Mention, b: Mention) -> str | None:
    preds = {scene.relation(i, j) for i in a.members for j in b.members}
    return preds.pop() if len(preds) == 1 else None


def _stateable(
    scene: Scene, a: Mention, b: Mention, allowed: frozenset[str], rng: np.random.Generator
) -> tuple[bool, str] | None:
    """(a_is_subject, predicate) for stating a relation between a and b, or None."""
    rel = _group_relation(scene, a, b)
    if rel is None:
        return None
    options = [(True, rel), (False, CONVERSE[rel])]
    if rng.random() < 0.5:
        options.reverse()
    for option in options:
        if option[1] in allowed:
            return option
    return None


# --------------------------------------------------------------------------- clean style

_BARE_FORMS = ("left of", "right of")


class _Clean:
    def __init__(
        self, scene: Scene, rng: np.random.Generator, text: _Text, mentions: list[Mention]
    ) -> None:
        self.scene, self.rng, self.t = scene, rng, text
        self.ids = {m.members: k for k, m in enumerate(mentions)}

    def mid(self, m: Mention) -> int:
        return self.ids[m.members]

    def np_(self, m: Mention, definite: float = 0.15) -> list[Segment]:
        rng = self.rng
        words = [w for w in (m.size, m.colour) if w is not None]
        noun = plural(m.shape) if m.is_plural else m.shape
        if m.is_plural:
            det = NUMBER_WORDS.get(len(m.members), "several")
            if rng.random() < definite:
                det = "the " + det
        elif rng.random() < definite:
            det = "the"
        elif rng.random() < 0.07:
            det = "one"
        else:
            det = indefinite_article((words + [noun])[0])
        pre = " ".join([det, *words]) + " "
        return [(pre, None), (noun, self.t.node(self.mid(m), m))]

    def be(self, m: Mention) -> str:
        return "are" if m.is_plural else "is"

    def surf(self, pred: str, bare: bool = True) -> str:
        """A surface form; ``bare=False`` avoids "left of"/"right of" without a preposition,
        which read badly fronted ("left of the square there is ...") or after a pronoun."""
        forms = RELATION_SURFACES[pred]
        if not bare:
            forms = tuple(f for f in forms if f not in _BARE_FORMS)
        return _choice(self.rng, forms)

    def relation(self, subj: Mention, pred: str, obj: Mention) -> list[Segment]:
        """One clause stating ``subj pred obj`` in a randomly chosen word order."""
        self.t.relations.append((self.mid(subj), pred, self.mid(obj)))
        k = int(self.rng.integers(7))
        s = self.surf(pred, bare=k not in (1, 2, 5))
        if k == 0:
            return [*self.np_(subj), (f" {self.be(subj)} {s} ", None), *self.np_(obj)]
        if k == 1:
            head = [(f"{s} ", None), *self.np_(obj, definite=0.6)]
            return [*head, (f" there {self.be(subj)} ", None), *self.np_(subj, definite=0.0)]
        pron = "them" if obj.is_plural else "it"
        if k == 2:
            return [*self.np_(obj), (" with ", None), *self.np_(subj, 0.0), (f" {s} {pron}", None)]
        if k == 3:
            return [*self.np_(subj), (f" {s} ", None), *self.np_(obj)]
        if k == 4:
            verb = "sit" if subj.is_plural else "sits"
            return [*self.np_(subj), (f" {verb} {s} ", None), *self.np_(obj)]
        if k == 5:
            verb = "have" if obj.is_plural else "has"
            return [
                *self.np_(obj),
                (f" {verb} ", None),
                *self.np_(subj, 0.0),
                (f" {s} {pron}", None),
            ]
        head = [(f"there {self.be(subj)} ", None), *self.np_(subj, definite=0.0)]
        return [*head, (f" {s} ", None), *self.np_(obj)]

    def double(self, subj: Mention, p1: str, o1: Mention, p2: str, o2: Mention) -> list[Segment]:
        """One subject with two relations: "a red circle is above a square and left of a star"."""
        mid = self.mid(subj)
        self.t.relations += [(mid, p1, self.mid(o1)), (mid, p2, self.mid(o2))]
        return [
            *self.np_(subj),
            (f" {self.be(subj)} {self.surf(p1)} ", None),
            *self.np_(o1),
            (f" and {self.surf(p2)} ", None),
            *self.np_(o2),
        ]

    def listing(self, ms: list[Mention], after_relations: bool) -> list[Segment]:
        """A sentence that lists mentions without relations."""
        body: list[Segment] = []
        for n, m in enumerate(ms):
            if n:
                last = n == len(ms) - 1
                body.append((" and " if last else ", ", None))
            body += self.np_(m, definite=0.0)
        be = self.be(ms[0])
        if after_relations:
            frames = [f"there {be} also ", f"there {be} ", "also ", "plus "]
            return [(_choice(self.rng, frames), None), *body]
        k = int(self.rng.integers(8))
        prefix = [
            "",
            f"there {be} ",
            "a picture of ",
            "an image of ",
            "a drawing of ",
            "this image shows ",
            "",
            "",
        ][k]
        suffix = {6: " on a grey background", 7: " in the picture"}.get(k, "")
        return [(prefix, None), *body, (suffix, None)]


def _capitalise(segments: list[Segment]) -> list[Segment]:
    for n, (s, node) in enumerate(segments):
        if s:
            return [*segments[:n], (s[0].upper() + s[1:], node), *segments[n + 1 :]]
    return segments


def clean_caption(
    scene: Scene,
    rng: np.random.Generator,
    allowed_predicates: frozenset[str],
    *,
    mention_all: bool = False,
    size_prob: float = 0.4,
) -> Caption:
    """A clean (CC12M/COCO-like) caption of ``scene``.

    With ``mention_all`` every object is mentioned with its colour (eval captions);
    otherwise an object is sometimes left out.
    """
    n = len(scene.objects)
    members = list(range(n))
    if not mention_all and n > 1 and rng.random() < 0.25:
        drop = int(rng.integers(n))
        members.remove(drop)
    mentions = _mentions(scene, members, rng, size_prob)
    text = _Text()
    clean = _Clean(scene, rng, text, mentions)

    n_rel = int(rng.choice(3, p=[0.2, 0.5, 0.3]))
    sentences: list[list[Segment]] = []
    pool = list(mentions)
    unrelated: list[Mention] = []
    while pool and len(sentences) < n_rel:
        a = pool.pop(0)
        partners = [(b, _stateable(scene, a, b, allowed_predicates, rng)) for b in pool]
        found = [(b, st) for b, st in partners if st is not None]
        as_subject = [(b, st[1]) for b, st in found if st[0]]
        if len(as_subject) >= 2 and rng.random() < 0.35:
            (b, p1), (c, p2) = as_subject[:2]
            pool.remove(b)
            pool.remove(c)
            sentences.append(clean.double(a, p1, b, p2, c))
        elif found:
            b, (a_is_subject, pred) = found[0]
            pool.remove(b)
            subj, obj = (a, b) if a_is_subject else (b, a)
            sentences.append(clean.relation(subj, pred, obj))
        else:
            unrelated.append(a)
    left = unrelated + pool

    if left:
        list_first = not sentences or rng.random() < 0.4
        listing = clean.listing(left, after_relations=not list_first)
        sentences.insert(0 if list_first else len(sentences), listing)
    return _assemble(sentences, rng, text)


def _assemble(sentences: list[list[Segment]], rng: np.random.Generator, text: _Text) -> Caption:
    capital = rng.random() < 0.5
    segments: list[Segment] = []
    for n, sentence in enumerate(sentences):
        if n:
            joiner = _choice(rng, [". ", ". ", ", and ", "; "])
            segments.append((joiner, None))
            if joiner == ". " and capital:
                sentence = _capitalise(sentence)
        elif capital:
            sentence = _capitalise(sentence)
        segments += sentence
    if rng.random() < 0.5:
        segments.append((".", None))
    # Node numbers were taken while building; renumber them by position in the text.
    return _renumber(segments, text)


def _renumber(segments: list[Segment], text: _Text) -> Caption:
    order = [node for _, node in segments if node is not None]
    remap = {old: new for new, old in enumerate(order)}
    text.node_of = {mid: remap[node] for mid, node in text.node_of.items()}
    segments = [(s, None if node is None else remap[node]) for s, node in segments]
    return text.finish(segments)


# ------------------------------------------------------------------------ alt-text style

ALT_SUFFIXES = (
    " - stock illustration",
    " clipart png",
    " | free vector",
    " icon",
    " vector image",
    " stock photo",
    " - royalty free vector",
    " on grey background",
    " isolated",
    " png",
    " clip art",
    " icon | free download",
    " flat design",
    " wallpaper",
)
_ALT_SEPARATORS = (" and ", " & ", ", ", " ", " + ", " / ", " and ")
ALT_PREFIXES = ("vector illustration of ", "set of ", "icons: ", "")


def _title(s: str) -> str:
    return re.sub(r"\b([a-z])", lambda m: m.group(1).upper(), s)


def alt_text_caption(
    scene: Scene, rng: np.random.Generator, allowed_predicates: frozenset[str]
) -> Caption:
    """A noisy LAION-like alt text of ``scene``."""
    n = len(scene.objects)
    members = list(range(n))
    if n > 1 and rng.random() < 0.4:
        keep = int(rng.integers(1, n + 1))
        members = sorted(int(k) for k in rng.permutation(n)[:keep])
    mentions = _mentions(scene, members, rng, size_prob=0.3, colour_prob=0.92)
    text = _Text()
    ids = {m.members: k for k, m in enumerate(mentions)}

    def np_(m: Mention) -> list[Segment]:
        words = [w for w in (m.size, m.colour) if w is not None]
        noun = m.shape
        if m.is_plural:
            noun = plural(noun)
            count = len(m.members)
            words.insert(0, str(count) if rng.random() < 0.5 else NUMBER_WORDS.get(count, ""))
        pre = " ".join(w for w in words if w)
        return [(pre + " " if pre else "", None), (noun, text.node(ids[m.members], m))]

    parts: list[list[Segment]] = []
    left = list(mentions)
    if len(left) >= 2 and rng.random() < 0.3:
        a, b = left[0], left[1]
        st = _stateable(scene, a, b, allowed_predicates, rng)
        if st is not None:
            left = left[2:]
            subj, obj = (a, b) if st[0] else (b, a)
            text.relations.append((ids[subj.members], st[1], ids[obj.members]))
            surf = _choice(rng, ALT_RELATION_SURFACES[st[1]])
            parts.append([*np_(subj), (f" {surf} ", None), *np_(obj)])
    parts += [np_(m) for m in left]

    segments: list[Segment] = []
    sep = _choice(rng, _ALT_SEPARATORS)
    for k, part in enumerate(parts):
        if k:
            segments.append((sep, None))
        segments += part
    if rng.random() < 0.2:
        segments.insert(0, (_choice(rng, ALT_PREFIXES), None))
    case = rng.random()
    if case < 0.45:
        segments = [(_title(s), node) for s, node in segments]
    elif case < 0.65:
        segments = _capitalise(segments)
    if rng.random() < 0.8:
        suffix = _choice(rng, ALT_SUFFIXES)
        if case < 0.45 and rng.random() < 0.6:
            suffix = _title(suffix)
        if rng.random() < 0.1:
            suffix += f" {int(rng.integers(10_000, 1_000_000))}"
        segments.append((suffix, None))
    return _renumber(segments, text)


# ---------------------------------------------------------------------------- eval style


def eval_captions(
    scene: Scene,
    rng: np.random.Generator,
    allowed_predicates: frozenset[str],
    k: int,
    max_tries: int = 20,
) -> list[Caption]:
    """``k`` clean captions that each mention every object, distinct where possible."""
    out: list[Caption] = []
    seen: set[str] = set()
    tries = 0
    while len(out) < k:
        cap = clean_caption(scene, rng, allowed_predicates, mention_all=True)
        tries += 1
        if cap.text.lower() in seen and tries < max_tries * k:
            continue
        seen.add(cap.text.lower())
        out.append(cap)
    return out


def object_phrase(scene: Scene, i: int) -> str:
    """Region phrase of one object: "a small red circle"."""
    o = scene.objects[i]
    return f"{indefinite_article(o.size)} {o.size} {o.colour} {o.shape}"


def pair_phrase(scene: Scene, i: int, j: int) -> str:
    """Region phrase of an ordered pair: "red circle above blue square".

    Sizes are added when the two objects share shape and colour.
    """
    a, b = scene.objects[i], scene.objects[j]
    if (a.shape, a.colour) == (b.shape, b.colour):
        return f"{a.size} {a.colour} {a.shape} {scene.relation(i, j)} {b.size} {b.colour} {b.shape}"
    return f"{a.colour} {a.shape} {scene.relation(i, j)} {b.colour} {b.shape}"
