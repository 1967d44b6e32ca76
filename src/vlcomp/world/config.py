"""Semantic validation of the ``world`` config and the parsed, typed view of it.

The workflow validates the config's *shape* against its JSON schema; this module
checks what a schema cannot (values drawn from the vocabulary, min <= max, a
hold-out that leaves something to sample) and raises ``ValueError`` naming the key.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .vocab import (
    CANONICAL_RELATIONS,
    CAPTION_STYLES,
    COLOUR_RGB,
    CONVERSE,
    CORPUS_FORMATS,
    DEFAULT_WORLD_CONFIG,
    KNOWN_SHAPES,
    SIZE_FRACTION_RANGE,
)

MIN_IMAGE_SIZE = 32
MAX_OBJECTS = 5  # more do not fit with every pair on a clear axis

Binding = tuple[str, str]
Triple = tuple[str, str, str]


@dataclass(frozen=True)
class Holdout:
    """Items a training corpus never shows, in config order.

    ``bindings`` are (attribute, shape) with the attribute a colour or a size;
    ``triples`` are (shape, relation, shape); ``atoms`` are single vocabulary words
    and ``atom_kinds`` says, position by position, whether each is a "shape",
    "colour", "size" or "relation".
    """

    corpus: str
    bindings: tuple[Binding, ...] = ()
    triples: tuple[Triple, ...] = ()
    atoms: tuple[str, ...] = ()
    atom_kinds: tuple[str, ...] = ()

    @property
    def triples_with_converses(self) -> tuple[Triple, ...]:
        """Held-out triples followed by their converses not already listed."""
        out = list(self.triples)
        for a, rel, b in self.triples:
            conv = (b, CONVERSE[rel], a)
            if conv not in out:
                out.append(conv)
        return tuple(out)

    def atoms_of_kind(self, kind: str) -> tuple[str, ...]:
        """Held-out atoms of one kind ("shape", "colour", "size" or "relation")."""
        return tuple(a for a, k in zip(self.atoms, self.atom_kinds, strict=True) if k == kind)

    @property
    def is_empty(self) -> bool:
        return not (self.bindings or self.triples or self.atoms)


@dataclass(frozen=True)
class CorpusSpec:
    """One training corpus: output format, caption style, size, seed and hold-out."""

    name: str
    format: str
    n_images: int
    caption_style: str
    seed: int
    holdout: Holdout


@dataclass(frozen=True)
class EvalSpec:
    n_images: int
    captions_per_image: int
    heldout_fraction: float
    matched_twins: bool = True


@dataclass(frozen=True)
class WorldSpec:
    """Validated world config (see ``parse_world_config``)."""

    seed: int
    image_size: int
    min_objects: int
    max_objects: int
    shapes: tuple[str, ...]
    colours: tuple[str, ...]
    sizes: tuple[str, ...]
    relations: tuple[str, ...]
    eval: EvalSpec
    corpora: tuple[CorpusSpec, ...]

    def corpus(self, name: str) -> CorpusSpec:
        for spec in self.corpora:
            if spec.name == name:
                return spec
        known = ", ".join(c.name for c in self.corpora) or "none"
        raise ValueError(f"world.corpora: no corpus named {name!r} (configured: {known})")

    def size_pixels(self, size: str) -> int:
        """Side length in pixels of an object of the given size name."""
        lo, hi = SIZE_FRACTION_RANGE
        i = self.sizes.index(size)
        frac = (lo + hi) / 2 if len(self.sizes) == 1 else lo + (hi - lo) * i / (len(self.sizes) - 1)
        return max(3, round(frac * self.image_size))


def _fill_defaults(cfg: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(cfg))
    for key, value in DEFAULT_WORLD_CONFIG.items():
        if key not in out:
            out[key] = copy.deepcopy(value)
    eval_cfg = dict(out["eval"]) if isinstance(out["eval"], Mapping) else out["eval"]
    if isinstance(eval_cfg, dict):
        for key, value in DEFAULT_WORLD_CONFIG["eval"].items():
            eval_cfg.setdefault(key, value)
    out["eval"] = eval_cfg
    return out


def _int(value: Any, key: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{key}: must be >= {minimum}, got {value}")
    return value


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    return value


def _word_list(value: Any, key: str, known: Sequence[str] | None, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{key}: expected a non-empty list of {what}s, got {value!r}")
    seen: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or item != item.strip().lower():
            raise ValueError(f"{key}[{i}]: expected a lower-case word, got {item!r}")
        if known is not None and item not in known:
            raise ValueError(f"{key}[{i}]: {item!r} is not a known {what} ({', '.join(known)})")
        if item in seen:
            raise ValueError(f"{key}[{i}]: {item!r} is listed twice")
        seen.append(item)
    return tuple(seen)


def _parse_holdout(raw: Any, key: str, name: str, vocab: dict[str, tuple[str, ...]]) -> Holdout:
    if raw is None:
        return Holdout(corpus=name)
    if not isinstance(raw, Mapping):
        raise ValueError(f"{key}: expected a mapping with bindings/triples/atoms, got {raw!r}")
    unknown = sorted(set(raw) - {"bindings", "triples", "atoms"})
    if unknown:
        raise ValueError(f"{key}: unknown key(s) {unknown}; expected bindings, triples, atoms")
    shapes, colours, sizes, relations = (
        vocab["shape"],
        vocab["colour"],
        vocab["size"],
        vocab["relation"],
    )

    def items(field: str, arity: int) -> list[tuple[str, ...]]:
        value = raw.get(field) or []
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(f"{key}.{field}: expected a list, got {value!r}")
        out = []
        for i, item in enumerate(value):
            ok = isinstance(item, Sequence) and not isinstance(item, str) and len(item) == arity
            if not ok or not all(isinstance(x, str) for x in item):
                raise ValueError(
                    f"{key}.{field}[{i}]: expected a list of {arity} words, got {item!r}"
                )
            out.append(tuple(item))
        return out

    bindings: list[Binding] = []
    for i, (attr, shape) in enumerate(items("bindings", 2)):
        where = f"{key}.bindings[{i}]"
        if attr not in colours and attr not in sizes:
            raise ValueError(
                f"{where}: {attr!r} is not a colour or size in world.colours/world.sizes"
            )
        if shape not in shapes:
            raise ValueError(f"{where}: {shape!r} is not a shape in world.shapes")
        if (attr, shape) not in bindings:
            bindings.append((attr, shape))

    triples: list[Triple] = []
    for i, (a, rel, b) in enumerate(items("triples", 3)):
        where = f"{key}.triples[{i}]"
        for shape in (a, b):
            if shape not in shapes:
                raise ValueError(f"{where}: {shape!r} is not a shape in world.shapes")
        if rel not in relations:
            raise ValueError(f"{where}: {rel!r} is not a relation in world.relations")
        if (a, rel, b) not in triples:
            triples.append((a, rel, b))

    atoms_raw = raw.get("atoms") or []
    if isinstance(atoms_raw, str) or not isinstance(atoms_raw, Sequence):
        raise ValueError(f"{key}.atoms: expected a list, got {atoms_raw!r}")
    atoms: list[str] = []
    kinds: list[str] = []
    for i, atom in enumerate(atoms_raw):
        kind = next((k for k, words in vocab.items() if atom in words), None)
        if kind is None:
            raise ValueError(
                f"{key}.atoms[{i}]: {atom!r} is not a shape, colour, size or relation "
                "in world.shapes/colours/sizes/relations"
            )
        if atom not in atoms:
            atoms.append(atom)
            kinds.append(kind)

    for kind, words in (("shape", shapes), ("colour", colours), ("size", sizes)):
        if all(w in atoms for w in words):
            raise ValueError(f"{key}.atoms: holds out every {kind} in world.{kind}s")
    allowed = [
        (c, s, z)
        for s in shapes
        for c in colours
        for z in sizes
        if s not in atoms
        and c not in atoms
        and z not in atoms
        and (c, s) not in bindings
        and (z, s) not in bindings
    ]
    if not allowed:
        raise ValueError(f"{key}: bindings and atoms together leave no object type to draw")
    return Holdout(
        corpus=name,
        bindings=tuple(bindings),
        triples=tuple(triples),
        atoms=tuple(atoms),
        atom_kinds=tuple(kinds),
    )


def parse_world_config(world_cfg: Mapping[str, Any]) -> WorldSpec:
    """Validate ``world_cfg`` semantically and return a typed ``WorldSpec``.

    Missing top-level keys take the defaults of ``vocab.DEFAULT_WORLD_CONFIG``.
    Raises ``ValueError`` whose message starts with the offending key.
    """
    if not isinstance(world_cfg, Mapping):
        raise ValueError(f"world: expected a mapping, got {type(world_cfg).__name__}")
    cfg = _fill_defaults(world_cfg)
    seed = _int(cfg["seed"], "world.seed", 0)
    image_size = _int(cfg["image_size"], "world.image_size", MIN_IMAGE_SIZE)

    ops = cfg["objects_per_scene"]
    if isinstance(ops, str) or not isinstance(ops, Sequence) or len(ops) != 2:
        raise ValueError(f"world.objects_per_scene: expected [min, max], got {ops!r}")
    lo = _int(ops[0], "world.objects_per_scene[0]", 1)
    hi = _int(ops[1], "world.objects_per_scene[1]", 1)
    if lo > hi:
        raise ValueError(f"world.objects_per_scene: min {lo} > max {hi}")
    if hi > MAX_OBJECTS:
        raise ValueError(f"world.objects_per_scene[1]: at most {MAX_OBJECTS} objects fit, got {hi}")

    shapes = _word_list(cfg["shapes"], "world.shapes", KNOWN_SHAPES, "shape")
    colours = _word_list(cfg["colours"], "world.colours", tuple(COLOUR_RGB), "colour")
    sizes = _word_list(cfg["sizes"], "world.sizes", None, "size")
    relations = _word_list(cfg["relations"], "world.relations", CANONICAL_RELATIONS, "relation")
    vocab = {"shape": shapes, "colour": colours, "size": sizes, "relation": relations}
    seen: dict[str, str] = {}
    for kind, words in vocab.items():
        for i, word in enumerate(words):
            if word in seen:
                raise ValueError(f"world.{kind}s[{i}]: {word!r} is already a {seen[word]}")
            seen[word] = kind
    if len(sizes) > 4:
        raise ValueError(f"world.sizes: at most 4 sizes can be told apart, got {len(sizes)}")

    ev = cfg["eval"]
    if not isinstance(ev, Mapping):
        raise ValueError(f"world.eval: expected a mapping, got {ev!r}")
    frac = ev["heldout_fraction"]
    if isinstance(frac, bool) or not isinstance(frac, int | float) or not 0.0 <= frac <= 1.0:
        raise ValueError(f"world.eval.heldout_fraction: expected a number in [0, 1], got {frac!r}")
    eval_spec = EvalSpec(
        n_images=_int(ev["n_images"], "world.eval.n_images", 1),
        captions_per_image=_int(ev["captions_per_image"], "world.eval.captions_per_image", 1),
        heldout_fraction=float(frac),
        matched_twins=_bool(ev.get("matched_twins", True), "world.eval.matched_twins"),
    )

    corpora_raw = cfg["corpora"] or {}
    if not isinstance(corpora_raw, Mapping):
        raise ValueError("world.corpora: expected a mapping of corpus name -> settings")
    corpora = []
    for name, raw in corpora_raw.items():
        key = f"world.corpora.{name}"
        if not isinstance(name, str) or not name or any(ch in name for ch in "/\\\t\n"):
            raise ValueError(f"{key}: corpus names must be plain non-empty strings")
        if not isinstance(raw, Mapping):
            raise ValueError(f"{key}: expected a mapping, got {raw!r}")
        fmt = raw.get("format")
        if fmt not in CORPUS_FORMATS:
            raise ValueError(f"{key}.format: {fmt!r} is not one of {', '.join(CORPUS_FORMATS)}")
        style = raw.get("caption_style", "clean")
        if style not in CAPTION_STYLES:
            raise ValueError(
                f"{key}.caption_style: {style!r} is not one of {', '.join(CAPTION_STYLES)}"
            )
        corpora.append(
            CorpusSpec(
                name=name,
                format=fmt,
                n_images=_int(raw.get("n_images"), f"{key}.n_images", 1),
                caption_style=style,
                seed=_int(raw.get("seed", 0), f"{key}.seed", 0),
                holdout=_parse_holdout(raw.get("holdout"), f"{key}.holdout", name, vocab),
            )
        )
    return WorldSpec(
        seed=seed,
        image_size=image_size,
        min_objects=lo,
        max_objects=hi,
        shapes=shapes,
        colours=colours,
        sizes=sizes,
        relations=relations,
        eval=eval_spec,
        corpora=tuple(corpora),
    )


def load_holdout(world_cfg: Mapping[str, Any], corpus: str) -> Holdout:
    """The validated hold-out of one training corpus of ``world_cfg``."""
    return parse_world_config(world_cfg).corpus(corpus).holdout
