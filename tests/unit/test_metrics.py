import numpy as np
import polars as pl
import pytest

from vlcomp.evaluate.metrics import (
    METRIC_SCHEMA,
    RANKS_SCHEMA,
    EvalSettings,
    chance_image_to_text,
    chance_text_to_image,
    pessimistic_rank,
    recall_at,
    recall_table,
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
    image_ids = ["1", "2", "3"]
    image_emb = np.eye(3, dtype=np.float32)
    text_image_ids = ["1", "1", "2", "3"]
    text_emb = image_emb[[0, 0, 1, 2]]
    table, ranks = retrieval_table(
        "m",
        "b",
        image_ids,
        image_emb,
        ["a", "b", "c", "d"],
        text_image_ids,
        text_emb,
        {"1": "held_in", "2": "held_in", "3": "held_out"},
        settings=EvalSettings(ks=(1,), resamples=0),
    )
    assert table.schema == pl.Schema(METRIC_SCHEMA)
    assert ranks.schema == pl.Schema(RANKS_SCHEMA)
    model_rows = table.filter(table["model"] == "m")
    assert set(model_rows["split"]) == {"all", "held_in", "held_out"}
    assert set(model_rows["metric"]) == {"i2t_R@1", "t2i_R@1"}
    # image 1 has two identical captions: the other caption ties but is also correct
    assert model_rows["value"].to_list() == [1.0] * model_rows.height
    held_out = model_rows.filter(model_rows["split"] == "held_out")
    assert held_out["n"].to_list() == [1, 1]
    assert set(table["tie_policy"]) == {"tie_counts_as_wrong"}
    assert ranks.height == 3 + 4
    assert ranks.filter(pl.col("direction") == "t2i")["image_id"].to_list() == text_image_ids


def test_retrieval_chance_rows_and_intervals():
    rng = np.random.default_rng(0)
    image_ids = [f"img{i}" for i in range(20)]
    text_image_ids = [image_ids[i // 2] for i in range(40)]  # two captions per image
    image_emb = rng.normal(size=(20, 8)).astype(np.float32)
    text_emb = rng.normal(size=(40, 8)).astype(np.float32)
    settings = EvalSettings(ks=(1, 5), resamples=200, seed=3)
    table, ranks = retrieval_table(
        "m", "b", image_ids, image_emb, [f"t{i}" for i in range(40)], text_image_ids, text_emb,
        settings=settings,
    )  # fmt: skip
    assert set(table["split"]) == {"all"}
    chance = {r["metric"]: r["value"] for r in table.filter(pl.col("model") == "chance").rows(
        named=True)}  # fmt: skip
    assert chance["t2i_R@1"] == pytest.approx(1 / 20)
    assert chance["i2t_R@1"] == pytest.approx(2 / 40)
    assert chance["i2t_R@5"] == pytest.approx(chance_image_to_text(40, 2, 5))
    for row in table.filter(pl.col("model") == "m").iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        expected = recall_at(
            ranks.filter(pl.col("direction") == row["metric"][:3])["rank"].to_numpy(),
            int(row["metric"].split("@")[1]),
        )
        assert row["value"] == pytest.approx(expected)
    again, _ = retrieval_table(
        "m", "b", image_ids, image_emb, [f"t{i}" for i in range(40)], text_image_ids, text_emb,
        settings=settings,
    )  # fmt: skip
    assert again.equals(table)


def test_recall_table_resplits_ranks():
    ranks = pl.DataFrame(
        {
            "model": "m", "benchmark": "b", "direction": ["t2i"] * 4,
            "query_id": ["a", "b", "c", "d"], "image_id": ["1", "1", "2", "2"],
            "split": ["in", "in", "out", "out"], "rank": [0, 3, 0, 0],
            "n_candidates": 4, "n_positives": 1,
        },
        schema=RANKS_SCHEMA,
    )  # fmt: skip
    table = recall_table(ranks, EvalSettings(ks=(1,), resamples=0))
    value = {(r["model"], r["split"]): r["value"] for r in table.iter_rows(named=True)}
    assert value[("m", "all")] == pytest.approx(0.75)
    assert value[("m", "in")] == pytest.approx(0.5)
    assert value[("m", "out")] == pytest.approx(1.0)
    assert value[("chance", "in")] == pytest.approx(0.25)


def test_constant_columns_are_not_resampled_and_keep_their_value():
    from vlcomp.evaluate.metrics import percentile_interval

    rng = np.random.default_rng(0)
    varying = rng.random((50, 1))
    third = np.full((50, 1), 1 / 3)
    both = np.hstack([varying, third])
    low, high = percentile_interval([both], 300, 0.95, np.random.default_rng(7))
    alone_low, alone_high = percentile_interval([varying], 300, 0.95, np.random.default_rng(7))
    assert (low[0], high[0]) == (alone_low[0], alone_high[0])
    assert low[0] < varying.mean() < high[0]
    assert low[1] == high[1] == 1 / 3


# ------------------------------------------------- indistinguishable and tied retrieval sets


def _scores(rows):
    """(item_id, family, target, is_positive, text, similarity) -> SCORES_SCHEMA rows."""
    from vlcomp.contracts import text_key
    from vlcomp.evaluate.retrieval_sets import SCORES_SCHEMA

    return pl.DataFrame(
        [("m", "b", item, "0", fam, tgt, pos, None, text_key(text), sim)
         for item, fam, tgt, pos, text, sim in rows],
        schema=SCORES_SCHEMA, orient="row",
    )  # fmt: skip


def _tokens(tokenizer, texts):
    from vlcomp.evaluate.jobs import token_ids

    return token_ids(tokenizer, texts)


LONG = "a red square" + " and a small circle" * 3  # 18 tokens with start and end


def test_flags_follow_each_tokenizer_and_its_context():
    """A negative that changes only the 10th word reads as its positive to a tower of 8
    tokens, not to one of 77: the same scores get different flags per tokenizer."""
    from open_clip.tokenizer import SimpleTokenizer

    from vlcomp.evaluate.metrics import set_flags

    rows = [
        ("late", "replace", "obj", True, LONG + " near a star", 0.7),
        ("late", "replace", "obj", False, LONG + " near a heart", 0.7),
        ("early", "replace", "att", True, LONG, 0.6),
        ("early", "replace", "att", False, LONG.replace("red", "blue"), 0.6),
        ("early", "swap", "att", False, "a small square and a red circle", 0.2),
    ]
    scores = _scores(rows)
    texts = [r[4] for r in rows]
    short = set_flags(scores, _tokens(SimpleTokenizer(context_length=8), texts))
    full = set_flags(scores, _tokens(SimpleTokenizer(context_length=77), texts))
    keys = ["item_id", "family", "indistinguishable", "tied"]
    assert short.select(keys).rows() == [
        ("early", "replace_att", False, True),
        ("early", "swap_att", False, False),
        ("late", "replace_obj", True, False),
    ]
    # at 77 tokens the late change is read: the equal similarity is a tie, not an identity
    assert full.select(keys).rows() == [
        ("early", "replace_att", False, True),
        ("early", "swap_att", False, False),
        ("late", "replace_obj", False, True),
    ]


def test_flags_need_the_token_ids_of_every_text():
    from vlcomp.evaluate.metrics import set_flags

    scores = _scores([("i", "swap", "att", True, "a", 0.1), ("i", "swap", "att", False, "b", 0.2)])
    with pytest.raises(ValueError, match="1 text"):
        set_flags(scores, {scores["text_key"][0]: b"x"})


def test_flag_counts_fill_every_cell_the_metric_table_has():
    from vlcomp.evaluate.metrics import add_flag_counts
    from vlcomp.evaluate.retrieval_sets import set_metric_table

    preds = pl.DataFrame(
        {
            "model": "m", "benchmark": "b", "part": None, "image": "0",
            "item_id": [f"i{k}" for k in range(6)],
            "family": ["swap_att", "swap_att", "swap_att", "replace_obj", "replace_obj", "x_y"],
            "split": ["seen", "unseen", "seen", "unseen", None, "seen"],
            "complexity": [4, 4, 5, 5, 5, None],
            "n_candidates": 2, "n_positives": 1, "rank": [1, 0, 1, 1, 0, 1],
            "pos_score": 0.5, "neg_score": 0.4, "pos_text_key": "p", "neg_text_key": "n",
            "indistinguishable": [True, False, True, False, False, True],
            "tied": [False, False, False, True, False, False],
        }
    ).with_columns(correct=pl.col("rank") == 0, part=pl.lit(None, pl.String))  # fmt: skip
    metrics = add_flag_counts(set_metric_table(preds, EvalSettings(resamples=0)), preds)
    assert metrics.columns == list(METRIC_SCHEMA)
    model = metrics.filter(pl.col("model") == "m")
    assert model["n_indistinguishable"].null_count() == 0
    cell = {(r["split"], r["family"], r["complexity"], r["metric"]): r
            for r in model.iter_rows(named=True)}  # fmt: skip
    assert cell[("all", "all", None, "accuracy_micro")]["n_indistinguishable"] == 3
    assert cell[("all", "all", None, "accuracy_macro")]["n_tied"] == 1
    assert cell[("seen", "all", None, "accuracy_micro")]["n_indistinguishable"] == 3
    assert cell[("seen", "swap_att", 5, "accuracy")]["n_indistinguishable"] == 1
    assert cell[("unseen", "replace_obj", None, "accuracy")]["n_tied"] == 1
    assert cell[("all", "x_y", None, "accuracy")]["n_indistinguishable"] == 1
    # every cell's counts are of its own n items
    assert (model["n_indistinguishable"] <= model["n"]).all()
    chance = metrics.filter(pl.col("model") == "chance")
    assert chance["n_indistinguishable"].null_count() == chance.height
