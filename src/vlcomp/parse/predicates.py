"""Relation predicates: multi-word prepositions and the predicate-normalisation map.

A predicate is written lower-case, verbs lemmatised, words separated by one space:
``ride`` ("a man riding a horse"), ``sit on`` ("a cat sitting on a mat"), ``on top of``,
``left of`` ("to the left of", "on the left side of", "left of").

``PredicateMap`` holds surface form -> canonical predicate. Its multi-word keys are also
the patterns the parser recognises as one preposition in the text. The generic default
(``DEFAULT_PREDICATE_MAP``) only folds spelling variants of the same preposition ("on the
top of" -> "on top of", "in between" -> "between"); a closed vocabulary such as the
synthetic world's (``"over" -> "above"``, ``"beneath" -> "below"``) is passed as
``extra`` and may set ``strip_verbs`` so that "sit to the left of" becomes "left of".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vlcomp.text import normalise

from .lexicon import RELATIONAL_NOUNS, RELATIONAL_PLURALS

_LEADING_PREPS = ("on", "in", "at", "to", "from", "by", "near", "along")
_DETERMINERS = ("", "the", "a", "both", "either", "each")


def _generic_map() -> dict[str, str]:
    out: dict[str, str] = {}
    nouns = [(n, n) for n in RELATIONAL_NOUNS] + list(RELATIONAL_PLURALS.items())
    for written, noun in nouns:
        for prep in _LEADING_PREPS:
            for det in _DETERMINERS:
                surface = " ".join(w for w in (prep, det, written, "of") if w)
                if noun in ("left", "right"):
                    canonical = f"{noun} of"
                elif noun == "front" and prep in ("in", "at"):
                    canonical = "in front of"
                else:
                    canonical = f"{prep} {noun} of"
                out[surface] = canonical
    for side in ("left", "right"):
        out[f"{side} of"] = f"{side} of"
        for prep in ("on", "to", "at"):
            for det in ("the", ""):
                for middle in ("side", "hand side", "- hand side"):
                    surface = " ".join(w for w in (prep, det, side, middle, "of") if w)
                    out[surface] = f"{side} of"
    for det in ("the", ""):
        out[" ".join(w for w in ("on", det, "other side of") if w)] = "on other side of"
    out.update(
        {
            "next to": "next to",
            "close to": "close to",
            "near to": "near",
            "in between": "between",
            "inside of": "inside",
            "outside of": "outside",
            "out of": "out of",
            "across from": "across from",
            "away from": "away from",
            "along side": "alongside",
            "on to": "onto",
        }
    )
    return out


DEFAULT_PREDICATE_MAP: dict[str, str] = _generic_map()


@dataclass(frozen=True)
class PredicateMap:
    """Surface form -> canonical predicate (keys and values normalised with
    ``vlcomp.text.normalise``). Build with ``PredicateMap.build``."""

    mapping: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PREDICATE_MAP))
    strip_verbs: bool = False

    @classmethod
    def build(
        cls, extra: Mapping[str, str] | None = None, *, strip_verbs: bool = False
    ) -> PredicateMap:
        """The generic map, updated with ``extra`` (its entries win).

        With ``strip_verbs`` a predicate "<verb ...> <surface>" whose tail is a key maps to
        that key's value ("sit over" -> "above" when "over" -> "above" is a key).
        """
        merged = dict(DEFAULT_PREDICATE_MAP)
        for surface, canonical in (extra or {}).items():
            merged[normalise(surface)] = normalise(canonical)
        return cls(merged, strip_verbs)

    @cached_property
    def patterns(self) -> dict[tuple[str, ...], str]:
        return {tuple(k.split()): v for k, v in self.mapping.items() if " " in k}

    @cached_property
    def max_pattern_len(self) -> int:
        return max((len(p) for p in self.patterns), default=0)

    @cached_property
    def pattern_starts(self) -> frozenset[str]:
        return frozenset(p[0] for p in self.patterns)

    def match(self, words: Sequence[str], start: int) -> tuple[int, str] | None:
        """Longest multi-word preposition at ``words[start:]``: (end, canonical) or None."""
        if words[start] not in self.pattern_starts:
            return None
        longest = min(self.max_pattern_len, len(words) - start)
        for n in range(longest, 1, -1):
            canonical = self.patterns.get(tuple(words[start : start + n]))
            if canonical is not None:
                return start + n, canonical
        return None

    def __call__(self, predicate: str) -> str:
        pred = normalise(predicate)
        hit = self.mapping.get(pred)
        if hit is not None:
            return hit
        if self.strip_verbs:
            words = pred.split()
            for k in range(1, len(words)):
                hit = self.mapping.get(" ".join(words[k:]))
                if hit is not None:
                    return hit
        return pred

    def fingerprint(self) -> str:
        """A short stable digest of the map, for output metadata."""
        import hashlib
        import json

        doc = json.dumps([sorted(self.mapping.items()), self.strip_verbs])
        return hashlib.sha256(doc.encode()).hexdigest()[:16]


def resolve_predicate_map(
    spec: str | Path | Mapping[str, str] | PredicateMap | None, strip_verbs: bool | None = None
) -> PredicateMap:
    """A ``PredicateMap`` from a config value.

    ``None`` or ``"generic"``: the generic map. A mapping: generic + that mapping. A path
    to a YAML or JSON file holding a mapping (a data preset's, such as the world's
    ``results/world/predicates.json``): the same, read from the file.
    """
    if isinstance(spec, PredicateMap):
        return spec
    if spec is None or spec == "generic":
        return PredicateMap.build(strip_verbs=bool(strip_verbs))
    mapping = _read_mapping(Path(spec)) if isinstance(spec, str | Path) else dict(spec)
    return PredicateMap.build(mapping, strip_verbs=bool(strip_verbs))


def _read_mapping(path: Path) -> dict[str, str]:
    import json

    if not path.exists():
        raise FileNotFoundError(f"predicate map {path}: no such file (or use generic)")
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError(f"predicate map {path}: expected a mapping of strings to strings")
    return data
