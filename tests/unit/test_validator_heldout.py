"""The LLM pair validator on outputs it was not developed on: the held-out labelled set
tests/fixtures/validator/heldout.jsonl (see its README: new scenes, written apart from
pairs.jsonl and before the markup, quote and article checks were written)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from vlcomp.negatives.llm.sugarcrepe import FAMILY_TARGETS
from vlcomp.negatives.llm.validate import ARTICLE, TEXT_REASONS, PairValidator
from vlcomp_dev import llm_precision

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "validator"
HELDOUT = FIXTURES / "heldout.jsonl"
MAX_FALSE_ACCEPTS = 0.02
MAX_FALSE_REJECTS = 0.03  # the aim; not met yet (test_false_reject_aim)
NEW_KINDS = {"quoted", "markdown", "list_marker", "label_prefix", "article", "explanation"}
# Valid rows the validator rejects for limits of the parser and of WordNet, none of them a
# check of this set's failure kinds (README: "Measured"); line -> cause.
KNOWN_FALSE_REJECTS = {
    6: '"X-ray" parsed as three nouns',
    11: 'tagger reads "oxen" as singular',
    14: 'tagger reads "geese" as an adjective',
    17: '"highway" is a WordNet hyponym of "road": a synonym by the rule',
    42: '"one-way" parsed with "way" as an object',
    44: '"FBI" parsed as an object',
    50: '"canvas" parsed as an object',
}


@pytest.fixture(scope="module")
def judged() -> pl.DataFrame:
    validator: PairValidator = llm_precision.default_validator()
    return llm_precision.judge(llm_precision.load_labelled(HELDOUT), validator)


def test_heldout_is_apart_from_the_fixture_and_covers_every_family() -> None:
    rows = llm_precision.load_labelled(HELDOUT)
    fixture = llm_precision.load_labelled(FIXTURES / "pairs.jsonl")
    assert rows.height >= 150
    assert rows["valid"].mean() >= 0.40
    assert rows.select("positive", "negative", "family", "target").is_duplicated().sum() == 0
    seen = {p.lower().rstrip(".") for p in fixture["positive"]}
    assert not [p for p in rows["positive"] if p.lower().rstrip(".") in seen]
    for family, target in FAMILY_TARGETS:
        part = rows.filter((pl.col("family") == family) & (pl.col("target") == target))
        assert part["valid"].sum() >= 10, (family, target)
        missing = NEW_KINDS - set(part["category"])
        assert not missing, (family, target, missing)


def test_false_accepts_stay_under_the_target(judged: pl.DataFrame) -> None:
    matrix = llm_precision.confusion(judged)
    for row in llm_precision.by_family(matrix).iter_rows(named=True):
        assert row["fa_rate"] <= MAX_FALSE_ACCEPTS, row
    for row in llm_precision.by_category(matrix).iter_rows(named=True):
        assert row["fa_rate"] <= MAX_FALSE_ACCEPTS, row


def test_false_rejects_are_only_the_known_limits(judged: pl.DataFrame) -> None:
    rejected = judged.filter(pl.col("valid") & ~pl.col("accepted"))
    # no good output is rejected by the text checks or the article check
    assert not rejected.filter(pl.col("reason").is_in([*TEXT_REASONS, ARTICLE])).height
    new = sorted(set(rejected["line"]) - set(KNOWN_FALSE_REJECTS))
    assert not new, rejected.filter(pl.col("line").is_in(new)).select("line", "negative", "reason")


@pytest.mark.xfail(
    strict=True,
    reason="7 of 95 good outputs are rejected (7.4 %) for parser and WordNet limits "
    "(KNOWN_FALSE_REJECTS); remove this mark when they are fixed",
)
def test_false_reject_aim(judged: pl.DataFrame) -> None:
    overall = llm_precision.by_family(llm_precision.confusion(judged)).row(-1, named=True)
    assert overall["task"] == "all"
    assert overall["fr_rate"] <= MAX_FALSE_REJECTS, overall
