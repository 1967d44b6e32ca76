"""CREPE hard negatives: WordNet foils, HN-ATOM / HN-COMP, and the CREPE CSV export."""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO
from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA
from vlcomp.counts.counts import count_shard
from vlcomp.importers.crepe import read_crepe_csv
from vlcomp.ingest import eval_items_from_vg
from vlcomp.negatives import wordnet_foils
from vlcomp.negatives.crepe_export import (
    CSV_COLUMNS,
    crepe_rows,
    csv_name,
    export_crepe_csv,
    split_rows,
)
from vlcomp.negatives.systematicity import (
    FAILURES_SCHEMA,
    REGIONS_SCHEMA,
    build_systematicity_negatives,
    locate,
    parse_graph,
    resolve_settings,
    systematicity_negatives,
    tokenize,
)
from vlcomp.negatives.wordnet_foils import (
    ALL_FORBIDDEN,
    DEFAULT_RELATIONS,
    EMPTY_VOCABULARY,
    NO_RELATED,
    NOT_IN_WORDNET,
    FoilFinder,
    Rejection,
    load_wordnet,
    nltk_data_dirs,
    rank,
)
from vlcomp.scorers.ngram import NgramLM
from vlcomp.splits.assign import assign_splits
from vlcomp.world import DEFAULT_WORLD_CONFIG, build_corpus, build_eval_set

VOCABULARY = {
    "object": (
        "dog puppy hound canine animal cat wolf horse car auto automobile motorcar vehicle "
        "cab truck bus bike motorcycle table chair desk man woman plate bowl cup"
    ).split(),
    "attribute": (
        "red crimson scarlet blue green yellow white black orange colour color large small "
        "big huge tiny wet dry wooden"
    ).split(),
    "relation": [
        "left of",
        "right of",
        "above",
        "below",
        "on",
        "under",
        "over",
        "in front of",
        "behind",
        "near",
        "sitting on",
        "standing on",
        "sits on",
        "lying on",
        "riding",
        "walking",
    ],
}


class LengthScorer:
    """Shorter = more plausible: a deterministic stand-in for a language model."""

    name = "length"

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return -np.array([len(t) for t in texts], dtype=np.float64)


@pytest.fixture(scope="module")
def wn() -> Any:
    return load_wordnet()


@pytest.fixture(scope="module")
def finder(wn: Any) -> FoilFinder:
    return FoilFinder(VOCABULARY, wn)


def _related_by_taxonomy(wn: Any, a: str, b: str, pos: str) -> str | None:
    """The independent check: synonym / hypernym / hyponym in any sense, or None."""
    sa, sb = set(wn.synsets(a.replace(" ", "_"), pos)), set(wn.synsets(b.replace(" ", "_"), pos))

    def up(synsets: set) -> set:
        return {
            h for s in synsets for h in s.closure(lambda x: x.hypernyms() + x.instance_hypernyms())
        }

    if sa & sb:
        return "synonym"
    if sb & up(sa):
        return "hypernym"
    if sa & up(sb):
        return "hyponym"
    return None


# ------------------------------------------------------------------------- WordNet setup


def test_wordnet_is_found_without_nltk_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NLTK_DATA", raising=False)
    assert (REPO / "resources" / "nltk_data").resolve() in nltk_data_dirs()
    assert load_wordnet().synsets("dog")


def test_missing_wordnet_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from nltk.corpus import wordnet

    def missing() -> None:
        raise LookupError("Resource wordnet not found")

    monkeypatch.setattr(wordnet, "ensure_loaded", missing)
    with pytest.raises(wordnet_foils.WordNetMissingError, match="make setup"):
        load_wordnet.__wrapped__()


# ------------------------------------------------------------------------------- foils


@pytest.mark.parametrize(
    ("kind", "word", "pos", "expected"),
    [
        ("object", "dog", "n", {"cat", "wolf"}),
        ("object", "car", "n", {"truck", "motorcycle"}),
        ("attribute", "red", "n", {"blue", "green"}),
    ],
)
def test_foils_are_never_synonyms_hypernyms_or_hyponyms(
    finder: FoilFinder, wn: Any, kind: str, word: str, pos: str, expected: set[str]
) -> None:
    foils = finder.candidates(kind, word)
    assert isinstance(foils, list)
    assert expected <= set(foils)
    for foil in foils:
        assert _related_by_taxonomy(wn, word, foil, pos) is None, foil
    excluded = {"puppy", "hound", "canine", "animal", "auto", "automobile", "motorcar",
                "vehicle", "cab", "crimson", "scarlet", "colour", "color"}  # fmt: skip
    assert not excluded & set(foils)
    assert finder.relation("object", "dog", "puppy") == "hyponym"
    assert finder.relation("object", "dog", "animal") == "hypernym"
    assert finder.relation("object", "car", "automobile") == "synonym"
    assert finder.relation("attribute", "red", "crimson") in ("synonym", "hyponym")


def test_adjective_near_synonyms_are_excluded(finder: FoilFinder, wn: Any) -> None:
    foils = finder.candidates("attribute", "large")
    assert isinstance(foils, list)
    assert finder.relation("attribute", "large", "big") == "synonym"
    assert finder.relation("attribute", "large", "huge") == "similar"
    assert not {"big", "huge", "large"} & set(foils)
    heads = {s for s in wn.synsets("large", "a")}
    for foil in foils:
        near = {t for s in wn.synsets(foil, "a") for t in s.similar_tos()}
        assert not heads & (set(wn.synsets(foil, "a")) | near), foil


