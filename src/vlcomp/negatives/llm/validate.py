"""Validation of every LLM output: text checks, then a graph check with OUR parser.

Text checks (in this order; the first failing one is the rejection reason):

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

Graph check of a SugarCrepe negative: the positive and the negative are parsed with the
same ``CaptionParser`` (``vlcomp.parse``, configured like the eval set's parser) and their
graphs compared as multisets: objects (lemmas), attribute bindings (value, object lemma)
and relation triples (subject lemma, predicate, object lemma). Both sides go through the
same parser, so its conventions ("ride on", "have") cancel out. ``graph: negative has no
objects`` rejects a negative in which the parser finds no object. Then one rule per
(family, target) — ``RULES`` — says what each of the three parts may do:

============  ===============  ====================  ======================================
family/target objects          attributes            relations
============  ===============  ====================  ======================================
replace/obj   one replaced     follow the object     follow the object
replace/att   same             one value replaced    same
                               (same object)
replace/rel   same             same                  predicates replaced between the same
                                                     ends, one consistent word change
swap/obj      same             same (attributes      the two objects' roles exchanged:
                               travel with objects)  every changed triple turns into its
                                                     counterpart with the two exchanged
swap/att      same             two values exchanged  same
                               between two objects
add/obj       one added        same                  only new triples, each involving the
                                                     added object (none is fine)
add/att       same             one binding added     same
============  ===============  ====================  ======================================

"one replaced": exactly one lemma removed and one added; "follow the object": the
attribute bindings / relation triples that change are exactly those of the replaced object,
with its lemma renamed ("a brown horse" -> "a brown camel"); "one consistent word change":
the removed and added triples pair up by (subject, object) and every pair differs by the
same word change once their common leading and trailing words are stripped ("ride" ->
"walk" also turns "ride on" into "walk on", which the parser reports as a second triple);
for swap/obj, triples that keep their roles may stay ("a white bowl of soup next to a blue
cup" -> "a blue cup next to a white bowl of soup": the bowl still "has" the soup).
A part that breaks its rule rejects the negative with ``graph: <part>: <what>``, e.g.
``graph: objects: changed`` (a replace_att negative that also renamed an object: more than
the requested concept, or a concept of the wrong kind).

Our parser attaches a prepositional phrase differently in near-identical sentences ("a cat
sleeping next to a laptop on a desk": the desk is the cat's, with "keyboard" it is the
keyboard's) and sometimes misreads a word ("zebra standing" as one noun). So a graph
rejection is overruled when the WORDS show a clean edit of the requested kind: positive and
negative are compared as word sequences (``EditView``: punctuation, articles and "and"
left out; is/are, was/were, has/have and third-person pronouns each compared as one form)
and the one changed span — one phrase on each side: nothing but articles between its
words, so "a tractor and a dog" is two — is, by its Penn tags, nouns for replace_obj,
attribute words for replace_att, verbs, prepositions or particles for replace_rel, an
inserted noun (with its preposition or numeral) for add_obj and inserted attribute words
for add_att; a swap is clean when exchanging two noun phrases (with their modifiers, and
optionally their "of" phrase) or two modifiers (attribute words or noun modifiers: "plaid
blanket") of the positive gives the negative's words. A clean edit still goes through
the edit checks below.

Edit checks, after the graph check, on the parses of both texts (the first failing one is
the reason; a count is a rejection only when the negative has more than the positive, so
the parser's own slips on both sides cancel out):

===============================  ==========================================================
reason                           rule
===============================  ==========================================================
``grammar: number                a determiner or numeral disagrees with its noun's number
disagreement``                   ("a dogs", "two dog"; invariant plurals such as "sheep"
                                 never count)
``grammar: subject-verb          a finite verb disagrees with its subject's number ("a man
agreement``                      are", "two women is"; coordinated subjects are plural, a
                                 relative pronoun has its noun's number)
``edit: clause added``           more verbs than the edit allows: none new for every family
                                 but replace_rel, which may add one non-finite verb ("next
                                 to" -> "holding")
``edit: verb changed``           a verb changed where the edit changes none (tense: "walking"
                                 -> "walked"), or a replace_rel verb replaced by one of
                                 another kind (non-finite, present, past)
``edit: synonym``                the replaced concept means the same (WordNet through
                                 ``wordnet_foils.FoilFinder``: objects sharing a synset, or
                                 whose first senses are hypernym/hyponym, "man" -> "guy";
                                 attributes synonym, similar, hypernym or hyponym, "large" ->
                                 "big"; relations sharing a verb synset or a spatial class,
                                 "next to" -> "beside"): the negative is still true
``edit: not one change``         replace and add: not exactly one changed span, or an add
                                 that also removes words
``edit: words changed``          swap: the negative's words are not the positive's
===============================  ==========================================================

Graph check of a productivity caption (CREPE, n >= 5 atoms): the caption's graph against
the walk's ``Pattern``, compared as SETS because our parser has no coreference ("the dog"
re-mentioning "a dog" is a second object to it) — so repeated objects (dog_1, dog_2) are not
counted, only named. The walk's atoms are first read by the same parser in minimal phrases
("a dog", "a brown dog", "the dog chasing the frisbee") so that names, attribute values and
predicates are compared in the parser's own conventions (lemmas, "ride", "have"); an atom
the parser cannot read even there is *unchecked* (counted, never a rejection) and the
caption's relations between that pair of objects are tolerated. A caption relation matches
a walk relation with the same ends when the predicates are equal, the caption's ends
with the walk's after a verb ("sit on" states "on") or starts with it before a particle
the minimal phrase dropped ("ride down" states "ride"). Reasons: ``productivity: omits
object|attribute|relation``, ``productivity: adds object|attribute|relation``, and for
polarity, which the parser ignores, a count of negation words ("not", "no", "never",
"without", "nor", "...n't"): ``productivity: omits negation`` (fewer than the negated atoms)
and ``productivity: adds negation`` (any in a pattern without negated atoms).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

from vlcomp.ingest.rules import CaptionRules, looks_non_english
from vlcomp.negatives.productivity_text import Pattern
from vlcomp.parse import Tokens
from vlcomp.parse.lexicon import COLOURS, MATERIALS, NUMBER_WORDS, RELATIONAL_NOUNS
from vlcomp.text import collapse_spaces, normalise, plural, straight_apostrophes, words
from vlcomp.text.lemma import (
    ADJ_TAGS,
    NOUN_TAGS,
    PLURAL_NOUN_TAGS,
    VERB_TAGS,
    Lemmatizer,
    load_lemmatizer,
)
from vlcomp.text.lexicon import ARTICLES

# ------------------------------------------------------------------ reasons: text
EMPTY = "text: empty"
EQUAL = "text: equal to the positive"
NON_ENGLISH = "text: non-English"
TOO_LONG = "text: too long"
FRAMING = "text: framing added"
NO_OBJECTS = "graph: negative has no objects"
TEXT_REASONS: tuple[str, ...] = (EMPTY, EQUAL, NON_ENGLISH, TOO_LONG, FRAMING)

# ------------------------------------------------------------------ reasons: edit
NUMBER = "grammar: number disagreement"
AGREEMENT = "grammar: subject-verb agreement"
CLAUSE = "edit: clause added"
VERB_CHANGED = "edit: verb changed"
SYNONYM = "edit: synonym"
NOT_ONE_CHANGE = "edit: not one change"
SWAP_WORDS = "edit: words changed"
EDIT_REASONS: tuple[str, ...] = (
    NUMBER,
    AGREEMENT,
    CLAUSE,
    VERB_CHANGED,
    SYNONYM,
    NOT_ONE_CHANGE,
    SWAP_WORDS,
)

# graph reasons are "graph: <part>: <what>"
OBJECTS, ATTRIBUTES, RELATIONS = "objects", "attributes", "relations"

# ------------------------------------------------------------------ policies
SAME = "same"
REPLACE_ONE = "replace one"
ADD_ONE = "add one"
FOLLOW = "follow the object"
EXCHANGE = "exchange two values"
REPLACE_PREDICATE = "replace predicate"
SWAP_ENDS = "swap ends"
ADD_WITH_NEW = "add with the new object"


@dataclass(frozen=True)
class Rule:
    """What each part of the parsed graph may do between positive and negative."""

    objects: str
    attributes: str
    relations: str


RULES: dict[tuple[str, str], Rule] = {
    ("replace", "obj"): Rule(REPLACE_ONE, FOLLOW, FOLLOW),
    ("replace", "att"): Rule(SAME, REPLACE_ONE, SAME),
    ("replace", "rel"): Rule(SAME, SAME, REPLACE_PREDICATE),
    ("swap", "obj"): Rule(SAME, SAME, SWAP_ENDS),
    ("swap", "att"): Rule(SAME, EXCHANGE, SAME),
    ("add", "obj"): Rule(ADD_ONE, SAME, ADD_WITH_NEW),
    ("add", "att"): Rule(SAME, ADD_ONE, SAME),
}

NEGATION_WORDS = frozenset({"not", "no", "never", "without", "nor"})


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


# ------------------------------------------------------------------ graphs


@dataclass(frozen=True)
class Graph:
    """A parsed caption as multisets of lemmas, bindings and triples."""

    objects: Counter[str]
    bindings: Counter[tuple[str, str]]  # (value, object lemma)
    relations: Counter[tuple[str, str, str]]  # (subject lemma, predicate, object lemma)

    @classmethod
    def of(cls, parsed: Any) -> Graph:
        """From a ``vlcomp.parse`` SceneGraph (objects (idx, name, lemma), ...)."""
        lemma = {idx: lem for idx, _, lem in parsed.objects}
        return cls(
            Counter(lem for _, _, lem in parsed.objects),
            Counter((value, lemma[o]) for o, value in parsed.attributes),
            Counter((lemma[s], p, lemma[o]) for s, p, o in parsed.relations),
        )


def _diff(a: Counter, b: Counter) -> tuple[Counter, Counter]:
    """(removed, added) going from ``a`` to ``b``."""
    return a - b, b - a


def _problem(part: str, what: str) -> str:
    return f"graph: {part}: {what}"


def _rename(triples: Iterable[tuple], old: str, new: str, positions: tuple[int, ...]) -> Counter:
    out: Counter = Counter()
    for t in triples:
        out[tuple(new if (k in positions and x == old) else x for k, x in enumerate(t))] += 1
    return out


def _core(old: str, new: str) -> tuple[str, str]:
    """The words that differ between two predicates, common leading/trailing words cut."""
    a, b = old.split(), new.split()
    while a and b and a[0] == b[0]:
        a, b = a[1:], b[1:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    return " ".join(a), " ".join(b)


def _check_objects(policy: str, pos: Graph, neg: Graph) -> tuple[str | None, dict[str, str]]:
    removed, added = _diff(pos.objects, neg.objects)
    info: dict[str, str] = {}
    if policy == SAME:
        return (_problem(OBJECTS, "changed") if removed or added else None), info
    if policy == REPLACE_ONE:
        if not removed and not added:
            return _problem(OBJECTS, "none replaced"), info
        if sum(removed.values()) != 1 or sum(added.values()) != 1:
            return _problem(OBJECTS, "more than one replaced"), info
        info["old"], info["new"] = next(iter(removed)), next(iter(added))
        return None, info
    if policy == ADD_ONE:
        if removed:
            return _problem(OBJECTS, "removed"), info
        if not added:
            return _problem(OBJECTS, "none added"), info
        if sum(added.values()) != 1:
            return _problem(OBJECTS, "more than one added"), info
        info["new"] = next(iter(added))
        return None, info
    raise ValueError(f"unknown objects policy {policy!r}")


def _check_attributes(policy: str, pos: Graph, neg: Graph, info: dict[str, str]) -> str | None:
    removed, added = _diff(pos.bindings, neg.bindings)
    if policy == SAME:
        return _problem(ATTRIBUTES, "changed") if removed or added else None
    if policy == FOLLOW:
        old, new = info["old"], info["new"]
        if any(o != old for _, o in removed) or _rename(removed, old, new, (1,)) != added:
            return _problem(ATTRIBUTES, "changed")
        return None
    if policy == REPLACE_ONE:
        if not removed and not added:
            return _problem(ATTRIBUTES, "none replaced")
        if sum(removed.values()) != 1 or sum(added.values()) != 1:
            return _problem(ATTRIBUTES, "more than one replaced")
        (_, o_old), (_, o_new) = next(iter(removed)), next(iter(added))
        if o_old != o_new:
            return _problem(ATTRIBUTES, "moved to another object")
        return None
    if policy == ADD_ONE:
        if removed:
            return _problem(ATTRIBUTES, "removed")
        if not added:
            return _problem(ATTRIBUTES, "none added")
        return _problem(ATTRIBUTES, "more than one added") if sum(added.values()) != 1 else None
    if policy == EXCHANGE:
        if not removed and not added:
            return _problem(ATTRIBUTES, "none swapped")
        values_pos = Counter(v for v, _ in pos.bindings.elements())
        values_neg = Counter(v for v, _ in neg.bindings.elements())
        if values_pos != values_neg:
            return _problem(ATTRIBUTES, "values changed")
        if sum(removed.values()) != 2 or sum(added.values()) != 2:
            return _problem(ATTRIBUTES, "more than one swap")
        (v1, a), (v2, b) = sorted(removed.elements())
        if a == b or Counter([(v2, a), (v1, b)]) != added:
            return _problem(ATTRIBUTES, "not an exchange between two objects")
        return None
    raise ValueError(f"unknown attributes policy {policy!r}")


def _check_relations(policy: str, pos: Graph, neg: Graph, info: dict[str, str]) -> str | None:
    removed, added = _diff(pos.relations, neg.relations)
    if policy == SAME:
        return _problem(RELATIONS, "changed") if removed or added else None
    if policy == FOLLOW:
        old, new = info["old"], info["new"]
        if (
            any(old not in (s, o) for s, _, o in removed)
            or _rename(removed, old, new, (0, 2)) != added
        ):
            return _problem(RELATIONS, "changed")
        return None
    if policy == REPLACE_PREDICATE:
        if not removed and not added:
            return _problem(RELATIONS, "none replaced")
        ends_removed = Counter((s, o) for s, _, o in removed.elements())
        ends_added = Counter((s, o) for s, _, o in added.elements())
        if ends_removed != ends_added:
            return _problem(RELATIONS, "ends changed")
        cores = set()
        for ends in ends_removed:
            olds = sorted(p for s, p, o in removed.elements() if (s, o) == ends)
            news = sorted(p for s, p, o in added.elements() if (s, o) == ends)
            cores.update(_core(a, b) for a, b in zip(olds, news, strict=True))
        return _problem(RELATIONS, "more than one replaced") if len(cores) != 1 else None
    if policy == SWAP_ENDS:
        if not removed and not added:
            return _problem(RELATIONS, "none swapped")
        lemmas = sorted({x for s, _, o in removed for x in (s, o)})
        for i, a in enumerate(lemmas):
            for b in lemmas[i + 1 :]:
                swap = {a: b, b: a}
                swapped: Counter = Counter()
                for (s, p, o), n in removed.items():
                    swapped[(swap.get(s, s), p, swap.get(o, o))] += n
                if swapped == added:
                    return None
        return _problem(RELATIONS, "not a swap of two objects")
    if policy == ADD_WITH_NEW:
        if removed:
            return _problem(RELATIONS, "removed")
        new = info["new"]
        if any(new not in (s, o) for s, _, o in added):
            return _problem(RELATIONS, "added without the new object")
        return None
    raise ValueError(f"unknown relations policy {policy!r}")


def graph_reason(pos: Graph, neg: Graph, family: str, target: str) -> str | None:
    """Why ``neg`` is not a one-concept ``family``/``target`` edit of ``pos`` (or None)."""
    rule = RULES.get((family, target))
    if rule is None:
        raise ValueError(f"no validation rule for {family}/{target}")
    if not neg.objects:
        return NO_OBJECTS
    reason, info = _check_objects(rule.objects, pos, neg)
    if reason is None:
        reason = _check_attributes(rule.attributes, pos, neg, info)
    if reason is None:
        reason = _check_relations(rule.relations, pos, neg, info)
    return reason


class GraphReader:
    """Parses texts with our parser (a ``vlcomp.parse.CaptionParser``), each distinct text
    once, and keeps both the parse (``Tokens``) and the graph."""

    def __init__(self, parser: Any, batch_size: int = 64) -> None:
        self.parser = parser
        self.batch_size = batch_size
        self._graphs: dict[str, Any] = {}
        self._tokens: dict[str, Tokens] = {}

    def _read(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._graphs))
        if not todo:
            return
        parsed = self.parser.parse_with_tokens(todo, batch_size=self.batch_size)
        for text, (tokens, graph) in zip(todo, parsed, strict=True):
            self._tokens[text] = tokens
            self._graphs[text] = graph

    def parsed(self, texts: Iterable[str]) -> list[Any]:
        texts = list(texts)
        self._read(texts)
        return [self._graphs[t] for t in texts]

    def graphs(self, texts: Iterable[str]) -> list[Graph]:
        return [Graph.of(g) for g in self.parsed(texts)]

    def tokens(self, texts: Iterable[str]) -> list[Tokens]:
        texts = list(texts)
        self._read(texts)
        return [self._tokens[t] for t in texts]

    @property
    def lemmatizer(self) -> Lemmatizer:
        return self.parser.backend.lemmatizer or load_lemmatizer()

    def lemma(self, tokens: Tokens, k: int) -> str:
        """The lemma of token ``k`` (the backend's own, or our lemmatiser's)."""
        if tokens.lemmas is not None:
            return tokens.lemmas[k]
        return self.lemmatizer.lemma(tokens.lower[k], tokens.tags[k])

    def known_noun(self, word: str) -> bool:
        """``word`` (or its singular) is a noun the lemmatiser knows."""
        return self.lemmatizer.is_noun(self.lemmatizer.noun(word))


# ------------------------------------------------------------------ edit checks

# Compared as one form: these change with agreement, not with the edit.
_ONE_FORM: dict[str, str] = {
    **dict.fromkeys(("is", "are", "am"), "<be>"),
    **dict.fromkeys(("was", "were"), "<was>"),
    **dict.fromkeys(("has", "have"), "<have>"),
    **dict.fromkeys(("does", "do"), "<do>"),
    **dict.fromkeys("he she it they him her his hers its their theirs them".split(), "<3p>"),
}
FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
SINGULAR_DETERMINERS = frozenset({"a", "an", "one", "another", "each", "every", "this", "that"})
PLURAL_DETERMINERS = frozenset({"these", "those", "several", "many", "both", "multiple"})
SINGULAR_PRONOUNS = frozenset({"he", "she", "it", "this", "that"})
PLURAL_PRONOUNS = frozenset({"they", "we", "you", "these", "those"})
RELATIVE_PRONOUNS = frozenset({"that", "which", "who", "whom"})
# Words of multi-word prepositions ("next to", "in front of", "on top of").
RELATION_WORDS = frozenset(RELATIONAL_NOUNS) | {"next", "close", "near", "far", "ahead"}
RELATION_TAGS = VERB_TAGS | {"IN", "RP", "TO", "RB", "RBR"}
NOMINAL_TAGS = NOUN_TAGS | ADJ_TAGS | {"CD"}
ATTRIBUTE_WORDS = COLOURS | MATERIALS  # the parser reads these as attributes before a noun


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


@dataclass(frozen=True)
class EditView:
    """One parsed text as the edit checks compare it: the positions (``keep``) of its
    words but punctuation, articles and "and", and their comparison ``forms``;
    ``known_noun`` tells a tagger's "compound noun" that is no noun ("an unmade bed")."""

    tokens: Tokens
    keep: tuple[int, ...]
    forms: tuple[str, ...]
    known_noun: Callable[[str], bool]

    @classmethod
    def of(cls, tokens: Tokens, known_noun: Callable[[str], bool]) -> EditView:
        keep = tuple(
            k
            for k, w in enumerate(tokens.lower)
            if any(c.isalnum() for c in w) and w not in ARTICLES and w != "and"
        )
        forms = tuple(_ONE_FORM.get(tokens.lower[k], tokens.lower[k]) for k in keep)
        return cls(tokens, keep, forms, known_noun)

    def tag(self, p: int) -> str:
        return self.tokens.tags[self.keep[p]]

    def word(self, p: int) -> str:
        return self.tokens.lower[self.keep[p]]

    def is_noun(self, p: int) -> bool:
        return self.tag(p) in NOUN_TAGS and self.word(p) not in RELATION_WORDS

    def is_attribute(self, p: int) -> bool:
        k = self.keep[p]
        word, tag, dep = self.tokens.lower[k], self.tokens.tags[k], self.tokens.deps[k]
        if word in RELATION_WORDS:
            return False
        if tag in NOUN_TAGS and dep == "compound" and not self.known_noun(word):
            return True
        return tag in ADJ_TAGS or dep in ("amod", "acomp") or word in ATTRIBUTE_WORDS

    def is_relation(self, p: int) -> bool:
        return self.tag(p) in RELATION_TAGS or self.word(p) in RELATION_WORDS

    def verbs(self) -> list[int]:
        """Positions of the verbs (participles used as attributes left out)."""
        return [
            p
            for p, k in enumerate(self.keep)
            if self.tokens.tags[k] in VERB_TAGS and self.tokens.deps[k] not in ("amod", "compound")
        ]

    def _nominal(self, k: int) -> bool:
        t = self.tokens
        if t.lower[k] in RELATION_WORDS:
            return False
        return t.tags[k] in NOMINAL_TAGS or (t.tags[k] in VERB_TAGS and t.deps[k] == "amod")

    def noun_phrases(self) -> list[tuple[int, int]]:
        """(first, last) positions of each noun phrase: a run of nouns, adjectives and
        numerals up to its last noun ("red fire hydrant", whatever the parser attached
        to what), and again with an "of" phrase after it ("white bowl of soup")."""
        t, n = self.tokens, len(self.tokens)
        runs: list[tuple[int, int]] = []
        k = 0
        while k < n:
            if not self._nominal(k):
                k += 1
                continue
            end = k
            while end + 1 < n and self._nominal(end + 1):
                end += 1
            nouns = [x for x in range(k, end + 1) if t.tags[x] in NOUN_TAGS]
            if nouns:
                runs.append((k, nouns[-1]))
            k = end + 1
        at = {k: p for p, k in enumerate(self.keep)}
        starts = {first: last for first, last in runs}
        spans = []
        for first, last in runs:
            spans.append((at[first], at[last]))
            after = last + 1
            if after < n and t.lower[after] == "of":
                after += 1
                while after < n and t.lower[after] in ARTICLES:
                    after += 1
                if after in starts:
                    spans.append((at[first], at[starts[after]]))
        return spans

    def contiguous(self, positions: Sequence[int]) -> bool:
        """Nothing but articles between the words: one phrase ("next to a dog"), not a
        list ("a tractor and a dog")."""
        return all(
            all(self.tokens.lower[k] in ARTICLES for k in range(self.keep[a] + 1, self.keep[b]))
            for a, b in pairwise(positions)
        )

    def modifier_spans(self) -> list[tuple[int, int]]:
        """(first, last) positions of every part of every run of attribute words and
        noun modifiers ("plaid blanket", "red fire hydrant": red, red fire, fire)."""
        runs: list[tuple[int, int]] = []
        for p, k in enumerate(self.keep):
            if not (self.is_attribute(p) or self.tokens.deps[k] == "compound"):
                continue
            if runs and runs[-1][1] == p - 1 and k == self.keep[p - 1] + 1:
                runs[-1] = (runs[-1][0], p)
            else:
                runs.append((p, p))
        return [
            (a, b)
            for first, last in runs
            for a in range(first, last + 1)
            for b in range(a, last + 1)
        ]


