"""Objects of a caption: multi-word predicate spans, compound runs, the nouns that are
objects and those that are not (boilerplate, framing, quantity and relational nouns), and
the tagger slips repaired on the way (see ``extract`` for the rules)."""

from __future__ import annotations

import re

from vlcomp.text.lemma import ADJ_TAGS, NOUN_TAGS

from .attribute_rules import AttributeRules
from .lexicon import (
    COLOURS,
    DESCRIPTIVE_ADJECTIVES,
    FRAMING_VERBS,
    RELATIONAL_NOUNS,
    RELATIONAL_PLURALS,
)

_RELATIONAL = frozenset(RELATIONAL_NOUNS) | frozenset(RELATIONAL_PLURALS)
_FRAMING_PREPS = frozenset({"in", "on", "from"})
_BARE_DEPS = frozenset({"det", "amod", "compound", "punct", "cc", "conj", "nummod", "poss"})
_HAS_LETTER = re.compile(r"[^\W\d_]")
_CANDIDATE_TAGS = NOUN_TAGS | ADJ_TAGS | {"VBG", "VB", "VBP"}
_ARGUMENT_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "conj", "appos"})


class ObjectRules(AttributeRules):
    """The object rules of an extraction: they fill ``objects`` and ``obj_of``."""

    def _find_spans(self) -> None:
        match = self.opts.predicates.match
        i = 0
        while i < self.n - 1:
            hit = match(self.lower, i)
            if hit is None:
                i += 1
                continue
            end, canonical = hit
            if end >= self.n:
                break
            self.span_of[i] = (end, canonical)
            for k in range(i, end):
                self.in_span[k] = True
            i = end

    def _joined(self, left: int, right: int) -> bool:
        """Tokens ``left`` < ``right`` belong to one compound word run."""
        starts, ends = self.tok.starts, self.tok.ends
        for k in range(left + 1, right):
            if self.in_span[k]:
                return False
            if self.lower[k] == "-":
                if ends[k - 1] != starts[k] or ends[k] != starts[k + 1]:
                    return False
            elif self.deps[k] != "compound":
                return False
        return True

    def _absorbed(self, i: int) -> bool:
        h = self.heads[i]
        return (
            self.deps[i] == "compound"
            and h > i
            and self.tags[h] in NOUN_TAGS
            and not self.in_span[h]
            and self._joined(i, h)
        )

    def _run(self, head: int) -> list[int]:
        """The compound run ending at ``head``: its tokens in text order (no hyphens)."""
        start = head
        while start > 0:
            k = start - 1
            if self.lower[k] == "-" and k > 0 and self._absorbed(k - 1):
                start = k - 1
            elif self._absorbed(k) and self._reaches(k, head):
                start = k
            else:
                break
        return [k for k in range(start, head + 1) if self.lower[k] != "-"]

    def _reaches(self, k: int, head: int) -> bool:
        for _ in range(8):
            if k == head:
                return True
            if self.deps[k] != "compound":
                return False
            k = self.heads[k]
        return False

    def _partitive_target(self, i: int) -> int | None:
        for c in self.children[i]:
            if self.deps[c] == "prep" and self.lower[c] == "of":
                if self._noun_lemma(i) not in self.opts.partitives:
                    return None
                for g in self.children[c]:
                    if self.deps[g] == "pobj":
                        return g
        return None

    def _is_noun(self, i: int) -> bool:
        if _HAS_LETTER.search(self.lower[i]) is None:
            return False  # numbers, symbols, control characters
        tag = self.tags[i]
        if tag in NOUN_TAGS:
            # A noun parsed as a modifier is one all the same where a list item ends
            # ("blue square / large purple circle").
            return self.deps[i] not in ("amod", "nummod") or self._ends_item(i)
        dep = self.deps[i]
        if tag in ("VB", "VBP"):
            # "purple cross to the left of ...": a noun the tagger took for a verb, known
            # from the colour or size word it carries.
            return (
                self.lemmatizer is not None
                and self.lemmatizer.is_noun(self.lower[i])
                and any(
                    self.deps[c] in ("amod", "compound", "nmod") and c < i
                    and self._starts_phrase(c) for c in self.children[i]
                )
            )  # fmt: skip
        # A gerund that ends a prepositional phrase is a noun the tagger missed ("on
        # building"); so is an "adjective" with a determiner in an argument slot ("left
        # of a pink cross" with "cross" tagged JJ).
        if tag == "VBG":
            return dep == "pobj" and not self.children[i]
        if tag in ADJ_TAGS and (dep in _ARGUMENT_DEPS or dep in ("ROOT", "appos", "npadvmod")):
            return any(self.deps[c] in ("det", "amod", "nummod") for c in self.children[i])
        # "yellow square and purple star", "blue square small red star", "yellow square &
        # red triangle": a noun tagged as an adjective, after a colour or size word, where
        # a list item ends.
        return (
            tag in ADJ_TAGS
            and dep in ("amod", "nmod")
            and i > 0
            and self._is_attribute_word(i - 1)
            and not self._is_attribute_word(i)
            and (self._ends_item(i) or self._starts_phrase(i + 1))
            and self.lemmatizer is not None
            and self.lemmatizer.is_noun(self.lower[i])
        )

    def _is_framing(self, i: int) -> bool:
        """A frame noun in a framing position ("a picture of", "in the image", "this
        photo shows", or standing alone)."""
        kids = self.children[i]
        if any(self.deps[c] == "prep" and self.lower[c] == "of" for c in kids):
            return True
        dep, head = self.deps[i], self.heads[i]
        if dep == "pobj" and self.lower[head] in _FRAMING_PREPS:
            return True
        if dep == "nsubj" and self._lemma(head) in FRAMING_VERBS:
            return True
        if not all(self.deps[c] in _BARE_DEPS for c in kids):
            return False
        # Standing alone ("red circle, illustration") or closing the caption ("... flat
        # design 1234").
        return dep not in _ARGUMENT_DEPS or all(
            self.deps[k] in ("punct", "nummod") or self.tags[k] == "CD"
            for k in range(i + 1, self.n)
        )

    def _is_bare_relational(self, i: int) -> bool:
        """ "top" in "speakers on top": a relational noun with no "of" after it."""
        if self.lower[i] not in _RELATIONAL or self.deps[i] != "pobj":
            return False
        return not any(self.deps[c] == "prep" for c in self.children[i])

    def _find_objects(self) -> None:
        stop = self.opts.stop_objects
        frame = self.opts.frame_objects
        boilerplate = stop | frame
        attr_nouns = self.opts.attribute_nouns | DESCRIPTIVE_ADJECTIVES
        pending: list[tuple[int, int]] = []  # (colour token, the noun it describes)
        lower, deps, heads, tags = self.lower, self.deps, self.heads, self.tags
        of_heads = {heads[k] for k in range(self.n) if lower[k] == "of" and deps[k] == "prep"}
        # Two-word boilerplate ("flat design", "clip art", "stock photo"), however parsed.
        boilerplate_pairs = {
            k + d for k in range(self.n - 1) if f"{lower[k]} {lower[k + 1]}" in stop for d in (0, 1)
        }
        for i in range(self.n):
            if self.in_span[i]:
                continue
            if i in of_heads:
                target = self._partitive_target(i)
                if target is not None:
                    self.redirect[i] = target
                    continue
            if tags[i] not in _CANDIDATE_TAGS:
                continue
            if not self._is_noun(i) or self._absorbed(i) or self._is_bare_relational(i):
                continue
            if self._is_colour_before_noun(i):
                colored = self.lower[i + 1] in ("colored", "coloured")
                pending.append((i, i + 2 if colored else i + 1))
                continue
            run = self._run(i)
            run = self._split_sequence(run, stop, frame)
            lead: list[int] = []
            while len(run) > 1 and (
                self.lower[run[0]] in attr_nouns or self.tags[run[0]] in ADJ_TAGS
            ):
                lead.append(run.pop(0))
            if all(k in boilerplate_pairs for k in run):
                continue
            while len(run) > 1 and run[-1] in boilerplate_pairs:
                run = run[:-1]  # "hexagon clip art": "clip" ends the run, "art" follows
            run = self._strip_boilerplate(run, boilerplate)
            if self._noun_lemma(run[-1]) in stop:
                self._promote_modifier(i)
                continue
            if len(run) == 1 and self._noun_lemma(run[0]) in frame and self._is_framing(i):
                continue
            words = [self.lower[k] for k in run[:-1]] + [self._noun_lemma(run[-1])]
            lemma = " ".join(words)
            if lemma in stop or words[0] in stop:
                continue
            number = len(self.objects)
            self.objects.append((i, self.tok.span_text(run[0], run[-1]), lemma))
            for k in run:
                self.obj_of[k] = number
            self.obj_of[i] = number
            self.attributes += [(k, number, self.lower[k]) for k in lead]
            self._modifier_attributes(i, run, number)
        for colour, noun in pending:
            if noun in self.obj_of:
                self.attributes.append((colour, self.obj_of[noun], self.lower[colour]))

    def _promote_modifier(self, stop: int) -> None:
        """ "small square png": the word before a dropped boilerplate noun, parsed as its
        adjective, is the object when it is a known noun (not a colour or size word)."""
        k = stop - 1
        if (
            self.lemmatizer is None
            or k < 0
            or self.heads[k] != stop
            or self.deps[k] != "amod"
            or self.lower[k] in self.opts.attribute_nouns
            or self.lower[k] in DESCRIPTIVE_ADJECTIVES
            or self.lower[k] in self.opts.stop_objects
            or not self.lemmatizer.is_noun(self.lower[k])
        ):
            return
        number = len(self.objects)
        self.objects.append((k, self.tok.span_text(k, k), self.lower[k]))
        self.obj_of[k] = number
        for c in self.children[stop]:
            if c < k and self.deps[c] == "amod":
                self.attributes.append((c, number, self.lower[c]))

    def _split_sequence(
        self, run: list[int], stop: frozenset[str], frame: frozenset[str]
    ) -> list[int]:
        """Alt-text runs several noun phrases together ("large cross orange star"): a
        colour, material or size word after a noun of the run starts a new object. The
        objects before it are added here; the rest of the run is returned."""
        cut = next(
            (j for j in range(len(run) - 1, 0, -1)
             if self._starts_phrase(run[j]) and not self._is_attribute_word(run[j - 1])
             and self.tags[run[j - 1]] in NOUN_TAGS),
            None,
        )  # fmt: skip
        if cut is None:
            return run
        head = run[cut - 1]
        before = self._split_sequence(run[:cut], stop, frame)
        while len(before) > 1 and self._is_attribute_word(before[0]):
            before = before[1:]
        lemma = " ".join([self.lower[k] for k in before[:-1]] + [self._noun_lemma(head)])
        if lemma not in stop and lemma not in frame and before[0] not in self.obj_of:
            number = len(self.objects)
            self.objects.append((head, self.tok.span_text(before[0], head), lemma))
            for k in before:
                self.obj_of[k] = number
            for k in self._left_attributes(before[0]):
                self.claimed[k] = number
                self.attributes.append((k, number, self.lower[k]))
        return run[cut:]

    def _strip_boilerplate(self, run: list[int], boilerplate: frozenset[str]) -> list[int]:
        """Drop trailing boilerplate words of a compound ("circle clip art" -> "circle")."""
        while len(run) > 1:
            if self._noun_lemma(run[-1]) in boilerplate:
                run = run[:-1]
            elif len(run) > 2 and f"{self.lower[run[-2]]} {self._noun_lemma(run[-1])}" in (
                self.opts.stop_objects
            ):
                run = run[:-2]
            else:
                break
        return run

    def _is_colour_before_noun(self, i: int) -> bool:
        """A colour word tagged as a noun right before another noun, which it describes
        ("orange heart" parsed as two nouns)."""
        if self.lower[i] not in COLOURS or i + 1 >= self.n:
            return False
        if self.tags[i + 1] not in NOUN_TAGS and self.lower[i + 1] not in ("colored", "coloured"):
            return False
        if self.tok.ends[i] == self.tok.starts[i + 1]:
            return False
        return all(self.deps[c] in _BARE_DEPS for c in self.children[i])
