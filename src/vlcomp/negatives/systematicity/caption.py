"""Caption words of the systematicity negatives: where a compound is stated in the caption
(``locate``: a unique phrase, see ``vlcomp.negatives.systematicity``) and the text edits
that replace one of its atoms (``atom_text``, HN-ATOM) or write it twice, each copy with one
atom replaced (``comp_text``, HN-COMP)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vlcomp.negatives.wordnet_foils import DEFAULT_RELATIONS
from vlcomp.text import indefinite_article, plural, word_spans
from vlcomp.text.lemma import load_lemmatizer

from .graph import Compound, Graph, ObjectNode
from .settings import POSITION_KIND, POSITIONS

FILLERS = frozenset("is are was were be being been that which who".split())
DETERMINERS = frozenset(
    """a an the one two three four five six seven eight nine ten some several many few
    this that these those another its his her their other""".split()
)
MAX_MODIFIERS = 4
MAX_OBJECT_GAP = 5

# ----------------------------------------------------------------------- caption words


@dataclass(frozen=True)
class Token:
    word: str  # lower case
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    return [Token(*span) for span in word_spans(text)]


def _occurrences(tokens: Sequence[Token], phrase: str) -> list[tuple[int, int]]:
    words = phrase.split()
    n = len(words)
    return [
        (i, i + n)
        for i in range(len(tokens) - n + 1)
        if all(tokens[i + k].word == words[k] for k in range(n))
    ]


def _joined(text: str, tokens: Sequence[Token], lo: int, hi: int) -> bool:
    """Tokens lo..hi-1 are separated by white space only (no punctuation)."""
    return all(not text[tokens[k].end : tokens[k + 1].start].strip() for k in range(lo, hi - 1))


@dataclass(frozen=True)
class Mention:
    """Where a compound is stated: token spans per position (``POSITIONS`` order), the
    phrase's token range (with the modifiers of its first noun) and a determiner before."""

    compound: Compound
    slots: tuple[tuple[int, int], ...]
    start: int
    end: int
    det: int | None
    plural: tuple[bool, ...]  # per position: the noun is written in the plural

    def slot(self, position: str) -> tuple[int, int]:
        return self.slots[POSITIONS[self.compound.kind].index(position)]


def _noun_occurrences(tokens: Sequence[Token], node: ObjectNode) -> list[tuple[int, int, bool]]:
    """(start, end, plural) of each mention of the node's noun; longest surface wins."""
    lemmatizer = load_lemmatizer()
    taken: dict[int, tuple[int, int, bool]] = {}
    for surface in node.surfaces:
        is_plural = surface != node.atom and lemmatizer.phrase(surface) == node.atom
        for start, end in _occurrences(tokens, surface):
            if not any(s <= start < e or s < end <= e for s, e, _ in taken.values()):
                taken[start] = (start, end, is_plural)
    return [taken[k] for k in sorted(taken)]


def _modifiers(
    text: str, tokens: Sequence[Token], noun_start: int, node: ObjectNode
) -> tuple[int, dict[str, tuple[int, int]]]:
    """Walk left from a noun over its node's attributes: (phrase start, value -> span)."""
    values = sorted(node.attributes, key=lambda v: (-len(v.split()), v))
    pos, found = noun_start, {}
    for _ in range(MAX_MODIFIERS):
        for value in values:
            n = len(value.split())
            lo = pos - n
            if (
                lo >= 0
                and value not in found
                and [t.word for t in tokens[lo:pos]] == value.split()
                and _joined(text, tokens, lo, pos + 1)
            ):
                found[value] = (lo, pos)
                pos = lo
                break
        else:
            break
    return pos, found


def _determiner(text: str, tokens: Sequence[Token], start: int) -> int | None:
    k = start - 1
    if k >= 0 and tokens[k].word in DETERMINERS and _joined(text, tokens, k, start + 1):
        return k
    return None


def locate(text: str, tokens: Sequence[Token], graph: Graph, compound: Compound) -> Mention | str:
    """The compound's unique phrase in the caption, or why there is none
    (``compound_not_in_text``, ``compound_ambiguous``)."""
    found: list[Mention] = []
    if compound.kind == "attr_obj":
        node = graph.objects[compound.nodes[0]]
        for ns, ne, is_plural in _noun_occurrences(tokens, node):
            start, mods = _modifiers(text, tokens, ns, node)
            if compound.parts[0] in mods:
                slots = (mods[compound.parts[0]], (ns, ne))
                det = _determiner(text, tokens, start)
                found.append(Mention(compound, slots, start, ne, det, (False, is_plural)))
    else:
        subj, obj = (graph.objects[i] for i in compound.nodes)
        surfaces = DEFAULT_RELATIONS.surfaces(compound.parts[1])
        preds = sorted({span for s in surfaces for span in _occurrences(tokens, s)})
        for ss, se, subj_plural in _noun_occurrences(tokens, subj):
            for ps, pe in preds:
                gap = tokens[se:ps]
                if ps < se or len(gap) > 2 or any(t.word not in FILLERS for t in gap):
                    continue
                for os_, oe, obj_plural in _noun_occurrences(tokens, obj):
                    between = tokens[pe:os_]
                    allowed = DETERMINERS | {w for v in obj.attributes for w in v.split()}
                    if os_ < pe or len(between) > MAX_OBJECT_GAP:
                        continue
                    if any(t.word not in allowed for t in between):
                        continue
                    if not _joined(text, tokens, ss, oe):
                        continue
                    start, _ = _modifiers(text, tokens, ss, subj)
                    det = _determiner(text, tokens, start)
                    slots = ((ss, se), (ps, pe), (os_, oe))
                    plurals = (subj_plural, False, obj_plural)
                    found.append(Mention(compound, slots, start, oe, det, plurals))
    if not found:
        return "compound_not_in_text"
    if len(found) > 1:
        return "compound_ambiguous"
    return found[0]


