"""Attributes of an object: its ``amod`` modifiers (with their conjoined adjectives), the
colour, material and size words right before it, numerals on request, and how adjacent
words make one value ("light blue", "multi-colored", "tan colored" -> "tan")."""

from __future__ import annotations

from vlcomp.text.lemma import NOUN_TAGS

from .extraction_state import ExtractionState
from .lexicon import COLOUR_SHADES, COLOUR_WORDS_AFTER_SHADE, COLOURS, NUMBER_WORDS


class AttributeRules(ExtractionState):
    """The attribute rules of an extraction (see ``extract``)."""

    def _modifier_attributes(self, head: int, run: list[int], obj: int) -> None:
        owners = {head, *run}
        mods = [
            c
            for k in owners
            for c in self.children[k]
            if self.deps[c] == "amod"
            and self.lower[c] != "-"
            and c not in owners
            and c not in self.obj_of
            and not self.in_span[c]
            and not self._punct_between(c, k)
        ]
        for c in list(mods):
            mods += [g for g in self.children[c] if self.deps[g] == "conj" and self._is_adj(g)]
        spans = self._value_spans(sorted(mods))
        for first, last in spans:
            self.attributes.append((first, obj, self._value(first, last)))
        covered = {k for first, last in spans for k in range(first, last + 1)}
        for k in self._left_attributes(min(run)):
            self.claimed[k] = obj
            if k not in covered:
                self.attributes.append((k, obj, self.lower[k]))
        if self.opts.numerals:
            for c in self.children[head]:
                if self.deps[c] == "nummod":
                    value = NUMBER_WORDS.get(self.lower[c], self.lower[c])
                    if value.isdigit():
                        self.attributes.append((c, obj, value))

    def _left_attributes(self, start: int) -> list[int]:
        """Colour, material and size words right before an object's first word: they
        describe it, whatever the parser attached them to ("Brown triangle & ...",
        "small brown square and purple cross")."""
        out: list[int] = []
        k = start - 1
        while k >= 0 and not self.in_span[k] and k not in self.obj_of:
            if not self._is_attribute_word(k) or self.tags[k] in NOUN_TAGS - {"NNP"}:
                break
            head = self.heads[k]
            if (
                head > start
                and self.tags[head] in NOUN_TAGS
                and self._noun_lemma(head) not in self.opts.stop_objects
                and not self._separated(start, head)
                and not any(self._starts_phrase(m) for m in range(start + 1, head))
            ):
                break  # it modifies a later noun of the same phrase ("large metal spoon")
            out.append(k)
            k -= 1
        return out

    def _value_spans(self, mods: list[int]) -> list[tuple[int, int]]:
        """Group adjacent modifiers into values (hyphen-joined words, shade + colour)."""
        spans: list[tuple[int, int]] = []
        for c in mods:
            if spans and self._continues(spans[-1][1], c):
                spans[-1] = (spans[-1][0], c)
                continue
            first = c
            for g in self.children[c]:
                if g < c and self.lower[g] in COLOUR_SHADES and self._continues(g, c):
                    first = g
            spans.append((first, c))
        return spans

    def _continues(self, left: int, right: int) -> bool:
        between = self.tok.text[self.tok.ends[left] : self.tok.starts[right]]
        if between == "-":
            return True
        shade = self.lower[left] in COLOUR_SHADES
        return (
            shade and self.lower[right] in COLOUR_WORDS_AFTER_SHADE and between.strip() in ("", "-")
        )

    def _value(self, first: int, last: int) -> str:
        if first == last:
            colour = self._colour_of_colored(first)
            return colour if colour is not None else self.lower[first]
        words = [self.lower[k] for k in range(first, last + 1) if self.lower[k] != "-"]
        if words[0] in COLOUR_SHADES and words[-1] in COLOUR_WORDS_AFTER_SHADE:
            return " ".join(words)
        return self.tok.span_text(first, last).lower()

    def _colour_of_colored(self, i: int) -> str | None:
        """ "tan colored" -> "tan": the colour written right before "colored"."""
        if self.lower[i] not in ("colored", "coloured") or i == 0:
            return None
        return self.lower[i - 1] if self.lower[i - 1] in COLOURS else None
