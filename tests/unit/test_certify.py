"""The certification panel (vlcomp.blind.certify, vlcomp.blind.families): each injected
artefact is caught by the family meant for it, the clean control stays at chance, and the
panel without those families lets the artefact through (vlcomp_dev.artefacts builds the
synthetic benchmarks)."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from vlcomp.blind.attacks import PAIRS_SCHEMA, attack_accuracy
from vlcomp.blind.certify import (
    GENERATOR_PREFIX,
    CertifySettings,
    certification_predictions,
    grouped_folds,
    text_groups,
)
from vlcomp.blind.families import (
    FAMILIES,
    SURFACE_STATISTICS,
    AddKBigram,
    Resources,
    panel_families,
    surface_statistics,
)
from vlcomp.certificate import AT_CHANCE, HACKABLE, certificate_status
from vlcomp_dev.artefacts import (
    MEANT_FOR,
    corpus_captions,
    family_accuracy,
    panel_best,
    synthetic_pairs,
)

WITHOUT_ENCODER = tuple(name for name in FAMILIES if name not in ("minilm", "minilm_tuned"))
SCHEMA = Path(__file__).parents[2] / "src" / "vlcomp" / "schemas" / "config.schema.yaml"


@pytest.fixture(scope="module")
def accuracies():
    """artefact -> attack -> accuracy of the whole panel (no encoder), seed 0."""
    return {
        artefact: family_accuracy(synthetic_pairs(artefact, 600, 0), WITHOUT_ENCODER, 0)
        for artefact in ("clean", *MEANT_FOR)
    }


def test_clean_control_stays_at_chance(accuracies):
    clean = accuracies["clean"]
    assert set(clean) == {"whole_text", "surface", "surface_rule", "lm@synth"}
    for attack, accuracy in clean.items():
        assert 0.44 < accuracy < 0.56, (attack, accuracy)


@pytest.mark.parametrize(
    ("artefact", "family"),
    [
        ("distinct_word", "surface_rule"),
        ("distinct_word", "surface"),
        ("marker", "whole_text"),
        ("recurring_positive", "surface"),
        ("length", "surface"),
        ("length", "lm@synth"),
    ],
)
def test_each_artefact_is_caught_by_its_family(accuracies, artefact, family):
    assert accuracies[artefact][family] > 0.6, accuracies[artefact]


@pytest.mark.parametrize("artefact", ["distinct_word", "marker", "recurring_positive"])
def test_dropping_the_families_meant_for_an_artefact_lets_it_through(artefact):
    pairs = synthetic_pairs(artefact, 600, 0)
    rest = tuple(f for f in WITHOUT_ENCODER if f not in MEANT_FOR[artefact])
    assert rest, artefact
    assert panel_best(pairs, rest) < 0.57
    assert panel_best(pairs, MEANT_FOR[artefact]) > 0.6


def test_the_verdict_fails_an_artefact_and_passes_the_clean_control():
    def verdict(artefact):
        pairs = synthetic_pairs(artefact, 600, 0)
        resources = Resources(corpora={"synth": corpus_captions(seed=0)})
        settings = CertifySettings(families=WITHOUT_ENCODER, generator_attacks=False)
        certified, predictions = certification_predictions(pairs, resources, None, settings)
        table = attack_accuracy(certified, predictions, 200, 0, unit="group")
        return certificate_status(table.filter(type="swap_att").with_columns(chance=pl.lit(0.5)))

    assert verdict("clean") == AT_CHANCE
    assert verdict("marker").startswith(HACKABLE)


def test_an_empty_panel_has_no_attack():
    assert panel_families(Resources(), ()) == []
    with pytest.raises(ValueError, match="unknown attack famil"):
        panel_families(Resources(), ("whole_txt",))


def test_the_fine_tuned_encoder_runs_only_when_named():
    resources = Resources(load_encoder=lambda: None)  # never loaded: features not asked
    default = {f.name for f in panel_families(resources)}
    assert "minilm_tuned" not in default and "whole_text" in default
    assert [f.name for f in panel_families(resources, ("minilm_tuned",))] == ["minilm_tuned"]
    assert "minilm_tuned" not in CertifySettings().without("minilm").families


def test_families_decide_antisymmetrically():
    pairs = synthetic_pairs("length", 200, 1)
    resources = Resources(corpora={"synth": corpus_captions(2000)})
    pos, neg = pairs["positive"].to_list(), pairs["negative"].to_list()
    recur = {t: 1 for t in pos + neg}
    for family in panel_families(resources, WITHOUT_ENCODER):
        a, b = family.features(pos, recur), family.features(neg, recur)
        decide = family.fit(a[:150], b[:150], seed=0)
        forward, backward = decide(a[150:], b[150:]), decide(b[150:], a[150:])
        np.testing.assert_allclose(forward, -backward, atol=1e-9, err_msg=family.name)
        assert np.any(forward != 0), family.name


def test_surface_statistics_of_a_text():
    stats = dict(
        zip(SURFACE_STATISTICS, surface_statistics("A cross, left of a cross", {}), strict=True)
    )
    assert stats["words"] == 6 and stats["distinct_words"] == 4
    assert stats["repeated_words"] == 2 and stats["most_repeats"] == 2
    assert stats["punctuation"] == 1 and stats["capitals"] == 1
    assert stats["recurrence"] == 0


def test_add_k_bigram_prefers_the_corpus_word_order():
    model = AddKBigram(["a red cube on a table"] * 20 + ["a blue ball in a room"] * 20)
    assert model.logprobs("a red cube on a table")[0] > model.logprobs("a table on a red cube")[0]


def _pairs(rows):
    return pl.DataFrame(
        [("b", i, i, "p", "swap_att", 0, pos, neg) for i, pos, neg in rows],
        schema=PAIRS_SCHEMA,
        orient="row",
    )


def test_grouped_folds_keep_a_recurring_text_in_one_fold():
    rows = [(f"{i:03d}", f"positive {i % 7 if i < 70 else i}", f"negative {i}") for i in range(200)]
    pairs = _pairs(rows)
    fold = grouped_folds(pairs, 5, 0)
    frame = pairs.with_columns(fold=pl.Series(fold))
    assert frame.group_by("positive").agg(pl.col("fold").n_unique())["fold"].max() == 1
    sizes = np.bincount(fold, minlength=5)
    assert sizes.max() - sizes.min() <= 10  # groups of 10 dealt to the emptiest fold
    shuffled = pairs.sample(fraction=1.0, shuffle=True, seed=3)
    again = dict(zip(shuffled["pair_id"], grouped_folds(shuffled, 5, 0), strict=True))
    assert [again[p] for p in pairs["pair_id"]] == fold.tolist()
    assert len(set(text_groups(pairs))) == 7 + 130
    with pytest.raises(ValueError, match="k >= 2"):
        grouped_folds(pairs, 1, 0)


def test_a_shared_negative_joins_two_items():
    pairs = _pairs([("a", "x one", "shared"), ("b", "x two", "shared"), ("c", "x three", "y")])
    groups = text_groups(pairs)
    assert groups[0] == groups[1] != groups[2]


def test_group_bootstrap_is_wider_than_the_item_bootstrap_when_items_share_texts():
    pairs = synthetic_pairs("recurring_positive", 600, 0)
    settings = CertifySettings(families=("surface",), generator_attacks=False)
    certified, predictions = certification_predictions(pairs, Resources(), None, settings)
    by_item = attack_accuracy(certified, predictions, 300, 0).filter(type="swap_att")
    by_group = attack_accuracy(certified, predictions, 300, 0, unit="group").filter(type="swap_att")
    assert by_item["accuracy"].item() == by_group["accuracy"].item()
    assert by_item["items"].item() == by_group["items"].item() == 600
    width = lambda t: t["ci_high"].item() - t["ci_low"].item()  # noqa: E731
    assert width(by_group) > width(by_item)


def test_generator_trained_attacks_carry_a_training_corpus_tell_to_the_benchmark():
    """A whole-text model fitted on the training negatives' marker finds it in the benchmark
    without any cross-fitting; the surface rule is not transferable."""
    benchmark, training = synthetic_pairs("marker", 300, 0), synthetic_pairs("marker", 600, 1)
    resources = Resources(corpora={"synth": corpus_captions(2000)})
    settings = CertifySettings(families=("whole_text", "surface_rule", "lm"), generator_pairs=400)
    certified, predictions = certification_predictions(
        benchmark, resources, {"synth": training.select("positive", "negative", "type")}, settings
    )
    table = attack_accuracy(certified, predictions, 0, 0).filter(type="swap_att")
    accuracy = dict(zip(table["attack"], table["accuracy"], strict=True))
    assert set(accuracy) == {
        "whole_text", "surface_rule", "lm@synth",
        f"{GENERATOR_PREFIX}synth/whole_text", f"{GENERATOR_PREFIX}synth/lm",
    }  # fmt: skip
    assert accuracy[f"{GENERATOR_PREFIX}synth/whole_text"] > 0.65


def test_the_sentence_encoder_reads_its_sample_only():
    """MiniLM (the real model) on a marker benchmark, capped at 80 pairs a type."""
    from vlcomp.scorers.familiarity import MiniLMEncoder

    pairs = synthetic_pairs("marker", 300, 0)
    encoder = MiniLMEncoder()
    resources = Resources(encode=encoder, encoder_pairs=80)
    settings = CertifySettings(families=("minilm",), generator_attacks=False, encoder_pairs=80)
    certified, predictions = certification_predictions(pairs, resources, None, settings)
    assert predictions.height == 80 and set(predictions["attack"]) == {"minilm"}
    assert len(encoder.known) <= 160
    vectors = encoder(predictions["pair_id"].head(0).to_list() + ["a red cube"])
    assert vectors.shape == (1, 384) and abs(np.linalg.norm(vectors) - 1) < 1e-5


def test_config_schema_lists_the_registered_families():
    schema = yaml.safe_load(SCHEMA.read_text())
    certify = schema["properties"]["attacks"]["properties"]["certify"]["properties"]
    assert certify["families"]["items"]["enum"] == list(FAMILIES)
    assert certify["encoder_pairs"]["default"] == CertifySettings().encoder_pairs
    assert certify["folds"]["default"] == CertifySettings().folds


def test_a_panel_without_families_fails_with_the_reason():
    settings = CertifySettings(families=("minilm",), generator_attacks=False)
    with pytest.raises(ValueError, match="no family to run .*sentence encoder none"):
        certification_predictions(synthetic_pairs("clean", 40), Resources(), None, settings)


def test_a_certificate_without_certification_rows_is_not_certified(tmp_path):
    """The debiasing panel's rows alone never give a verdict, even at chance."""
    from vlcomp.blind.jobs import ATTACK_CERTIFICATE_SCHEMA
    from vlcomp.certificate import NO_PANEL, best_attack_table

    row = ("b", "debias", "b", "debiased", "swap_att", "context", 0.5, 0.48, 0.52)
    path = tmp_path / "attacks.parquet"
    pl.DataFrame([row + (900, 900, 900, None, 0.5)], schema=ATTACK_CERTIFICATE_SCHEMA,
                 orient="row").write_parquet(path)  # fmt: skip
    best = best_attack_table([path]).row(0, named=True)
    assert best["status"] == NO_PANEL and best["attack"] is None
    assert best["debias_attack"] == "context"


