"""Caption patterns: render a subgraph as template text and check it against a scene graph.

A ``Pattern`` is what a caption states: object nodes (a name, attributes, each possibly
negated) and relations between nodes (possibly negated). Positives and every hard negative
are patterns, so text and graph checks always agree.

Template (CREPE's, as the issue describes it; the appendix text could not be retrieved):

- an object's first mention is "a"/"an" + its attributes + its name ("a small red circle");
  size words come first, the others keep scene-graph order; a negated attribute reads
  "not red" in its slot ("a small not red circle");
- each relation is a clause "<subject> <predicate> <object>" in walk order; a node's later
  mentions are definite ("the circle", or "the small red circle" when another node of the
  walk has the same name); nodes with the same words are told apart by mention order
  ("a circle above another circle and the first circle left of a star"); a negated
  relation reads "<subject> that is not <predicate> <object>" ("that does not have" for
  "has");
- the clauses of a connected piece, and then each further piece (a node without
  relations reads as its first mention), are joined with " and ".

``holds`` is the graph check (CREPE appendix A.4, closed world): a pattern holds in a
scene graph when its nodes can be mapped to distinct objects with the node's name, its
attributes and none of its negated attributes, such that every relation is in the graph
and no negated relation is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vlcomp.text import indefinite_article

from .productivity_graph import SceneGraph, Walk

# Size words go before other attributes ("a small red circle", not "a red small circle").
SIZE_WORDS: tuple[str, ...] = (
    "small",
    "large",
    "big",
    "little",
    "tiny",
    "huge",
    "giant",
    "tall",
    "short",
    "long",
    "wide",
    "thin",
)


@dataclass(frozen=True)
class Attr:
    value: str
    negated: bool = False


@dataclass(frozen=True)
class Node:
    name: str
    attributes: tuple[Attr, ...]


@dataclass(frozen=True)
class Edge:
    subject: int  # node index
    predicate: str
    object: int
    negated: bool = False


@dataclass(frozen=True)
class Pattern:
    nodes: tuple[Node, ...]  # in walk order
    edges: tuple[Edge, ...]  # in walk order

    def with_node(self, i: int, node: Node) -> Pattern:
        nodes = list(self.nodes)
        nodes[i] = node
        return replace(self, nodes=tuple(nodes))

    def with_edge(self, k: int, edge: Edge) -> Pattern:
        edges = list(self.edges)
        edges[k] = edge
        return replace(self, edges=tuple(edges))


def pattern_from_walk(graph: SceneGraph, walk: Walk) -> Pattern:
    """The positive caption's pattern; attributes keep scene-graph order per object."""
    position = {obj: i for i, obj in enumerate(walk.objects)}
    taken = set(walk.attributes)
    nodes = tuple(
        Node(
            graph.objects[o].name,
            tuple(Attr(v) for v in graph.objects[o].attributes if (o, v) in taken),
        )
        for o in walk.objects
    )
    edges = tuple(
        Edge(
            position[graph.relations[k].subject],
            graph.relations[k].predicate,
            position[graph.relations[k].object],
        )
        for k in walk.relations
    )
    return Pattern(nodes, edges)


# --------------------------------------------------------------------------- render


def _ordered(attributes: tuple[Attr, ...], leading: tuple[str, ...]) -> list[Attr]:
    rank = {w: i for i, w in enumerate(leading)}
    order = sorted(
        range(len(attributes)),
        key=lambda i: (rank.get(attributes[i].value, len(rank)), i),
    )
    return [attributes[i] for i in order]


def _adjectives(node: Node, leading: tuple[str, ...]) -> list[str]:
    return [f"not {a.value}" if a.negated else a.value for a in _ordered(node.attributes, leading)]


ORDINALS: tuple[str, ...] = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
)


def ordinal(k: int) -> str:
    return ORDINALS[k - 1] if 1 <= k <= len(ORDINALS) else f"{k}th"


def negated_predicate(predicate: str) -> str:
    """'left of' -> 'that is not left of'; 'has'/'have' -> 'that does not have'."""
    head, _, rest = predicate.partition(" ")
    if head in ("has", "have"):
        return " ".join(["that does not have", rest]).strip()
    if head in ("is", "are"):
        return " ".join(["that is not", rest]).strip()
    return f"that is not {predicate}"