def test_antonyms_come_first(finder: FoilFinder) -> None:
    large = finder.foils("attribute", "large")
    assert isinstance(large, list)
    assert large[0].value == "small" and large[0].relation == "antonym"
    assert finder.candidates("attribute", "white")[0] == "black"
    assert finder.candidates("attribute", "wet") == ["dry"]
    assert finder.candidates("relation", "left of") == ["right of"]
    assert set(finder.candidates("relation", "above")) == {"below", "under"}
    assert set(finder.candidates("relation", "on")) == {"below", "under"}
    tiers = [f.tier for f in large]
    assert tiers == sorted(tiers)


def test_relations_from_the_lexicon_and_wordnet_verbs(finder: FoilFinder) -> None:
    assert finder.relation("relation", "above", "over") == "same_class"
    assert finder.relation("relation", "above", "left of") == "unrelated"
    sitting = finder.candidates("relation", "sitting on")
    assert "standing on" in sitting and "lying on" in sitting
    assert "sits on" not in sitting  # same verb
    assert "riding" not in sitting  # the foil keeps the particle
    assert DEFAULT_RELATIONS.facts("a", "left of", "b") == {
        ("a", "<left>", "b"),
        ("b", "<right>", "a"),
    }
    assert DEFAULT_RELATIONS.facts("a", "near", "b") == {("a", "<near>", "b"), ("b", "<near>", "a")}


def test_forbidden_atoms_are_never_foils(finder: FoilFinder) -> None:
    free = finder.candidates("attribute", "red")
    banned = {"blue", "green", "Yellow "}
    foils = finder.candidates("attribute", "red", forbidden=banned)
    assert isinstance(free, list) and isinstance(foils, list)
    assert set(foils) == set(free) - {"blue", "green", "yellow"}
    assert [f for f in free if f not in {"blue", "green", "yellow"}] == foils
    everything = finder.candidates("attribute", "large", forbidden=set(VOCABULARY["attribute"]))
    assert isinstance(everything, Rejection) and everything.reason == ALL_FORBIDDEN
    assert not everything


def test_rejections_are_counted_by_reason(wn: Any) -> None:
    finder = FoilFinder({"object": ["dog", "cat", "table"], "attribute": []}, wn)
    assert finder.foils("object", "xyzzyq").reason == NOT_IN_WORDNET
    assert finder.foils("object", "shirt").reason == NO_RELATED
    assert finder.foils("attribute", "red").reason == EMPTY_VOCABULARY
    assert finder.foils("object", "dog", forbidden={"cat"}).reason == ALL_FORBIDDEN
    assert finder.candidates("object", "dog") == ["cat"]
    assert finder.stats == {
        ("object", NOT_IN_WORDNET): 1,
        ("object", NO_RELATED): 1,
        ("attribute", EMPTY_VOCABULARY): 1,
        ("object", ALL_FORBIDDEN): 1,
        ("object", "ok"): 1,
    }


def test_min_count_restricts_the_vocabulary(wn: Any) -> None:
    atoms = pl.DataFrame(
        {
            "kind": ["object", "object", "object"],
            "value": ["dog", "cat", "wolf"],
            "count": [9, 50, 3],
        }
    )
    assert FoilFinder(atoms, wn, min_count=5).candidates("object", "dog") == ["cat"]
    assert FoilFinder(atoms, wn, min_count=1).candidates("object", "dog") == ["wolf", "cat"]


def test_coherent_senses_drop_rare_sense_kin(wn: Any) -> None:
    vocab = {"object": ["dog", "bus", "cat", "truck"]}
    assert FoilFinder(vocab, wn).relation("object", "dog", "bus") == "cohyponym"  # andiron~busbar
    coherent = FoilFinder(vocab, wn, senses="coherent")
    assert coherent.relation("object", "dog", "bus") == "unrelated"
    assert coherent.candidates("object", "dog") == ["cat"]


def test_rank_is_by_score_then_text() -> None:
    captions = ["a red car", "a blue car", "a car", "a tan car"]
    assert rank(captions, LengthScorer()) == [2, 0, 3, 1]  # ties by text
    assert FoilFinder.rank(captions, LengthScorer()) == [2, 0, 3, 1]


# ---------------------------------------------------------------------- hand-made items


def item(
    item_id: str,
    text: str,
    objects: list[tuple[str, str]],
    attributes: list[tuple[int, str]],
    relations: list[tuple[int, str, int]] = (),
    image: str | None = None,
) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "source": "hand",
        "image_id": image or item_id,
        "region_id": f"r{item_id}",
        "text": text,
        "x": 1,
        "y": 2,
        "width": 30,
        "height": 40,
        "objects": [{"idx": k, "name": n, "lemma": lem} for k, (n, lem) in enumerate(objects)],
        "attributes": [{"obj": o, "value": v} for o, v in attributes],
        "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in relations],
    }


def items_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EVAL_ITEMS_SCHEMA)


def negatives(result: Any, item_id: str) -> list[str]:
    frame = result.candidates.filter((pl.col("item_id") == item_id) & ~pl.col("is_positive"))
    return frame["text"].to_list()


