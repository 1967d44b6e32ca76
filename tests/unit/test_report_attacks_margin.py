"""Each model beside the best blind attack on the same pairs (``report.attacks``): the
model's and the attack's accuracy on the pairs both have, their difference and its paired
bootstrap interval over items, and the Blind attacks rows that show them."""

import numpy as np
import polars as pl
import pytest

from vlcomp.certificate import attack_decisions, best_attack_table, bootstrap_interval
from vlcomp.report.attacks import attacks_markdown, blind_margins, model_pairs
from vlcomp.vocabulary import ALL

RESAMPLES, SEED = 200, 0


def _certificate(path, rows, panel="certify"):
    """rows: (benchmark, part, variant, type, attack, accuracy), of the certification panel."""
    full = [
        {"benchmark": b, "panel": panel, "part": p, "variant": v, "type": t, "attack": a,
         "accuracy": acc, "ci_low": acc - 0.05, "ci_high": acc + 0.05, "n": 100,
         "items": 100, "answered": 100, "note": None, "chance": 0.5}
        for b, p, v, t, a, acc in rows
    ]  # fmt: skip
    pl.DataFrame(full).write_parquet(path)
    return path


def _decisions(path, rows, several_parts=False, panel="certify"):
    """rows: (benchmark, part, variant, item_id, type, negative, attack, d); the positive
    of an item is ``<item_id>+``, a text's key the text itself."""
    full = [
        {"benchmark": b, "panel": panel, "part": p, "variant": v,
         "item_id": f"{p}/{i}" if several_parts else i, "pair_id": f"{i}~{n}", "type": t,
         "positive_key": f"{i}+", "negative_key": n, "attack": a, "d": d, "note": None}
        for b, p, v, i, t, n, a, d in rows
    ]  # fmt: skip
    pl.DataFrame(full).write_parquet(path)
    return path


def _predictions(path, rows):
    """rows: (model, benchmark, part, item_id, type, negatives, correct): one set of an item
    and type with these negatives (the first one its best)."""
    full = [
        {"model": m, "benchmark": b, "part": p, "item_id": i, "image": "img", "family": t,
         "split": None, "complexity": None, "n_candidates": 1 + len(negatives),
         "n_positives": 1, "rank": 0 if c else 1, "correct": c, "pos_score": 0.5,
         "neg_score": 0.4 if c else 0.6, "pos_text_key": f"{i}+",
         "neg_text_key": negatives[0], "indistinguishable": False, "tied": False}
        for m, b, p, i, t, negatives, c in rows
    ]  # fmt: skip
    pl.DataFrame(full).write_parquet(path)
    return path


def _scored(path, benchmark, variant):
    """A metric table's columns that say which variant the models were scored on."""
    pl.DataFrame({"benchmark": [benchmark], "variant": [variant]}).write_parquet(path)
    return path


def _margins(certificate, decisions, predictions, scored):
    return blind_margins(
        best_attack_table([certificate]),
        attack_decisions([decisions]),
        model_pairs([predictions]),
        scored,
        RESAMPLES,
        SEED,
    )


def _one_type(tmp_path, model_right, attack_d, n=8):
    """A 1+1 benchmark "pairs" of n items of type replace_att, scored debiased."""
    certificate = _certificate(tmp_path / "attacks.parquet", [
        ("pairs", "pairs", "debiased", "replace_att", "length", 0.6),
        ("pairs", "pairs", "debiased", ALL, "length", 0.6),
    ])  # fmt: skip
    decisions = _decisions(tmp_path / "decisions.parquet", [
        ("pairs", "pairs", "debiased", f"{i}", "replace_att", f"{i}-", "length", attack_d(i))
        for i in range(n)
    ])  # fmt: skip
    predictions = _predictions(tmp_path / "predictions.parquet", [
        ("m", "pairs", None, f"{i}", "replace_att", [f"{i}-"], model_right(i)) for i in range(n)
    ])  # fmt: skip
    return certificate, decisions, predictions


def _cell(margins, kind="replace_att", model="m"):
    return margins.filter((pl.col("type") == kind) & (pl.col("model") == model)).row(0, named=True)


def test_both_always_right_is_zero_with_a_zero_interval(tmp_path):
    files = _one_type(tmp_path, lambda i: True, lambda i: 1.0)
    row = _cell(_margins(*files, {"pairs": "debiased"}))
    assert (row["model_accuracy"], row["attack_accuracy"], row["n"]) == (1.0, 1.0, 8)
    assert (row["difference"], row["ci_low"], row["ci_high"]) == (0.0, 0.0, 0.0)


def test_an_attack_tie_counts_half_a_model_right_everywhere_is_half_above(tmp_path):
    files = _one_type(tmp_path, lambda i: True, lambda i: 0.0)
    row = _cell(_margins(*files, {"pairs": "debiased"}))
    assert (row["attack_accuracy"], row["difference"]) == (0.5, 0.5)
    assert (row["ci_low"], row["ci_high"]) == (0.5, 0.5)


