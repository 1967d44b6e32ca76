"""The validator's checks for what a model wraps around or slips into its answer: markdown and
list markup, quotation marks, labels ("Negative:"), explanations, and "a"/"an" before the
wrong sound (vlcomp.negatives.llm.validate.text and .grammar), on pairs and on productivity
captions. The cases here are not rows of the labelled fixtures."""

from __future__ import annotations

import pytest

from vlcomp.negatives.llm import prompts as pr
from vlcomp.negatives.llm.validate import (
    ARTICLE,
    EXPLANATION,
    FRAMING,
    MARKUP,
    QUOTES,
    PairCheck,
    PairValidator,
    ProductivityValidator,
    article_for,
    asides,
    english_rules,
    framing,
    markup,
    quote_marks,
    text_reason,
)
from vlcomp_dev import llm_precision


@pytest.fixture(scope="module")
def validator() -> PairValidator:
    return llm_precision.default_validator()


def reason(validator: PairValidator, family: str, target: str, pos: str, neg: str) -> str | None:
    (out,) = validator.check([PairCheck(pos, neg, family, target)])
    return out


# ----------------------------------------------------------------- counting


@pytest.mark.parametrize(
    "text,marks",
    [
        ("A goat on a rock.", 0),
        ("**A goat on a rock.**", 4),
        ("A goat on a *wet* rock.", 2),
        ("A goat on a __wet__ rock.", 4),
        ("`A goat on a rock.`", 2),
        ("A goat that don`t climb.", 0),  # a backtick as an apostrophe
        ("- A goat on a rock.", 1),
        ("\u2022 A goat on a rock.", 1),
        ("3. A goat on a rock.", 1),
        ("(b) A goat on a rock.", 1),
        ("> A goat on a rock.", 1),
        ("## A goat on a rock.", 2),
        ("2 goats on a rock.", 0),
        ("1.5 liter bottle on a rock.", 0),
        ("A player wearing a #7 shirt.", 1),
    ],
)
def test_markup_marks(text: str, marks: int) -> None:
    assert markup(text) == marks


@pytest.mark.parametrize(
    "text,marks",
    [
        ("A goat on a rock.", 0),
        ('"A goat on a rock."', 2),
        ("\u201cA goat on a rock.\u201d", 2),
        ("\u201eA goat on a rock.\u201c", 2),
        ("\u00abA goat on a rock.\u00bb", 2),
        ("\u300cA goat on a rock.\u300d", 2),
        ("'A goat on a rock.'", 2),
        ("\u2018A goat on a rock.\u2019", 2),
        ("'Two goats on the rocks'", 1),  # the closing mark reads as a plural's apostrophe
        ("A farmer's goat on a rock.", 0),
        ("A farmer\u2019s goat on a rock.", 0),
        ("The goats' rock.", 0),
        ("A goat that doesn't climb.", 0),
        ('A sign that reads "Goats" on a rock.', 2),
    ],
)
def test_quote_marks(text: str, marks: int) -> None:
    assert quote_marks(text) == marks


@pytest.mark.parametrize(
    "text,n",
    [
        ("A goat on a rock.", 0),
        ("A goat on a U.S. stamp.", 0),
        ("A well-known goat on a rock.", 0),
        ("A goat on a rock. The sheep became a goat.", 1),
        ("A goat on a rock (sheep -> goat).", 1),
        ("A goat on a rock [changed].", 1),
        ("A goat on a rock - changed the animal.", 1),
        ("A goat on a rock \u2014 changed the animal.", 1),
        ("A goat on a rock.\n\nExplanation: changed the animal.", 1),
    ],
)
def test_asides(text: str, n: int) -> None:
    assert asides(text) == n


def test_labels_are_framing() -> None:
    assert framing("Negative: A goat on a rock.") == (("negative",), ())
    assert framing("New caption: a goat on a rock") == (("new caption",), ())
    assert framing("Modified caption - A goat on a rock.") == (("modified caption",), ())
    assert framing("Here is the new caption: A goat on a rock.") == (
        ("here is", "the new caption"),
        (),
    )
    assert framing("A goat - happy - on a rock.") == ((), ())
    assert framing("A goat on a rock.") == ((), ())
    assert framing("A clock showing 10:30 above a goat.") == ((), ())
    assert framing("A sign reading: goats crossing.") == ((), ())


# ----------------------------------------------------------------- the text checks

GOAT = "A white goat standing on a rock."


@pytest.mark.parametrize(
    "negative,expected",
    [
        ("A black goat standing on a rock.", None),
        ('"A black goat standing on a rock."', QUOTES),
        ("'A black goat standing on a rock.'", QUOTES),
        ("A \u201cblack\u201d goat standing on a rock.", QUOTES),
        ("**A black goat standing on a rock.**", MARKUP),
        ("A _black_ goat standing on a rock.", MARKUP),
        ("`A black goat standing on a rock.`", MARKUP),
        ("1) A black goat standing on a rock.", MARKUP),
        ("Negative: A black goat standing on a rock.", FRAMING),
        ("Hard negative caption: A black goat standing on a rock.", FRAMING),
        ("Output \u2014 A black goat standing on a rock.", FRAMING),
        ("A black goat standing on a rock. Only the colour changed.", EXPLANATION),
        ("A black goat standing on a rock (was white).", EXPLANATION),
    ],
)
def test_text_checks_of_a_pair(negative: str, expected: str | None) -> None:
    assert text_reason(negative, 300, english_rules(), GOAT) == expected