def test_hn_atom_and_hn_comp_on_a_red_car(finder: FoilFinder) -> None:
    items = items_frame([item("car", "a red car", [("car", "car")], [(0, "red")])])
    result = build_systematicity_negatives(items, finder, LengthScorer(), seed=3)
    cands = result.candidates
    assert cands.schema == pl.Schema(CANDIDATES_SCHEMA)
    counts = cands.group_by("item_id").agg(pl.len(), pl.col("is_positive").sum()).sort("item_id")
    assert counts.rows() == [("car/atom", 5, 1), ("car/comp", 7, 1)]
    assert set(cands["benchmark"]) == {"crepe_systematicity"}
    assert set(cands["generator"]) == {"template:wordnet"}
    assert set(cands["image"]) == {"car"}

    atom = negatives(result, "car/atom")
    assert len(set(atom)) == 4
    for text in atom:
        words = text.split()
        assert len(words) == 3 and words[0] in ("a", "an")
        assert (words[1] == "red") != (words[2] == "car")  # exactly one atom replaced
    targets = cands.filter(pl.col("item_id") == "car/atom")["target"].to_list()
    assert targets[0] is None and set(targets[1:]) == {"att", "obj"}  # positions alternate

    comp = negatives(result, "car/comp")
    assert len(set(comp)) == 6
    for text in comp:
        first, second = text.split(" and ")
        f1, f2 = first.split(), second.split()
        assert f1[1] == "red" and f1[2] != "car"  # red <object foil>
        assert f2[2] == "car" and f2[1] != "red"  # <attribute foil> car
    for row in cands.filter(pl.col("item_id") == "car/comp").iter_rows(named=True):
        provenance = json.loads(row["provenance"])
        assert provenance["seed"] == 3
        assert provenance["compound"] == {"kind": "attr_obj", "parts": ["red", "car"]}
        if not row["is_positive"]:
            assert provenance["original"] == ["car", "red"]
            assert provenance["position"] == ["obj", "att"]
    assert result.regions.schema == pl.Schema(REGIONS_SCHEMA)
    assert result.regions["item_id"].to_list() == ["car/atom", "car/comp"]
    assert result.regions.select("x", "y", "width", "height").rows() == [(1, 2, 30, 40)] * 2
    assert result.failures.filter(pl.col("level") == "item").height == 0


def test_negatives_beyond_the_context_are_passed_over_and_counted(finder: FoilFinder) -> None:
    """A text tower of 4 tokens reads "<start> a red <end>": an object foil ("a red bike")
    reads as the positive and gives way to the next attribute foil; every HN-COMP negative
    ("a red bike and ...") does, so the item has none."""
    from vlcomp.negatives.context import ContextCheck

    items = items_frame([item("car", "a red car", [("car", "car")], [(0, "red")])])
    free = build_systematicity_negatives(items, finder, LengthScorer(), seed=3)
    assert any(t.split()[1] == "red" for t in negatives(free, "car/atom"))  # object foils
    check = ContextCheck(4)
    result = build_systematicity_negatives(items, finder, LengthScorer(), seed=3, context=check)
    atom = negatives(result, "car/atom")
    assert len(atom) == 4 and all(t.split()[1] != "red" and t.endswith(" car") for t in atom)
    assert not any(check.identical("a red car", t) for t in atom)
    failures = {(r["level"], r["family"], r["reason"]): r["count"] for r in
                result.failures.iter_rows(named=True)}  # fmt: skip
    reason = "context: identical within 4 tokens"
    passed = sum(t.split()[1] == "red" for t in negatives(free, "car/atom"))
    assert failures[("negative", "atom", reason)] >= passed
    assert failures[("negative", "comp", reason)] >= 6
    assert failures[("item", "comp", "too_few_negatives")] == 1
    assert set(result.candidates["item_id"]) == {"car/atom"}


def test_candidates_carry_the_benchmark_name(finder: FoilFinder) -> None:
    items = items_frame([item("car", "a red car", [("car", "car")], [(0, "red")])])
    named = build_systematicity_negatives(items, finder, LengthScorer(), seed=3, benchmark="mine")
    default = build_systematicity_negatives(items, finder, LengthScorer(), seed=3)
    assert set(named.candidates["benchmark"]) == {"mine"}
    assert named.candidates.drop("benchmark").equals(default.candidates.drop("benchmark"))


def test_articles_plurals_case_and_relations(finder: FoilFinder) -> None:
    items = items_frame(
        [
            item("one", "a large car", [("car", "car")], [(0, "large")]),
            item("cats", "Two white cats", [("cats", "cat")], [(0, "white")]),
            item(
                "dog",
                "A large dog sitting on the table.",
                [("dog", "dog"), ("table", "table")],
                [(0, "large")],
                [(0, "sitting on", 1)],
            ),
        ]
    )
    settings = {"allow_fewer": True}
    result = build_systematicity_negatives(items, finder, LengthScorer(), settings, seed=0)
    assert "a small car" in negatives(result, "one/atom")
    cats = negatives(result, "cats/atom")
    assert "Two black cats" in cats
    assert any(
        t.startswith("Two white ") and t.endswith("s") and t != "Two white cats" for t in cats
    )
    assert all(t.startswith("Two white ") or t.endswith(" cats") for t in cats)
    cats_comp = negatives(result, "cats/comp")
    assert all(" and two " in t and t.startswith("Two white ") for t in cats_comp)
    # an unseen compound (from the split assignments) is the preferred target
    unseen = {"dog": {("obj_rel_obj", ("dog", "sitting on", "table"))}}
    dog = build_systematicity_negatives(
        items.filter(pl.col("item_id") == "dog"), finder, LengthScorer(), settings, 0, unseen
    )
    assert set(dog.regions["compound_kind"]) == {"obj_rel_obj"}
    dog_atoms = negatives(dog, "dog/atom")
    assert "A large dog standing on the table." in dog_atoms
    assert "A large dog sitting on the chair." in dog_atoms
    dog_comp = negatives(dog, "dog/comp")
    assert len(dog_comp) == 6
    assert all(" and a large " in t and t.endswith(" the table.") for t in dog_comp)
    assert "A large dog sitting on the chair and a large dog standing on the table." in dog_comp
    # "a" before a foil starting with a vowel becomes "an"
    orange = items_frame([item("o", "a red car", [("car", "car")], [(0, "red")])])
    vocab = {"object": ["car", "truck"], "attribute": ["red", "orange"]}
    small = build_systematicity_negatives(
        orange, FoilFinder(vocab, finder.wordnet), LengthScorer(), settings, seed=0
    )
    assert sorted(negatives(small, "o/atom")) == ["a red truck", "an orange car"]
    assert negatives(small, "o/comp") == ["a red truck and an orange car"]


