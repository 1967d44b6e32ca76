"""How often each ``negatives.systematicity.senses`` option gives an implausible object foil
on real captions, and how many atoms keep a foil: the measurement behind the default.

Vocabulary: the objects, attributes and relations of FACTUAL's human-written scene graphs of
``train.csv`` (Visual Genome region captions) seen at least ``--min-count`` times (the
systematicity default, 10). Sample: the captions of ``dev.csv`` (held out from the
vocabulary); each atom is looked up with the other atoms of its kind in its caption
forbidden, as the systematicity generator does.

A foil is *implausible* when its first (most frequent) WordNet noun sense lies in another
lexicographer file (supersense) than the original's first sense: saucer (noun.shape) ->
horse (noun.animal), woman (noun.person) -> hand (noun.body). WordNet relates such pairs
only through rare senses (horse as a sawhorse, hand as a hired hand), which a reader of the
caption does not take. The measure favours ``senses: 1`` by construction (it compares first
senses) and also counts a foil of the right, rarer sense as implausible (kite, first a bird,
-> doll). Reported per option: objects with a foil and with a plausible first foil, foils per
object, the implausible share among all foils, among the first ``max_foils`` (what the
generator scores) and among first foils, and the attributes and relations with a foil.

Result on FACTUAL (1,000 dev captions, 2,032 objects): all 61.2 % implausible among the first
20, coherent 14.8 %, 1 3.5 %; coherent and 1 give a plausible first foil to the same share
of objects (80.1 %, 80.7 %), but 1 keeps foils for 50.8 % of relations against 77.3 % (most
verbs' first senses relate to nothing) and drops colours whose first noun sense is another
thing (orange, the fruit). Hence the default: coherent.

    .venv/bin/python tools/senses_check.py [--factual ../shared/data/factual_sg] [--sample N]
"""

from __future__ import annotations

import argparse
import csv
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from vlcomp.negatives.wordnet_foils import FoilFinder, Rejection, load_wordnet

OPTIONS: tuple[str | int, ...] = ("all", "coherent", 1, 2, 3)
DEFAULT_FACTUAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "factual_sg"
_TRIPLE = re.compile(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)")


class Caption(NamedTuple):
    objects: tuple[str, ...]  # noun lemmas
    attributes: tuple[str, ...]
    relations: tuple[str, ...]  # predicates as FACTUAL writes them (lemmas: "grow on")


def parse_graph(scene_graph: str, wordnet: Any) -> Caption:
    """A FACTUAL scene graph ``( s , p , o ) , ...``; ``is`` triples give an attribute."""
    objects, attributes, relations = [], [], []
    for subject, predicate, obj in _TRIPLE.findall(scene_graph):
        objects.append(noun_lemma(wordnet, subject))
        if predicate.strip() == "is":
            attributes.append(" ".join(obj.lower().split()))
        else:
            objects.append(noun_lemma(wordnet, obj))
            relations.append(" ".join(predicate.lower().split()))
    return Caption(*(tuple(dict.fromkeys(x)) for x in (objects, attributes, relations)))


def noun_lemma(wordnet: Any, name: str) -> str:
    name = " ".join(name.lower().split())
    base = wordnet.morphy(name.replace(" ", "_"), "n")
    return base.replace("_", " ") if base else name


def supersense(wordnet: Any, word: str) -> str | None:
    """Lexicographer file of the first noun sense (``noun.artifact``), None without one."""
    senses = wordnet.synsets(word.replace(" ", "_"), pos="n")
    return senses[0].lexname() if senses else None


def implausible(wordnet: Any, original: str, foil: str) -> bool:
    return supersense(wordnet, original) != supersense(wordnet, foil)


@dataclass(frozen=True)
class SenseReport:
    senses: str | int
    objects: int  # object occurrences looked up (with a WordNet noun sense)
    with_foils: int
    plausible_first: int  # objects whose first foil is plausible
    foils: int
    implausible_all: float
    implausible_top: float  # among the first ``max_foils`` of each object
    implausible_first: float  # the first foil of each object
    coverage: dict[str, float]  # attribute / relation occurrences with at least one foil
    examples: tuple[tuple[str, str], ...]  # implausible first foils, most frequent first


