"""Caption screening: which raw captions a loader accepts, and why it rejects the others.

A caption is normalised (whitespace runs, tabs and newlines become one space; leading and
trailing space removed) and then checked, in this order; the first failing check is the
rejection reason:

=================  =====================================================================
reason             rule
=================  =====================================================================
missing_field      no text at all (null cell, absent JSON key, non-string value)
control_chars      a control character other than whitespace (C0 except tab/newline/
                   vertical tab/form feed/carriage return, DEL, C1)
bad_encoding       U+FFFD in the text (a decoder already replaced invalid bytes)
empty              nothing left after whitespace normalisation
too_long           more than ``max_chars`` characters or ``max_tokens`` whitespace tokens
no_letters         no alphabetic character at all ("12345", "!!!")
non_english        the cheap language heuristic below says "not English"
=================  =====================================================================

The non-English heuristic (no language model; meant to drop the obvious cases):

1. *script*: of the alphabetic characters, fewer than ``min_ascii_letter_share`` are ASCII
   letters (catches CJK, Cyrillic, Arabic, Greek, heavily accented text);
2. *function words*: the caption's words (lower-cased, punctuation removed) include at
   least ``min_foreign_stopwords`` distinct common function words of German, French,
   Spanish, Italian, Portuguese or Dutch (``FOREIGN_STOPWORDS``; words that are also English,
   such as "die", "van", "do", "de", are left out), and more of them than distinct English
   function words (``ENGLISH_STOPWORDS``).

Short noun-phrase captions ("red circle", "Blue Star Icon") have no function words and
pass; so do names with one foreign word ("La La Land", "Tour de France"). Both rules can
be switched off with ``english: false``.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

REASONS: tuple[str, ...] = (
    "missing_field",
    "control_chars",
    "bad_encoding",
    "empty",
    "too_long",
    "no_letters",
    "non_english",
)

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """a an the of in on at to for from with by and or but is are was were be been being
    this that these those it its his her their there here near next under over above below
    behind beside between into onto out up down off while has have had not no as some two
    three four five one who which what where when very""".split()
)

FOREIGN_STOPWORDS: frozenset[str] = frozenset(
    # German
    """der und mit ein eine einem einer eines das dem des ist auf nicht sich zum zur vom
    im bei auch oder wie nach ich wir sie ihr
    """
    # French
    """le la les des du un et est une avec dans sur au aux ce cette qui que nous vous sont
    """
    # Spanish
    """el los las del con y por para es al una uno su sus muy
    """
    # Italian
    """il della delle dello degli di gli nel nella alla sono che questo questa
    """
    # Portuguese
    """os da das dos em com um uma não são
    """
    # Dutch
    """het een en op zijn niet ook voor naar""".split()
)

# C0 controls except \t \n \v \f \r, DEL and C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_ASCII_LETTER = re.compile("[A-Za-z]")
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation})


class RulesError(ValueError):
    """An invalid caption-rule setting (the message names the key)."""


@dataclass(frozen=True)
class CaptionRules:
    """Settings of ``screen``; ``None`` switches a length limit off."""

    max_chars: int | None = 1000
    max_tokens: int | None = 200
    english: bool = True
    min_ascii_letter_share: float = 0.8
    min_foreign_stopwords: int = 2
    raw_chars: int = 300  # how much of an offending text the rejected-rows table keeps

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> CaptionRules:
        """Build from a config mapping; unknown keys and bad values raise ``RulesError``."""
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise RulesError(f"rules: unknown key(s) {unknown} (known: {sorted(known)})")
        rules = cls(**options)
        for name in ("max_chars", "max_tokens"):
            value = getattr(rules, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise RulesError(f"rules.{name}: must be a positive integer or null, got {value!r}")
        if not 0.0 <= rules.min_ascii_letter_share <= 1.0:
            raise RulesError("rules.min_ascii_letter_share: must lie in [0, 1]")
        if rules.min_foreign_stopwords < 1 or rules.raw_chars < 0:
            raise RulesError("rules.min_foreign_stopwords >= 1 and rules.raw_chars >= 0 required")
        return rules


def truncate(raw: Any, limit: int) -> str | None:
    """``raw`` as text (JSON for structured values) cut to ``limit`` characters; an ellipsis
    marks the cut. None stays None."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, bytes):
        text = raw.decode("utf-8", errors="replace")
    else:
        text = json.dumps(raw, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _letter_share(text: str) -> tuple[int, float]:
    """(number of letters, share of them that are ASCII)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0, 0.0
    return len(letters), sum(c.isascii() for c in letters) / len(letters)


def looks_non_english(text: str, rules: CaptionRules) -> bool:
    """The cheap heuristic of the module docstring, on normalised ``text``."""
    if not text.isascii():
        _, share = _letter_share(text)
        if share < rules.min_ascii_letter_share:
            return True
    words = set(text.lower().translate(_PUNCTUATION).split())
    foreign = len(FOREIGN_STOPWORDS.intersection(words))
    if foreign < rules.min_foreign_stopwords:
        return False
    return foreign > len(ENGLISH_STOPWORDS.intersection(words))


def screen(text: Any, rules: CaptionRules) -> tuple[str | None, str | None]:
    """(normalised text, None) for an accepted caption, else (None, reason)."""
    if not isinstance(text, str):
        return None, "missing_field"
    if _CONTROL.search(text):
        return None, "control_chars"
    if "\ufffd" in text:
        return None, "bad_encoding"
    words = text.split()
    if not words:
        return None, "empty"
    clean = " ".join(words)
    if (rules.max_chars is not None and len(clean) > rules.max_chars) or (
        rules.max_tokens is not None and len(words) > rules.max_tokens
    ):
        return None, "too_long"
    if clean.isascii():
        if not _ASCII_LETTER.search(clean):
            return None, "no_letters"
    elif _letter_share(clean)[0] == 0:
        return None, "no_letters"
    if rules.english and looks_non_english(clean, rules):
        return None, "non_english"
    return clean, None
