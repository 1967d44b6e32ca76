import hashlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.conftest import SHARED, needs_shared
from vlcomp.contracts import CANDIDATES_SCHEMA, SCORES_SCHEMA
from vlcomp.importers import read_sugarcrepe_dir
from vlcomp.refine import (
    as_pairs,
    blind_accuracy,
    item_outcomes,
    linguistic_prior_table,
    normalise_gaps,
    prior_heatmap_table,
    refine_candidates,
    refine_mask,
    refined_candidates,
    same_word_share,
    same_words,
    score_candidates,
    text_key,
    words,
)
from vlcomp.refine.adversarial import axis_cells, resolve_normalisation
from vlcomp.refine.audit import (
    check_blind_by_type,
    check_refinement,
    check_word_multisets,
    sugarcrepe_audit,
)
from vlcomp.refine.figures import plot_prior_heatmap, plot_refinement_gaps
from vlcomp.scorers import TextScorer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
REAL_SUGARCREPE = SHARED / "data" / "sugarcrepe"


class TableScorer:
    """A scorer from a text -> score mapping (unknown texts score 0)."""

    def __init__(self, name: str, table: dict[str, float]) -> None:
        self.name = name
        self.table = table

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.table.get(t, 0.0) for t in texts], dtype=np.float64)


class HashScorer:
    """Deterministic pseudo-probability per text."""

    def __init__(self, name: str) -> None:
        self.name = name

    def score(self, texts: Sequence[str]) -> np.ndarray:
        digest = [hashlib.sha256((self.name + t).encode()).digest()[:8] for t in texts]
        return np.array([int.from_bytes(d, "little") / 2**64 for d in digest])


class WordCountScorer:
    name = "fewer-words"

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return -np.array([len(t.split()) for t in texts], dtype=np.float64)


def candidates(items: list[tuple[str, str, list[str]]], family="swap", target="att"):
    rows = []
    for item_id, pos, negs in items:
        for text, is_pos in [(pos, True), *((n, False) for n in negs)]:
            rows.append(
                {
                    "benchmark": "bench",
                    "item_id": item_id,
                    "image": f"{item_id}.jpg",
                    "text": text,
                    "is_positive": is_pos,
                    "family": family,
                    "target": target,
                    "generator": "test",
                    "provenance": "test",
                }
            )
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA)


def scores_for(name: str, table: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"scorer": name, "text_key": [text_key(t) for t in table], "score": list(table.values())},
        schema=SCORES_SCHEMA,
    )


def synthetic_pairs(n: int, seed: int, groups=(("swap", "att"), ("add", "obj"))):
    """Paired items with biased probability scores for two scorers."""
    rng = np.random.default_rng(seed)
    frames, s1, s2 = [], {}, {}
    for family, target in groups:
        items = []
        for i in range(n):
            pos, neg = f"{family}{target} pos {i}", f"{family}{target} neg {i}"
            items.append((f"{family}-{target}-{i:05d}", pos, [neg]))
            # scorer 1 favours the positive, scorer 2 is correlated with it
            a = rng.beta(3, 2)
            s1[pos], s1[neg] = a, rng.beta(2, 3)
            s2[pos], s2[neg] = np.clip(a + rng.normal(0, 0.2), 0, 1), rng.uniform()
        frames.append(candidates(items, family, target))
    scores = pl.concat([scores_for("s1", s1), scores_for("s2", s2)])
    return pl.concat(frames), scores


# --- scores -------------------------------------------------------------------------------


def test_tiny_scorers_implement_the_protocol():
    assert isinstance(TableScorer("t", {}), TextScorer)
    assert isinstance(HashScorer("h"), TextScorer)


def test_score_candidates_uses_the_shared_cache_and_validates(tmp_path):
    cands = candidates([("a", "x y", ["y x"])])
    scorer = TableScorer("t", {"x y": 1.0, "y x": 2.0})
    scores = score_candidates(cands, [scorer])
    assert scores.schema == pl.Schema(SCORES_SCHEMA) and scores.height == 2
    cache = tmp_path / "scores.parquet"
    assert score_candidates(cands, [scorer], cache).equals(scores)
    # a second run reads the cache: the (empty) table scorer is not asked again
    assert score_candidates(cands, [TableScorer("t", {})], cache).equals(scores)

    class Bad:
        name = "bad"

        def score(self, texts):
            return np.full(len(texts), np.nan)

    with pytest.raises(ValueError, match="non-finite score"):
        score_candidates(cands, [Bad()])


# --- blind baselines ----------------------------------------------------------------------


