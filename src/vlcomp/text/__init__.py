"""The text layer: the one place that says how words are cut, compared and inflected.

Every stage goes through it, so that the corpus side (parsed captions) and the evaluation
side (Visual Genome annotations, parsed COCO captions, imported benchmarks) agree on what
counts as "the same" word:

- ``normalise``: the comparison form of a value (curly apostrophes made straight,
  case-folded, whitespace collapsed); ``normalise_or_none`` gives ``None`` for a blank one.
- ``words`` / ``word_spans``: word tokens. A word is a run of letters and digits that may
  hold inner apostrophes and hyphens ("man's", "t-shirt", "don't"); other punctuation,
  spaced dashes and separators split.
- ``plural``, ``indefinite_article``: inflection for generated text ("an hour", "an FBI
  agent", "a U-turn", "an 8"); ``settled_indefinite_article`` says where the spelling
  leaves "a"/"an" open (the validator judges only the others).
- ``Lemmatizer`` (``vlcomp.text.lemma``): the parser's lemmatiser, the only one.
- ``GraphCanon`` (``vlcomp.text.canon``): annotated scene graphs (Visual Genome) in the
  parser's canonical form: object lemmas, attribute values, predicates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .lexicon import IRREGULAR, KEEP_AS_IS

TEXT_LAYER_VERSION = "2"

# Apostrophe look-alikes (right/left single quotation mark, modifier letter apostrophe,
# prime, grave): one character each, so offsets survive the mapping.
APOSTROPHE_LOOKALIKES = "\u2019\u2018\u02bc\u2032`"
_APOSTROPHES = str.maketrans({c: "'" for c in APOSTROPHE_LOOKALIKES})
WORD_PATTERN = r"[^\W_]+(?:['-][^\W_]+)*"
_WORD = re.compile(WORD_PATTERN)


def straight_apostrophes(text: str) -> str:
    """``text`` with apostrophe look-alikes as ``'`` (same length)."""
    return text.translate(_APOSTROPHES)


def collapse_spaces(text: str) -> str:
    """``text`` with each run of whitespace as one space, trimmed: the display form of
    generated text (case and apostrophes kept; ``normalise`` gives the comparison form)."""
    return " ".join(text.split())


def normalise(text: str) -> str:
    """Comparison form: straight apostrophes, case-folded, whitespace collapsed.

    (``str.split`` also splits on the ASCII separator controls \\x1c-\\x1f, so they never
    survive.)"""
    return " ".join(straight_apostrophes(str(text)).casefold().split())


def normalise_or_none(value: object) -> str | None:
    """``normalise`` of a string; ``None`` for a missing, non-string or blank value."""
    if not isinstance(value, str):
        return None
    return normalise(value) or None


def word_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """(lower-case word, start, end) of each word of ``text`` (see module docstring)."""
    for m in _WORD.finditer(straight_apostrophes(text)):
        yield m.group(0).lower(), m.start(), m.end()


def words(text: str) -> list[str]:
    """Lower-case words of ``text``."""
    return _WORD.findall(straight_apostrophes(text).lower())


def distinct_words(text: str) -> int:
    """How many different words ``text`` holds (``words``)."""
    return len(set(words(text)))


_PLURALS = {singular: plural for plural, singular in reversed(IRREGULAR.items())}


def plural(noun: str) -> str:
    """English plural of a singular noun; only the last word changes ("tennis ball" ->
    "tennis balls", "man" -> "men", "box" -> "boxes", "sheep" -> "sheep")."""
    head, _, last = noun.rpartition(" ")
    lower = last.lower()
    if lower in _PLURALS:
        word = _PLURALS[lower]
    elif lower in KEEP_AS_IS:
        word = lower
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        word = lower + "es"
    elif lower.endswith("y") and lower[-2:-1] not in "aeiou":
        word = lower[:-1] + "ies"
    else:
        word = lower + "s"
    if last[:1].isupper():
        word = word[:1].upper() + word[1:]
    return f"{head} {word}" if head else word


_VOWEL_SOUND_CONSONANT = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_VOWEL = (
    "uni",
    "use",
    "usu",
    "uti",
    "ute",
    "ura",
    "uri",
    "uro",
    "one",
    "once",
    "eu",
    "ewe",
)
# Letters whose name starts with a vowel sound: "an F", "an H", "an R".
_VOWEL_LETTERS = frozenset("aefhilmnorsx")
_DIGITS = re.compile(r"\d+")
# A letter read by its name: a single letter ("X-ray", "U-turn") or two or three capitals
# ("FBI", "SUVs").
_LETTERS = re.compile(r"[A-Za-z](?![^\W\d_])|[A-Z]{2,3}s?\b")
_LONG_ACRONYM = re.compile(r"[A-Z]{4,}s?\b")
_EITHER_ARTICLE = frozenset({"herb", "herbs", "herbal", "historic", "historical"})


def settled_indefinite_article(next_word: str) -> str | None:
    """ "a" or "an" before ``next_word`` as written, or None where the spelling leaves the
    sound open.

    By sound where the spelling misleads ("an hour", "a uniform", "a one-way sign"); a
    single letter or an acronym of two or three capitals by its first letter's name ("an
    X-ray", "an FBI agent", "an SUV", "a U-turn", "a TV"); a numeral by its first spoken
    word ("an 8", "an 11", "an 18th", "a 1", "a 100"). Open: longer acronyms (NASA is read
    as a word, HDMI letter by letter), numbers of four digits from 11 or 18 ("an 1800s
    house" or "a 1800s house"), and "herb", "historic", "historical" (either article is in
    use)."""
    digits = _DIGITS.match(next_word)
    if digits is not None:
        number = digits.group(0)
        if number[0] == "8":
            return "an"
        if number[:2] in ("11", "18"):  # eleven, eighteen; eleven/eighteen thousand
            return {2: "an", 5: "an", 4: None}.get(len(number), "a")
        return "a"
    if _LETTERS.match(next_word):
        return "an" if next_word[0].lower() in _VOWEL_LETTERS else "a"
    if _LONG_ACRONYM.match(next_word) or next_word.lower() in _EITHER_ARTICLE:
        return None
    return _article_by_spelling(next_word)


def _article_by_spelling(next_word: str) -> str:
    word = next_word.lower()
    vowel = word[:1] in ("a", "e", "i", "o", "u") and not word.startswith(_CONSONANT_SOUND_VOWEL)
    vowel = vowel or word.startswith(_VOWEL_SOUND_CONSONANT)
    return "an" if vowel else "a"


def indefinite_article(next_word: str, like: str = "a") -> str:
    """ "a" or "an" before ``next_word`` (``settled_indefinite_article``; where that leaves
    the sound open, a four-digit number is read in hundreds, "an 1800s house", and a word
    by its spelling, "a NASA rocket", "a herb"), capitalised like ``like``."""
    wanted = settled_indefinite_article(next_word)
    if wanted is None:
        wanted = "an" if _DIGITS.match(next_word) else _article_by_spelling(next_word)
    return wanted.capitalize() if like[:1].isupper() else wanted


__all__ = [
    "distinct_words",
    "APOSTROPHE_LOOKALIKES",
    "TEXT_LAYER_VERSION",
    "WORD_PATTERN",
    "collapse_spaces",
    "indefinite_article",
    "normalise",
    "normalise_or_none",
    "plural",
    "settled_indefinite_article",
    "straight_apostrophes",
    "word_spans",
    "words",
]
