"""Precision of the LLM pair validator (vlcomp.negatives.llm.validate.PairValidator) on the
hand-labelled fixture tests/fixtures/validator/pairs.jsonl (see its README), the
measurement module (vlcomp_dev.llm_precision), and one case per new check."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from vlcomp.negatives.llm.sugarcrepe import FAMILY_TARGETS
from vlcomp.negatives.llm.validate import (
    AGREEMENT,
    CLAUSE,
    EQUAL,
    FRAMING,
    NOT_ONE_CHANGE,
    NUMBER,
    SWAP_WORDS,
    SYNONYM,
    VERB_CHANGED,
    EditView,
    PairCheck,
    PairValidator,
    clean_edit,
    framing,
    graph_reason,
)
from vlcomp_dev import llm_precision

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "validator" / "pairs.jsonl"
MAX_FALSE_ACCEPTS = 0.02
MAX_FALSE_REJECTS = 0.05
MIN_ROWS = 15
# every family has these invalid categories; the family-specific ones on top
COMMON = {
    "framing_prefix",
    "framing_suffix",
    "added_clause",
    "number",
    "agreement",
    "two_changes",
    "non_english",
}
SPECIFIC = {
    ("replace", "obj"): {"synonym", "equal", "invented_object"},
    ("replace", "att"): {"synonym", "equal", "invented_object"},
    ("replace", "rel"): {"synonym", "equal", "invented_object"},
    ("swap", "obj"): {"wrong_pair", "equal"},
    ("swap", "att"): {"wrong_pair", "equal"},
    ("add", "obj"): {"equal"},
    ("add", "att"): {"equal", "invented_object"},
}


@pytest.fixture(scope="module")
def validator() -> PairValidator:
    return llm_precision.default_validator()


@pytest.fixture(scope="module")
def matrix(validator: PairValidator) -> pl.DataFrame:
    return llm_precision.measure(FIXTURE, validator)


def reason(validator: PairValidator, family: str, target: str, pos: str, neg: str) -> str | None:
    (out,) = validator.check([PairCheck(pos, neg, family, target)])
    return out


# ----------------------------------------------------------------- the fixture


def test_fixture_covers_every_family_and_category() -> None:
    rows = llm_precision.load_labelled(FIXTURE)
    assert rows.height >= 240
    assert rows.select("positive", "negative", "family", "target").is_duplicated().sum() == 0
    for family, target in FAMILY_TARGETS:
        part = rows.filter((pl.col("family") == family) & (pl.col("target") == target))
        assert part["valid"].sum() >= MIN_ROWS, (family, target)
        assert (~part["valid"]).sum() >= MIN_ROWS, (family, target)
        categories = set(part.filter(~pl.col("valid"))["category"])
        missing = (COMMON | SPECIFIC[(family, target)]) - categories
        assert not missing, (family, target, missing)


def test_validator_meets_the_precision_targets(matrix: pl.DataFrame) -> None:
    families = llm_precision.by_family(matrix)
    overall = families.filter(pl.col("task") == "all").row(0, named=True)
    assert overall["valid_n"] + overall["invalid_n"] == matrix["n"].sum()
    assert overall["fa_rate"] <= MAX_FALSE_ACCEPTS, overall
    assert overall["fr_rate"] <= MAX_FALSE_REJECTS, overall
    for row in families.iter_rows(named=True):
        assert row["fa_rate"] <= MAX_FALSE_ACCEPTS, row
        assert row["fr_rate"] <= MAX_FALSE_REJECTS, row
    for row in llm_precision.by_category(matrix).iter_rows(named=True):
        assert row["fa_rate"] <= MAX_FALSE_ACCEPTS, row


def test_confusion_counts_add_up(validator: PairValidator, tmp_path: Path) -> None:
    # deliberately mislabelled rows 2 and 4, so that each kind of error is counted
    lines = [
        ("A black cat on a red couch.", "A black dog on a red couch.", "valid"),
        ("A black cat on a red couch.", "A black dog on a red bed.", "valid"),
        ("A black cat on a red couch.", "This image shows a black dog on a red couch.", "x"),
        ("A black cat on a red couch.", "A black horse on a red couch.", "two_changes"),
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(
                {"positive": p, "negative": n, "family": "replace", "target": "obj",
                 "category": c, "valid": c == "valid"}
            )
            for p, n, c in lines
        )
        + "\n"
    )  # fmt: skip
    judged = llm_precision.judge(llm_precision.load_labelled(path), validator)
    assert judged["accepted"].to_list() == [True, False, False, True]
    matrix = llm_precision.confusion(judged)
    valid = matrix.filter(pl.col("category") == "valid").row(0, named=True)
    assert (valid["n"], valid["accepted"], valid["false_rejects"]) == (2, 1, 1)
    assert matrix["false_accepts"].sum() == 1
    table = llm_precision.by_family(matrix).row(0, named=True)
    assert table["fr_rate"] == 0.5 and table["fa_rate"] == 0.5


def test_command_prints_the_tables(tmp_path: Path, capsys) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps(
            {"positive": "A black cat on a red couch.", "negative": "A black guy on a red couch.",
             "family": "replace", "target": "obj", "category": "synonym", "valid": False}
        )
        + "\n"
    )  # fmt: skip
    assert llm_precision.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "replace_obj" in out and "false_accepts" in out and "synonym" in out


@pytest.mark.parametrize(
    "line,message",
    [
        ("not json", r"pairs.jsonl:2: not JSON"),
        ('["a list"]', r"pairs.jsonl:2: expected a JSON object"),
        ('{"positive": "A cat."}', r"pairs.jsonl:2: 'negative' must be a str"),
        (
            '{"positive": "a", "negative": "b", "family": "swap", "target": "rel", '
            '"category": "valid", "valid": true}',
            r"pairs.jsonl:2: unknown family/target swap/rel",
        ),
        (
            '{"positive": "a", "negative": "b", "family": "swap", "target": "obj", '
            '"category": "number", "valid": true}',
            r"pairs.jsonl:2: category 'number' with valid=True",
        ),
    ],
)
def test_bad_rows_name_file_line_and_reason(tmp_path: Path, line: str, message: str) -> None:
    good = {
        "positive": "A cat.", "negative": "A dog.", "family": "replace", "target": "obj",
        "category": "valid", "valid": True,
    }  # fmt: skip
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(good) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        llm_precision.load_labelled(path)


def test_missing_or_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing.jsonl"):
        llm_precision.load_labelled(tmp_path / "nothing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="empty.jsonl: no labelled rows"):
        llm_precision.load_labelled(tmp_path / "empty.jsonl")


# ----------------------------------------------------------------- the checks

CAT = "A black cat sleeping on a red couch."


def test_framing_is_read_at_both_ends() -> None:
    assert framing("In this picture we can see a dog, as seen in the image.") == (
        ("in this picture", "we can see"),
        ("as seen in the image",),
    )
    assert framing("A dog looking at a picture of a cat.") == ((), ())


def test_framing_prefix_or_suffix_the_positive_lacks_is_rejected(validator) -> None:
    neg = "In this picture we can see a black dog sleeping on a red couch."
    assert reason(validator, "replace", "obj", CAT, neg) == FRAMING
    neg = "A gray cat sleeping on a red couch, as seen in the image."
    assert reason(validator, "replace", "att", CAT, neg) == FRAMING
    neg = "There is a red cat sleeping on a black couch."
    assert reason(validator, "swap", "att", CAT, neg) == FRAMING
    # the same framing on both sides is the caption's own
    pos, neg = "A photo of a black cat on a red couch.", "A photo of a gray cat on a red couch."
    assert reason(validator, "replace", "att", pos, neg) is None


def test_equal_ignores_punctuation(validator) -> None:
    assert reason(validator, "replace", "obj", CAT, "a black cat sleeping on a red couch") == EQUAL


def test_number_disagreement(validator) -> None:
    pos = "Two dogs chasing a ball."
    assert reason(validator, "replace", "obj", pos, "Two cat chasing a ball.") == NUMBER
    assert reason(validator, "replace", "obj", pos, "Two cats chasing a ball.") is None
    pos = "A man riding a brown horse."
    assert reason(validator, "replace", "att", pos, "A man riding a white horses.") == NUMBER
    pos = "Three sheep grazing on a hill."  # invariant plural
    assert reason(validator, "replace", "obj", pos, "Three goats grazing on a hill.") is None


def test_subject_verb_agreement(validator) -> None:
    pos = "A man is riding a brown horse."
    assert reason(validator, "replace", "obj", pos, "A man are riding a brown camel.") == AGREEMENT
    pos = "The horse is eating hay in the barn."
    neg = "The horse and a goat is eating hay in the barn."  # coordinated subject
    assert reason(validator, "add", "obj", pos, neg) == AGREEMENT
    # a slip the positive already has is not the edit's
    pos = "A man are riding a brown horse."
    assert reason(validator, "replace", "obj", pos, "A woman are riding a brown horse.") is None


def test_added_clause_and_changed_verb(validator) -> None:
    neg = "A gray cat sleeping on a red couch, and it is purring."
    assert reason(validator, "replace", "att", CAT, neg) == CLAUSE
    walking = "A woman walking a small dog down the sidewalk."
    neg = "A woman walked a small goat down the sidewalk."
    assert reason(validator, "replace", "obj", walking, neg) == VERB_CHANGED
    # replace_rel may change the verb (not its tense), and a preposition may become one
    neg = "A woman carrying a small dog down the sidewalk."
    assert reason(validator, "replace", "rel", walking, neg) is None
    neg = "A woman carried a small dog down the sidewalk."
    assert reason(validator, "replace", "rel", walking, neg) == VERB_CHANGED
    pos = "A giraffe next to a tall tree."
    assert reason(validator, "replace", "rel", pos, "A giraffe eating a tall tree.") is None


def test_synonyms_are_no_hard_negatives(validator) -> None:
    pos = "An old man reading a book."
    assert reason(validator, "replace", "obj", pos, "An old guy reading a book.") == SYNONYM
    assert reason(validator, "replace", "obj", pos, "An old woman reading a book.") is None
    pos = "A large dog on a bed."
    assert reason(validator, "replace", "att", pos, "A big dog on a bed.") == SYNONYM
    assert reason(validator, "replace", "att", pos, "A small dog on a bed.") is None
    pos = "A dog sitting next to a bed."
    assert reason(validator, "replace", "rel", pos, "A dog sitting beside a bed.") == SYNONYM
    assert reason(validator, "replace", "rel", pos, "A dog sitting under a bed.") is None


def test_more_than_one_change(validator) -> None:
    neg = "A black dog sleeping quietly on a red couch."
    assert reason(validator, "replace", "obj", CAT, neg) == NOT_ONE_CHANGE
    neg = "A red couch sleeping quietly on a black cat."
    assert reason(validator, "swap", "obj", CAT, neg) == SWAP_WORDS


def views(validator: PairValidator, *texts: str) -> list[EditView]:
    return [EditView.of(t, validator.reader.known_noun) for t in validator.reader.tokens(texts)]


def test_a_clean_edit_overrules_a_parser_slip(validator) -> None:
    """The parser attaches "on a desk" to the laptop in one sentence and to the cat in the
    other: the graphs differ in a relation the edit did not touch."""
    pos = "A black cat sleeping next to a white laptop on a desk."
    neg = "A black cat sleeping next to a white keyboard on a desk."
    graphs = validator.reader.graphs([pos, neg])
    assert graph_reason(*graphs, "replace", "obj") == "graph: relations: changed"
    assert clean_edit(*views(validator, pos, neg), "replace", "obj")
    assert reason(validator, "replace", "obj", pos, neg) is None
    # not clean: two nouns replaced, so the graph's rejection stands
    neg = "A black cat sleeping next to a white keyboard on a bed."
    assert not clean_edit(*views(validator, pos, neg), "replace", "obj")
    assert reason(validator, "replace", "obj", pos, neg) is not None


def test_clean_swaps_move_whole_phrases(validator) -> None:
    pos = "A red fire hydrant in front of a brick wall."
    swapped = "A brick wall in front of a red fire hydrant."
    left_behind = "A fire hydrant in front of a red brick wall."
    assert clean_edit(*views(validator, pos, swapped), "swap", "obj")
    assert not clean_edit(*views(validator, pos, left_behind), "swap", "obj")
    pos = "Two striped cats sleeping on a plaid blanket."  # "plaid": a noun modifier
    neg = "Two plaid cats sleeping on a striped blanket."
    assert clean_edit(*views(validator, pos, neg), "swap", "att")
    assert reason(validator, "swap", "att", pos, neg) is None