def test_an_attack_right_on_half_the_items(tmp_path):
    files = _one_type(tmp_path, lambda i: True, lambda i: 1.0 if i % 2 else -1.0, n=40)
    row = _cell(_margins(*files, {"pairs": "debiased"}))
    assert (row["attack_accuracy"], row["difference"]) == (0.5, 0.5)
    assert 0.25 < row["ci_low"] < 0.5 < row["ci_high"] < 0.75


def test_pairs_the_attack_did_not_decide_are_left_out_of_both_sides(tmp_path):
    # the model is wrong on items 4..7, which the attack never decided
    certificate, _, predictions = _one_type(tmp_path, lambda i: i < 4, lambda i: 1.0)
    decisions = _decisions(tmp_path / "some.parquet", [
        ("pairs", "pairs", "debiased", f"{i}", "replace_att", f"{i}-", "length", -1.0)
        for i in range(4)
    ])  # fmt: skip
    row = _cell(_margins(certificate, decisions, predictions, {"pairs": "debiased"}))
    assert (row["n"], row["items"]) == (4, 4)
    assert (row["model_accuracy"], row["attack_accuracy"], row["difference"]) == (1.0, 0.0, 1.0)


def test_a_pair_the_certificate_holds_twice_counts_once(tmp_path):
    """A negative written twice in an item: two pairs of the certificate, one of the model's
    sets (which keeps a text once)."""
    certificate, _, predictions = _one_type(tmp_path, lambda i: True, lambda i: 1.0, n=2)
    decisions = _decisions(tmp_path / "twice.parquet", [
        ("pairs", "pairs", "debiased", f"{i}", "replace_att", f"{i}-", "length", 1.0)
        for i in (0, 0, 1)
    ])  # fmt: skip
    row = _cell(_margins(certificate, decisions, predictions, {"pairs": "debiased"}))
    assert (row["n"], row["items"]) == (2, 2)


def test_only_the_variant_the_models_were_scored_on(tmp_path):
    certificate = _certificate(tmp_path / "attacks.parquet", [
        ("pairs", "pairs", "as_generated", "replace_att", "length", 0.7),
        ("pairs", "pairs", "debiased", "replace_att", "length", 0.5),
    ])  # fmt: skip
    # the debiased items are the as-generated ones: the same pairs, other decisions
    decisions = _decisions(tmp_path / "decisions.parquet", [
        ("pairs", "pairs", v, f"{i}", "replace_att", f"{i}-", "length", d)
        for i in range(4) for v, d in (("as_generated", 1.0), ("debiased", -1.0))
    ])  # fmt: skip
    predictions = _predictions(tmp_path / "predictions.parquet", [
        ("m", "pairs", None, f"{i}", "replace_att", [f"{i}-"], True) for i in range(4)
    ])  # fmt: skip
    margins = _margins(certificate, decisions, predictions, {"pairs": "debiased"})
    assert margins["variant"].to_list() == ["debiased"]
    assert margins["attack_accuracy"].to_list() == [0.0]
    scored_as_generated = _margins(certificate, decisions, predictions, {"pairs": "as_generated"})
    assert scored_as_generated["variant"].to_list() == ["as_generated"]
    assert scored_as_generated["attack_accuracy"].to_list() == [1.0]


def test_parts_sets_of_several_negatives_and_items_drawn_whole(tmp_path):
    """CREPE-like: two parts whose item ids the certificate prefixes; an item with a set of
    one negative per type counts both pairs under "all", and a set of two negatives of
    one type is left out (its table holds its best negative's outcome only)."""
    certificate = _certificate(tmp_path / "attacks.parquet", [
        ("syst", part, "debiased", kind, "context", 0.5)
        for part in ("cc12m", "laion") for kind in ("atom_att", "atom_obj", ALL)
    ])  # fmt: skip
    decisions = _decisions(
        tmp_path / "decisions.parquet",
        [
            ("syst", part, "debiased", item, kind, f"{item}-{kind}{j}", "context", d)
            for part in ("cc12m", "laion")
            for item, kind, j, d in [
                ("r1", "atom_att", 0, 1.0), ("r1", "atom_obj", 0, -1.0),
                ("r2", "atom_att", 0, 0.0), ("r2", "atom_obj", 0, 1.0),
                ("r3", "atom_att", 0, 1.0), ("r3", "atom_att", 1, 1.0),
            ]
        ],
        several_parts=True,
    )  # fmt: skip
    predictions = _predictions(tmp_path / "predictions.parquet", [
        ("m", "syst", part, item, kind, negatives, right)
        for part in ("cc12m", "laion")
        for item, kind, negatives, right in [
            ("r1", "atom_att", ["r1-atom_att0"], True),
            ("r1", "atom_obj", ["r1-atom_obj0"], True),
            ("r2", "atom_att", ["r2-atom_att0"], False),
            ("r2", "atom_obj", ["r2-atom_obj0"], True),
            ("r3", "atom_att", ["r3-atom_att0", "r3-atom_att1"], False),
        ]
    ])  # fmt: skip
    margins = _margins(certificate, decisions, predictions, {"syst": "debiased"})
    assert set(margins["part"]) == {"cc12m", "laion"}
    every = margins.filter((pl.col("part") == "cc12m") & (pl.col("type") == ALL)).row(0, named=True)
    # r1: model 2, attack 1; r2: model 1, attack 1.5 -> (3 - 2.5) / 4
    assert (every["n"], every["items"]) == (4, 2)
    assert (every["model_accuracy"], every["attack_accuracy"]) == (0.75, 0.625)
    # items drawn whole: a resample is r1 twice (+0.5), r2 twice (-0.25) or both (+0.125)
    assert every["ci_low"] >= -0.25 and every["ci_high"] <= 0.5
    att = margins.filter((pl.col("part") == "laion") & (pl.col("type") == "atom_att"))
    assert att["n"].to_list() == [2]  # r3's set of two negatives is left out


