"""Grammar checks of an edited caption, on its parse (``Tokens``): determiners and numerals
that disagree with their noun's number (``number_errors``), "a"/"an" before a word of the
other sound (``article_errors``) and finite verbs that disagree with their subject's number
(``agreement_errors``). They are the first edit checks (``validate.edit``): counts, a
rejection only when the negative has more than the positive (productivity captions: more
than none).

The article a word takes (``article_for``) is ``vlcomp.text.settled_indefinite_article``'s,
the rules every generator writes "a"/"an" by ("an hour", "an FBI agent", "a U-turn", "an
8"); where it leaves the sound open ("NASA", "1800s", "herb") the article is not judged."""

from __future__ import annotations

import re

from vlcomp.parse import Tokens
from vlcomp.parse.lexicon import NUMBER_WORDS
from vlcomp.text import plural, settled_indefinite_article
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


_NEXT_WORD = re.compile(r"\s+([^\W_][\w'\u2019-]*)")


def article_for(word: str) -> str | None:
    """ "a" or "an" before ``word`` as written, or None where its spelling does not settle
    the sound (``vlcomp.text.settled_indefinite_article``)."""
    return settled_indefinite_article(word)


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