def test_graph_words_and_plurals_come_from_the_text_layer() -> None:
    graph = parse_graph(
        [{"idx": 0, "name": "Men", "lemma": "man"}, {"idx": 1, "name": "Bus", "lemma": None}],
        [{"obj": 0, "value": " Tall "}, {"obj": 1, "value": "Red"}],
        [],
    )
    assert graph.objects[0].atom == "man" and set(graph.objects[0].surfaces) == {"men", "man"}
    assert graph.objects[1].atom == "bus" and "buses" in graph.objects[1].surfaces
    text = "Two tall men\u2019s hats and two tall men - a red bus."
    tokens = tokenize(text)
    assert [t.word for t in tokens][:4] == ["two", "tall", "men's", "hats"]
    assert [text[t.start : t.end] for t in tokens][2] == "men\u2019s"
    tall_men, red_bus = graph.compounds
    mention = locate(text, tokens, graph, tall_men)
    assert not isinstance(mention, str) and mention.plural == (False, True)
    assert [t.word for t in tokens[mention.start : mention.end]] == ["tall", "men"]
    mention = locate(text, tokens, graph, red_bus)
    assert not isinstance(mention, str) and mention.plural == (False, False)


def test_failures_are_counted_by_reason(wn: Any) -> None:
    vocab = {
        "object": ["chair", "table", "car", "truck", "bike", "dog", "cat"],
        "attribute": ["wooden", "red", "blue", "green", "black", "large", "small"],
    }
    finder = FoilFinder(vocab, wn, senses="coherent")  # chair -> table only
    rows = [
        item("plain", "a dog", [("dog", "dog")], []),
        item("twice", "a red car and a red car", [("car", "car")] * 2, [(0, "red"), (1, "red")]),
        item("wood", "a wooden chair", [("chair", "chair")], [(0, "wooden")]),
        item("two", "a red car", [("car", "car")], [(0, "red"), (0, "large")]),
        item("missing", "something else", [("car", "car")], [(0, "red")]),
    ]  # fmt: skip
    result = build_systematicity_negatives(items_frame(rows), finder, LengthScorer(), seed=0)
    items = result.failures.filter(pl.col("level") == "item")
    by_reason = {(r["family"], r["reason"]): r["count"] for r in items.iter_rows(named=True)}
    for family in ("atom", "comp"):
        assert by_reason[(family, "no_compound")] == 1
        assert by_reason[(family, "compound_ambiguous")] == 1
        assert by_reason[(family, "compound_not_in_text")] == 1
    assert by_reason[("comp", "no_foil:no_antonym_or_cohyponym")] == 1  # wooden: no foil
    assert by_reason[("atom", "too_few_negatives")] == 1  # wooden chair: table only
    assert result.failures.schema == pl.Schema(FAILURES_SCHEMA)
    foil = result.failures.filter(pl.col("level") == "foil")
    assert "attribute/no_antonym_or_cohyponym" in set(foil["reason"])
    # every item is either in the candidates or in the failures, per family
    for family in ("atom", "comp"):
        kept = result.regions.filter(pl.col("family") == family).height
        failed = sum(c for (f, _), c in by_reason.items() if f == family)
        assert kept + failed == len(rows)

    single = build_systematicity_negatives(
        items_frame(rows[3:4]), finder, LengthScorer(), {"compounds": "single"}, seed=0
    )
    assert single.candidates.height == 0
    assert single.failures.filter(pl.col("level") == "item")["reason"].to_list() == [
        "not_one_compound",
        "not_one_compound",
    ]
    fewer = build_systematicity_negatives(
        items_frame(rows[2:3]), finder, LengthScorer(), {"allow_fewer": True}, seed=0
    )
    assert negatives(fewer, "wood/atom") == ["a wooden table"]
    assert "1_of_4" in set(fewer.failures["reason"])


def test_foils_true_elsewhere_in_the_image_are_not_used(finder: FoilFinder) -> None:
    rows = [
        item("a", "a red car", [("car", "car")], [(0, "red")], image="img"),
        item("b", "a blue car", [("car", "car")], [(0, "blue")], image="img"),
        item(
            "c",
            "large green triangle right of large green triangle",
            [("triangle", "triangle"), ("triangle", "triangle")],
            [(0, "large"), (0, "green"), (1, "large"), (1, "green")],
            [(0, "right of", 1)],
        ),
    ]
    vocab = {
        "object": ["car", "truck", "triangle", "square"],
        "attribute": ["red", "blue", "black", "large", "small", "green"],
        "relation": ["left of", "right of"],
    }
    small = FoilFinder(vocab, finder.wordnet)
    scoped = build_systematicity_negatives(
        items_frame(rows), small, LengthScorer(), {"allow_fewer": True}, seed=0
    )
    assert "a blue car" not in negatives(scoped, "a/atom")
    # "left of" is the converse of a true "right of" between identical descriptions
    assert all(
        " left of " not in t for t in negatives(scoped, "c/atom") + negatives(scoped, "c/comp")
    )
    unscoped = build_systematicity_negatives(
        items_frame(rows),
        small,
        LengthScorer(),
        # uncapped: "a blue car" is another item's caption, never a foil at max_recurrence 1
        {"allow_fewer": True, "image_scope": False, "max_recurrence": 0},
        seed=0,
    )
    assert "a blue car" in negatives(unscoped, "a/atom")


