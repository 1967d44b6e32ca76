import numpy as np
import pytest

from vlcomp.evaluate.metrics import (
    chance_image_to_text,
    chance_text_to_image,
    pessimistic_rank,
    recall_at,
    retrieval_table,
)


def test_rank_counts_ties_against_the_correct_item():
    scores = np.array([[0.5, 0.5, 0.1], [0.9, 0.2, 0.3]])
    positive = np.array([[True, False, False], [True, False, False]])
    assert pessimistic_rank(scores, positive).tolist() == [1, 0]


def test_constant_scores_get_no_credit():
    scores = np.zeros((4, 4))
    ranks = pessimistic_rank(scores, np.eye(4, dtype=bool))
    assert recall_at(ranks, 1) == 0.0


def test_best_of_several_positives_counts():
    scores = np.array([[0.1, 0.8, 0.5]])
    positive = np.array([[True, True, False]])
    assert pessimistic_rank(scores, positive).tolist() == [0]


def test_query_without_positive_is_an_error():
    with pytest.raises(ValueError):
        pessimistic_rank(np.zeros((1, 2)), np.zeros((1, 2), dtype=bool))


def test_chance_formulas():
    assert chance_text_to_image(100, 5) == pytest.approx(0.05)
    assert chance_image_to_text(10, 1, 1) == pytest.approx(0.1)
    # 2 correct of 4, top 2: 1 - C(2,2)/C(4,2) = 1 - 1/6
    assert chance_image_to_text(4, 2, 2) == pytest.approx(5 / 6)
    rng = np.random.default_rng(0)
    hits = [bool(set(rng.permutation(4)[:2]) & {0, 1}) for _ in range(20000)]
    assert np.mean(hits) == pytest.approx(5 / 6, abs=0.01)


def test_retrieval_table_perfect_model_and_splits():
    image_ids = np.array([1, 2, 3])
    image_emb = np.eye(3, dtype=np.float32)
    text_image_ids = np.array([1, 1, 2, 3])
    text_emb = image_emb[[0, 0, 1, 2]]
    table, ranks = retrieval_table(
        "m",
        "b",
        image_ids,
        image_emb,
        np.array(["a", "b", "c", "d"]),
        text_image_ids,
        text_emb,
        {1: "held_in", 2: "held_in", 3: "held_out"},
        ks=(1,),
    )
    model_rows = table.filter(table["model"] == "m")
    assert set(model_rows["split"]) == {"all", "held_in", "held_out"}
    # image 1 has two identical captions: the other caption ties but is also correct
    assert model_rows["value"].to_list() == [1.0] * model_rows.height
    held_out = model_rows.filter(model_rows["split"] == "held_out")
    assert held_out["n"].to_list() == [1, 1]
    assert set(table["tie_policy"]) == {"tie_counts_as_wrong"}
    assert ranks.height == 3 + 4
