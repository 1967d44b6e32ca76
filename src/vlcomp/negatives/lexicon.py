"""Generic English word lists for template hard negatives: attribute kinds, synonyms and
spatial relations with their converses. Nothing here is tuned to one data set.

- ``ATTRIBUTE_KINDS``: kind -> adjectives. A replaced attribute gets a foil of the same
  kind ("red" -> "blue", never "red" -> "wooden"); a value of no listed kind is never
  replaced. A multi-word value takes the kind of its last word ("light blue": colour).
- ``SYNONYMS``: words that say (nearly) the same; a foil must differ from everything the
  image states in its group too ("big" is no foil where the image has "large").
- ``RELATIONS``: canonical spatial predicate -> surface forms a caption may write;
  ``CONVERSE``: the predicate that holds with subject and object exchanged ("A left of B"
  = "B right of A"), so replacing a true relation phrase by a converse phrase makes the
  caption false; ``CONVERSE_SURFACE``: the converse phrase written in the same way
  ("to the left of" -> "to the right of", "over" -> "under").
- ``META_NOUNS``, ``substitute_objects``: which object lemmas of a corpus a template
  generator may put in for an object, or replace.

Plain "on", "in", "near", "next to" are left out on purpose: "on" and "in" mean support,
containment or nothing spatial at all ("on the phone"), and "near" holds both ways, so
none has a converse that makes a caption reliably false.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from vlcomp.parse.lexicon import (
    COLOURS,
    DEFAULT_FRAME_OBJECTS,
    DEFAULT_STOP_OBJECTS,
    MATERIALS,
)
from vlcomp.text import normalise

ATTRIBUTE_KINDS: dict[str, frozenset[str]] = {
    "colour": COLOURS | frozenset({"multicolored", "multicoloured", "colorful", "colourful"}),
    "size": frozenset(
        "small large big little tiny huge giant medium enormous massive miniature mini".split()
    ),
    "height": frozenset("tall short".split()),
    "length": frozenset({"long"}),
    "width": frozenset("wide narrow thick thin skinny".split()),
    "material": MATERIALS
    | frozenset("metallic wool woolen woollen fabric cloth tin clay tile tiled fur".split()),
    "pattern": frozenset(
        """striped stripy spotted dotted polka-dot checkered checked chequered plaid
        floral flowered patterned plain camouflage""".split()
    ),
    "texture": frozenset("smooth rough fuzzy furry hairy shiny glossy matte bumpy".split()),
    "age": frozenset("old new young ancient modern vintage antique aged".split()),
    "shape": frozenset(
        """round square rectangular circular triangular oval curved straight flat pointed
        pointy curly""".split()
    ),
    "cleanliness": frozenset("clean dirty muddy dusty".split()),
    "wetness": frozenset("wet dry".split()),
    "openness": frozenset("open closed".split()),
    "fullness": frozenset("empty full".split()),
    "brightness": frozenset("lit unlit".split()),
}

# Words within a group are never foils of each other or of what the image states.
SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"grey", "gray"}),
    frozenset({"gold", "golden"}),
    frozenset({"multicolored", "multicoloured", "colorful", "colourful"}),
    frozenset({"large", "big", "huge", "giant", "enormous", "massive"}),
    frozenset({"small", "little", "tiny", "miniature", "mini"}),
    frozenset({"wood", "wooden"}),
    frozenset({"metal", "metallic"}),
    frozenset({"wool", "woolen", "woollen"}),
    frozenset({"aluminum", "aluminium"}),
    frozenset({"stone", "rock"}),
    frozenset({"tile", "tiled"}),
    frozenset({"thin", "skinny"}),
    frozenset({"striped", "stripy"}),
    frozenset({"spotted", "dotted", "polka-dot"}),
    frozenset({"checkered", "checked", "chequered", "plaid"}),
    frozenset({"floral", "flowered"}),
    frozenset({"round", "circular"}),
    frozenset({"pointed", "pointy"}),
    frozenset({"old", "aged", "ancient", "antique", "vintage"}),
    frozenset({"new", "modern"}),
    frozenset({"dirty", "muddy", "dusty"}),
)

_KIND: dict[str, str] = {v: kind for kind, values in ATTRIBUTE_KINDS.items() for v in values}
_GROUP: dict[str, str] = {w: min(group) for group in SYNONYMS for w in group}


def head_word(value: str) -> str:
    """The last word of a value ("light blue" -> "blue")."""
    words = normalise(value).split()
    return words[-1] if words else ""


def attribute_kind(value: str) -> str | None:
    """The kind of an attribute value, by the whole value and else its last word."""
    key = normalise(value)
    return _KIND.get(key) or _KIND.get(head_word(key))


def synonym_key(word: str) -> str:
    """One representative per synonym group (the word itself when it has none)."""
    key = normalise(word)
    return _GROUP.get(key, key)


def value_keys(value: str) -> frozenset[str]:
    """What stating ``value`` says, for comparing with what an image states: the synonym
    key of the whole value and of its last word ("light blue" -> {"light blue", "blue"})."""
    return frozenset({synonym_key(value), synonym_key(head_word(value))}) - {""}


# --------------------------------------------------------------------------- relations

_SIDE_SURFACES: tuple[str, ...] = (
    "to the {} of",
    "on the {} of",
    "on the {} side of",
    "to the {} side of",
    "on the {} hand side of",
    "to the {} hand side of",
    "on the {}-hand side of",
    "to the {}-hand side of",
    "at the {} of",
    "on {} side of",
    "to {} of",
    "on {} of",
    "{} of",
)

RELATIONS: dict[str, tuple[str, ...]] = {
    "left of": tuple(s.format("left") for s in _SIDE_SURFACES),
    "right of": tuple(s.format("right") for s in _SIDE_SURFACES),
    "above": ("above", "over"),
    "below": ("below", "under", "beneath", "underneath"),
    "on top of": ("on top of", "on the top of", "atop"),
    "in front of": ("in front of",),
    "behind": ("behind", "in back of", "in the back of", "at the back of"),
}

CONVERSE: dict[str, str] = {
    "left of": "right of",
    "right of": "left of",
    "above": "below",
    "below": "above",
    "on top of": "below",
    "in front of": "behind",
    "behind": "in front of",
}

CONVERSE_SURFACE: dict[str, str] = {
    **{s.format("left"): s.format("right") for s in _SIDE_SURFACES},
    **{s.format("right"): s.format("left") for s in _SIDE_SURFACES},
    "above": "below",
    "over": "under",
    "below": "above",
    "under": "over",
    "beneath": "above",
    "underneath": "above",
    "on top of": "under",
    "on the top of": "under",
    "atop": "beneath",
    "in front of": "behind",
    "behind": "in front of",
    "in back of": "in front of",
    "in the back of": "in front of",
    "at the back of": "in front of",
}

_PREDICATE: dict[str, str] = {s: p for p, surfaces in RELATIONS.items() for s in surfaces}


def false_under_every_reading(pred: str, foil: str) -> bool:
    """Whether ``foil`` in place of ``pred`` is false wherever ``pred`` is true, however the
    spatial words are read. Of two spatial predicates only the converse is: two others can
    both hold ("left of" and "above", when the boxes are apart along both axes, or when the
    words mean "more to the left" rather than "mostly to the left"). A foil or predicate
    that is not spatial is not a matter of reading (True)."""
    canonical, replaced = predicate_of(pred), predicate_of(foil)
    if canonical is None or replaced is None:
        return True
    return CONVERSE.get(canonical) == replaced


def predicate_of(pred: str) -> str | None:
    """The canonical spatial predicate a graph's predicate states, or None.

    The longest tail of the predicate that is a known surface decides, so a verb before
    the preposition is allowed ("standing behind" -> "behind", "sit to the left of" ->
    "left of")."""
    words = normalise(pred).split()
    for k in range(len(words)):
        hit = _PREDICATE.get(" ".join(words[k:]))
        if hit is not None:
            return hit
    return None


def surfaces_of(canonical: str) -> tuple[str, ...]:
    """The surface forms of a canonical predicate, longest first (so that "to the left
    of" is found before the "left of" inside it)."""
    return _LONGEST_FIRST[canonical]


_LONGEST_FIRST: dict[str, tuple[str, ...]] = {
    p: tuple(sorted(surfaces, key=lambda s: (-len(s.split()), -len(s), s)))
    for p, surfaces in RELATIONS.items()
}


# Nouns that name the depiction or the caption's frame, not a thing in the scene ("an
# image of ...", "stock photo", "on a grey background", "a view of ..."): the parser's
# stop and frame nouns and a few more. The parser keeps a frame noun outside framing
# positions ("a pink image", "framed pictures on the wall"), so graphs still hold some; a
# template generator never puts one in for an object nor replaces one, since a model may
# reject "a red image" for the wrong reason.
META_NOUNS: frozenset[str] = (
    DEFAULT_STOP_OBJECTS
    | DEFAULT_FRAME_OBJECTS
    | frozenset("view scene closeup photography".split())
)


def is_meta_noun(lemma: str) -> bool:
    """Whether an object lemma, or its last word ("stock photo", "city view"), is one of
    ``META_NOUNS``."""
    key = normalise(lemma)
    return key in META_NOUNS or head_word(key) in META_NOUNS


def substitute_objects(
    object_counts: Mapping[str, int], attribute_counts: Mapping[str, int]
) -> set[str]:
    """The object lemmas fit to substitute for an object (or to be replaced): those a
    corpus uses as an object more often than as an attribute (a part-of-speech vote:
    parsers sometimes make a colour the noun, "a small purple" for "a small purple
    cross"), and no ``META_NOUNS``. Counts are by normalised value."""
    return {
        word
        for word, n in object_counts.items()
        if word and n > attribute_counts.get(word, 0) and not is_meta_noun(word)
    }


# --------------------------------------------------------------------------- mirroring

HORIZONTAL = "horizontal"  # left <-> right
VERTICAL = "vertical"  # up <-> down
MIRROR_AXES: tuple[str, ...] = (HORIZONTAL, VERTICAL)

VERTICAL_SURFACES: tuple[str, ...] = tuple(
    s for p in ("above", "below", "on top of") for s in RELATIONS[p]
)
_MIRROR_SURFACE: dict[str, dict[str, str]] = {
    HORIZONTAL: {"left": "right", "right": "left"},
    VERTICAL: {s: CONVERSE_SURFACE[s] for s in VERTICAL_SURFACES},
}
_MIRROR_PATTERN: dict[str, re.Pattern[str]] = {
    axis: re.compile(
        r"\b(" + "|".join(re.escape(s) for s in sorted(table, key=lambda s: (-len(s), s))) + r")\b",
        re.IGNORECASE,
    )
    for axis, table in _MIRROR_SURFACE.items()
}
_AXIS_WORDS: dict[str, frozenset[str]] = {
    axis: frozenset(w for s in table for w in s.split())
    | frozenset(w for s in table.values() for w in s.split())
    for axis, table in _MIRROR_SURFACE.items()
}
_DIRECTION_WORDS: dict[str, frozenset[str]] = {
    HORIZONTAL: frozenset({"left", "right"}),
    VERTICAL: frozenset("above over below under beneath underneath atop top".split()),
}


def mirror_text(text: str, axis: str) -> str:
    """``text`` as it reads of the image mirrored along ``axis``: horizontal swaps "left"
    and "right"; vertical puts each above/below phrase's converse phrase in
    (``CONVERSE_SURFACE``: "over" -> "under", "beneath" -> "above"). A capital first letter
    is kept."""
    table = _MIRROR_SURFACE[axis]

    def swap(match: re.Match[str]) -> str:
        found = match.group(0)
        out = table[found.lower()]
        return out[0].upper() + out[1:] if found[0].isupper() else out

    return _MIRROR_PATTERN[axis].sub(swap, text)


def relation_axis(caption: str, negative: str) -> str | None:
    """The axis along which ``negative`` changes a spatial relation of ``caption`` ("a
    circle above a square" -> "a circle below a square": vertical), or None when the two
    differ in anything else. The caption is false of its image mirrored along that axis
    wherever the negative is false of the image (every pair's relation along the axis
    turns into its converse)."""
    a = Counter(normalise(caption).split())
    b = Counter(normalise(negative).split())
    changed = set((a - b) + (b - a))
    for axis in MIRROR_AXES:
        if changed & _DIRECTION_WORDS[axis] and changed <= _AXIS_WORDS[axis]:
            return axis
    return None
