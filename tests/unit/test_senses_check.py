"""The measurement behind ``negatives.systematicity.senses`` (tools/senses_check.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.conftest import SHARED, needs_shared
from tools.senses_check import (
    Caption,
    measure,
    parse_graph,
    read_factual,
    supersense,
    vocabulary_of,
)
from vlcomp.negatives.systematicity import DEFAULT_SETTINGS
from vlcomp.negatives.wordnet_foils import load_wordnet

FACTUAL = SHARED / "data" / "factual_sg"


@pytest.fixture(scope="module")
def wn() -> Any:
    return load_wordnet()


def test_supersenses_of_the_issues_foils(wn: Any) -> None:
    assert (supersense(wn, "saucer"), supersense(wn, "horse")) == ("noun.shape", "noun.animal")
    assert (supersense(wn, "woman"), supersense(wn, "hand")) == ("noun.person", "noun.body")
    assert supersense(wn, "man") == "noun.person"
    assert supersense(wn, "qwzx") is None


def test_factual_graph_gives_objects_attributes_relations(wn: Any) -> None:
    graph = "( trees , grow on , lawn ) , ( lawn , is , Green ) , ( bushes , grow on , lawn )"
    assert parse_graph(graph, wn) == Caption(("tree", "lawn", "bush"), ("green",), ("grow on",))


def test_rare_senses_give_implausible_foils_only_with_all(wn: Any) -> None:
    vocab = {"object": dict.fromkeys(["woman", "man", "boy", "hand", "dishwasher"], 10)}
    captions = [Caption(("woman",), (), ())]
    every = measure(wn, vocab, captions, "all")
    coherent = measure(wn, vocab, captions, "coherent")
    assert every.objects == coherent.objects == 1
    assert every.implausible_all > 0  # hand (a hired hand), dishwasher (a person) are kin
    assert coherent.implausible_all == 0 and coherent.with_foils == 1


@needs_shared(FACTUAL / "train.csv")
@needs_shared(FACTUAL / "dev.csv")
def test_the_default_beats_all_on_factual_captions(wn: Any) -> None:
    vocab = vocabulary_of(read_factual(FACTUAL / "train.csv", wn))
    sample = random.Random(0).sample(read_factual(FACTUAL / "dev.csv", wn), 200)
    reports = {s: measure(wn, vocab, sample, s) for s in ("all", "coherent", 1)}
    default = reports[DEFAULT_SETTINGS["senses"]]
    for report in reports.values():
        print(report)
    assert default.implausible_top < reports["all"].implausible_top / 2
    assert default.implausible_first < reports["all"].implausible_first / 2
    # The first sense alone is cleaner for objects but loses most verbs' foils.
    assert default.coverage["relation"] > reports[1].coverage["relation"] + 0.1