Hunk = tuple[str, int, int, int, int]  # difflib opcode: tag, i1, i2, j1, j2


def hunks(pos: EditView, neg: EditView) -> list[Hunk]:
    """The changed spans between the two word sequences."""
    matcher = SequenceMatcher(None, pos.forms, neg.forms, autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def _exchanges(forms: tuple[str, ...], spans: list[tuple[int, int]]) -> Iterable[tuple]:
    for a0, a1 in spans:
        for b0, b1 in spans:
            if a1 < b0:
                yield (
                    forms[:a0]
                    + forms[b0 : b1 + 1]
                    + forms[a1 + 1 : b0]
                    + forms[a0 : a1 + 1]
                    + forms[b1 + 1 :]
                )


def clean_edit(pos: EditView, neg: EditView, family: str, target: str) -> bool:
    """The words show an edit of exactly the requested kind (see the module docstring)."""
    if family == "swap":
        spans = pos.noun_phrases() if target == "obj" else pos.modifier_spans()
        return any(seq == neg.forms for seq in _exchanges(pos.forms, spans))
    changes = hunks(pos, neg)
    if len(changes) != 1:
        return False
    op, i1, i2, j1, j2 = changes[0]
    old, new = range(i1, i2), range(j1, j2)
    if not (pos.contiguous(old) and neg.contiguous(new)):
        return False
    if family == "add":
        if op != "insert":
            return False
        if target == "att":
            return all(neg.is_attribute(p) for p in new)
        nouns = [p for p in new if neg.is_noun(p)]
        return (
            bool(nouns)
            and all(neg.keep[b] == neg.keep[a] + 1 for a, b in pairwise(nouns))
            and all(neg.is_noun(p) or neg.is_relation(p) or neg.tag(p) == "CD" for p in new)
            and not any(neg.tag(p) in VERB_TAGS for p in new)
        )
    if op != "replace":
        return False
    if target == "obj":
        return all(pos.is_noun(p) for p in old) and all(neg.is_noun(p) for p in new)
    if target == "att":
        return all(pos.is_attribute(p) for p in old) and all(neg.is_attribute(p) for p in new)
    return all(pos.is_relation(p) for p in old) and all(neg.is_relation(p) for p in new)


def _changed_verbs(pos: EditView, neg: EditView) -> tuple[list[int], list[int]]:
    """(positions of positive verbs whose word the negative lacks, and the reverse);
    words are compared whatever their tags, so a tagger slip on one side is no change."""
    in_neg, in_pos = Counter(neg.forms), Counter(pos.forms)
    removed, added = [], []
    for p in pos.verbs():
        if in_neg[pos.forms[p]] > 0:
            in_neg[pos.forms[p]] -= 1
        else:
            removed.append(p)
    for p in neg.verbs():
        if in_pos[neg.forms[p]] > 0:
            in_pos[neg.forms[p]] -= 1
        else:
            added.append(p)
    return removed, added


def _verb_kind(tag: str) -> str:
    if tag == "VBD":
        return "past"
    return "present" if tag in FINITE_TAGS else "non-finite"


def verb_reason(pos: EditView, neg: EditView, family: str, target: str) -> str | None:
    """``edit: clause added`` / ``edit: verb changed`` (see the module docstring)."""
    removed, added = _changed_verbs(pos, neg)
    if (family, target) != ("replace", "rel"):
        if len(added) > len(removed):
            return CLAUSE
        return VERB_CHANGED if added or removed else None
    finite = [p for p in added if neg.tag(p) in FINITE_TAGS]
    if len(added) > len(removed) + 1 or (len(added) > len(removed) and finite):
        return CLAUSE
    kinds_old = {_verb_kind(pos.tag(p)) for p in removed}
    if removed and any(_verb_kind(neg.tag(p)) not in kinds_old for p in added):
        return VERB_CHANGED  # "walking" -> "carried"
    return None


def replaced_concept(
    pos: EditView, neg: EditView, target: str, lemma: Callable[[Tokens, int], str]
) -> tuple[str, str] | None:
    """(old, new) of a replace edit's one changed span: the noun phrase's lemma, the
    attribute words, or the relation words (a dropped or added word together with the
    word before it: "on top of" -> "on"); None unless exactly one span changed."""
    changes = hunks(pos, neg)
    if len(changes) != 1:
        return None
    op, i1, i2, j1, j2 = changes[0]
    if op != "replace":
        if target != "rel" or i1 == 0 or j1 == 0:
            return None
        i1, j1 = i1 - 1, j1 - 1

    def phrase(view: EditView, first: int, last: int) -> str:
        words_ = [view.word(p) for p in range(first, last)]
        if target == "obj":
            words_[-1] = lemma(view.tokens, view.keep[last - 1])
        return " ".join(words_)

    return phrase(pos, i1, i2), phrase(neg, j1, j2)


class SynonymCheck:
    """Whether a replacement means the same as what it replaces (WordNet, read through
    ``wordnet_foils``; loaded on first use)."""

    def __init__(self, finder: Any = None) -> None:
        self._finder = finder

    @property
    def finder(self) -> Any:
        if self._finder is None:
            from vlcomp.negatives.wordnet_foils import FoilFinder

            self._finder = FoilFinder({})
        return self._finder

    def _first_senses_nested(self, old: str, new: str) -> bool:
        so, sf = self.finder.synsets(old, "n")[:1], self.finder.synsets(new, "n")[:1]
        if not so or not sf:
            return False

        def up(synset: Any) -> set[Any]:
            return set(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))

        return sf[0] in up(so[0]) or so[0] in up(sf[0])

    def same(self, target: str, old: str, new: str) -> bool:
        if target == "obj":
            if not self.finder.synsets(old, "n") or not self.finder.synsets(new, "n"):
                old, new = old.split()[-1], new.split()[-1]  # the head: "kitchen counter"
            if old == new:
                return False
            return self.finder.relation(
                "object", old, new
            ) == "synonym" or self._first_senses_nested(old, new)
        if target == "att":
            return self.finder.relation("attribute", old, new) in (
                "synonym",
                "similar",
                "hypernym",
                "hyponym",
            )
        return self.finder.relation("relation", old, new) in ("synonym", "same_class")