def test_blind_accuracy_with_ties_and_several_negatives():
    cands = candidates(
        [
            ("i1", "p1", ["n1a", "n1b"]),  # correct
            ("i2", "p2", ["n2a", "n2b"]),  # tie with one negative, none above
            ("i3", "p3", ["n3a"]),  # wrong
            ("i4", "p4", ["n4a", "n4b", "n4c"]),  # tie with two negatives
        ]
    )
    table = {
        "p1": 3.0, "n1a": 1.0, "n1b": 2.0,
        "p2": 2.0, "n2a": 2.0, "n2b": 1.0,
        "p3": 0.0, "n3a": 1.0,
        "p4": 5.0, "n4a": 5.0, "n4b": 5.0, "n4c": 0.0,
    }  # fmt: skip
    scores = scores_for("lm", table)
    wrong = blind_accuracy(cands, scores)
    group = wrong.filter(pl.col("average") == "group").row(0, named=True)
    assert (group["n"], group["ties"], group["correct"]) == (4, 2, 1.0)
    assert group["accuracy"] == pytest.approx(0.25)
    assert group["tie_policy"] == "tie_counts_as_wrong"
    chance = blind_accuracy(cands, scores, tie_policy="tie_counts_as_chance")
    group = chance.filter(pl.col("average") == "group").row(0, named=True)
    assert group["correct"] == pytest.approx(1 + 1 / 2 + 1 / 3)
    outcomes = item_outcomes(cands, scores, "lm")
    assert outcomes["negatives_tied"].to_list() == [0, 1, 0, 2]
    assert outcomes["negatives_above"].to_list() == [0, 0, 1, 0]


def test_blind_micro_and_macro():
    a = candidates([("a1", "p", ["n"]), ("a2", "q", ["m"])], "swap", "att")
    b = candidates([("b1", "r", ["s"])], "add", "obj")
    scores = scores_for("lm", {"p": 1, "n": 0, "q": 0, "m": 1, "r": 1, "s": 0})
    table = blind_accuracy(pl.concat([a, b]), scores)
    by = {(r["average"], r["family"]): r["accuracy"] for r in table.iter_rows(named=True)}
    assert by[("group", "swap")] == 0.5 and by[("group", "add")] == 1.0
    assert by[("micro", "all")] == pytest.approx(2 / 3)
    assert by[("macro", "all")] == pytest.approx(0.75)


def test_missing_scores_and_bad_items_are_errors():
    cands = candidates([("a", "p", ["n"])])
    with pytest.raises(ValueError, match="no score for 1 candidate"):
        blind_accuracy(cands, scores_for("lm", {"p": 1.0}))
    two_positives = cands.with_columns(is_positive=pl.lit(True))
    with pytest.raises(ValueError, match="not exactly one positive"):
        blind_accuracy(two_positives, scores_for("lm", {"p": 1.0, "n": 0.0}))


# --- adversarial refinement ---------------------------------------------------------------


def test_axis_cells_mirror_and_boundaries():
    grid = 100
    rng = np.random.default_rng(0)
    g = np.concatenate([rng.uniform(-1, 1, 5000), np.arange(1, 51) / 50, [1.0, 1e-300]])
    cells = axis_cells(g, g, grid)
    mirror = axis_cells(-g, -g, grid)
    assert (cells + mirror == grid - 1).all()
    assert ((cells >= 50) == (g > 0)).all()
    # +-1 land in the outermost cells; an edge value goes to the cell farther from 0.
    assert axis_cells(np.array([1.0, -1.0]), np.array([1.0, -1.0]), grid).tolist() == [99, 0]
    assert axis_cells(np.array([0.5, -0.5]), np.array([0.5, -0.5]), 4).tolist() == [3, 0]
    assert axis_cells(np.array([0.49]), np.array([0.49]), 4).tolist() == [2]
    assert axis_cells(np.array([0.0]), np.array([0.0]), 4).tolist() == [-1]
    with pytest.raises(ValueError, match="even"):
        axis_cells(g, g, 99)


def test_refine_handles_gaps_of_exactly_plus_minus_one_and_zero():
    gap_1 = np.array([1.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.5, -0.5, 0.0])
    gap_2 = np.array([1.0, -1.0, 1.0, -1.0, 0.3, -0.3, 0.3, 0.0, 0.0, 0.0])
    keep, stratum, cell_1, cell_2 = refine_mask(
        gap_1, gap_2, gap_1, gap_2, np.random.default_rng(0), grid=100
    )
    # (1,1) x2 vs (-1,-1) x1 -> one of the two kept; (1,-1) has no mirror -> dropped.
    assert keep[:4].sum() == 2 and keep[1] and not keep[3]
    # zero gap 1: balanced along gap 2 (+0.3 x2 vs -0.3 x1); zero gap 2: +0.5 vs -0.5.
    assert keep[4:7].sum() == 2 and keep[5]
    assert keep[7] and keep[8]
    assert keep[9] and stratum[9] == 3  # both zero: kept
    assert cell_1[0] == 99 and cell_1[1] == 0 and cell_1[4] == -1


