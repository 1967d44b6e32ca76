"""Hard negatives by editing a caption's words where its scene graph says what they mean.

Given a caption and its scene graph (ground truth or parsed), each edit changes one thing:

- replace/att: one attribute word -> an attribute of the same kind absent from the image;
- replace/obj: one object noun -> an object type absent from the image (plural kept);
- swap/att: the attributes of two objects exchanged (rejected if the result is true of
  the image, e.g. both bindings exist elsewhere in it);
- replace/rel: one relation phrase -> its converse ("left of" -> "right of"), false for the
  pair whenever the original is true.

An edit is made only where the word to change occurs exactly once in the caption, so the
change is unambiguous. Items with no valid edit of a kind are counted by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Vocabulary:
    """What an edit may substitute: attribute values by kind, object lemmas, predicates."""

    attributes: Mapping[str, Sequence[str]]  # kind -> values, e.g. {"colour": [...], "size": [...]}
    objects: Sequence[str]
    relation_surfaces: Mapping[str, Sequence[str]]  # canonical predicate -> surface forms
    converse: Mapping[str, str]

    def attribute_kind(self, value: str) -> str | None:
        return next((k for k, vs in self.attributes.items() if value in vs), None)


@dataclass(frozen=True)
class Edit:
    family: str
    target: str
    text: str
    detail: str


def _word_pattern(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.IGNORECASE)


def _occurrences(text: str, word: str) -> int:
    return len(_word_pattern(word).findall(text))


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _replace_once(text: str, word: str, replacement: str) -> str:
    return _word_pattern(word).sub(lambda m: _match_case(m.group(0), replacement), text, count=1)


def pluralize(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _fix_article(text: str, word: str) -> str:
    """'a orange' -> 'an orange' (and back) right before the replaced word."""

    def fix(match: re.Match[str]) -> str:
        article, following = match.group(1), match.group(2)
        wanted = "an" if following[:1].lower() in "aeiou" else "a"
        return _match_case(article, wanted) + " " + following

    return re.sub(rf"\b(an?)\s+({re.escape(word)})\b", fix, text, flags=re.IGNORECASE)


def replace_attribute(
    text: str,
    graph: Mapping[str, list[dict]],
    image_attributes: set[str],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> Edit | str:
    """One attribute -> an attribute of the same kind that nothing in the image has."""
    options = []
    for attribute in graph["attributes"]:
        value = attribute["value"]
        kind = vocab.attribute_kind(value)
        if kind is None or _occurrences(text, value) != 1:
            continue
        foils = [v for v in vocab.attributes[kind] if v not in image_attributes]
        if foils:
            options.append((value, foils))
    if not options:
        return "no attribute with an absent same-kind foil"
    value, foils = options[int(rng.integers(len(options)))]
    foil = foils[int(rng.integers(len(foils)))]
    edited = _fix_article(_replace_once(text, value, foil), foil)
    return Edit("replace", "att", edited, f"{value}->{foil}")


def replace_object(
    text: str,
    graph: Mapping[str, list[dict]],
    image_objects: set[str],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> Edit | str:
    """One object noun -> an object type absent from the image, keeping its number."""
    foils = [o for o in vocab.objects if o not in image_objects]
    if not foils:
        return "no absent object type"
    candidates = [o for o in graph["objects"] if _occurrences(text, o["name"]) == 1]
    if not candidates:
        return "no uniquely mentioned object"
    obj = candidates[int(rng.integers(len(candidates)))]
    foil = foils[int(rng.integers(len(foils)))]
    plural = obj["name"].lower() != obj["lemma"].lower()
    replacement = pluralize(foil) if plural else foil
    edited = _fix_article(_replace_once(text, obj["name"], replacement), replacement)
    return Edit("replace", "obj", edited, f"{obj['name']}->{replacement}")


def swap_attributes(
    text: str,
    graph: Mapping[str, list[dict]],
    image_bindings: set[tuple[str, str]],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> Edit | str:
    """Exchange same-kind attributes of two objects; reject swaps still true of the image."""
    lemma = {o["idx"]: o["lemma"] for o in graph["objects"]}
    by_object: dict[int, list[str]] = {}
    for attribute in graph["attributes"]:
        by_object.setdefault(attribute["obj"], []).append(attribute["value"])
    pairs = []
    objects = sorted(by_object)
    for i, a in enumerate(objects):
        for b in objects[i + 1 :]:
            for va in by_object[a]:
                for vb in by_object[b]:
                    kind = vocab.attribute_kind(va)
                    if kind is None or kind != vocab.attribute_kind(vb) or va == vb:
                        continue
                    if _occurrences(text, va) != 1 or _occurrences(text, vb) != 1:
                        continue
                    if (vb, lemma[a]) in image_bindings and (va, lemma[b]) in image_bindings:
                        continue  # the swapped caption would still be true of the image
                    pairs.append((va, vb))
    if not pairs:
        return "no swappable attribute pair"
    va, vb = pairs[int(rng.integers(len(pairs)))]
    placeholder = "\u0000"
    edited = _replace_once(text, va, placeholder)
    edited = _replace_once(edited, vb, va)
    edited = edited.replace(placeholder, vb)
    return Edit("swap", "att", edited, f"{va}<->{vb}")


def replace_relation(
    text: str,
    graph: Mapping[str, list[dict]],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> Edit | str:
    """One relation phrase -> a surface form of its converse predicate."""
    surfaces = sorted(
        ((s, p) for p, ss in vocab.relation_surfaces.items() for s in ss),
        key=lambda sp: -len(sp[0]),
    )
    options = []
    for relation in graph["relations"]:
        pred = relation["pred"]
        if pred not in vocab.converse:
            continue
        for surface, canonical in surfaces:
            if canonical == pred and _occurrences(text, surface) == 1:
                options.append((surface, pred))
                break
    if not options:
        return "no uniquely stated relation with a converse"
    surface, pred = options[int(rng.integers(len(options)))]
    foils = list(vocab.relation_surfaces[vocab.converse[pred]])
    foil = foils[int(rng.integers(len(foils)))]
    edited = _replace_once(text, surface, foil)
    return Edit("replace", "rel", edited, f"{surface}->{foil}")


def edit_caption(
    text: str,
    graph: Mapping[str, list[dict]],
    image_objects: set[str],
    image_attributes: set[str],
    image_bindings: set[tuple[str, str]],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> tuple[list[Edit], Counter[str]]:
    """Every edit kind for one caption; failures counted by reason."""
    results = [
        replace_attribute(text, graph, image_attributes, vocab, rng),
        replace_object(text, graph, image_objects, vocab, rng),
        swap_attributes(text, graph, image_bindings, vocab, rng),
        replace_relation(text, graph, vocab, rng),
    ]
    edits = [r for r in results if isinstance(r, Edit) and r.text != text]
    failures = Counter(r for r in results if isinstance(r, str))
    return edits, failures