@dataclass(frozen=True)
class PairCheck:
    positive: str
    negative: str | None
    family: str
    target: str


class PairValidator:
    """Text checks, then ``graph_reason`` (overruled by a clean edit), then the edit
    checks, for many (positive, negative) pairs at once (see the module docstring)."""

    def __init__(
        self,
        reader: GraphReader,
        max_chars: int,
        rules: CaptionRules | None = None,
        synonyms: SynonymCheck | None = None,
    ):
        self.reader = reader
        self.max_chars = max_chars
        self.rules = rules or english_rules()
        self.synonyms = synonyms or SynonymCheck()

    def check(self, pairs: Sequence[PairCheck]) -> list[str | None]:
        reasons: list[str | None] = [
            text_reason(p.negative, self.max_chars, self.rules, p.positive) for p in pairs
        ]
        todo = [i for i, r in enumerate(reasons) if r is None]
        positives = [pairs[i].positive for i in todo]
        negatives = [collapse_spaces(pairs[i].negative or "") for i in todo]
        graphs = self.reader.graphs(positives + negatives)
        tokens = self.reader.tokens(positives + negatives)
        for k, i in enumerate(todo):
            family, target = pairs[i].family, pairs[i].target
            pos_tokens, neg_tokens = tokens[k], tokens[len(todo) + k]
            pos = EditView.of(pos_tokens, self.reader.known_noun)
            neg = EditView.of(neg_tokens, self.reader.known_noun)
            reason = graph_reason(graphs[k], graphs[len(todo) + k], family, target)
            if reason is not None and clean_edit(pos, neg, family, target):
                reason = None  # the parser's slip, not the edit's
            reasons[i] = reason or self.edit_reason(pos, neg, family, target)
        return reasons

    def edit_reason(self, pos: EditView, neg: EditView, family: str, target: str) -> str | None:
        """The first edit check (module docstring) the pair fails, or None."""
        if number_errors(neg.tokens) > number_errors(pos.tokens):
            return NUMBER
        if agreement_errors(neg.tokens) > agreement_errors(pos.tokens):
            return AGREEMENT
        if reason := verb_reason(pos, neg, family, target):
            return reason
        if family == "replace":
            concept = replaced_concept(pos, neg, target, self.reader.lemma)
            if concept is not None and self.synonyms.same(target, *concept):
                return SYNONYM
        if family == "swap":
            return SWAP_WORDS if Counter(pos.forms) != Counter(neg.forms) else None
        changes = hunks(pos, neg)
        if len(changes) != 1 or (family == "add" and changes[0][0] != "insert"):
            return NOT_ONE_CHANGE
        return None