def test_normalisations_are_odd_monotone_and_bounded():
    gaps = np.array([-30.0, -2.0, -0.5, 0.0, 0.5, 2.0, 30.0, 2.0])
    for method in ["rank", "pair_softmax", "max_abs"]:
        out = normalise_gaps(gaps, method)
        assert np.abs(out).max() <= 1
        assert np.array_equal(normalise_gaps(-gaps, method), -out)
        order = np.argsort(gaps, kind="stable")
        assert (np.diff(out[order]) >= 0).all()
        assert out[3] == 0
    assert normalise_gaps(gaps, "rank")[6] == 1.0
    assert normalise_gaps(gaps, "max_abs")[0] == -1.0
    assert normalise_gaps(np.array([0.5, -1.0]), "identity").tolist() == [0.5, -1.0]
    with pytest.raises(ValueError, match="probability scores"):
        normalise_gaps(gaps, "identity")
    probs = np.array([0.0, 0.4, 1.0])
    assert resolve_normalisation("auto", probs, probs) == "identity"
    assert resolve_normalisation("auto", probs, probs - 3) == "rank"


def test_refinement_balances_both_scorers():
    cands, scores = synthetic_pairs(3000, seed=1)
    before = blind_accuracy(cands, scores).filter(pl.col("average") == "micro")
    assert (before["accuracy"] > 0.55).all()  # the synthetic scores are biased
    result = refine_candidates(cands, scores, ("s1", "s2"), grid=100, seed=7)
    kept = result.items.filter("kept")
    assert 0 < kept.height < result.items.height
    for (family,), group in kept.group_by(["family"]):
        for k in (1, 2):
            gaps = group[f"gap_{k}"].to_numpy()
            assert (gaps > 0).sum() == (gaps < 0).sum(), (family, k)
    counts = result.counts
    assert (counts["wins_1"] == counts["losses_1"]).all()
    assert (counts["wins_2"] == counts["losses_2"]).all()
    assert set(counts["normalisation_1"]) == {"identity"}
    after = result.accuracy.filter(pl.col("stage") == "after", pl.col("average") == "group")
    assert np.allclose(after["accuracy"].to_numpy(), 0.5)
    # the refined candidates are exactly the kept items, in the candidates contract
    refined = refined_candidates(cands, result)
    assert refined.schema == cands.schema
    assert refined["item_id"].n_unique() == kept.height


def test_refinement_with_zero_gaps_reports_them_separately():
    items, s1, s2 = [], {}, {}
    rng = np.random.default_rng(3)
    for i in range(400):
        pos, neg = f"p{i}", f"n{i}"
        items.append((f"i{i:03d}", pos, [neg]))
        s1[pos], s1[neg] = rng.integers(0, 3), rng.integers(0, 3)  # many ties
        s2[pos], s2[neg] = rng.integers(0, 4), rng.integers(0, 3)
    cands = candidates(items)
    scores = pl.concat([scores_for("a", s1), scores_for("b", s2)])
    result = refine_candidates(cands, scores, ("a", "b"), grid=10, normalisation=("max_abs",) * 2)
    row = result.counts.row(0, named=True)
    assert row["wins_1"] == row["losses_1"] and row["wins_2"] == row["losses_2"]
    assert row["ties_1"] == row["kept_zero_gap_1"] + row["kept_zero_both"]
    assert row["ties_2"] == row["kept_zero_gap_2"] + row["kept_zero_both"]
    both_zero = result.items.filter(pl.col("stratum") == "zero_both")
    assert both_zero.height > 0 and both_zero["kept"].all()


def test_refinement_is_seeded_and_order_independent():
    cands, scores = synthetic_pairs(1500, seed=2)
    first = refine_candidates(cands, scores, ("s1", "s2"), seed=11)
    again = refine_candidates(
        cands.sample(fraction=1.0, shuffle=True, seed=5), scores, ("s1", "s2"), seed=11
    )
    assert first.items.equals(again.items)
    assert first.counts.equals(again.counts)
    other = refine_candidates(cands, scores, ("s1", "s2"), seed=12)
    assert not first.items["kept"].equals(other.items["kept"])
    assert first.counts["n_kept"].equals(other.counts["n_kept"])  # counts do not depend on seed


def test_refinement_needs_pairs_unless_split():
    cands = candidates([("a", "p", ["n", "m"]), ("b", "q", ["r"])])
    scores = pl.concat(
        [scores_for(s, {"p": 1.0, "n": 0.2, "m": 0.9, "q": 0.1, "r": 0.7}) for s in ("x", "y")]
    )
    with pytest.raises(ValueError, match="more, e.g. a"):
        refine_candidates(cands, scores, ("x", "y"))
    pairs = as_pairs(cands, multi="split")
    assert pairs["item_id"].to_list() == ["a~0", "a~1", "b"]
    result = refine_candidates(cands, scores, ("x", "y"), multi="split", grid=2)
    assert result.items.height == 3
    with pytest.raises(ValueError, match="two different scorers"):
        refine_candidates(cands, scores, ("x", "x"))


