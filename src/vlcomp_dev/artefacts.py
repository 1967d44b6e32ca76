"""Known artefacts injected into a clean synthetic benchmark, and the certification panel's
accuracy on each: the evidence that the certificate can fail.

The clean control is exchangeable by construction: each item's two texts are "a c1 s1 rel a
c2 s2 tail" and the same with the two colours swapped, and which of the two is the positive
is a coin flip, so no text-only attack can beat chance. Each artefact touches half the
items (``STRENGTH``), so an attack that reads it perfectly scores about 0.75:

- ``distinct_word``: the positive repeats its colour ("a red cube near a red star"), the
  foil brings in a new one ("... a blue star"): one distinct word more;
- ``marker``: the foil's relation is always "along", the positive's one of the other three
  (all four as long, stop words, and as common in the corpus);
- ``recurring_positive``: the positive is one of 60 fixed texts, each held by about five
  items; the foil swaps its colours or its shapes (same words), so it recurs half as often;
- ``length``: the foil carries one adjective more than the positive ("a wooden table").

``python -m vlcomp_dev.artefacts`` prints the artefact x family table (mean over seeds).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable

import numpy as np
import polars as pl

from vlcomp.blind.attacks import PAIRS_SCHEMA, attack_accuracy
from vlcomp.blind.certify import CertifySettings, certification_predictions
from vlcomp.blind.families import FAMILIES, Resources

COLOURS = ("red", "blue", "green", "yellow", "black", "white", "pink", "brown", "grey", "orange")
SHAPES = ("cube", "star", "ring", "cone", "disk", "ball", "box", "cup", "vase", "lamp")
# five letters and stop words each, equally common in the corpus: only the word tells them apart
RELATIONS = ("above", "below", "under", "along")
MARKER = "along"
TAILS = ("on a table", "in a room", "on the grass", "by the window", "near a wall",
         "by a tree", "on the floor", "in the garden")  # fmt: skip
ADJECTIVES = ("wooden", "small", "old", "large", "round", "dark", "clean", "long")
STRENGTH = 0.5  # share of items an artefact touches
ARTEFACTS = ("clean", "distinct_word", "marker", "recurring_positive", "length")
# the families each artefact is meant for: dropping them all should let it through
MEANT_FOR: dict[str, tuple[str, ...]] = {
    "distinct_word": ("surface", "surface_rule", "whole_text", "minilm_tuned"),
    "marker": ("whole_text", "minilm_tuned"),
    "recurring_positive": ("surface", "surface_rule"),
    "length": ("surface", "surface_rule", "whole_text", "lm", "minilm_tuned"),
}


def _scene(rng: random.Random, c1: str, c2: str, s1: str, s2: str, tail: str | None = None):
    return f"a {c1} {s1} {rng.choice(RELATIONS)} a {c2} {s2} {tail or rng.choice(TAILS)}"


def synthetic_pairs(artefact: str, n_items: int = 600, seed: int = 0) -> pl.DataFrame:
    """One (positive, negative) pair per item (``attacks.PAIRS_SCHEMA``, type swap_att)."""
    if artefact not in ARTEFACTS:
        raise ValueError(f"unknown artefact {artefact!r}; known: {ARTEFACTS}")
    rng = random.Random(f"{artefact}:{seed}")
    # each colour once in each slot of the pool: recurrence, not a word prior, is the tell
    pool = [
        (c, COLOURS[(j + 3) % len(COLOURS)], *rng.sample(SHAPES, 2), rng.choice(RELATIONS),
         rng.choice(TAILS))
        for j, c in enumerate(COLOURS * 6)
    ]  # fmt: skip
    rows = []
    for i in range(n_items):
        c1, c2 = rng.sample(COLOURS, 2)
        s1, s2 = rng.sample(SHAPES, 2)
        tail = rng.choice(TAILS)
        relation = rng.choice(RELATIONS)
        a = f"a {c1} {s1} {relation} a {c2} {s2} {tail}"
        b = f"a {c2} {s1} {relation} a {c1} {s2} {tail}"
        positive, negative = (a, b) if rng.random() < 0.5 else (b, a)
        if artefact != "clean" and rng.random() < STRENGTH:
            if artefact == "distinct_word":
                positive = f"a {c1} {s1} {relation} a {c1} {s2} {tail}"
                negative = f"a {c1} {s1} {relation} a {c2} {s2} {tail}"
            elif artefact == "marker":
                others = [r for r in RELATIONS if r != MARKER]
                positive = positive.replace(f" {relation} ", f" {rng.choice(others)} ")
                negative = negative.replace(f" {relation} ", f" {MARKER} ")
            elif artefact == "recurring_positive":
                p1, p2, q1, q2, rel, end = pool[rng.randrange(len(pool))]
                positive = f"a {p1} {q1} {rel} a {p2} {q2} {end}"
                negative = rng.choice(
                    [f"a {p2} {q1} {rel} a {p1} {q2} {end}", f"a {p1} {q2} {rel} a {p2} {q1} {end}"]
                )
            else:  # length
                head, noun = negative.rsplit(" ", 1)
                negative = f"{head} {rng.choice(ADJECTIVES)} {noun}"
        rows.append(("synth", f"{i:05d}", f"{i:05d}", "synth", "swap_att", 0, positive, negative))
    return pl.DataFrame(rows, schema=PAIRS_SCHEMA, orient="row")


def corpus_captions(n: int = 20000, seed: int = 0) -> list[str]:
    """Training captions of the synthetic world (clean scenes) for the language model."""
    rng = random.Random(f"corpus:{seed}")
    return [_scene(rng, *rng.sample(COLOURS, 2), *rng.sample(SHAPES, 2)) for _ in range(n)]


def family_accuracy(
    pairs: pl.DataFrame,
    families: tuple[str, ...] | None,
    seed: int = 0,
    load_encoder: Callable[[], object] | None = None,
) -> dict[str, float]:
    """attack -> accuracy of the certification panel (``families``) on ``pairs``; no
    frozen sentence encoder (the fine-tuned one with ``load_encoder``), no
    generator-trained attacks, a corpus ``synth`` for the LM."""
    resources = Resources(corpora={"synth": corpus_captions(seed=seed)}, load_encoder=load_encoder)
    settings = CertifySettings(families=families, generator_attacks=False)
    certified, predictions = certification_predictions(pairs, resources, None, settings, seed)
    table = attack_accuracy(certified, predictions, resamples=0, seed=seed, unit="group")
    return dict(zip(table["attack"], table["accuracy"], strict=True))


def panel_best(
    pairs: pl.DataFrame,
    families: tuple[str, ...] | None,
    seed: int = 0,
    load_encoder: Callable[[], object] | None = None,
) -> float:
    """The best accuracy of the panel of ``families`` (0.5 with no family left)."""
    if families is not None and not families:
        return 0.5
    return max(family_accuracy(pairs, families, seed, load_encoder).values(), default=0.5)


def artefact_table(
    seeds: int = 3, n_items: int = 600, load_encoder: Callable[[], object] | None = None
) -> pl.DataFrame:
    """Per artefact, the mean accuracy over ``seeds`` of every family (the fine-tuned
    encoder with ``load_encoder``), and of the panel without the families meant for it
    (``without_meant``)."""
    everything = tuple(name for name in FAMILIES if name != "minilm")
    rows = []
    for artefact in ARTEFACTS:
        scores: dict[str, list[float]] = {}
        for seed in range(seeds):
            pairs = synthetic_pairs(artefact, n_items, seed)
            found = family_accuracy(pairs, everything, seed, load_encoder)
            for attack, accuracy in found.items():
                scores.setdefault(attack, []).append(accuracy)
            rest = tuple(f for f in everything if f not in MEANT_FOR.get(artefact, ()))
            best = panel_best(pairs, rest, seed, load_encoder)
            scores.setdefault("without_meant", []).append(best)
        rows.append({"artefact": artefact} | {k: float(np.mean(v)) for k, v in scores.items()})
    return pl.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--no-encoder", action="store_true", help="without minilm_tuned")
    args = parser.parse_args()
    from vlcomp.scorers.familiarity import load_minilm

    table = artefact_table(args.seeds, args.items, None if args.no_encoder else load_minilm)
    columns = [c for c in table.columns if c != "artefact"]
    print("| artefact | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for row in table.iter_rows(named=True):
        print(f"| {row['artefact']} | " + " | ".join(f"{row[c]:.3f}" for c in columns) + " |")


if __name__ == "__main__":
    main()
