"""Crossover comparisons: own vs other model on the own corpus's splits, identical items."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vlcomp.evaluate.crossover import CROSSOVER_SCHEMA, crossover_job, crossover_table
from vlcomp.evaluate.metrics import EvalSettings
from vlcomp.evaluate.stats import mcnemar_midp

SETTINGS = EvalSettings(resamples=200, seed=0)


def _rows(model, part, splits, correct, family="att", benchmark="b"):
    return [
        {"model": model, "benchmark": benchmark, "part": part, "item_id": f"i{k}",
         "family": family, "split": s, "correct": bool(ok)}
        for k, (s, ok) in enumerate(zip(splits, correct, strict=True))
    ]  # fmt: skip


def _frame(rows):
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String, "benchmark": pl.String, "part": pl.String,
            "item_id": pl.String, "family": pl.String, "split": pl.String,
            "correct": pl.Boolean,
        },
    )  # fmt: skip


def test_parts_pair_own_and_other_on_the_own_corpus_items():
    rng = np.random.default_rng(3)
    splits = ["SC"] * 30 + ["UC"] * 20
    x_own = rng.random(50) < 0.8
    y_on_x = rng.random(50) < 0.6
    rows = _rows("mx", "x", splits, x_own) + _rows("my", "x", splits, y_on_x)
    # Part y: my is the own model there. mx's rows on y are missing one item (paired only).
    y_splits = ["SC"] * 10 + ["UC"] * 10
    rows += _rows("my", "y", y_splits, [True] * 20) + _rows("mx", "y", y_splits[:19], [False] * 19)
    table = crossover_table({"t": _frame(rows)}, {"mx": "x", "my": "y"}, SETTINGS)
    assert table.columns == list(CROSSOVER_SCHEMA)
    cell = table.filter(
        (pl.col("corpus") == "x") & (pl.col("split") == "UC") & (pl.col("family") == "all")
    ).row(0, named=True)
    a, o = x_own[30:], y_on_x[30:]
    assert cell["model_own"] == "mx" and cell["model_other"] == "my"
    assert cell["n"] == 20 and cell["corpus_other"] == "y"
    assert cell["accuracy_own"] == pytest.approx(a.mean())
    assert cell["accuracy_other"] == pytest.approx(o.mean())
    b, c = int((a & ~o).sum()), int((~a & o).sum())
    assert (cell["b"], cell["c"]) == (b, c)
    assert cell["p_value"] == pytest.approx(mcnemar_midp(b, c))
    assert cell["delta_low"] <= cell["delta"] <= cell["delta_high"]
    on_y = table.filter(
        (pl.col("corpus") == "y") & (pl.col("split") == "all") & (pl.col("family") == "all")
    )
    assert on_y["n"].to_list() == [19] and on_y["b"].to_list() == [19]


def test_split_comes_from_the_own_model_and_same_corpus_models_are_not_compared():
    # Without parts (a pairs table), each model's rows carry splits of its own corpus.
    own = _rows("mx", None, ["unseen", "seen", "seen"], [False, True, True])
    other = _rows("my", None, ["seen", "unseen", "unseen"], [True, True, False])
    twin = _rows("mx2", None, ["unseen", "seen", "seen"], [True, True, True])
    table = crossover_table(
        {"pairs": _frame(own + other + twin)}, {"mx": "x", "mx2": "x", "my": "y"}, SETTINGS
    )
    x = table.filter((pl.col("corpus") == "x") & (pl.col("family") == "all"))
    assert set(x["model_other"].to_list()) == {"my"}  # mx2 shares mx's corpus
    unseen = x.filter((pl.col("model_own") == "mx") & (pl.col("split") == "unseen"))
    assert unseen["n"].to_list() == [1] and unseen["c"].to_list() == [1]
    assert table["p_bh"].min() >= table["p_value"].min()


def test_a_model_without_corpus_is_only_the_other(tmp_path):
    rows = _rows("mx", None, ["seen"] * 4, [1, 1, 0, 1]) + _rows(
        "pretrained", None, ["seen"] * 4, [1, 0, 0, 0]
    )
    path = tmp_path / "p.parquet"
    _frame(rows).write_parquet(path)
    logged = []
    crossover_job(
        {"pairs": [path]}, {"mx": "x", "pretrained": None}, {"bootstrap_resamples": 50},
        0.05, tmp_path / "out.parquet", log=logged.append,
    )  # fmt: skip
    table = pl.read_parquet(tmp_path / "out.parquet")
    assert set(table["model_own"].to_list()) == {"mx"}
    assert table.filter(pl.col("split") == "all")["b"].to_list() == [2, 2]  # all, att
    assert any("mx 0.750 vs pretrained 0.250" in m for m in logged)


def test_missing_column_names_the_table():
    frame = _frame(_rows("mx", None, ["seen"], [True])).drop("correct")
    with pytest.raises(ValueError, match="crepe: predictions lack column"):
        crossover_table({"crepe": frame}, {"mx": "x"}, SETTINGS)


def test_figure_names_a_shared_n_once_under_its_split():
    from vlcomp.report.figures import crossover_figure

    rng = np.random.default_rng(5)
    splits = ["SC"] * 30 + ["UC"] * 20
    rows = _rows("mx", "x", splits, rng.random(50) < 0.8)
    rows += _rows("mx_ft", "x", splits, rng.random(50) < 0.7)
    rows += _rows("my", "x", splits, rng.random(50) < 0.6)
    rows += _rows("my", "y", splits, rng.random(50) < 0.8)
    rows += _rows("mx", "y", splits, rng.random(50) < 0.6)
    rows += _rows("mx_ft", "y", splits, rng.random(50) < 0.6)
    table = crossover_table({"t": _frame(rows)}, {"mx": "x", "mx_ft": "x", "my": "y"}, SETTINGS)
    figure = crossover_figure(table)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all\nn=50", "SC\nn=30", "UC\nn=20"]
    assert not [t for t in ax.texts if t.get_text().startswith("n=")]