def test_models_of_a_cell_share_their_draws(tmp_path):
    certificate, decisions, _ = _one_type(tmp_path, lambda i: True, lambda i: 1.0, n=30)
    predictions = _predictions(tmp_path / "two.parquet", [
        (model, "pairs", None, f"{i}", "replace_att", [f"{i}-"], i % 3 > 0)
        for model in ("a", "b") for i in range(30)
    ])  # fmt: skip
    margins = _margins(certificate, decisions, predictions, {"pairs": "debiased"})
    a, b = _cell(margins, model="a"), _cell(margins, model="b")
    assert a["ci_low"] < a["difference"] < a["ci_high"]
    assert (a["ci_low"], a["ci_high"]) == (b["ci_low"], b["ci_high"])
    again = _margins(certificate, decisions, predictions, {"pairs": "debiased"})
    assert again.equals(margins)


def test_the_interval_of_a_difference_resamples_items(tmp_path):
    """Negative credits (a difference of two credits) take the packed integer path and
    give the ratio of sums over the drawn items."""
    credits = np.array([1.0, -0.5, 0.0, 2.0, -1.0])
    counts = np.array([1, 1, 2, 3, 1])
    low, high = bootstrap_interval(credits, counts, 50, np.random.default_rng(7))
    draw = np.random.default_rng(7).integers(0, 5, size=(50, 5))
    stats = credits[draw].sum(axis=1) / counts[draw].sum(axis=1)
    assert (low, high) == tuple(np.quantile(stats, [0.025, 0.975]))


def test_blind_attacks_rows_show_each_model_beside_the_best_attack(tmp_path):
    certificate, decisions, predictions = _one_type(tmp_path, lambda i: True, lambda i: 0.0)
    lines = attacks_markdown(
        [certificate],
        [_scored(tmp_path / "pairs.parquet", "pairs", "debiased")],
        [predictions],
        [decisions],
        RESAMPLES,
        SEED,
    )
    row = next(line for line in lines if "| replace_att |" in line)
    assert row.endswith("| m 1.000, above best blind +0.500 [+0.500, +0.500] (n 8) |")
    assert any("only where the interval is above 0" in line for line in lines)


def test_decisions_without_their_pairs_are_refused(tmp_path):
    path = tmp_path / "attack_predictions.parquet"
    # the decisions as certificates wrote them before they kept their pairs
    written = {"benchmark": "pairs", "item_id": "1", "pair_id": "1", "attack": "length", "d": 0.0}
    pl.DataFrame([written]).write_parquet(path)
    with pytest.raises(ValueError, match="rerun rule blind_attacks"):
        attack_decisions([path])


def test_models_stand_beside_the_certification_panel_only(tmp_path):
    """A debiasing-panel attack that beats the certification panel's best is shown beside
    it, but the models' margin is taken against the certification attack."""
    certificate, decisions, predictions = _one_type(tmp_path, lambda i: True, lambda i: 0.0)
    frame = pl.read_parquet(certificate)
    debias = frame.with_columns(panel=pl.lit("debias"), attack=pl.lit("word_prior"),
                                accuracy=pl.lit(0.9))  # fmt: skip
    pl.concat([frame, debias]).write_parquet(certificate)
    chosen = pl.read_parquet(decisions)
    right = chosen.with_columns(panel=pl.lit("debias"), attack=pl.lit("word_prior"), d=pl.lit(1.0))
    pl.concat([chosen, right]).write_parquet(decisions)
    best = best_attack_table([certificate]).filter(type="replace_att").row(0, named=True)
    assert (best["attack"], best["accuracy"]) == ("length", 0.6)
    assert (best["debias_attack"], best["debias_accuracy"]) == ("word_prior", 0.9)
    margins = _margins(certificate, decisions, predictions, {"pairs": "debiased"})
    assert margins.filter(type="replace_att")["attack_accuracy"].to_list() == [0.5]
