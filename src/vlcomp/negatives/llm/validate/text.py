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
``text: markup added``     markdown or list markup the positive lacks (``markup``): emphasis
                           or code marks (``*``, ``_``, a backtick that is no apostrophe,
                           ``~``, ``#``), or a list marker or ``>`` before the text ("- ",
                           "1. ", "2) ", "\u2022 ")
``text: quotes added``     more quotation marks than the positive (``quote_marks``): wrapping
                           quotes of any kind (straight, curly, low, guillemets, corner
                           brackets, single) or quotes around a word
``text: framing added``    the negative starts or ends with framing text ("In this picture we
                           can see", "This image shows", "There is", "A photo of",
                           "Pictured is"; a label such as "Negative:", "New caption:",
                           "Answer:", "Modified caption -"; "in the picture", ", as seen in
                           the image") that the positive does not have (``framing``; pairs
                           only)
``text: explanation        more sentences, or more brackets or spaced dashes, than the
added``                    positive (``asides``): "A dog on a bed. (cat replaced by dog)",
                           "... - swapped the two"; pairs only
=========================  ================================================================

Without a positive (productivity captions) any markup or quotation mark is "added".

Markup and quotes are rejected, not stripped: the validator only judges, and the job writes
the model's own text, so a stripped answer would reach the benchmark only if the job wrote a
text the validator had made; a rejected task is asked again with the next seed instead.
"""

from __future__ import annotations

import re

from vlcomp.ingest.rules import CaptionRules, looks_non_english
from vlcomp.text import collapse_spaces, normalise, straight_apostrophes, words

EMPTY = "text: empty"
EQUAL = "text: equal to the positive"
NON_ENGLISH = "text: non-English"
TOO_LONG = "text: too long"
MARKUP = "text: markup added"
QUOTES = "text: quotes added"
FRAMING = "text: framing added"
EXPLANATION = "text: explanation added"
TEXT_REASONS: tuple[str, ...] = (
    EMPTY,
    EQUAL,
    NON_ENGLISH,
    TOO_LONG,
    MARKUP,
    QUOTES,
    FRAMING,
    EXPLANATION,
)


def same_text(a: str, b: str) -> bool:
    """Equal in the text layer's comparison form (case, whitespace, apostrophes)."""
    return normalise(a) == normalise(b)


_FRAME_NOUN = r"(?:picture|image|photo|photograph|pic|snapshot|shot|scene)"
_FRAME_NOUN_END = r"(?:picture|image|photo|photograph|pic|snapshot)"
_LABEL_NOUN = (
    r"(?:caption|sentence|negative|answer|output|result|response|version|description|text)"
)
_FRAMING_PREFIX = re.compile(
    r"^(?:"
    rf"(?:in|on) (?:this|the) {_FRAME_NOUN}"
    rf"|(?:this|the) {_FRAME_NOUN} (?:shows|depicts|features|contains|displays|captures|is of)"
    r"|(?:here|there) (?:we|you) (?:can )?see|(?:we|you|i) (?:can )?see"
    r"|there (?:is|are)|here (?:is|are)|(?:this|it) is|these are|pictured (?:here )?(?:is|are)"
    rf"|(?:an? )?(?:close-?up |closeup |black and white |colou?r )?{_FRAME_NOUN} "
    r"(?:of|showing|shows)"
    r"|(?:an? )?(?:close-?up|closeup|view) of"
    # a label: one word or a phrase ending in a label noun, then a colon or a spaced dash
    # ("negative:", "new caption:", "modified caption -"; not "10:30", "a sign reading:")
    r"|[\w'-]+(?= ?:(?:\s|$))"
    rf"|(?:[\w'-]+ ){{0,3}}{_LABEL_NOUN}(?= ?(?::|[-\u2013\u2014])(?:\s|$))"
    r")\b[\s,:\-\u2013\u2014]*"
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
        prefixes.append(m.group(0).strip(" ,:-\u2013\u2014"))
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


# Emphasis and code marks; a backtick between two letters is an apostrophe ("don`t").
_MARKUP_MARK = re.compile(r"[*_~#]|(?<![^\W_])`|`(?![^\W_])")
_LIST_MARKER = re.compile(
    r"^(?:[-+*>\u2022\u2023\u25e6\u25aa\u00b7\u2013\u2014]|\(?\d{1,3}[.)]|\([a-z]\))\s"
)
_DOUBLE_QUOTES = '"\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u300c\u300d\u300e\u300f\uff02'
_SINGLE_QUOTES = re.compile(r"['\u2018\u2019\u201a\u201b]")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[^\s\w]*[A-Z0-9])")
_ASIDE = re.compile(r"[(\[{]|\s[-\u2013\u2014]+\s")


def markup(text: str) -> int:
    """Markdown and list marks in ``text``: emphasis and code marks, and a list marker (or
    "> ") at its start."""
    return len(_MARKUP_MARK.findall(text)) + bool(_LIST_MARKER.match(text.lstrip()))


def _letter(text: str, at: int) -> bool:
    return 0 <= at < len(text) and text[at].isalnum()


def quote_marks(text: str) -> int:
    """Quotation marks in ``text``: double quotes of every kind, and single quotes but
    apostrophes: inside a word ("man's", "don\u2019t") or after a plural's s ("the dogs'
    bowl")."""
    singles = 0
    for m in _SINGLE_QUOTES.finditer(text):
        k = m.start()
        inside = _letter(text, k - 1) and _letter(text, k + 1)
        possessive = text[k - 1 : k] in ("s", "S") and not _letter(text, k + 1)
        singles += not (inside or possessive)
    return sum(text.count(c) for c in _DOUBLE_QUOTES) + singles


def asides(text: str) -> int:
    """Sentences after the first (a full stop, ! or ? followed by a capital or a digit),
    brackets and spaced dashes: where a model explains its answer."""
    return len(_SENTENCE_END.findall(text.strip())) + len(_ASIDE.findall(text))


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
    if markup(clean) > (markup(positive) if positive is not None else 0):
        return MARKUP
    if quote_marks(clean) > (quote_marks(positive) if positive is not None else 0):
        return QUOTES
    if positive is not None and framing_added(clean, positive):
        return FRAMING
    if positive is not None and asides(clean) > asides(positive):
        return EXPLANATION
    return None


def english_rules() -> CaptionRules:
    """The ingest screening's language rule, length limits off (checked separately)."""
    return CaptionRules(max_chars=None, max_tokens=None, english=True)
