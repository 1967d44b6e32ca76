from fractions import Fraction
from math import comb

import numpy as np
import polars as pl
import pytest

from vlcomp.evaluate.stats import (
    benjamini_hochberg,
    mcnemar_midp,
    mcnemar_table,
    pairwise_significance,
    rank_flips,
)


def midp_by_hand(b: int, c: int) -> Fraction:
    """2 * (P(X <= k) - P(X = k) / 2) for X ~ Bin(b + c, 1/2), k = min(b, c), exactly."""
    n, k = b + c, min(b, c)
    below = sum(comb(n, x) for x in range(k + 1))
    return min(Fraction(1), Fraction(2 * below - comb(n, k), 2**n))


def test_midp_b3_c10_matches_the_hand_value():
    # n = 13: P(X <= 3) = (1 + 13 + 78 + 286) / 8192, P(X = 3) = 286 / 8192
    # mid-p = 2 * (378 - 143) / 8192 = 470 / 8192
    assert midp_by_hand(3, 10) == Fraction(470, 8192)
    assert mcnemar_midp(3, 10) == pytest.approx(470 / 8192, rel=1e-12)
    assert mcnemar_midp(10, 3) == mcnemar_midp(3, 10)


@pytest.mark.parametrize(
    "b,c", [(0, 0), (0, 1), (0, 5), (1, 1), (2, 7), (5, 5), (12, 30), (40, 61)]
)
def test_midp_matches_exact_binomial(b, c):
    assert mcnemar_midp(b, c) == pytest.approx(float(midp_by_hand(b, c)), rel=1e-10, abs=1e-15)


def test_midp_edge_values():
    assert mcnemar_midp(0, 0) == 1.0
    assert mcnemar_midp(4, 4) == 1.0
    assert mcnemar_midp(0, 1) == pytest.approx(0.5)  # 2 * (1/2 - 1/4)
    with pytest.raises(ValueError):
        mcnemar_midp(-1, 2)


def bh_reference(p: list[float]) -> list[float]:
    """From the definition: q_i = min over j with p_j >= p_i of min(1, m p_j / rank_j)."""
    m = len(p)
    ranks = {i: r + 1 for r, i in enumerate(sorted(range(m), key=lambda i: (p[i], i)))}
    return [
        min(min(1.0, m * p[j] / ranks[j]) for j in range(m) if ranks[j] >= ranks[i])
        for i in range(m)
    ]


def test_bh_against_the_definition_and_scipy():
    rng = np.random.default_rng(3)
    for p in ([0.01, 0.04, 0.03, 0.2, 0.5], [0.001, 0.001, 0.9, 0.04], rng.uniform(0, 0.2, 30)):
        p = list(map(float, p))
        assert benjamini_hochberg(p) == pytest.approx(bh_reference(p), rel=1e-12)
        scipy_stats = pytest.importorskip("scipy.stats")
        if hasattr(scipy_stats, "false_discovery_control"):
            expected = scipy_stats.false_discovery_control(p, method="bh")
            assert benjamini_hochberg(p) == pytest.approx(expected, rel=1e-12)


def test_bh_hand_case_and_nan():
    # sorted 0.01, 0.03, 0.04, 0.2 (m = 4): 0.04, 0.0533.., 0.0533.., 0.2
    q = benjamini_hochberg([0.04, 0.01, float("nan"), 0.2, 0.03])
    assert q[[1, 4, 0, 3]] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert np.isnan(q[2])


def predictions(model: str, correct: dict[str, list[bool]]) -> pl.DataFrame:
    rows = []
    for split, flags in correct.items():
        rows += [
            (model, "bench", f"{split}-{i}", "swap_att", split, flag)
            for i, flag in enumerate(flags)
        ]
    return pl.DataFrame(
        rows,
        schema=["model", "benchmark", "item_id", "family", "split", "correct"],
        orient="row",
    )