@needs_shared(REAL_SUGARCREPE)
def test_refinement_of_real_unrefined_leaves_both_scorers_at_chance():
    unrefined = read_sugarcrepe_dir(REAL_SUGARCREPE / "unrefined").candidates
    scores = score_candidates(unrefined, [HashScorer("h1"), WordCountScorer()])
    result = refine_candidates(unrefined, scores, ("h1", "fewer-words"))
    assert result.items.height == 17478
    kept = result.items.filter(pl.col("kept"))
    assert 0 < kept.height < result.items.height
    # The balanced grid makes each scorer prefer the positive on exactly half of the kept
    # pairs whose gap is not zero.
    for gap in ("gap_1", "gap_2"):
        nonzero = kept.filter(pl.col(gap) != 0)
        assert nonzero.height > 100
        assert (nonzero[gap] > 0).mean() == pytest.approx(0.5, abs=0.01), gap


# --- word multisets -----------------------------------------------------------------------


def test_word_multiset_tokenisation():
    assert same_words("A cat, on a mat.", "a mat on a CAT")
    assert not same_words("A woman's hat", "a woman hat's")
    assert words("board.Cabbage") == words("board cabbage")
    assert not same_words("a man's coat", "a man coat")
    assert same_words("a woman\u2019s hat", "a woman's hat")
    assert not same_words("two men on four-wheelers", "four men on two-wheelers")


@needs_shared(REAL_SUGARCREPE)
def test_word_multisets_reproduce_published_swap_counts():
    refined = read_sugarcrepe_dir(REAL_SUGARCREPE / "refined").candidates
    table = same_word_share(refined.filter(pl.col("family") == "swap"))
    got = {r["target"]: (r["same_words"], r["n"]) for r in table.iter_rows(named=True)}
    # 408 swap_att when hyphens split words: "four-wheelers" / "two-wheelers" are now unlike
    assert got == {"obj": (164, 245), "att": (407, 666)}


# --- linguistic priors --------------------------------------------------------------------


def test_hard_test_accuracy_hand_case():
    cands = candidates(
        [("i1", "p1", ["n1"]), ("i2", "p2", ["n2"]), ("i3", "p3", ["n3"]), ("i4", "p4", ["n4"])]
    )
    # LM right on i1, i2; wrong on i3; tie on i4 (a tie counts as the LM picking the negative)
    lm = scores_for(
        "lm", {"p1": -1, "n1": -5, "p2": -2, "n2": -3, "p3": -9, "n3": -1, "p4": -4, "n4": -4}
    )
    blind = item_outcomes(cands, lm, "lm")
    model = pl.DataFrame(
        {
            "model": ["clip"] * 4,
            "benchmark": ["bench"] * 4,
            "item_id": ["i1", "i2", "i3", "i4"],
            "correct": [True, True, False, True],
        }
    )
    table = linguistic_prior_table(model, blind)
    row = table.filter(pl.col("family") == "all").row(0, named=True)
    assert row["n"] == 4 and row["n_hard"] == 2
    assert row["accuracy"] == pytest.approx(0.75)
    assert row["hard_accuracy"] == pytest.approx(0.5)
    assert row["linguistic_gap"] == pytest.approx(0.25)
    assert row["blind_accuracy"] == pytest.approx(0.5) and row["blind_ties"] == 1
    with pytest.raises(ValueError, match="no blind-LM outcome"):
        linguistic_prior_table(model.with_columns(item_id=pl.lit("zz")), blind)


def test_prior_heatmap_masks_small_cells(tmp_path):
    rng = np.random.default_rng(0)
    items, table = [], {}
    for i in range(600):
        items.append((f"i{i:04d}", f"p{i}", [f"n{i}"]))
        table[f"p{i}"], table[f"n{i}"] = rng.normal(-10, 2), rng.normal(-11, 2)
    cands = candidates(items)
    blind = item_outcomes(cands, scores_for("lm", table), "lm")
    model = blind.select(
        "benchmark", "item_id", model=pl.lit("m"), correct=pl.col("positive_score") > -10
    )
    heat = prior_heatmap_table(model, blind, bins=10, min_count=10)
    assert heat.height == 100 and heat["n"].sum() == 600
    small = heat.filter(pl.col("n") < 10)
    assert small.height > 0 and small["accuracy"].null_count() == small.height
    assert heat.filter(pl.col("n") >= 10)["accuracy"].null_count() == 0
    # bin 0 = lowest perplexity = highest score: high-score positives are "correct" here
    low = heat.filter(pl.col("positive_bin") == 0, pl.col("n") >= 10)["accuracy"]
    assert (low == 1.0).all()
    png, pdf = tmp_path / "h.png", tmp_path / "h.pdf"
    plot_prior_heatmap(heat, png, pdf, "lm")
    first = (png.read_bytes(), pdf.read_bytes())
    plot_prior_heatmap(heat, png, pdf, "lm")
    assert first == (png.read_bytes(), pdf.read_bytes())


