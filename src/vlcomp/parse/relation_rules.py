"""Relations of a caption: which object a token stands for (pronouns, relative pronouns,
conjoined nouns), the subject of a verb, and the relations of prepositions, multi-word
predicate spans, verbs, passives and predicative adjectives (see ``extract``)."""

from __future__ import annotations

from vlcomp.text.lemma import ADJ_TAGS, NOUN_TAGS, VERB_TAGS

from .attribute_rules import AttributeRules
from .lexicon import ANAPHORS, COPULAS, RELATIVE_PRONOUNS

_SUBJECT_DEPS = ("nsubj", "nsubjpass")
_INHERIT_SUBJECT_DEPS = ("conj", "xcomp", "advcl", "acomp")
_MODIFIER_CLAUSE_DEPS = ("acl", "relcl")
_CLIMB_TAGS = ADJ_TAGS | {"IN", "TO", "RB", "RP"}
_ANAPHOR_TAGS = frozenset({"PRP", "DT"})
_RELATIVE_TAGS = frozenset({"WDT", "WP"})
_COMPLEMENT_DEPS = frozenset({"prep", "dobj", "acomp", "attr", "xcomp", "ccomp", "dative"})


class RelationRules(AttributeRules):
    """The relation rules of an extraction: they fill ``relations`` (and the attributes
    of predicative adjectives)."""

    def _is_prep(self, i: int) -> bool:
        """A preposition, or one conjoined to another ("above X and above Y")."""
        dep = self.deps[i]
        if dep == "prep":
            return True
        return dep == "conj" and self.tags[i] in ("IN", "TO") and self.deps[self.heads[i]] == "prep"

    # ------------------------------------------------------------------------ resolution

    def _resolve(self, t: int, avoid: frozenset[int] = frozenset()) -> tuple[int | None, bool]:
        """The object a token stands for, and whether a pronoun was resolved to get it."""
        for _ in range(8):
            if t in self.obj_of:
                return self.obj_of[t], False
            if t in self.redirect:
                t = self.redirect[t]
                continue
            word, tag = self.lower[t], self.tags[t]
            if word in ANAPHORS and tag in _ANAPHOR_TAGS:
                return self._antecedent(t, avoid), True
            if word in RELATIVE_PRONOUNS and tag in _RELATIVE_TAGS:
                clause = self._clause_of(t)
                if clause is None:
                    return None, False
                t = self.heads[clause]
                continue
            return None, False
        return None, False

    def _antecedent(self, t: int, avoid: frozenset[int]) -> int | None:
        best: int | None = None
        for number, (head, _, _) in enumerate(self.objects):
            if head < t and number not in avoid and (best is None or head > self.objects[best][0]):
                best = number
        return best

    def _clause_of(self, t: int) -> int | None:
        for _ in range(6):
            if self.deps[t] == "relcl":
                return t
            if self.heads[t] == t:
                return None
            t = self.heads[t]
        return None

    def _expand(self, t: int, avoid: frozenset[int] = frozenset()) -> list[tuple[int, bool]]:
        """Objects for token ``t`` and the nouns conjoined with it, up to a list separator:
        "star left of hexagon & cross" relates the star to the hexagon only, since a symbol
        ("&", "/", "|", "+", ...) separates the items of an alt-text list."""
        out: list[tuple[int, bool]] = []
        stack = [t]
        while stack:
            k = stack.pop()
            obj, via = self._resolve(k, avoid)
            if obj is not None:
                out.append((obj, via))
            stack += [
                c for c in self.children[k] if self.deps[c] == "conj" and not self._listed(k, c)
            ]
        return out

    def _subjects(self, v: int) -> list[int]:
        """Tokens that are the subject of verb ``v`` (climbing through conjoined,
        complement and adverbial clauses, and the adjective of "about to ...")."""
        for _ in range(5):
            kids = self.children[v]
            subjects = [c for c in kids if self.deps[c] in _SUBJECT_DEPS]
            if subjects:
                # The nearest subject that stands for an object ("a drawing of a cat, and
                # the dog is ...": two subjects, the frame noun is none).
                subjects.sort(key=lambda c: abs(v - c))
                for c in subjects:
                    if self._resolve(c)[0] is not None:
                        return [c]
                return subjects[:1]
            if any(self.deps[c] == "expl" for c in kids):
                return [c for c in kids if self.deps[c] == "attr"][:1]
            dep, head = self.deps[v], self.heads[v]
            if head == v:
                return []
            if dep in _MODIFIER_CLAUSE_DEPS or self.tags[head] in NOUN_TAGS:
                return [head]
            if dep not in _INHERIT_SUBJECT_DEPS and self.tags[v] in VERB_TAGS:
                return []
            v = head
        return []

    def _verb_prefix(self, v: int) -> str:
        """The verb's lemma; empty for the copula. Particles are left out ("sit down in"
        -> "sit in", "hold up" -> "hold")."""
        lemma = self._lemma(v)
        return "" if lemma in COPULAS else lemma

    def _governor(self, g: int) -> tuple[list[int], str] | None:
        """(subject tokens, predicate prefix) for a connector attached to token ``g``."""
        for _ in range(4):
            if g in self.obj_of or g in self.redirect or self.lower[g] in ANAPHORS:
                return [g], ""
            tag = self.tags[g]
            if tag in VERB_TAGS:
                return self._subjects(g), self._verb_prefix(g)
            if tag in _CLIMB_TAGS and self.heads[g] != g:
                g = self.heads[g]
                continue
            return None
        return None

    # ------------------------------------------------------------------------ relations

    def _emit(self, subjects: list[int], pred: str, objects_: list[int]) -> None:
        pred = self.opts.predicates(pred)
        if not pred:
            return
        for s_tok in subjects:
            subj = self._expand(s_tok)
            for s, s_via in subj:
                for o, o_via in self._expand_objects(objects_, s):
                    self.relations.append((s, pred, o, s_via or o_via))

    def _expand_objects(self, objects_: list[int], subject: int) -> list[tuple[int, bool]]:
        out: list[tuple[int, bool]] = []
        for t in objects_:
            out += self._expand(t, frozenset({subject}))
        return out

    def _connector(self, first: int, prep: str, object_tokens: list[int]) -> None:
        gov = self._governor(self.heads[first]) if self.heads[first] != first else None
        if gov is None or not object_tokens:
            return
        subjects, prefix = gov
        self._emit(subjects, f"{prefix} {prep}", object_tokens)

    def _span_relation(self, start: int) -> None:
        end, canonical = self.span_of[start]
        span = range(start, end)
        first = start
        for k in span:
            if self.heads[k] not in span:
                first = k
                break
        objs = sorted(c for k in span for c in self.children[k] if c >= end)
        objs = [c for c in objs if self.deps[c] in ("pobj", "dobj", "npadvmod", "conj")][:1]
        if not objs:
            objs = [k for k in range(end, self.n) if k in self.obj_of][:1]
        before = [h for h, _, _ in self.objects if h < start]
        if self.heads[first] == first or self.heads[first] in span:
            # The parser made the span the root: the subject is the nearest earlier object.
            if before and objs:
                self._emit([before[-1]], canonical, objs)
            return
        gov = self._governor(self.heads[first])
        if gov is None or not objs:
            return
        subjects, prefix = gov
        if before and subjects and all(s >= end and self._listed(first, s) for s in subjects):
            # "hexagon right of star / cross isolated": the verb's subject is another item
            # of the list; the relation belongs to the object written before it.
            subjects, prefix = [before[-1]], ""
        self._emit(subjects, f"{prefix} {canonical}", objs)

    def _prep_relation(self, p: int) -> None:
        objs = [c for c in self.children[p] if self.deps[c] == "pobj"][:1]
        word = self.lower[p]
        head = self.heads[p]
        if not objs:
            # Stranded in a relative clause: "the fence the players are leaning on".
            if self.deps[head] == "relcl" and self.heads[head] != head:
                self._connector(p, word, [self.heads[head]])
            return
        if word == "of" and (head in self.obj_of or head in self.redirect):
            if head in self.redirect:
                return
            if self.opts.of_as_have:
                if self._noun_lemma(head) in self.opts.containers:
                    self._emit([head], "have", objs)
                else:
                    self._emit(objs, "have", [head])
                return
        self._connector(p, word, objs)

    def _verb_relations(self, v: int) -> None:
        kids = self.children[v]
        for c in kids:
            if self.deps[c] in ("acomp", "attr") and self._is_adj(c) and not self.in_span[c]:
                self._predicative(v, c)
        prefix = self._verb_prefix(v)
        if not prefix:
            return
        dobj = [c for c in kids if self.deps[c] == "dobj"]
        if dobj:
            self._emit(self._subjects(v), prefix, dobj)
        elif self._object_gap(v):
            # "the jeans the man is wearing": the clause's noun is the verb's object; a
            # particle at the end is a stranded preposition ("the fence they lean on").
            particles = [self.lower[c] for c in kids if self.deps[c] == "prt"]
            self._emit(self._subjects(v), " ".join([prefix, *particles]), [self.heads[v]])
        for c in kids:
            if self.deps[c] == "agent":
                agents = [g for g in self.children[c] if self.deps[g] == "pobj"]
                patients = [g for g in kids if self.deps[g] == "nsubjpass"]
                if not patients and self.deps[v] in _MODIFIER_CLAUSE_DEPS:
                    patients = [self.heads[v]]
                if agents and patients:
                    self._emit(agents, prefix, patients)

    def _object_gap(self, v: int) -> bool:
        if self.deps[v] != "relcl" or self.tags[v] == "VBN":
            return False
        kids = self.children[v]
        subject = [c for c in kids if self.deps[c] == "nsubj"]
        if not subject or self.lower[subject[0]] in RELATIVE_PRONOUNS:
            return False
        return not any(self.deps[c] in _COMPLEMENT_DEPS for c in kids)

    def _predicative(self, v: int, adj: int) -> None:
        values = [adj] + [g for g in self.children[adj] if self.deps[g] == "conj"]
        for s_tok in self._subjects(v):
            for obj, _ in self._expand(s_tok):
                for first, last in self._value_spans(sorted(values)):
                    self.attributes.append((first, obj, self._value(first, last)))