def test_seeded_determinism(finder: FoilFinder) -> None:
    rows = [
        item(
            str(k),
            text,
            [("dog", "dog"), ("table", "table")],
            [(0, colour), (1, "white")],
            [(0, "on", 1)],
        )
        for k, (text, colour) in enumerate(
            [("a black dog on a white table", "black"), ("a red dog on a white table", "red")]
        )
    ]
    frame = items_frame(rows)
    runs = [build_systematicity_negatives(frame, finder, LengthScorer(), seed=7) for _ in range(2)]
    assert runs[0].candidates.equals(runs[1].candidates)
    assert runs[0].failures.equals(runs[1].failures)
    reversed_run = build_systematicity_negatives(frame.reverse(), finder, LengthScorer(), seed=7)
    per_item = reversed_run.candidates.sort("item_id", maintain_order=True)
    assert per_item.equals(runs[0].candidates.sort("item_id", maintain_order=True))


def test_settings_are_checked() -> None:
    assert resolve_settings(None)["atom_negatives"] == 4
    assert resolve_settings({"comp_negatives": 2})["comp_negatives"] == 2
    with pytest.raises(ValueError, match="unknown"):
        resolve_settings({"atom_negs": 3})
    with pytest.raises(ValueError, match="compounds"):
        resolve_settings({"compounds": "many"})
    with pytest.raises(ValueError, match="atom_negatives"):
        resolve_settings({"atom_negatives": 0})


# --------------------------------------------------------------------------- CSV export


def test_csv_rows_and_splits(finder: FoilFinder, tmp_path: Path) -> None:
    rows = [
        item("car", "a red car, parked", [("car", "car")], [(0, "red")]),
        item("dog", 'the "big" black dog', [("dog", "dog")], [(0, "black")]),
        item("nobox", "a red truck", [("truck", "truck")], [(0, "red")]),
    ]
    rows[2].update(x=None, y=None, width=None, height=None)
    result = build_systematicity_negatives(items_frame(rows), finder, LengthScorer(), seed=0)
    table, skipped = crepe_rows(result.candidates, result.regions)
    assert skipped == {"no_region_box": 1}
    assert table["eval_item_id"].to_list() == ["car", "dog"]
    assert table["combined"].to_list()[0] == table["atom"][0].to_list() + table["comp"][0].to_list()
    assignments = pl.DataFrame(
        {"item_id": ["car", "dog"], "corpus": ["cc12m"] * 2, "crepe_split": ["UC", None]}
    )
    splits, unsplit = split_rows(table, assignments)
    assert unsplit == {"no_crepe_split": 1}
    assert splits["UC"]["eval_item_id"].to_list() == ["car"] and splits["SC"].height == 0
    assert csv_name("UA", "laion") == "syst_vg_hard_negs_unseen_atoms_in_laion.csv"

    cand, regions, assign = (tmp_path / f"{n}.parquet" for n in ("cand", "regions", "assign"))
    result.candidates.write_parquet(cand)
    result.regions.write_parquet(regions)
    assignments.with_columns(pl.lit("UA").alias("crepe_split")).write_parquet(assign)
    paths = export_crepe_csv(
        cand, regions, assign, tmp_path / "csv", summary_out=tmp_path / "s.json"
    )
    assert sorted(paths) == ["SC", "UA", "UC"]
    assert json.loads((tmp_path / "s.json").read_text())["rows"] == {"SC": 0, "UA": 2, "UC": 0}
    header = paths["UA"].read_text().splitlines()[0].split(",")
    assert tuple(header) == CSV_COLUMNS
    imported = read_crepe_csv(paths["UA"], kinds=("atom", "comp"))
    back = imported.candidates
    assert back.filter(pl.col("is_positive"))["text"].to_list() == [
        "a red car, parked",
        "a red car, parked",
        'the "big" black dog',
        'the "big" black dog',
    ]
    original = result.candidates.filter(pl.col("item_id") == "car/comp")["text"].to_list()
    assert back.filter(pl.col("item_id").str.ends_with("/0/comp"))["text"].to_list() == original
    assert set(back["image"]) == {"car#xywh=1,2,30,40", "dog#xywh=1,2,30,40"}
    assert imported.rejected.height == 0


# ----------------------------------------------------------------------- synthetic world