def pieces(pattern: Pattern) -> list[list[int]]:
    """Connected pieces (node indices, sorted), ordered by their first node."""
    parent = list(range(len(pattern.nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for e in pattern.edges:
        a, b = find(e.subject), find(e.object)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(pattern.nodes)):
        groups.setdefault(find(i), []).append(i)
    return [groups[k] for k in sorted(groups)]


def render(pattern: Pattern, leading: tuple[str, ...] = SIZE_WORDS) -> str:
    """The template caption of a pattern (see the module docstring)."""
    names = [n.name for n in pattern.nodes]
    phrases = [" ".join([*_adjectives(n, leading), n.name]) for n in pattern.nodes]
    rank: dict[int, int] = {}  # node -> its place among the nodes of the same phrase

    def ref(i: int) -> str:
        if i in rank:
            if phrases.count(phrases[i]) > 1:
                return f"the {ordinal(rank[i])} {phrases[i]}"
            return "the " + (phrases[i] if names.count(names[i]) > 1 else names[i])
        rank[i] = 1 + sum(phrases[j] == phrases[i] for j in rank)
        if rank[i] > 1:
            return f"another {phrases[i]}"
        return f"{indefinite_article(phrases[i])} {phrases[i]}"

    clauses: list[str] = []
    for piece in pieces(pattern):
        members = set(piece)
        edges = [e for e in pattern.edges if e.subject in members]
        if not edges:
            clauses.extend(ref(i) for i in piece)
            continue
        for e in edges:
            subject = ref(e.subject)
            predicate = negated_predicate(e.predicate) if e.negated else e.predicate
            clauses.append(f"{subject} {predicate} {ref(e.object)}")
    return " and ".join(clauses)


def atom_count(pattern: Pattern) -> int:
    return len(pattern.nodes) + sum(len(n.attributes) for n in pattern.nodes) + len(pattern.edges)


# ---------------------------------------------------------------------------- check


def _search_order(pattern: Pattern, nodes: list[int], candidates: list[list[int]]) -> list[int]:
    """Nodes so that each one after the first of its piece is related to an earlier one
    (breadth first from the piece's most constrained node); pieces by difficulty."""
    wanted = set(nodes)
    neighbours: dict[int, list[int]] = {i: [] for i in nodes}
    for e in pattern.edges:
        if e.subject in wanted and e.object in wanted:
            neighbours[e.subject].append(e.object)
            neighbours[e.object].append(e.subject)
    order: list[int] = []
    for piece in sorted(
        (p for p in pieces(pattern) if p[0] in wanted),
        key=lambda p: (min(len(candidates[i]) for i in p), p[0]),
    ):
        queue = [min(piece, key=lambda i: (len(candidates[i]), i))]
        seen = set(queue)
        while queue:
            i = queue.pop(0)
            order.append(i)
            for j in sorted(neighbours[i], key=lambda j: (len(candidates[j]), j)):
                if j not in seen:
                    seen.add(j)
                    queue.append(j)
    return order


def _satisfiable(
    pattern: Pattern,
    nodes: list[int],
    candidates: list[list[int]],
    facts: frozenset[tuple[int, str, int]],
) -> bool:
    order = _search_order(pattern, nodes, candidates)
    position = {i: k for k, i in enumerate(order)}
    edges_of: dict[int, list[Edge]] = {i: [] for i in order}
    for e in pattern.edges:
        if e.subject in position and e.object in position:
            edges_of[max(e.subject, e.object, key=position.__getitem__)].append(e)
    assignment: dict[int, int] = {}
    used: set[int] = set()

    def consistent(i: int) -> bool:
        for e in edges_of[i]:
            present = (assignment[e.subject], e.predicate, assignment[e.object]) in facts
            if present == e.negated:
                return False
        return True

    def search(depth: int) -> bool:
        if depth == len(order):
            return True
        i = order[depth]
        for k in candidates[i]:
            if k in used:
                continue
            assignment[i] = k
            used.add(k)
            if consistent(i) and search(depth + 1):
                return True
            used.discard(k)
            del assignment[i]
        return False

    return search(0)


def holds(pattern: Pattern, graph: SceneGraph) -> bool:
    """Whether the pattern is true of the scene graph (closed world; see module docstring).

    Backtracking over injective node-to-object maps, relations checked as soon as both
    ends are mapped. Each connected piece is first checked on its own (a piece that fails
    alone fails jointly), so a false pattern with several pieces fails fast.
    """
    facts = graph.facts()
    candidates: list[list[int]] = []
    for node in pattern.nodes:
        want = {a.value for a in node.attributes if not a.negated}
        refuse = {a.value for a in node.attributes if a.negated}
        options = [
            k
            for k, obj in enumerate(graph.objects)
            if obj.name == node.name
            and want <= set(obj.attributes)
            and not refuse & set(obj.attributes)
        ]
        if not options:
            return False
        candidates.append(options)
    parts = pieces(pattern)
    if len(parts) > 1 and not all(_satisfiable(pattern, p, candidates, facts) for p in parts):
        return False
    return _satisfiable(pattern, list(range(len(pattern.nodes))), candidates, facts)