# ------------------------------------------------------------------------- text edits


def _cased(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


Edit = tuple[int, int, str]  # token span replaced by a string


def _splice(text: str, tokens: Sequence[Token], edits: Iterable[Edit], lo: int, hi: int) -> str:
    """``text[lo:hi]`` (character offsets) with each edit's token span replaced (case of
    its first letter kept), and an "a"/"an" right before an edit (inside the range) made
    to agree with the new word."""
    replace: dict[int, tuple[int, str]] = {}  # first token -> (end token, new text)
    for i, j, new in edits:
        replace[i] = (j, _cased(text[tokens[i].start : tokens[j - 1].end], new))
    for i, (_, new) in list(replace.items()):
        k = i - 1
        if (
            k >= 0
            and k not in replace
            and tokens[k].start >= lo
            and tokens[k].word in ("a", "an")
            and _joined(text, tokens, k, i + 1)
        ):
            replace[k] = (i, indefinite_article(new, text[tokens[k].start : tokens[k].end]))
    out, cursor = [], lo
    for i in sorted(replace):
        j, new = replace[i]
        out += [text[cursor : tokens[i].start], new]
        cursor = tokens[j - 1].end
    out.append(text[cursor:hi])
    return "".join(out)


def _surface(tokens: Sequence[Token], mention: Mention, position: str, foil: str) -> str:
    """How the foil is written: plural for a plural noun; a lexicon relation in the
    phrasing of its class closest to the caption's ("on the left side of" -> "on the right
    side of" rather than "right of")."""
    index = POSITIONS[mention.compound.kind].index(position)
    if POSITION_KIND[position] == "object":
        return plural(foil) if mention.plural[index] else foil
    cls = DEFAULT_RELATIONS.class_of(foil) if position == "pred" else None
    if cls is None:
        return foil
    i, j = mention.slot(position)
    written = [t.word for t in tokens[i:j]]

    def overlap(phrase: str) -> int:
        return len(set(phrase.split()) & set(written))

    best = max(sorted(DEFAULT_RELATIONS.classes[cls]), key=overlap)
    return best if overlap(best) > overlap(foil) else foil


def atom_text(
    text: str, tokens: Sequence[Token], mention: Mention, position: str, foil: str
) -> str:
    """The caption with one atom of the mention replaced."""
    i, j = mention.slot(position)
    return _splice(text, tokens, [(i, j, _surface(tokens, mention, position, foil))], 0, len(text))


def comp_text(
    text: str,
    tokens: Sequence[Token],
    mention: Mention,
    first: tuple[str, str],
    second: tuple[str, str],
) -> str:
    """The caption with the compound's phrase written twice, joined by "and", each copy
    with one atom replaced ((position, foil) pairs); a determiner before it is repeated."""
    lo, hi = tokens[mention.start].start, tokens[mention.end - 1].end
    copies = []
    for position, foil in (first, second):
        i, j = mention.slot(position)
        copies.append(
            _splice(text, tokens, [(i, j, _surface(tokens, mention, position, foil))], lo, hi)
        )
    c1, c2 = copies
    head = lo
    det = ""
    if mention.det is not None:
        det_tok = tokens[mention.det]
        head = det_tok.start
        det = text[det_tok.start : det_tok.end]
    sentence_start = not text[:head].strip() or text[:head].rstrip()[-1:] in ".!?"
    if sentence_start and c2[:1].isupper() and c2.split(" ", 1)[0] != "I":
        c2 = c2[:1].lower() + c2[1:]
    if det:
        det1 = indefinite_article(c1, det) if det.lower() in ("a", "an") else det
        det2 = det.lower() if sentence_start else det
        det2 = indefinite_article(c2, det2) if det2.lower() in ("a", "an") else det2
        joined = f"{det1} {c1} and {det2} {c2}"
    else:
        joined = f"{c1} and {c2}"
    return text[:head] + joined + text[hi:]