# --- figures, checks and the audit job ----------------------------------------------------


def test_refinement_figure_is_deterministic(tmp_path):
    cands, scores = synthetic_pairs(300, seed=4)
    result = refine_candidates(cands, scores, ("s1", "s2"))
    png, pdf = tmp_path / "g.png", tmp_path / "g.pdf"
    plot_refinement_gaps(result.items, png, pdf, ("s1", "s2"))
    first = (png.read_bytes(), pdf.read_bytes())
    plot_refinement_gaps(result.items, png, pdf, ("s1", "s2"))
    assert first == (png.read_bytes(), pdf.read_bytes())
    assert png.stat().st_size > 1000


def test_checks_on_fixture_release():
    refined = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "refined").candidates
    unrefined = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "unrefined").candidates
    scores = score_candidates(
        pl.concat([refined, unrefined]), [HashScorer("h1"), WordCountScorer()]
    )
    blind = check_blind_by_type(refined, unrefined, scores, ["h1", "fewer-words"])
    assert set(blind.table["variant"]) == {"refined", "unrefined"}
    assert "**fewer-words**" in blind.markdown and "| swap_att |" in blind.markdown
    refine_check, result = check_refinement(
        refined, unrefined, scores, ("h1", "fewer-words"), grid=4
    )
    assert "published_refined" in refine_check.table.columns
    assert refine_check.table.filter(pl.col("type") == "all")["n_unrefined"][0] == 6
    words_check = check_word_multisets(refined, unrefined)
    row = words_check.table.filter(pl.col("variant") == "unrefined", pl.col("type") == "swap_att")
    assert row["same_words"][0] == 4 and row["n"][0] == 4


def test_sugarcrepe_audit_job_writes_everything(tmp_path):
    paths = sugarcrepe_audit(
        FIXTURES / "sugarcrepe", [HashScorer("h1"), HashScorer("h2")], tmp_path, grid=4, seed=1
    )
    for key in [
        "scores",
        "blind_by_type",
        "refinement",
        "word_multisets",
        "audit",
        "refinement_items",
        "refinement_figure_png",
        "refinement_figure_pdf",
    ]:
        assert paths[key].exists(), key
    text = paths["audit"].read_text()
    assert "## blind_by_type" in text and "## refinement" in text and "## word_multisets" in text
    again = sugarcrepe_audit(
        FIXTURES / "sugarcrepe",
        [HashScorer("h1"), HashScorer("h2")],
        tmp_path / "again",
        grid=4,
        seed=1,
    )
    for key in ["refinement_items", "refinement", "blind_by_type"]:
        assert paths[key].read_bytes() == again[key].read_bytes(), key


def test_each_cell_keeps_the_size_of_the_smaller_of_it_and_its_mirror():
    rng = np.random.default_rng(5)
    g1 = np.round(rng.normal(0.2, 0.4, 4000).clip(-1, 1), 2)
    g2 = np.round(rng.normal(0.1, 0.5, 4000).clip(-1, 1), 2)
    keep, stratum, c1, c2 = refine_mask(g1, g2, g1, g2, np.random.default_rng(0), grid=20)
    grid_items = stratum == 0
    cells = list(zip(c1[grid_items], c2[grid_items], strict=True))
    kept = [c for c, k in zip(cells, keep[grid_items], strict=True) if k]
    before, after = Counter(cells), Counter(kept)
    for (i, j), n in before.items():
        assert after[(i, j)] == min(n, before[(19 - i, 19 - j)])


def test_job_entry_points_connect_files(tmp_path):
    from vlcomp.refine.jobs import blind_stage, prior_stage, refine_stage

    cands, scores = tmp_path / "cands.parquet", tmp_path / "scores.parquet"
    imported = read_sugarcrepe_dir(FIXTURES / "sugarcrepe" / "unrefined").candidates
    imported.write_parquet(cands)
    score_candidates(imported, [HashScorer("h1"), HashScorer("h2")]).write_parquet(scores)
    blind_stage(cands, scores, tmp_path / "blind.parquet")
    out = {k: tmp_path / f"{k}.parquet" for k in ["items", "refined", "counts", "accuracy"]}
    refine_stage(
        cands, scores, ("h1", "h2"),
        items_out=out["items"], refined_out=out["refined"], counts_out=out["counts"],
        accuracy_out=out["accuracy"], figure_png=tmp_path / "g.png", figure_pdf=tmp_path / "g.pdf",
        grid=4,
    )  # fmt: skip
    refined = pl.read_parquet(out["refined"])
    assert refined.schema == pl.Schema(CANDIDATES_SCHEMA)
    items = pl.read_parquet(out["items"])
    assert refined["item_id"].n_unique() == items["kept"].sum()
    correct = items.select("benchmark", "item_id", model=pl.lit("m"), correct=pl.lit(True))
    correct.write_parquet(tmp_path / "correct.parquet")
    prior_stage(
        cands, scores, "h1", tmp_path / "correct.parquet",
        table_out=tmp_path / "prior.parquet", heatmap_out=tmp_path / "heat.parquet",
        figure_png=tmp_path / "h.png", figure_pdf=tmp_path / "h.pdf", bins=2, min_count=1,
    )  # fmt: skip
    assert pl.read_parquet(tmp_path / "prior.parquet")["n"].max() == 6


