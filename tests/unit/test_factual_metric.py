"""FACTUAL's metric in the project (vlcomp.parse.factual_metric), pinned on hand-checked
graphs: SPICE is the F-score over objects, attributes and triples, Set Match the whole
graph right."""

import pytest

from vlcomp.negatives.wordnet_foils import load_wordnet
from vlcomp.parse.factual_metric import fact_string, factual_scores
from vlcomp.parse.quality import RawGraph, factual_graph


@pytest.fixture(scope="module", autouse=True)
def wordnet():
    """FACTUAL's lemmatiser and synonyms read NLTK's WordNet: the project's copy, put on
    NLTK's path (without $NLTK_DATA too)."""
    return load_wordnet()


def test_fact_strings_round_trip_through_factuals_reader():
    graph = RawGraph(("stove", "kitchen", "dog"), ((0, "white"),), ((0, "in", 1),))
    text = fact_string(graph)
    assert text == "( stove , in , kitchen ) , ( stove , is , white ) , ( dog )"
    assert factual_graph(text) == RawGraph(
        ("stove", "kitchen", "dog"), ((0, "white"),), ((0, "in", 1),)
    )


def test_spice_and_set_match_on_hand_checked_graphs():
    candidates = [
        RawGraph(("stove", "kitchen"), ((0, "white"),), ((0, "in", 1),)),  # all right
        RawGraph(("ice", "ground"), (), ((0, "on", 1),)),  # 1 of 3 tuples: F 1/3
        RawGraph(("dog",), (), ()),  # P 1, R 1/2: F 2/3
    ]
    references = [
        "( stove , is , white ) , ( stove , in , kitchen )",
        "( ice , on , floor )",
        "( dog ) , ( dog , is , brown )",
    ]
    scores = factual_scores(candidates, references)
    assert scores["spice"] == pytest.approx((100 + 100 / 3 + 200 / 3) / 3)
    assert scores["set_match"] == pytest.approx(100 / 3)


def test_plural_and_lemma_match_as_factual_lemmatises():
    scores = factual_scores([RawGraph(("dogs",), (), ())], ["( dog )"])
    assert scores == {"spice": 100.0, "set_match": 100.0}


def test_mismatched_lengths_fail():
    with pytest.raises(ValueError, match="1 candidate graphs but 2 references"):
        factual_scores([RawGraph(("a",), (), ())], ["( a )", "( b )"])
