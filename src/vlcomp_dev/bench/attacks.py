"""Cost of the certificate's blind-attack panel (``vlcomp.blind.attacks``), per attack and
as a whole, against the cheapest attack (``length``) measured in the same run.

    python -m vlcomp_dev.bench.attacks [--sizes 2000 8000 20000] [--out attacks.json]

The table is a seeded synthetic 1+1 candidates table (``CANDIDATES_SCHEMA``) of N items:
a caption "a <colour> <object> <relation> a <colour> <object> [<place words>]" and one
negative one change away from it, in four families (replace attribute, replace object,
replace relation, swap attributes), so that every type gets its own per-type fits. Each
measurement is ``attack_panel`` on that table with the certificate's defaults
(``AttackSettings``: folds, seed, bootstrap resamples): ``text_panel`` runs every text
attack (``TEXT_ATTACKS``), each other entry one attack alone; all include building the
pairs and the bootstrap. The panel's per-text caches are emptied before each measurement,
so every number is that of a fresh process (after one untimed warm-up on a tiny table);
measurements are interleaved over ``repeats`` and the median kept. Ratios: seconds over
those of ``length`` at the same size; growth: seconds per pair at each size over that at
the smallest.

The certification panel (``vlcomp.blind.certify``) is measured on the same pairs:
``certify_panel`` runs every family as the certificate does (MiniLM on its default sample
of ``encoder_pairs`` per type, loaded fresh; each family also trained on a second seeded
table's pairs, the generated training negatives; the LM on a third table's captions), each
``certify:<family>`` one family alone with its generator-trained twin; all include the
grouped folds and the group bootstrap, and run once per size (not ``repeats`` times).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from vlcomp.blind import attacks
from vlcomp.blind.certify import SALT, certification_predictions
from vlcomp.blind.families import FAMILIES as ATTACK_FAMILIES
from vlcomp.blind.families import Resources
from vlcomp.blind.jobs import AttackSettings
from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.io import write_json
from vlcomp_dev.bench.report import machine

SIZES = (2_000, 8_000, 20_000)  # pairs (= items: one negative each)
BASELINE = attacks.LENGTH
PANEL = "text_panel"
CERTIFY_PANEL = "certify_panel"
BENCHMARK = "bench_attacks"  # every text attack, as the certificate runs them
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "pink", "brown", "grey",
           "orange", "purple", "silver"]  # fmt: skip
OBJECTS = [f"{kind}{i}" for kind in ("dog", "cup", "car", "lamp", "tree", "box") for i in range(10)]
RELATIONS = ["on", "under", "beside", "behind", "near", "above", "below", "inside",
             "holding", "facing", "against", "over"]  # fmt: skip
PLACES = [f"place{i}" for i in range(40)]
FAMILIES = [("replace", "att"), ("replace", "obj"), ("replace", "rel"), ("swap", "att")]


def synthetic_candidates(n_pairs: int, seed: int = 0) -> pl.DataFrame:
    """``n_pairs`` items of one positive and one negative (``CANDIDATES_SCHEMA``), the
    negative one change away (its family's), the families in turn; the same for a seed."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pairs):
        c1, c2 = rng.choice(COLOURS, 2, replace=False)
        o1, o2 = rng.choice(OBJECTS, 2, replace=False)
        relation = rng.choice(RELATIONS)
        place = " ".join(rng.choice(PLACES, int(rng.integers(0, 4)), replace=False))
        family, target = FAMILIES[i % len(FAMILIES)]
        parts = {"c1": c1, "o1": o1, "rel": relation, "c2": c2, "o2": o2}
        changed = dict(parts)
        if (family, target) == ("swap", "att"):
            changed["c1"], changed["c2"] = c2, c1
        else:
            slot, pool = {"att": ("c1", COLOURS), "obj": ("o1", OBJECTS),
                          "rel": ("rel", RELATIONS)}[target]  # fmt: skip
            changed[slot] = rng.choice([w for w in pool if w != parts[slot]])

        for words, is_positive in ((parts, True), (changed, False)):
            caption = " ".join([*_caption_words(words), place]).strip()
            rows.append((BENCHMARK, f"{family}_{target}/{i:06d}", f"img{i}.jpg", caption,
                         is_positive, family, target, "template", f"seed={seed}"))  # fmt: skip
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA, orient="row")


def _caption_words(p: dict[str, str]) -> list[str]:
    return ["a", p["c1"], p["o1"], p["rel"], "a", p["c2"], p["o2"]]


def clear_text_caches() -> None:
    """Empty the panel's per-text caches (tokens, changed words, features): a fresh process."""
    for cached in (attacks._tokens, attacks._changed, attacks._features, attacks._feature_arrays):
        cached.cache_clear()


def _panel_seconds(table: pl.DataFrame, chosen: list[str], settings: AttackSettings) -> float:
    """Seconds of ``attack_panel`` with the ``chosen`` attacks, from empty text caches."""
    clear_text_caches()
    started = time.perf_counter()
    attacks.attack_panel(
        table,
        attacks=chosen,
        k=settings.folds,
        seed=settings.seed,
        resamples=settings.bootstrap_resamples,
    )
    return time.perf_counter() - started