# --- small sets: nothing ends empty without a reason ---------------------------------------


def saved_figure_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts (axes texts, whitespace collapsed) of every figure the refine stage saves."""
    import vlcomp.refine.figures as refine_figures
    from vlcomp.figure_files import save_figure

    texts: list[str] = []

    def capture(fig, png, pdf):
        texts.extend(" ".join(t.get_text().split()) for ax in fig.axes for t in ax.texts)
        save_figure(fig, png, pdf)

    monkeypatch.setattr(refine_figures, "save_figure", capture)
    return texts


def test_auto_grid_scales_with_the_group():
    from vlcomp.refine.adversarial import auto_grid, resolve_grid

    sizes = (0, 7, 8, 20, 102, 2500, 20000, 10**6)
    assert [auto_grid(n) for n in sizes] == [2, 2, 2, 2, 6, 34, 100, 100]
    assert resolve_grid("auto", 102) == 6 and resolve_grid(100, 5) == 100
    for bad in (3, 0, "big", True, 10.0):
        with pytest.raises(ValueError, match="'auto' or an even integer"):
            resolve_grid(bad, 10)


def test_a_102_pair_set_keeps_pairs_by_default_and_k100_says_why(tmp_path, monkeypatch):
    from vlcomp.contracts import NOTE_KEY
    from vlcomp.io import read_parquet_metadata
    from vlcomp.refine.jobs import refine_stage

    cands, scores = synthetic_pairs(102, seed=3, groups=(("swap", "att"),))
    rank = ("rank", "rank")
    default = refine_candidates(cands, scores, ("s1", "s2"), normalisation=rank)
    assert default.counts.select("grid", "note").rows() == [(6, None)]
    assert 0 < default.items["kept"].sum() < 102 and default.notes() == []
    fixed = refine_candidates(cands, scores, ("s1", "s2"), grid=100, normalisation=rank)
    assert fixed.items["kept"].sum() == 0
    note = fixed.counts["note"][0]
    assert note.startswith("refinement kept 0 of 102: a 100x100 grid has 0.01 pairs per cell")
    assert "a 2x2 grid would keep" in note and note.endswith("set refine.grid lower, or to auto")
    assert fixed.notes() == [
        f"bench / swap / att: {note}",
        "refinement kept 0 of 102 pairs: every group kept nothing (above)",
    ]
    # the stage says it in its log, the refined table's metadata and the figure's empty panel
    cands.write_parquet(tmp_path / "cands.parquet")
    scores.write_parquet(tmp_path / "scores.parquet")
    out = {k: tmp_path / f"{k}.parquet" for k in ["items", "refined", "counts", "accuracy"]}
    texts, lines = saved_figure_texts(monkeypatch), []
    refine_stage(
        tmp_path / "cands.parquet", tmp_path / "scores.parquet", ("s1", "s2"),
        items_out=out["items"], refined_out=out["refined"], counts_out=out["counts"],
        accuracy_out=out["accuracy"], figure_png=tmp_path / "g.png", figure_pdf=tmp_path / "g.pdf",
        grid=100, normalisation=rank, log=lines.append,
    )  # fmt: skip
    assert lines[0] == "refinement kept 0 of 102 pairs (grid 100: K per group [100])"
    assert lines[1:] == fixed.notes()
    assert pl.read_parquet(out["refined"]).is_empty()
    assert read_parquet_metadata(out["refined"])[NOTE_KEY] == "\n".join(fixed.notes())
    assert pl.read_parquet(out["counts"])["note"].to_list() == [note]
    assert texts == [note]


def test_gaps_all_on_one_side_say_no_grid_keeps_any():
    items = [(f"i{i:02d}", f"p{i}", [f"n{i}"]) for i in range(12)]
    first = {**{f"p{i}": 0.9 for i in range(12)}, **{f"n{i}": 0.1 + i / 100 for i in range(12)}}
    second = {**{f"p{i}": 0.8 for i in range(12)}, **{f"n{i}": 0.3 for i in range(12)}}
    scores = pl.concat([scores_for("a", first), scores_for("b", second)])
    result = refine_candidates(candidates(items), scores, ("a", "b"), grid=4)
    assert result.items["kept"].sum() == 0
    assert result.counts["note"][0] == (
        "refinement kept 0 of 12: no pair has one on the mirror side at any grid (scorer 1: "
        "12 gaps > 0, 0 < 0, 0 = 0; scorer 2: 12 gaps > 0, 0 < 0, 0 = 0), so the blind "
        "scorers' choice cannot be balanced in this group"
    )


def test_an_all_masked_heat_map_says_why(tmp_path, monkeypatch):
    from vlcomp.contracts import NOTE_KEY
    from vlcomp.io import read_parquet_metadata
    from vlcomp.refine.jobs import prior_stage
    from vlcomp.refine.priors import masked_reasons

    cands, scores = synthetic_pairs(102, seed=3, groups=(("swap", "att"),))
    blind = item_outcomes(cands, scores, "s1")
    model = blind.select("benchmark", "item_id", model=pl.lit("m"), correct=pl.lit(True))
    heat = prior_heatmap_table(model, blind, bins=10, min_count=50)
    assert heat["accuracy"].null_count() == heat.height
    fullest = heat["n"].max()
    reason = (
        f"every cell has fewer than min_count=50 items: 102 items over 10x10 cells, the "
        f"fullest holds {fullest}; set priors.min_count or priors.bins lower"
    )
    assert masked_reasons(heat) == {"m": reason}
    assert masked_reasons(prior_heatmap_table(model, blind, bins=2, min_count=1)) == {}
    cands.write_parquet(tmp_path / "cands.parquet")
    scores.write_parquet(tmp_path / "scores.parquet")
    model.write_parquet(tmp_path / "correct.parquet")
    texts, lines = saved_figure_texts(monkeypatch), []
    prior_stage(
        tmp_path / "cands.parquet", tmp_path / "scores.parquet", "s1", tmp_path / "correct.parquet",
        table_out=tmp_path / "prior.parquet", heatmap_out=tmp_path / "heat.parquet",
        figure_png=tmp_path / "h.png", figure_pdf=tmp_path / "h.pdf", bins=10, min_count=50,
        log=lines.append,
    )  # fmt: skip
    assert lines == [
        "heat map: 10x10 bins (priors.bins: 10) over 102 model item(s), cells with fewer than "
        "50 masked",
        f"heat map all masked: m: {reason}",
    ]
    assert read_parquet_metadata(tmp_path / "heat.parquet")[NOTE_KEY] == f"m: {reason}"
    assert texts == [reason]


def test_auto_bins_scale_with_the_items():
    from vlcomp.refine.priors import auto_bins, resolve_bins

    # the largest b <= 10 with n / b^2 >= min_count, at least 2
    got = {n: auto_bins(n, 10) for n in [0, 39, 40, 89, 90, 102, 159, 160, 999, 1000, 10_000]}
    assert got == {0: 2, 39: 2, 40: 2, 89: 2, 90: 3, 102: 3, 159: 3, 160: 4, 999: 9, 1000: 10,
                   10_000: 10}  # fmt: skip
    assert auto_bins(102, 1) == 10 and auto_bins(102, 25) == 2
    assert resolve_bins("auto", 102, 10) == 3
    assert resolve_bins(7, 102, 10) == 7 and resolve_bins(10, 10_000, 10) == 10
    for bad in [1, 0, True, "10", 2.5]:
        with pytest.raises(ValueError, match="priors.bins must be 'auto' or an integer >= 2"):
            resolve_bins(bad, 102, 10)


def figure_words(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Titles, axes texts and figure texts of every figure the refine stage saves."""
    import vlcomp.refine.figures as refine_figures
    from vlcomp.figure_files import save_figure

    words: list[str] = []

    def capture(fig, png, pdf):
        for ax in fig.axes:
            words.extend(" ".join(t.get_text().split()) for t in [ax.title, *ax.texts])
        words.extend(" ".join(t.get_text().split()) for t in fig.texts)
        save_figure(fig, png, pdf)

    monkeypatch.setattr(refine_figures, "save_figure", capture)
    return words