def test_the_fine_tuned_encoder_catches_a_marker_is_antisymmetric_and_reproducible():
    """all-MiniLM-L6-v2 (the real weights) with its top layer and a pairwise head trained per
    fold: a marker word on the foil side is found, the clean control stays near chance (the
    mean of three seeds: a fold's fit errs on all its test pairs together, so one 300-pair
    set swings by +-0.1), and two fits with one seed decide the same, d(a, b) == -d(b, a)."""
    from vlcomp.blind.families import EncoderTuning, TunedEncoder
    from vlcomp.scorers.familiarity import load_minilm

    def accuracy(artefact: str, seed: int) -> float:
        pairs = synthetic_pairs(artefact, 300, seed)
        return family_accuracy(pairs, ("minilm_tuned",), seed, load_minilm)["minilm_tuned"]

    assert accuracy("marker", 0) > 0.65
    clean = np.mean([accuracy("clean", seed) for seed in range(3)])
    assert 0.42 < clean < 0.58, clean
    family = TunedEncoder(load_minilm, EncoderTuning(epochs=1))
    pairs = synthetic_pairs("marker", 120, 1)
    pos = family.features(pairs["positive"].to_list(), {})
    neg = family.features(pairs["negative"].to_list(), {})
    first, second = family.fit(pos[:80], neg[:80], 3), family.fit(pos[:80], neg[:80], 3)
    d = first(pos[80:], neg[80:])
    assert np.array_equal(d, second(pos[80:], neg[80:]))
    np.testing.assert_allclose(first(neg[80:], pos[80:]), -d, atol=1e-6)
    with pytest.raises(ValueError, match="tuned.layers must be 1..6"):
        TunedEncoder(load_minilm, EncoderTuning(layers=7)).features(["a red cube"], {})