def test_what_the_positive_has_is_its_own() -> None:
    rules = english_rules()
    pos = 'A sign that reads "Goats" next to a white goat.'
    assert text_reason('A sign that reads "Goats" next to a black goat.', 300, rules, pos) is None
    assert text_reason('"A sign that reads "Goats" next to a black goat."', 300, rules, pos) == (
        QUOTES
    )
    pos = "Answer: a white goat on a rock (left)."
    assert text_reason("Answer: a black goat on a rock (left).", 300, rules, pos) is None
    pos = "A sign reading: goats crossing, next to a white goat."
    assert (
        text_reason("A board reading: goats crossing, next to a white goat.", 300, rules, pos)
        is None
    )
    pos = "A player wearing a #7 shirt."
    assert text_reason("A player wearing a #9 shirt.", 300, rules, pos) is None


def test_without_a_positive_any_markup_or_quote_is_added() -> None:
    rules = english_rules()
    assert text_reason("A white goat on a rock.", 300, rules) is None
    assert text_reason('"A white goat on a rock."', 300, rules) == QUOTES
    assert text_reason("- A white goat on a rock.", 300, rules) == MARKUP


# ----------------------------------------------------------------- articles


@pytest.mark.parametrize(
    "word,article",
    [
        ("goat", "a"),
        ("igloo", "an"),
        ("hour", "an"),
        ("heir", "an"),
        ("university", "a"),
        ("one", "a"),
        ("one-way", "a"),
        ("European", "a"),
        ("FBI", "an"),
        ("MRI", "an"),
        ("SUVs", "an"),
        ("UFO", "a"),
        ("TV", "a"),
        ("X-ray", "an"),
        ("L-shaped", "an"),
        ("U-turn", "a"),
        ("T-shirt", "a"),
        ("8", "an"),
        ("80-year-old", "an"),
        ("11", "an"),
        ("18th", "an"),
        ("11000", "an"),
        ("110", "a"),
        ("1", "a"),
        ("5-year-old", "a"),
        ("NASA", None),
        ("HDMI", None),
        ("1800s", None),
        ("herb", None),
        ("historic", None),
    ],
)
def test_article_for(word: str, article: str | None) -> None:
    assert article_for(word) == article


@pytest.mark.parametrize(
    "family,target,positive,negative,expected",
    [
        ("replace", "att", "A white goat standing on a rock.",
         "An black goat standing on a rock.", ARTICLE),
        ("replace", "att", "A white goat standing on a rock.",
         "An old goat standing on a rock.", None),
        ("replace", "att", "An old goat standing on a rock.",
         "An young goat standing on a rock.", ARTICLE),
        ("replace", "att", "An old goat standing on a rock.",
         "A young goat standing on a rock.", None),
        ("replace", "obj", "A goat standing next to a barrel.",
         "A goat standing next to a igloo.", ARTICLE),
        ("replace", "obj", "A goat standing next to a barrel.",
         "A goat standing next to an igloo.", None),
        ("replace", "obj", "A nurse holding a tray.", "A nurse holding an MRI scan.", None),
        ("replace", "obj", "A nurse holding a tray.", "A nurse holding a MRI scan.", ARTICLE),
        ("add", "att", "A goat standing on a rock.",
         "A goat standing on a enormous rock.", ARTICLE),
        ("add", "att", "A goat standing on a rock.",
         "A goat standing on an enormous rock.", None),
        ("swap", "att", "An old goat next to a young sheep.",
         "A young goat next to an old sheep.", None),
        ("swap", "att", "An old goat next to a young sheep.",
         "An young goat next to a old sheep.", ARTICLE),
        # a slip the positive already has is not the edit's
        ("add", "att", "A old goat standing on a rock.",
         "A old goat standing on a wet rock.", None),
    ],
)  # fmt: skip
def test_article_before_the_wrong_sound_is_rejected(
    validator: PairValidator, family: str, target: str, positive: str, negative: str, expected
) -> None:
    assert reason(validator, family, target, positive, negative) == expected


def test_productivity_captions_get_the_same_checks(validator: PairValidator) -> None:
    pattern = pr.pattern_from_atoms(
        {"woman": ["old"], "umbrella": ["orange"], "bench": []},
        [["woman", "holding", "umbrella"], ["woman", "on", "bench"]],
    )
    checker = ProductivityValidator(validator.reader, 300)
    captions = [
        "An old woman holding an orange umbrella, and the woman is on a bench.",
        '"An old woman holding an orange umbrella, and the woman is on a bench."',
        "**An old woman holding an orange umbrella, and the woman is on a bench.**",
        "An old woman holding a orange umbrella, and the woman is on a bench.",
    ]
    reasons, _ = checker.check(captions, [pattern] * len(captions))
    assert reasons == [None, QUOTES, MARKUP, ARTICLE]