def run_priors(tmp_path, cands, scores, model, log, **settings):
    from vlcomp.refine.jobs import prior_stage

    cands.write_parquet(tmp_path / "cands.parquet")
    scores.write_parquet(tmp_path / "scores.parquet")
    model.write_parquet(tmp_path / "correct.parquet")
    prior_stage(
        tmp_path / "cands.parquet", tmp_path / "scores.parquet", "s1", tmp_path / "correct.parquet",
        table_out=tmp_path / "prior.parquet", heatmap_out=tmp_path / "heat.parquet",
        figure_png=tmp_path / "h.png", figure_pdf=tmp_path / "h.pdf", log=log, **settings,
    )  # fmt: skip


def test_auto_heat_map_shows_cells_of_a_small_set_and_records_b(tmp_path, monkeypatch):
    from vlcomp.contracts import NOTE_KEY
    from vlcomp.io import read_parquet_metadata
    from vlcomp.refine.priors import masked_reasons

    cands, scores = synthetic_pairs(102, seed=3, groups=(("swap", "att"),))
    blind = item_outcomes(cands, scores, "s1")
    model = blind.select("benchmark", "item_id", model=pl.lit("m"), correct=pl.lit(True))
    # the old default (10 x 10) masks every cell of 102 items; auto takes 3 x 3 and shows some
    assert prior_heatmap_table(model, blind, bins=10)["accuracy"].null_count() == 100
    heat = prior_heatmap_table(model, blind)
    assert heat.height == 9 and heat["n"].sum() == 102
    assert heat["accuracy"].null_count() < 9 and masked_reasons(heat) == {}
    words, lines = figure_words(monkeypatch), []
    run_priors(tmp_path, cands, scores, model, lines.append, bins="auto", min_count=10)
    assert lines == [
        "heat map: 3x3 bins (priors.bins: auto) over 102 model item(s), cells with fewer than "
        "10 masked"
    ]
    for table in ["prior.parquet", "heat.parquet"]:
        meta = read_parquet_metadata(tmp_path / table)
        assert (meta["bins"], meta["bins_setting"], meta["min_count"]) == ("3", "auto", "10")
        assert NOTE_KEY not in meta
    assert "m: 3x3 bins, auto (masked: n < 10)" in words
    assert (
        "priors.bins auto: b = 3, the largest b <= 10 with n / b\u00b2 >= min_count = 10 "
        "(n = 102 items), at least 2"
    ) in words
    # an explicit integer is used as given, and its figure has no auto caption
    words.clear()
    run_priors(tmp_path, cands, scores, model, lines.append, bins=4, min_count=10)
    assert pl.read_parquet(tmp_path / "heat.parquet").height == 16
    meta = read_parquet_metadata(tmp_path / "heat.parquet")
    assert (meta["bins"], meta["bins_setting"]) == ("4", "4")
    assert "m: 4x4 bins (masked: n < 10)" in words
    assert not any(w.startswith("priors.bins auto") for w in words)