def test_mcnemar_table_counts_discordant_pairs():
    a = predictions("A", {"seen": [True, True, True, False, True]})
    b = predictions("B", {"seen": [False, False, True, False, True]})
    table = mcnemar_table(pl.concat([a, b]))
    row = table.filter(pl.col("split") == "seen").row(0, named=True)
    assert (row["model_a"], row["model_b"], row["n"], row["b"], row["c"]) == ("A", "B", 5, 2, 0)
    assert row["p_value"] == pytest.approx(float(midp_by_hand(2, 0)))
    assert set(table["split"]) == {"all", "seen"}


def test_each_part_is_tested_on_its_own():
    a = predictions("A", {"SC": [True, True, True, True]})
    b = predictions("B", {"SC": [False, False, True, True]})
    frames = [
        f.with_columns(part=pl.lit(part)) for part in ("x", "y") for f in (a, b)
    ]  # the same item ids in two parts: one test per part, never pooled
    table = mcnemar_table(pl.concat(frames, how="diagonal"))
    sc = table.filter(pl.col("split") == "SC").sort("part")
    assert sc["part"].to_list() == ["x", "y"] and sc["n"].to_list() == [4, 4]
    assert sc["b"].to_list() == [2, 2]


def test_rank_flip_only_when_significant_in_opposite_directions():
    n = 60
    strong, weak = [True] * n, [False] * n
    almost = [True] * (n - 2) + [False] * 2
    # A >> B on seen, B >> A on unseen: a flip. On mixed B is a little better: not significant.
    a = predictions("A", {"seen": strong, "unseen": weak, "mixed": almost})
    b = predictions("B", {"seen": weak, "unseen": strong, "mixed": strong})
    sig = mcnemar_table(pl.concat([a, b]))
    flips = rank_flips(sig)
    flip = flips.filter((pl.col("split_1") == "seen") & (pl.col("split_2") == "unseen"))
    assert flip["flip"].to_list() == [True]
    assert (flip["better_1"][0], flip["better_2"][0]) == ("A", "B")
    # seen vs mixed: A better on seen, B better on mixed by point estimate, but not significant.
    seen_mixed = flips.filter((pl.col("split_1") == "seen") & (pl.col("split_2") == "mixed"))
    assert seen_mixed["reversed"].to_list() == [True]
    assert seen_mixed["flip"].to_list() == [False]
    # mixed vs unseen: same direction (B better on both) -> no flip
    mixed_unseen = flips.filter((pl.col("split_1") == "mixed") & (pl.col("split_2") == "unseen"))
    assert mixed_unseen["flip"].to_list() == [False]


def test_same_direction_significance_is_not_a_flip():
    n = 60
    a = predictions("A", {"seen": [True] * n, "unseen": [True] * n})
    b = predictions("B", {"seen": [False] * n, "unseen": [False] * n})
    flips = rank_flips(mcnemar_table(pl.concat([a, b])))
    assert flips.height == 1 and not flips["flip"][0]


def test_pairwise_significance_job(tmp_path):
    n = 40
    a = predictions("A", {"SC": [True] * n, "UA": [False] * n})
    b = predictions("B", {"SC": [False] * n, "UA": [True] * n})
    c = predictions("C", {"SC": [True] * n, "UA": [True] * n})
    paths = []
    for frame, name in ((a, "a"), (b, "b"), (c, "c")):
        paths.append(tmp_path / f"{name}.parquet")
        frame.write_parquet(paths[-1])
    pairwise_significance(
        paths, tmp_path / "sig.parquet", tmp_path / "flips.parquet", log=lambda _: None
    )
    sig = pl.read_parquet(tmp_path / "sig.parquet")
    assert sig.height == 3 * 3  # 3 model pairs x (all, SC, UA)
    q = sig["p_bh"].to_numpy()
    assert q == pytest.approx(benjamini_hochberg(sig["p_value"].to_numpy()))
    flips = pl.read_parquet(tmp_path / "flips.parquet")
    assert flips.filter(pl.col("flip")).select("model_a", "model_b").rows() == [("A", "B")]
