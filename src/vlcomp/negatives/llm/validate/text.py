"""Text checks of every LLM output, before any parse (in this order; the first failing one is
the rejection reason; pairs only: checked against the positive):

=========================  ================================================================
reason                     rule
=========================  ================================================================
``text: empty``            nothing but whitespace (or no answer text at all)
``text: equal to the       the negative has the positive's words (``vlcomp.text.words``: case,
positive``                 punctuation, whitespace and apostrophe look-alikes ignored; pairs
                           only)
``text: non-English``      the ingest screening heuristic (``vlcomp.ingest.rules``: script
                           share and foreign function words) says "not English"
``text: too long``         more than ``max_chars`` characters after whitespace normalisation
``text: framing added``    the negative starts or ends with framing text ("In this picture we
                           can see", "This image shows", "There is", "A photo of",
                           "Pictured is"; "in the picture", ", as seen in the image") that
                           the positive does not have (``framing``; pairs only)
=========================  ================================================================
"""

from __future__ import annotations

import re

from vlcomp.ingest.rules import CaptionRules, looks_non_english
from vlcomp.text import collapse_spaces, normalise, straight_apostrophes, words

EMPTY = "text: empty"
EQUAL = "text: equal to the positive"
NON_ENGLISH = "text: non-English"
TOO_LONG = "text: too long"
FRAMING = "text: framing added"
TEXT_REASONS: tuple[str, ...] = (EMPTY, EQUAL, NON_ENGLISH, TOO_LONG, FRAMING)


def same_text(a: str, b: str) -> bool:
    """Equal in the text layer's comparison form (case, whitespace, apostrophes)."""
    return normalise(a) == normalise(b)


_FRAME_NOUN = r"(?:picture|image|photo|photograph|pic|snapshot|shot|scene)"
_FRAME_NOUN_END = r"(?:picture|image|photo|photograph|pic|snapshot)"
_FRAMING_PREFIX = re.compile(
    r"^(?:"
    rf"(?:in|on) (?:this|the) {_FRAME_NOUN}"
    rf"|(?:this|the) {_FRAME_NOUN} (?:shows|depicts|features|contains|displays|captures|is of)"
    r"|(?:here|there) (?:we|you) (?:can )?see|(?:we|you|i) (?:can )?see"
    r"|there (?:is|are)|here (?:is|are)|(?:this|it) is|these are|pictured (?:here )?(?:is|are)"
    rf"|(?:an? )?(?:close-?up |closeup |black and white |colou?r )?{_FRAME_NOUN} "
    r"(?:of|showing|shows)"
    r"|(?:an? )?(?:close-?up|closeup|view) of"
    r")\b[\s,:]*"
)
_FRAMING_SUFFIX = re.compile(
    r"[\s,]*(?:"
    r"(?:(?:as |is |are )?(?:seen|shown|visible|depicted|pictured|captured) )?"
    rf"(?:in|on|from) (?:the|this) {_FRAME_NOUN_END}"
    r"|(?:is|are) (?:seen|shown|visible|depicted|pictured)|as pictured"
    r")$"
)


def framing(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(framing prefixes, framing suffixes) of ``text``, lower case, in reading order:
    "In this picture we can see a dog." -> (("in this picture", "we can see"), ())."""
    rest = " ".join(straight_apostrophes(text).lower().split()).rstrip(" .!?")
    prefixes: list[str] = []
    while m := _FRAMING_PREFIX.match(rest):
        prefixes.append(m.group(0).strip(" ,:"))
        rest = rest[m.end() :]
    suffixes: list[str] = []
    while (m := _FRAMING_SUFFIX.search(rest)) and m.start() > 0:
        suffixes.insert(0, m.group(0).strip(" ,"))
        rest = rest[: m.start()].rstrip(" .!?")
    return tuple(prefixes), tuple(suffixes)


def framing_added(negative: str, positive: str) -> bool:
    """The negative has framing text at its start or end that the positive lacks."""
    (pre_n, suf_n), (pre_p, suf_p) = framing(negative), framing(positive)
    return bool(set(pre_n) - set(pre_p) or set(suf_n) - set(suf_p))


def text_reason(
    text: str | None, max_chars: int, rules: CaptionRules, positive: str | None = None
) -> str | None:
    """The first text check ``text`` fails (see the module docstring), or None."""
    if text is None or not text.strip():
        return EMPTY
    clean = collapse_spaces(text)
    if positive is not None and (same_text(clean, positive) or words(clean) == words(positive)):
        return EQUAL
    if looks_non_english(clean, rules):
        return NON_ENGLISH
    if len(clean) > max_chars:
        return TOO_LONG
    if positive is not None and framing_added(clean, positive):
        return FRAMING
    return None


def english_rules() -> CaptionRules:
    """The ingest screening's language rule, length limits off (checked separately)."""
    return CaptionRules(max_chars=None, max_tokens=None, english=True)