def test_a_set_too_small_for_two_by_two_says_why(tmp_path, monkeypatch):
    from vlcomp.contracts import NOTE_KEY
    from vlcomp.io import read_parquet_metadata

    cands, scores = synthetic_pairs(102, seed=3, groups=(("swap", "att"),))
    blind = item_outcomes(cands, scores, "s1")
    model = blind.select("benchmark", "item_id", model=pl.lit("m"), correct=pl.lit(True))
    heat = prior_heatmap_table(model, blind, min_count=60)  # 102 < 4 x 60: auto gives 2 x 2
    assert heat.height == 4 and heat["accuracy"].null_count() == 4
    fullest = heat["n"].max()
    reason = (
        f"every cell has fewer than min_count=60 items: 102 items over 2x2 cells, the fullest "
        f"holds {fullest}; 2x2 is the coarsest map: a priors.min_count of at most {fullest} "
        "shows a cell"
    )
    assert prior_heatmap_table(model, blind, min_count=fullest)["accuracy"].null_count() < 4
    words, lines = figure_words(monkeypatch), []
    run_priors(tmp_path, cands, scores, model, lines.append, bins="auto", min_count=60)
    assert lines[1:] == [f"heat map all masked: m: {reason}"]
    assert read_parquet_metadata(tmp_path / "heat.parquet")[NOTE_KEY] == f"m: {reason}"
    assert reason in words and "m: 2x2 bins, auto (masked: n < 60)" in words


def test_changed_words_are_the_multiset_difference():
    from vlcomp.refine.words import changed_words

    assert changed_words("a circle above a square", "A circle below a square.") == (
        ("above",),
        ("below",),
    )
    assert changed_words("a red circle and a blue star", "a blue circle and a red star") == (
        (),
        (),
    )


def test_word_prior_accuracy_is_cross_fitted_and_guesses_what_it_has_not_seen():
    from vlcomp.refine.words import word_prior_accuracy

    above = ("a circle above a square", "a circle below a square")
    below = ("a star below a cross", "a star above a cross")
    # "above" is the positive three times as often as "below", in both halves: the rule
    # fitted on one half prefers "above" on the other, right on 3 of 4 pairs
    pairs = [(*above, 0)] * 3 + [(*below, 0)] + [(*above, 1)] * 3 + [(*below, 1)]
    assert word_prior_accuracy(pairs) == 0.75
    # both directions equally often: no prior
    assert word_prior_accuracy([(*above, 0), (*below, 0), (*above, 1), (*below, 1)]) == 0.5
    # a change seen only in its own half is guessed, never looked up in-sample
    assert word_prior_accuracy([(*above, 0), ("a red cup", "a blue cup", 1)]) == 0.5
    # same words, swapped: nothing to go on
    swap = ("a red circle and a blue star", "a blue circle and a red star")
    assert word_prior_accuracy([(*swap, 0), (*swap, 1)]) == 0.5
    assert word_prior_accuracy([]) is None
