"""Grammar checks of an edited caption, on its parse (``Tokens``): determiners and numerals
that disagree with their noun's number (``number_errors``), "a"/"an" before a word of the
other sound (``article_errors``) and finite verbs that disagree with their subject's number
(``agreement_errors``). They are the first edit checks (``validate.edit``): counts, a
rejection only when the negative has more than the positive (productivity captions: more
than none).

The article a word takes (``article_for``) is ``vlcomp.text.indefinite_article``'s ("an
hour", "a uniform", "a one-way street") but where the spelling is read letter by letter
or as a number: a single letter or an acronym of two or three capitals by its first
letter's name ("an X-ray", "an FBI agent", "an SUV", "a U-turn", "a TV"), a numeral by its
first spoken word ("an 8", "an 11", "an 18", "a 1", "a 100"). Words whose sound the spelling
leaves open are not judged: longer acronyms (NASA is read as a word, HDMI letter by letter),
numbers of four digits from 11 or 18 ("an 1800s house", "a 1100 sign"), and "herb",
"historic", "historical" (either article is in use)."""

from __future__ import annotations

import re

from vlcomp.parse import Tokens
from vlcomp.parse.lexicon import NUMBER_WORDS
from vlcomp.text import indefinite_article, plural
from vlcomp.text.lemma import NOUN_TAGS, PLURAL_NOUN_TAGS

NUMBER = "grammar: number disagreement"
ARTICLE = "grammar: a/an before the wrong sound"
AGREEMENT = "grammar: subject-verb agreement"
SINGULAR_DETERMINERS = frozenset({"a", "an", "one", "another", "each", "every", "this", "that"})
PLURAL_DETERMINERS = frozenset({"these", "those", "several", "many", "both", "multiple"})
SINGULAR_PRONOUNS = frozenset({"he", "she", "it", "this", "that"})
PLURAL_PRONOUNS = frozenset({"they", "we", "you", "these", "those"})
RELATIVE_PRONOUNS = frozenset({"that", "which", "who", "whom"})


def _number(word: str) -> int | None:
    value = NUMBER_WORDS.get(word, word)
    return int(value) if value.isdigit() else None


def _children(tokens: Tokens) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(len(tokens))]
    for k, h in enumerate(tokens.heads):
        if h != k:
            out[h].append(k)
    return out


def number_errors(tokens: Tokens) -> int:
    """Determiners and numerals that disagree with their noun's number ("a dogs")."""
    children = _children(tokens)
    errors = 0
    for i, tag in enumerate(tokens.tags):
        word = tokens.lower[i]
        if tag not in NOUN_TAGS or plural(word) == word:  # invariant: "sheep"
            continue
        for k in children[i]:
            w, dep = tokens.lower[k], tokens.deps[k]
            if dep not in ("det", "nummod", "amod", "quantmod"):
                continue
            if tag in PLURAL_NOUN_TAGS:
                errors += w in SINGULAR_DETERMINERS or _number(w) == 1
            else:
                errors += w in PLURAL_DETERMINERS or (_number(w) or 0) > 1
    return errors


# Letters whose name starts with a vowel sound: "an F", "an H", "an R".
_VOWEL_LETTERS = frozenset("aefhilmnorsx")
_EITHER_ARTICLE = frozenset({"herb", "herbs", "herbal", "historic", "historical"})
_NEXT_WORD = re.compile(r"\s+([^\W_][\w'\u2019-]*)")
_LETTERS = re.compile(r"[A-Za-z](?![^\W\d_])|[A-Z]{2,3}s?\b")  # "X", "X-ray", "FBI", "SUVs"
_LONG_ACRONYM = re.compile(r"[A-Z]{4,}s?\b")


def article_for(word: str) -> str | None:
    """ "a" or "an" before ``word`` as written, or None where its spelling does not settle
    the sound (see the module docstring)."""
    if word[:1].isdigit():
        digits = re.match(r"\d+", word).group(0)  # type: ignore[union-attr]
        if digits[0] == "8":
            return "an"
        if digits[:2] in ("11", "18"):
            return {2: "an", 5: "an", 4: None}.get(len(digits), "a")
        return "a"
    if _LETTERS.match(word):
        return "an" if word[0].lower() in _VOWEL_LETTERS else "a"
    if _LONG_ACRONYM.match(word) or word.lower() in _EITHER_ARTICLE:
        return None
    return indefinite_article(word)


def article_errors(tokens: Tokens) -> int:
    """Articles "a"/"an" before a word that takes the other one ("an pink", "a apple")."""
    errors = 0
    for k, word in enumerate(tokens.lower):
        if word not in ("a", "an") or tokens.tags[k] != "DT":
            continue
        m = _NEXT_WORD.match(tokens.text, tokens.ends[k])
        if m is None:
            continue  # no word next ("a "stop" sign"): not judged
        wanted = article_for(m.group(1))
        errors += wanted is not None and wanted != word
    return errors


def _subject_number(tokens: Tokens, s: int, children: list[list[int]]) -> str | None:
    word, tag = tokens.lower[s], tokens.tags[s]
    if word in RELATIVE_PRONOUNS or tag in ("WDT", "WP"):
        verb = tokens.heads[s]
        if tokens.deps[verb] != "relcl":
            return None
        s = tokens.heads[verb]  # the noun the clause modifies
        word, tag = tokens.lower[s], tokens.tags[s]
    if any(tokens.deps[k] == "conj" for k in children[s]):
        return "plural"
    if tag in NOUN_TAGS:
        if plural(word) == word:
            return None
        return "plural" if tag in PLURAL_NOUN_TAGS else "singular"
    if word in SINGULAR_PRONOUNS:
        return "singular"
    if word in PLURAL_PRONOUNS:
        return "plural"
    return None


def agreement_errors(tokens: Tokens) -> int:
    """Finite verbs that disagree with their subject's number ("a man are")."""
    children = _children(tokens)
    errors = 0
    for s, dep in enumerate(tokens.deps):
        if dep not in ("nsubj", "nsubjpass"):
            continue
        number = _subject_number(tokens, s, children)
        if number is None:
            continue
        head = tokens.heads[s]
        for v in [head, *(k for k in children[head] if tokens.deps[k] in ("aux", "auxpass"))]:
            form, tag = tokens.lower[v], tokens.tags[v]
            if tag == "VBZ" or form == "was":
                errors += number != "singular"
            elif (tag == "VBP" and form != "am") or form == "were":
                errors += number != "plural"
            else:
                continue
            break
    return errors