def vocabulary_of(captions: Iterable[Caption]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {"object": Counter(), "attribute": Counter()}
    out["relation"] = Counter()
    for caption in captions:
        out["object"].update(caption.objects)
        out["attribute"].update(caption.attributes)
        out["relation"].update(caption.relations)
    return out


def measure(
    wordnet: Any,
    vocabulary: Mapping[str, Mapping[str, int]],
    captions: Sequence[Caption],
    senses: str | int,
    *,
    min_count: int = 10,
    max_foils: int = 20,
    n_examples: int = 5,
) -> SenseReport:
    """Foils of every object (attribute, relation) of ``captions`` from ``vocabulary``
    (kind -> counts), the caption's other atoms of the kind forbidden."""
    finder = FoilFinder(
        {k: dict(v) for k, v in vocabulary.items()}, wordnet, min_count, senses=senses
    )
    looked = with_foils = n_all = bad_all = n_top = bad_top = bad_first = 0
    wrong_first: Counter[tuple[str, str]] = Counter()
    covered: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for caption in captions:
        for obj in caption.objects:
            if supersense(wordnet, obj) is None:
                continue
            looked += 1
            found = finder.foils("object", obj, set(caption.objects) - {obj})
            if isinstance(found, Rejection):
                continue
            with_foils += 1
            flags = [implausible(wordnet, obj, f.value) for f in found]
            n_all, bad_all = n_all + len(flags), bad_all + sum(flags)
            n_top, bad_top = n_top + len(flags[:max_foils]), bad_top + sum(flags[:max_foils])
            if flags[0]:
                bad_first += 1
                wrong_first[(obj, found[0].value)] += 1
        for kind, atoms in (("attribute", caption.attributes), ("relation", caption.relations)):
            for atom in atoms:
                if not finder.is_known(kind, atom):
                    continue
                total[kind] += 1
                covered[kind] += not isinstance(
                    finder.foils(kind, atom, set(atoms) - {atom}), Rejection
                )
    return SenseReport(
        senses,
        looked,
        with_foils,
        with_foils - bad_first,
        n_all,
        bad_all / n_all if n_all else 0.0,
        bad_top / n_top if n_top else 0.0,
        bad_first / with_foils if with_foils else 0.0,
        {k: covered[k] / total[k] if total[k] else 0.0 for k in ("attribute", "relation")},
        tuple(pair for pair, _ in wrong_first.most_common(n_examples)),
    )


def read_factual(path: Path, wordnet: Any) -> list[Caption]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if "scene_graph" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: no scene_graph column (FACTUAL's train.csv / dev.csv)")
        return [parse_graph(row["scene_graph"], wordnet) for row in reader]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def table(reports: Iterable[SenseReport], max_foils: int) -> str:
    lines = [
        "| senses | objects with a foil | with a plausible first foil | foils / object "
        f"| implausible: all foils | first {max_foils} | first foil "
        "| attributes with a foil | relations with a foil | e.g. (implausible first foils) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        per = f"{r.foils / r.with_foils:.1f}" if r.with_foils else "-"
        shown = ", ".join(f"{a} -> {b}" for a, b in r.examples[:3])
        lines.append(
            f"| {r.senses} | {_share(r.with_foils, r.objects)} "
            f"| {_share(r.plausible_first, r.objects)} | {per} | {r.implausible_all:.1%} "
            f"| {r.implausible_top:.1%} | {r.implausible_first:.1%} "
            f"| {r.coverage['attribute']:.1%} | {r.coverage['relation']:.1%} | {shown} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factual", type=Path, default=DEFAULT_FACTUAL)
    parser.add_argument("--sample", type=int, default=None, help="dev captions (default all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-count", type=int, default=10)
    parser.add_argument("--max-foils", type=int, default=20)
    args = parser.parse_args(argv)
    for name in ("train.csv", "dev.csv"):
        if not (args.factual / name).is_file():
            raise SystemExit(f"{args.factual / name}: missing (see ../shared/data/README.md)")
    wordnet = load_wordnet()
    vocabulary = vocabulary_of(read_factual(args.factual / "train.csv", wordnet))
    captions = read_factual(args.factual / "dev.csv", wordnet)
    if args.sample is not None and args.sample < len(captions):
        captions = random.Random(args.seed).sample(captions, args.sample)
    sizes = {k: sum(c >= args.min_count for c in v.values()) for k, v in vocabulary.items()}
    n_objects = sum(supersense(wordnet, o) is not None for c in captions for o in c.objects)
    print(
        f"vocabulary (seen >= {args.min_count} times in {args.factual / 'train.csv'}): {sizes}; "
        f"sample: {len(captions)} captions of dev.csv, {n_objects} objects with a noun sense"
    )
    reports = [
        measure(
            wordnet, vocabulary, captions, s, min_count=args.min_count, max_foils=args.max_foils
        )
        for s in OPTIONS
    ]
    print(table(reports, args.max_foils))


if __name__ == "__main__":
    main()