def _certify_seconds(
    table: pl.DataFrame,
    training: pl.DataFrame,
    captions: list[str],
    chosen: list[str] | None,
    settings: AttackSettings,
) -> float:
    """Seconds of the certification panel of the ``chosen`` families (None: all) with a
    fresh MiniLM encoder."""
    from vlcomp.scorers.familiarity import MiniLMEncoder, load_minilm

    clear_text_caches()
    started = time.perf_counter()
    c = settings.certify
    resources = Resources(
        MiniLMEncoder(), c.encoder_pairs, {"bench": captions}, load_minilm, c.tuned
    )
    pairs = attacks.attack_pairs(table, k=settings.folds, seed=settings.seed)
    certified, predictions = certification_predictions(
        pairs, resources, {"bench": training}, replace(c, families=chosen), settings.seed
    )
    attacks.attack_accuracy(
        certified, predictions, settings.bootstrap_resamples,
        attacks.stable_int(SALT, settings.seed) % 2**32, unit="group",
    )  # fmt: skip
    return time.perf_counter() - started


def size_numbers(times: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, Any]]:
    """From the seconds of every repeat (size -> run -> seconds), per size: the median
    seconds, pairs per second, each run's seconds as a ratio to ``length`` alone, the
    panel's microseconds per pair and that as a ratio to the smallest size's."""
    out: dict[str, dict[str, Any]] = {}
    for size, repeats in times.items():
        n = int(size)
        seconds = {name: statistics.median(t) for name, t in repeats.items()}
        out[size] = {
            "pairs": n,
            "seconds": seconds,
            "seconds_all_repeats": repeats,
            "pairs_per_s": {name: n / s for name, s in seconds.items()},
            "vs_length": {name: s / seconds[BASELINE] for name, s in seconds.items()},
            "panel_us_per_pair": seconds[PANEL] / n * 1e6,
        }
    smallest = out[min(out, key=int)]["panel_us_per_pair"]
    for numbers in out.values():
        numbers["panel_per_pair_vs_smallest"] = numbers["panel_us_per_pair"] / smallest
    return out


def benchmark_attacks(
    sizes: Sequence[int] = SIZES,
    repeats: int = 3,
    settings: AttackSettings | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Seconds and pairs per second of the text panel and of each text attack alone at
    each size, each as a ratio to ``length`` alone at that size (same run), and the
    panel's growth with the pairs (seconds per pair relative to the smallest size).
    ``settings``: the certificate's (``AttackSettings``), its defaults when not given."""
    settings = settings or AttackSettings()
    families = {f"certify:{name}": [name] for name in ATTACK_FAMILIES}
    runs = [PANEL, *attacks.TEXT_ATTACKS, CERTIFY_PANEL, *families]
    warm_up = synthetic_candidates(40, settings.seed)
    attacks.attack_panel(warm_up, attacks=list(attacks.TEXT_ATTACKS), resamples=10)
    per_size = {}
    for n in sizes:
        table = synthetic_candidates(n, settings.seed)
        training = attacks.attack_pairs(synthetic_candidates(n, settings.seed + 1))
        captions = synthetic_candidates(n, settings.seed + 2).filter("is_positive")["text"]
        times: dict[str, list[float]] = {name: [] for name in runs}
        for repeat in range(repeats):  # interleaved, so that load changes hit every run alike
            for name in runs:
                if (name == CERTIFY_PANEL or name in families) and repeat:
                    continue  # the certification panel's runs take seconds each: once
                if name == CERTIFY_PANEL or name in families:
                    chosen = families.get(name)
                    seconds = _certify_seconds(table, training, captions.to_list(), chosen,
                                               settings)  # fmt: skip
                else:
                    chosen = list(attacks.TEXT_ATTACKS) if name == PANEL else [name]
                    seconds = _panel_seconds(table, chosen, settings)
                times[name].append(seconds)
        per_size[str(n)] = times
    by_size = size_numbers(per_size)
    for numbers in by_size.values():
        n, rates, ratios = numbers["pairs"], numbers["pairs_per_s"], numbers["vs_length"]
        log(f"{n:>7,} pairs: " + "  ".join(
            f"{name} {rates[name]:,.0f}/s ({ratios[name]:.1f}x)" for name in runs
        ))  # fmt: skip
    return {
        "sizes": list(sizes),
        "attacks": list(attacks.TEXT_ATTACKS),
        "panel": PANEL,
        "certify_panel": CERTIFY_PANEL,
        "certify_families": list(families),
        "encoder_pairs": settings.certify.encoder_pairs,
        "baseline": BASELINE,
        "folds": settings.folds,
        "seed": settings.seed,
        "bootstrap_resamples": settings.bootstrap_resamples,
        "repeats": repeats,
        "families": [f"{family}_{target}" for family, target in FAMILIES],
        "by_size": by_size,
        "machine": {
            **machine(),
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="pairs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    result = benchmark_attacks(args.sizes, args.repeats)
    if args.out:
        write_json(result, args.out)


if __name__ == "__main__":
    main()