# ------------------------------------------------------------------ productivity

OMITS = "productivity: omits {}"
ADDS = "productivity: adds {}"
OMITS_NEGATION = "productivity: omits negation"
ADDS_NEGATION = "productivity: adds negation"


@dataclass(frozen=True)
class Reference:
    """A walk's atoms in the parser's conventions (sets; see the module docstring)."""

    objects: frozenset[str]
    bindings: frozenset[tuple[str, str]]
    relations: frozenset[tuple[str, str, str]]
    tolerated_pairs: frozenset[frozenset[str]]  # ends of relations the parser cannot read
    negated: int  # negated atoms
    unchecked: int  # atoms the parser cannot read in a minimal phrase


def negation_count(text: str) -> int:
    return sum(w in NEGATION_WORDS or w.endswith("n't") for w in words(text))


def _predicate_matches(caption: str, walk: str) -> bool:
    """Equal, a verb before the walk's preposition ("sit on" states "on"), or a particle
    the minimal phrase lost ("ride down" states "ride")."""
    return caption == walk or caption.endswith(" " + walk) or caption.startswith(walk + " ")


class ProductivityValidator:
    """Checks captions against the ``Pattern`` they must state (see the module docstring)."""

    def __init__(self, reader: GraphReader, max_chars: int, rules: CaptionRules | None = None):
        self.reader = reader
        self.max_chars = max_chars
        self.rules = rules or english_rules()

    # minimal phrases --------------------------------------------------------------
    @staticmethod
    def _phrases(pattern: Pattern) -> list[str]:
        out = []
        for node in pattern.nodes:
            out.append(f"a {node.name}")
            out.extend(f"a {a.value} {node.name}" for a in node.attributes)
        for e in pattern.edges:
            out.append(
                f"the {pattern.nodes[e.subject].name} {e.predicate} the "
                f"{pattern.nodes[e.object].name}"
            )
        return out

    def references(self, patterns: Sequence[Pattern]) -> list[Reference]:
        phrases = [p for pattern in patterns for p in self._phrases(pattern)]
        self.reader.parsed(phrases)  # one batch for all
        return [self._reference(p) for p in patterns]

    def _reference(self, pattern: Pattern) -> Reference:
        unchecked = 0

        def lemma(name: str) -> str | None:
            (g,) = self.reader.parsed([f"a {name}"])
            return g.objects[0][2] if len(g.objects) == 1 else None

        objects: set[str] = set()
        bindings: set[tuple[str, str]] = set()
        relations: set[tuple[str, str, str]] = set()
        tolerated: set[frozenset[str]] = set()
        names = [lemma(n.name) for n in pattern.nodes]
        negated = 0
        for node, name in zip(pattern.nodes, names, strict=True):
            if name is None:
                unchecked += 1 + len(node.attributes)
                continue
            objects.add(name)
            for a in node.attributes:
                negated += a.negated
                (g,) = self.reader.parsed([f"a {a.value} {node.name}"])
                values = [v for _, v in g.attributes]
                if len(g.objects) == 1 and g.objects[0][2] == name and len(values) == 1:
                    bindings.add((values[0], name))
                else:
                    unchecked += 1
        for e in pattern.edges:
            negated += e.negated
            s, o = names[e.subject], names[e.object]
            subject, object_ = pattern.nodes[e.subject].name, pattern.nodes[e.object].name
            (g,) = self.reader.parsed([f"the {subject} {e.predicate} the {object_}"])
            if s is None or o is None:
                unchecked += 1
                continue
            ends = g.relations[0][::2] if len(g.relations) == 1 else None
            if len(g.objects) == 2 and ends == (0, 1):
                relations.add((s, g.relations[0][1], o))
            elif len(g.objects) == 2 and ends == (1, 0):  # "the tail of the plane": have
                relations.add((o, g.relations[0][1], s))
            else:
                unchecked += 1
                tolerated.add(frozenset((s, o)))
        return Reference(
            frozenset(objects),
            frozenset(bindings),
            frozenset(relations),
            frozenset(tolerated),
            negated,
            unchecked,
        )

    # checks -----------------------------------------------------------------------
    def graph_reason(self, caption: str, ref: Reference) -> str | None:
        (parsed,) = self.reader.parsed([caption])
        graph = Graph.of(parsed)
        if not graph.objects:
            return NO_OBJECTS
        objects = set(graph.objects)
        if ref.objects - objects:
            return OMITS.format("object")
        if objects - ref.objects:
            return ADDS.format("object")
        bindings = set(graph.bindings)
        if ref.bindings - bindings:
            return OMITS.format("attribute")
        if bindings - ref.bindings:
            return ADDS.format("attribute")
        stated = set(graph.relations)
        for s, p, o in ref.relations:
            if not any((s2, o2) == (s, o) and _predicate_matches(p2, p) for s2, p2, o2 in stated):
                return OMITS.format("relation")
        for s2, p2, o2 in stated:
            if frozenset((s2, o2)) in ref.tolerated_pairs:
                continue
            if not any(
                (s2, o2) == (s, o) and _predicate_matches(p2, p) for s, p, o in ref.relations
            ):
                return ADDS.format("relation")
        cues = negation_count(caption)
        if ref.negated and cues < ref.negated:
            return OMITS_NEGATION
        if not ref.negated and cues:
            return ADDS_NEGATION
        return None

    def check(
        self, captions: Sequence[str | None], patterns: Sequence[Pattern]
    ) -> tuple[list[str | None], list[Reference]]:
        """(reason or None per caption, the references) of captions against patterns."""
        refs = self.references(patterns)
        reasons = [text_reason(c, self.max_chars, self.rules) for c in captions]
        todo = [i for i, r in enumerate(reasons) if r is None]
        self.reader.parsed(collapse_spaces(captions[i] or "") for i in todo)
        for i in todo:
            reasons[i] = self.graph_reason(collapse_spaces(captions[i] or ""), refs[i])
        return reasons, refs