def tiny_world_config() -> dict[str, Any]:
    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg.update(
        eval={"n_images": 16, "captions_per_image": 2, "heldout_fraction": 0.5},
        corpora={
            "cc12m": {
                "format": "cc12m_tsv",
                "n_images": 300,
                "caption_style": "clean",
                "seed": 1,
                "holdout": {
                    "bindings": [["red", "circle"], ["green", "square"]],
                    "triples": [["circle", "above", "square"]],
                    "atoms": ["hexagon"],
                },
            }
        },
    )
    return cfg


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = tiny_world_config()
    root = tmp_path_factory.mktemp("crepe_world")
    build_eval_set(cfg, root / "eval")
    build_corpus(cfg, "cc12m", root / "cc12m")
    eval_items_from_vg(
        root / "eval" / "vg", root / "items.parquet", root / "rej.parquet", {"min_area": 0}
    )
    count_shard(root / "cc12m" / "truth.parquet", root / "counts")
    texts = pl.read_parquet(root / "cc12m" / "truth.parquet")["text"]
    NgramLM.fit(texts, order=3, min_count=1).save(root / "ngram.parquet")
    assign_splits(root / "items.parquet", root / "counts", root / "splits.parquet",
                  root / "summary.parquet", "cc12m")  # fmt: skip
    return root


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_world_end_to_end(world: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    common = dict(
        items=world / "items.parquet",
        atoms=world / "counts" / "atoms.parquet",
        scorer=world / "ngram.parquet",
        settings={"min_count": 5, "senses": "all"},  # the world's setting (config.yaml)
        seed=0,
    )
    for run in ("a", "b"):
        systematicity_negatives(
            out_candidates=out / run / "candidates.parquet",
            out_failures=out / run / "failures.parquet",
            out_regions=out / run / "regions.parquet",
            assignments=world / "splits.parquet",
            **common,
        )
    for name in ("candidates", "failures", "regions"):
        assert digest(out / "a" / f"{name}.parquet") == digest(out / "b" / f"{name}.parquet")

    items = pl.read_parquet(world / "items.parquet")
    assert items.height > 30
    cands = pl.read_parquet(out / "a" / "candidates.parquet")
    failures = pl.read_parquet(out / "a" / "failures.parquet")
    regions = pl.read_parquet(out / "a" / "regions.parquet")
    assert cands.schema == pl.Schema(CANDIDATES_SCHEMA)
    sizes = cands.group_by("item_id", "family").agg(pl.len(), pl.col("is_positive").sum())
    assert (sizes["is_positive"] == 1).all()
    assert set(sizes.filter(pl.col("family") == "atom")["len"]) == {5}
    assert set(sizes.filter(pl.col("family") == "comp")["len"]) == {7}
    dropped = failures.filter(pl.col("level") == "item")
    for family in ("atom", "comp"):
        kept = regions.filter(pl.col("family") == family).height
        lost = dropped.filter(pl.col("family") == family)["count"].sum()
        assert kept + lost == items.height
        # a caption that recurs is one item's by design (max_recurrence); of the rest, most
        recurring = dropped.filter(family=family, reason="recurring_text")["count"].sum()
        assert kept >= 0.8 * (items.height - recurring)
    # negatives never equal their positive and are unique per item
    negs = cands.filter(~pl.col("is_positive"))
    positives = cands.filter(pl.col("is_positive")).select("item_id", pl.col("text").alias("pos"))
    assert negs.join(positives, on="item_id").filter(pl.col("text") == pl.col("pos")).height == 0
    assert negs.select("item_id", "text").is_duplicated().sum() == 0

    paths = export_crepe_csv(
        out / "a" / "candidates.parquet",
        out / "a" / "regions.parquet",
        world / "splits.parquet",
        out / "csv",
    )
    total = 0
    for path in paths.values():
        imported = read_crepe_csv(path, kinds=("atom", "comp", "combined"))
        total += imported.candidates.filter(pl.col("is_positive")).height
        for kind, size in (("atom", 5), ("comp", 7)):
            part = imported.candidates.filter(pl.col("family") == kind)
            if part.height:
                assert set(part.group_by("item_id").len()["len"]) == {size}
    assert total > 0


def test_relation_foils_keep_the_caption_phrasing(wn: Any) -> None:
    vocab = {"object": ["cat", "dog"], "relation": ["left of", "right of"]}
    row = item(
        "lr",
        "a cat on the left side of a dog",
        [("cat", "cat"), ("dog", "dog")],
        [],
        [(0, "left of", 1)],
    )
    result = build_systematicity_negatives(
        items_frame([row]), FoilFinder(vocab, wn), LengthScorer(), {"allow_fewer": True}, seed=0
    )
    assert "a cat on the right side of a dog" in negatives(result, "lr/atom")
    atoms = result.candidates.filter(pl.col("family") == "atom")
    provenance = [json.loads(p) for p in atoms["provenance"]]
    assert {"right of"} <= {p.get("foil") for p in provenance}


def test_object_foils_are_voted_objects_and_depiction_nouns_are_never_foiled(wn: Any) -> None:
    shapes, colours = ["circle", "square", "triangle", "star"], ["red", "blue", "green", "yellow"]
    atoms = pl.DataFrame(
        {
            # the parser made a colour the noun sometimes ("a small purple"), and kept the
            # depiction noun of "a pink image" / "an image of ..."
            "kind": ["object"] * 7 + ["attribute"] * 5,
            "value": [*shapes, "purple", "blue", "image", *colours, "purple"],
            "count": [500, 400, 300, 200, 33, 27, 50, 900, 800, 700, 600, 5000],
        }
    )
    finder = FoilFinder(atoms, wn, min_count=10)
    assert finder.vocabulary["object"] == ("circle", "square", "star", "triangle")
    assert finder.vocabulary["attribute"] == ("blue", "green", "purple", "red", "yellow")
    # without counts there is no vote, but depiction nouns are still no foils
    plain = wordnet_foils.vocabulary_from({"object": ["dog", "orange", "photo", "stock image"]})
    assert plain["object"] == ("dog", "orange")
    # an object majority keeps a word that is also an attribute; a tie does not
    counted = {"object": {"orange": 30, "olive": 5}, "attribute": {"orange": 10, "olive": 5}}
    assert wordnet_foils.vocabulary_from(counted, min_count=5)["object"] == ("orange",)

    rows = [
        item("pic", "a blue image of a red circle", [("image", "image"), ("circle", "circle")],
             [(0, "blue"), (1, "red")]),
        item("only", "a blue image", [("image", "image")], [(0, "blue")]),
    ]  # fmt: skip
    for seed in range(6):
        result = build_systematicity_negatives(items_frame(rows), finder, LengthScorer(), seed=seed)
        regions = result.regions.filter(pl.col("eval_item_id") == "pic")
        assert regions["compound"].to_list() == [["red", "circle"]] * 2
        texts = negatives(result, "pic/atom") + negatives(result, "pic/comp")
        assert len(texts) == 4 + 6
        for text in texts:
            assert text.startswith("a blue image of a ") and text.count("image") == 1, text
        for provenance in result.candidates.filter(~pl.col("is_positive"))["provenance"]:
            p = json.loads(provenance)
            positions, foils = p["position"], p["foil"]
            if isinstance(positions, str):
                positions, foils = [positions], [foils]
            for position, foil in zip(positions, foils, strict=True):
                assert position not in ("obj", "subj") or foil in shapes, p
        items = result.failures.filter(pl.col("level") == "item")
        assert sorted(items.select("family", "reason", "count").rows()) == [
            ("atom", "compound_of_meta_noun", 1),
            ("comp", "compound_of_meta_noun", 1),
        ]


# ------------------------------------------------- whole-text statistics at generation


def test_a_scene_foil_reuses_a_word_of_the_caption_where_the_compound_is_false(
    finder: FoilFinder,
) -> None:
    """ "a red car near a blue truck": "blue" may foil "red" ("a blue car" is not in the
    scene) and "truck" may foil "car"; with CREPE's rule no word of the scene is a foil."""
    row = item("s", "a red car near a blue truck", [("car", "car"), ("truck", "truck")],
               [(0, "red"), (1, "blue")], [(0, "near", 1)])  # fmt: skip
    settings = {"allow_fewer": True, "balance": [], "atom_negatives": 40}

    def foils(extra: dict[str, Any]) -> set[str]:
        result = build_systematicity_negatives(
            items_frame([row]), finder, LengthScorer(), {**settings, **extra}, seed=0
        )
        frame = result.candidates.filter((pl.col("family") == "atom") & ~pl.col("is_positive"))
        return {json.loads(p)["foil"] for p in frame["provenance"]}

    ours, crepe = foils({}), foils({"scene_foils": False})
    assert ours & {"blue", "truck", "red", "car"}
    assert not crepe & {"blue", "truck", "red", "car"}


def test_distinct_balance_takes_the_foil_that_moves_the_surplus_toward_zero() -> None:
    from vlcomp.negatives.systematicity.atoms import AtomCandidate, FoilBalance, distinct_words
    from vlcomp.negatives.wordnet_foils import Foil

    def candidate(text: str) -> AtomCandidate:
        return AtomCandidate("att", Foil("x", "cohyponym", 1), "red", text)

    positive = "a red car near a blue truck"
    new_word, reused = (
        candidate("a green car near a blue truck"),
        candidate("a blue car near a blue truck"),
    )
    assert distinct_words(new_word.text) - distinct_words(positive) == 0
    assert distinct_words(reused.text) - distinct_words(positive) == -1
    balance = FoilBalance(["distinct_words"])
    key = ("distinct_words", "att")
    balance.ledger[key] = 3  # foils so far: three more distinct words than positives
    assert balance.pick("att", positive, [new_word, reused]) == 1
    balance.ledger[key] = 0
    assert balance.pick("att", positive, [new_word, reused]) == 0  # at 0 the best ranked
    balance.ledger[key] = -1
    assert balance.pick("att", positive, [reused, new_word]) == 1  # level beats away
    assert balance.pick("att", positive, [reused], away=False) is None  # away waits
    balance.record("att", positive, reused)
    assert balance.surplus("distinct_words", "att") == -2
    assert balance.surplus("distinct_words", "obj") == 0
    with pytest.raises(ValueError, match="unknown foil balance"):
        FoilBalance(["length"])


def test_balanced_generation_matches_distinct_words_of_positives_and_foils(wn: Any) -> None:
    """Over many items with two objects each, the balance brings the foils' surplus of
    distinct words over their positives toward 0, per target."""
    import random

    rng = random.Random(0)
    colours = ["red", "blue", "green", "yellow", "white", "black"]
    shapes = ["car", "truck", "bus", "bike"]
    rows = []
    for i in range(120):
        c1, c2 = rng.sample(colours, 2) if i % 3 else (colours[i % 6],) * 2
        s1, s2 = rng.sample(shapes, 2)
        rows.append(item(f"i{i:03d}", f"a {c1} {s1} near a {c2} {s2}", [(s1, s1), (s2, s2)],
                         [(0, c1), (1, c2)], [(0, "near", 1)]))  # fmt: skip
    vocab = {"object": shapes, "attribute": colours, "relation": ["near", "behind"]}
    finder = FoilFinder(vocab, wn, senses="all", min_count=1)

    def surplus(settings: dict[str, Any]) -> dict[str, int]:
        result = build_systematicity_negatives(
            items_frame(rows), finder, LengthScorer(), {"allow_fewer": True, **settings}, seed=0
        )
        frame = result.candidates.filter(pl.col("family") == "atom")
        positive = dict(frame.filter("is_positive").select("item_id", "text").iter_rows())
        from vlcomp.negatives.systematicity.atoms import distinct_words

        out: dict[str, int] = {}
        foils = frame.filter(~pl.col("is_positive")).select("item_id", "target", "text")
        for i, target, text in foils.iter_rows():
            out[target] = out.get(target, 0) + distinct_words(text) - distinct_words(positive[i])
        return out

    crepe = surplus({"balance": [], "scene_foils": False, "max_recurrence": 0})
    assert crepe["att"] > 60 and crepe["obj"] == 0  # CREPE's rule: never fewer, often more
    scene = surplus({"balance": [], "max_recurrence": 0})  # overshoots on objects
    assert scene["obj"] < -60
    balanced = surplus({"max_recurrence": 0, "balance": ["distinct_words"]})
    # a third of the positives repeat their colour: their attribute foils must add one
    assert abs(balanced["att"]) < crepe["att"] / 2 and abs(balanced["obj"]) < -scene["obj"] / 2


def test_a_recurring_caption_keeps_its_first_items_only(finder: FoilFinder) -> None:
    rows = [item(f"r{i}", "a red car", [("car", "car")], [(0, "red")]) for i in range(4)]
    rows.append(item("other", "A Red  car", [("car", "car")], [(0, "red")]))
    result = build_systematicity_negatives(items_frame(rows), finder, LengthScorer(), seed=0)
    kept = sorted({i.split("/")[0] for i in result.candidates["item_id"]})
    assert kept == ["r0"]
    failures = {(r["level"], r["family"], r["reason"]): r["count"]
                for r in result.failures.iter_rows(named=True)}  # fmt: skip
    assert failures[("item", "atom", "recurring_text")] == 4
    everything = build_systematicity_negatives(
        items_frame(rows), finder, LengthScorer(), {"max_recurrence": 0}, seed=0
    )
    assert len({i.split("/")[0] for i in everything.candidates["item_id"]}) == 5


def test_balanced_generation_matches_atom_and_compound_marginals_and_plausibility(wn: Any) -> None:
    """Per target, each atom and each compound as often on the positive side of a pair (the
    positive holds it where its foil changes it) as on the foil side, and the foil as often
    the more plausible text as the less: the marginals, with every balance against none. The
    captions' colours are skewed and one ("purple") is no foil at all, as a held-out atom."""
    import random

    rng = random.Random(1)
    colours = ["red", "blue", "green", "yellow", "white", "black", "purple"]
    weights = [6, 1, 1, 1, 1, 1, 2]
    shapes = ["car", "truck", "bus", "bike", "van"]
    rows = []
    for i in range(240):
        c1, c2 = rng.choices(colours, weights, k=2)
        s1, s2 = rng.sample(shapes, 2)
        rows.append(item(f"m{i:03d}", f"a {c1} {s1} near a {c2} {s2}", [(s1, s1), (s2, s2)],
                         [(0, c1), (1, c2)], [(0, "near", 1)]))  # fmt: skip
    vocab = {"object": shapes, "attribute": colours[:-1], "relation": ["near", "behind"]}
    finder = FoilFinder(vocab, wn, senses="all", min_count=1)
    scorer = LengthScorer()

    def marginals(settings: dict[str, Any]) -> dict[str, float]:
        result = build_systematicity_negatives(
            items_frame(rows), finder, scorer,
            # few colours and shapes: uncapped, or most red foils would be some item's caption
            {"allow_fewer": True, "max_recurrence": 0, **settings}, seed=0,
        )  # fmt: skip
        frame = result.candidates.filter(pl.col("family") == "atom")
        positive = dict(frame.filter("is_positive").select("item_id", "text").iter_rows())
        foils = frame.filter(~pl.col("is_positive") & pl.col("target").is_in(["att", "obj"]))
        atoms, compounds, plausible = Counter(), Counter(), Counter()
        for item_id, target, text, provenance in foils.select(
            "item_id", "target", "text", "provenance"
        ).iter_rows():
            p = json.loads(provenance)
            parts = tuple(p["compound"]["parts"])
            index = 0 if p["position"] == "att" else 1
            foiled = (*parts[:index], p["foil"], *parts[index + 1 :])
            atoms[(target, p["foil"])] += 1
            atoms[(target, p["original"])] -= 1
            compounds[(target, *foiled)] += 1
            compounds[(target, *parts)] -= 1
            gap = scorer.score([text])[0] - scorer.score([positive[item_id]])[0]
            plausible[target] += int(np.sign(gap))
        pairs = foils.height
        return {
            "atoms": sum(map(abs, atoms.values())) / (2 * pairs),
            "compounds": sum(map(abs, compounds.values())) / (2 * pairs),
            "plausibility": sum(map(abs, plausible.values())) / pairs,
            "pairs": pairs,
        }

    unbalanced, balanced = marginals({"balance": []}), marginals({})
    assert unbalanced["atoms"] > 0.2 and unbalanced["plausibility"] > 0.05, unbalanced
    # each balance alone on its own ledger; compounds of a held-out atom cannot be foiled
    bound = {"atoms": 0.5, "compounds": 0.85, "plausibility": 0.1}
    for name, share in bound.items():
        alone = marginals({"balance": [name]})
        assert alone[name] < share * unbalanced[name], (name, alone, unbalanced)
    # together they trade off against each other, and every ledger still improves
    together = {"atoms": 0.5, "compounds": 0.85, "plausibility": 0.7}
    for name, share in together.items():
        assert balanced[name] < share * unbalanced[name], (name, balanced, unbalanced)
    assert balanced["pairs"] >= 0.9 * unbalanced["pairs"]  # the items are kept
