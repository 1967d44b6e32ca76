"""CREPE productivity: random walks, crops, template captions, graph-checked negatives."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.negatives.jobs import productivity_job
from vlcomp.negatives.productivity import (
    FAILURES_SCHEMA,
    ITEMS_SCHEMA,
    ProductivitySettings,
    crop_filter,
    overlap,
    productivity_benchmark,
    read_scene_graphs,
    sample_walks,
)
from vlcomp.negatives.productivity import SettingsError as ProductivitySettingsError
from vlcomp.negatives.productivity_graph import (
    SceneGraph,
    Walk,
    random_walk,
    scene_graph_from_vg,
    walk_crop,
)
from vlcomp.negatives.productivity_negatives import (
    GRAPH_CHECK,
    NO_CANDIDATE,
    NO_FOIL,
    GraphVocabulary,
    atom_negatives,
    attribute_kinds,
    finder_foils,
    lexicon_attribute_kinds,
    lexicon_foils,
    negation_candidates,
    negation_negatives,
    swap_candidates,
    swap_negatives,
    vocabulary_foils,
)
from vlcomp.negatives.productivity_text import (
    Attr,
    Edge,
    Node,
    Pattern,
    atom_count,
    holds,
    pattern_from_walk,
    pieces,
    render,
)
from vlcomp.world import DEFAULT_WORLD_CONFIG, build_eval_set

# ------------------------------------------------------------------------- helpers

Obj = tuple[str, list[str], tuple[int, int, int, int]]


def graph_of(
    objects: list[Obj], relations: list[tuple[int, str, int]], size: tuple[int, int] = (100, 100)
) -> SceneGraph:
    """A scene graph from (name, attributes, box) objects and (subject, predicate, object)
    relations by 0-based object position."""
    entry = {
        "image_id": 7,
        "objects": [
            {
                "object_id": 10 + i,
                "names": [name],
                "attributes": attrs,
                **dict(zip("xywh", box, strict=True)),
            }
            for i, (name, attrs, box) in enumerate(objects)
        ],
        "relationships": [
            {"relationship_id": 100 + k, "subject_id": 10 + s, "object_id": 10 + o, "predicate": p}
            for k, (s, p, o) in enumerate(relations)
        ],
    }
    graph, dropped = scene_graph_from_vg(entry, *size)
    assert dropped == []
    return graph


BOX = (10, 10, 20, 20)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def walk_atoms(graph: SceneGraph, walk: Walk) -> Counter:
    atoms: Counter = Counter()
    atoms.update(("obj", o) for o in walk.objects)
    atoms.update(("att", a) for a in walk.attributes)
    atoms.update(("rel", r) for r in walk.relations)
    return atoms


def brute_force_holds(pattern: Pattern, graph: SceneGraph) -> bool:
    facts = graph.facts()
    for perm in itertools.permutations(range(len(graph.objects)), len(pattern.nodes)):
        ok = True
        for node, k in zip(pattern.nodes, perm, strict=True):
            obj = graph.objects[k]
            if obj.name != node.name:
                ok = False
                break
            for a in node.attributes:
                if (a.value in obj.attributes) == a.negated:
                    ok = False
                    break
            if not ok:
                break
        if ok and all(
            ((perm[e.subject], e.predicate, perm[e.object]) in facts) != e.negated
            for e in pattern.edges
        ):
            return True
    return False


# --------------------------------------------------------------------------- world


def small_world_config() -> dict[str, Any]:
    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg["eval"] = {"n_images": 30, "captions_per_image": 1, "heldout_fraction": 0.5}
    return cfg


WORLD_SETTINGS: dict[str, Any] = {
    "complexities": [4, 6, 9, 12],
    "walks_per_image": 6,
    "min_area": 0,
}


@pytest.fixture(scope="module")
def world_cfg() -> dict[str, Any]:
    return small_world_config()


@pytest.fixture(scope="module")
def world_vg(world_cfg: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world") / "eval"
    build_eval_set(world_cfg, out)
    return out / "vg"


@pytest.fixture(scope="module")
def world_graphs(world_vg: Path) -> list[SceneGraph]:
    return list(read_scene_graphs(world_vg))


def world_attribute_kinds(world_cfg: dict[str, Any]) -> dict[str, list[str]]:
    """The world's closed vocabulary of attribute kinds (what the generic lexicon must
    reproduce on the world)."""
    return {"colour": list(world_cfg["colours"]), "size": list(world_cfg["sizes"])}


def run_benchmark(
    vg: Path,
    out: Path,
    world_cfg: dict[str, Any],
    seed: int = 0,
    closed_vocabulary: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """The benchmark with foils from the folder's own scene graphs and the generic
    lexicon (as ``productivity_job``), or with the world's closed vocabulary."""
    if closed_vocabulary:
        kinds = world_attribute_kinds(world_cfg)
        foils = vocabulary_foils(list(world_cfg["shapes"]), kinds, list(world_cfg["relations"]))
    else:
        vocabulary = GraphVocabulary.from_graphs(read_scene_graphs(vg))
        kinds = lexicon_attribute_kinds(vocabulary.attributes)
        foils = lexicon_foils(vocabulary)
    settings = {**WORLD_SETTINGS, "attribute_kinds": kinds, **overrides}
    paths = {k: out / f"{k}.parquet" for k in ("candidates", "items", "failures", "summary")}
    summary = productivity_benchmark(
        vg,
        paths["candidates"],
        paths["items"],
        paths["failures"],
        settings,
        seed,
        foils,
        out_summary=paths["summary"],
    )
    return {"summary": summary, "paths": paths, "settings": settings}


@pytest.fixture(scope="module")
def world_run(
    world_vg: Path, world_cfg: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    run = run_benchmark(world_vg, tmp_path_factory.mktemp("prod"), world_cfg)
    run["candidates"] = pl.read_parquet(run["paths"]["candidates"])
    run["items"] = pl.read_parquet(run["paths"]["items"])
    run["failures"] = pl.read_parquet(run["paths"]["failures"])
    return run


# --------------------------------------------------------------------------- walks


@pytest.mark.parametrize("n", range(4, 13))
def test_walks_have_n_distinct_atoms_and_stay_connected(
    world_graphs: list[SceneGraph], n: int
) -> None:
    generator = rng(n)
    found = 0
    for graph in world_graphs:
        for _ in range(3):
            walk = random_walk(graph, n, generator)
            if walk is None:
                continue
            found += 1
            atoms = walk_atoms(graph, walk)
            assert walk.n_atoms == n == sum(atoms.values())
            assert max(atoms.values()) == 1  # every step added a new atom
            objects = set(walk.objects)
            assert all(o in objects for o, _ in walk.attributes)
            assert all(v in graph.objects[o].attributes for o, v in walk.attributes)
            for k in walk.relations:
                r = graph.relations[k]
                assert r.subject in objects and r.object in objects
            pairs = [
                frozenset((graph.relations[k].subject, graph.relations[k].object))
                for k in walk.relations
            ]
            assert len(pairs) == len(set(pairs))  # one relation per object pair
            # The world's scene graphs are connected: a walk never needs to jump.
            assert walk.jumps == 0
            assert len(pieces(pattern_from_walk(graph, walk))) == 1
    assert found > 0


def test_walk_jumps_to_another_component_when_exhausted() -> None:
    graph = graph_of(
        [("circle", ["red"], BOX), ("square", [], (40, 10, 20, 20)), ("star", ["big"], BOX)],
        [(0, "left of", 1)],
    )
    assert graph.components() == (0, 0, 2)
    for seed in range(20):
        walk = random_walk(graph, 6, rng(seed))
        assert walk is not None and walk.n_atoms == 6 and walk.jumps == 1
        assert set(walk.objects) == {0, 1, 2}
        text = render(pattern_from_walk(graph, walk))
        assert "and a " in text
        assert len(pieces(pattern_from_walk(graph, walk))) == 2


def test_walk_starting_in_a_component_jumps_only_after_exhausting_it() -> None:
    graph = graph_of(
        [("circle", ["red"], BOX), ("square", [], (40, 10, 20, 20)), ("star", ["big"], BOX)],
        [(0, "left of", 1)],
    )
    starts = Counter()
    for seed in range(30):
        walk = random_walk(graph, 5, rng(seed))
        if walk is None:  # from the star, the walk can strand itself one atom short
            assert random_walk(graph, 5, rng(seed)) is None
            continue
        if walk.objects[0] in (0, 1):
            # all 4 atoms of the circle-square component, then a jump to the star
            assert walk.objects[:2] in ((0, 1), (1, 0)) and walk.objects[2] == 2
            assert (0, "red") in walk.attributes and walk.relations == (0,)
            starts["pair"] += 1
        else:
            assert walk.objects[0] == 2 and (2, "big") in walk.attributes
            starts["star"] += 1
    assert starts["pair"] > 0 and starts["star"] > 0


def test_walk_backtracks_within_its_component() -> None:
    # circle(red) - square: after circle -> square the square has nothing new, so the walk
    # must step back to the circle for "red" rather than end short or jump.
    graph = graph_of([("circle", ["red"], BOX), ("square", [], BOX)], [(0, "above", 1)])
    walks = [random_walk(graph, 4, rng(seed)) for seed in range(40)]
    assert all(w is not None and w.n_atoms == 4 and w.jumps == 0 for w in walks)
    assert any(
        w is not None and w.objects == (0, 1) and w.attributes == ((0, "red"),) for w in walks
    )


def test_walk_too_short_is_discarded() -> None:
    graph = graph_of([("circle", ["red"], BOX)], [])
    assert graph.max_atoms() == 2
    assert random_walk(graph, 3, rng()) is None
    settings = ProductivitySettings(min_area=0, walks_per_image=3)
    kept, failures = sample_walks(graph, 3, settings, seed=0)
    assert kept == [] and failures == Counter({"image: fewer atoms than n": 1})


def test_walk_never_overshoots_the_budget() -> None:
    # circle(red) - square: from the circle, 2 atoms leave only a 2-atom relation step
    graph = graph_of([("circle", ["red"], BOX), ("square", [], BOX)], [(0, "above", 1)])
    outcomes = {random_walk(graph, 3, rng(s)) is None for s in range(40)}
    assert outcomes == {True, False}  # some starts succeed, the others end short
    for s in range(40):
        walk = random_walk(graph, 3, rng(s))
        assert walk is None or walk.n_atoms == 3


def test_converse_relation_is_not_stated_twice() -> None:
    graph = graph_of(
        [("circle", [], BOX), ("square", [], BOX)], [(0, "left of", 1), (1, "right of", 0)]
    )
    assert graph.max_atoms() == 3
    assert graph.max_atoms(one_relation_per_pair=False) == 4
    assert random_walk(graph, 4, rng()) is None
    walk = random_walk(graph, 4, rng(), one_relation_per_pair=False)
    assert walk is not None and len(walk.relations) == 2


# --------------------------------------------------------------------------- crops


def test_crop_is_the_union_of_the_walk_boxes_clipped_to_the_image() -> None:
    graph = graph_of(
        [
            ("circle", [], (10, 20, 30, 5)),
            ("square", [], (35, 5, 10, 10)),
            ("star", [], (0, 0, 5, 5)),
        ],
        [],
        size=(44, 50),
    )
    assert walk_crop(graph, [0]) == (10, 20, 30, 5)
    assert walk_crop(graph, [0, 1]) == (10, 5, 34, 20)  # x1 = min(45, 44)
    assert walk_crop(graph, [2, 1]) == (0, 0, 44, 15)


def test_world_items_crop_is_union_of_walk_objects(
    world_run: dict[str, Any], world_graphs: list[SceneGraph]
) -> None:
    by_id = {g.image_id: g for g in world_graphs}
    positives = world_run["candidates"].filter(pl.col("is_positive"))
    joined = positives.join(world_run["items"], on="item_id", how="left")
    assert joined["x"].null_count() == 0
    for row in joined.iter_rows(named=True):
        graph = by_id[row["image_id"]]
        prov = json.loads(row["provenance"])
        index = {o.object_id: k for k, o in enumerate(graph.objects)}
        crop = walk_crop(graph, [index[i] for i in prov["object_ids"]])
        assert crop == (row["x"], row["y"], row["width"], row["height"])
        assert prov["crop"] == dict(zip(("x", "y", "w", "h"), crop, strict=True))
        assert prov["complexity"] == row["complexity"]


def test_crop_filters() -> None:
    s = ProductivitySettings(min_area=100, min_area_fraction=0.1, min_aspect=0.5, max_aspect=2)
    assert crop_filter((0, 0, 9, 9), 100, 100, s) == "crop: too small"
    assert crop_filter((0, 0, 40, 40), 100, 100, s) is None
    assert crop_filter((0, 0, 20, 20), 100, 100, s) == "crop: too small fraction"
    assert crop_filter((0, 0, 70, 30), 100, 100, s) == "crop: aspect ratio"
    assert crop_filter((0, 0, 30, 61), 100, 100, s) == "crop: aspect ratio"


def test_overlap_measures() -> None:
    a, b = (0, 0, 10, 10), (5, 0, 10, 10)
    assert overlap(a, b, "iou") == pytest.approx(50 / 150)
    assert overlap(a, b, "min") == pytest.approx(0.5)
    inner = (0, 0, 10, 5)
    assert overlap(a, inner, "iou") == pytest.approx(0.5)
    assert overlap(a, inner, "min") == 1.0
    assert overlap(a, (20, 20, 5, 5), "iou") == 0.0


def test_kept_crops_do_not_overlap(world_run: dict[str, Any]) -> None:
    items = world_run["items"].unique(["image_id", "complexity", "x", "y", "width", "height"])
    walks = (
        world_run["items"]
        .with_columns(pl.col("item_id").str.replace(r"/[^/]+$", "").alias("walk"))
        .unique("walk")
    )
    for (_, _), group in walks.group_by(["image_id", "complexity"]):
        boxes = list(group.select("x", "y", "width", "height").iter_rows())
        for a, b in itertools.combinations(boxes, 2):
            assert overlap(a, b, "iou") < 0.75
    assert items.height == walks.height


def test_dedupe_drops_overlapping_crops_of_one_image() -> None:
    # Two circle-square pairs far apart. The first has 6 atoms, so its 5-atom walks differ
    # in the atom left out but all share one crop: only the first of them is kept.
    objects: list[Obj] = [
        ("circle", ["red", "small"], (0, 0, 10, 10)),
        ("square", ["blue"], (12, 0, 10, 10)),
        ("circle", ["green"], (60, 60, 10, 10)),
        ("square", ["pink"], (72, 60, 10, 10)),
    ]
    graph = graph_of(objects, [(0, "left of", 1), (2, "left of", 3)])
    loose = ProductivitySettings(min_area=0, min_area_fraction=0, max_aspect=10, walks_per_image=40)
    kept, failures = sample_walks(graph, 5, loose, seed=0)
    crops = {k.crop for k in kept}
    assert crops == {(0, 0, 22, 10), (60, 60, 22, 10)}
    assert failures["crop: overlaps a kept crop"] > 0
    for a, b in itertools.combinations([k.crop for k in kept], 2):
        assert overlap(a, b, "iou") < 0.75


# ------------------------------------------------------------------------ captions


def two_object_graph() -> SceneGraph:
    return graph_of(
        [("circle", ["red", "small"], BOX), ("square", ["blue"], (40, 10, 20, 20))],
        [(0, "left of", 1)],
    )


def test_template_attributes_before_objects_and_relation() -> None:
    graph = two_object_graph()
    walk = Walk((0, 1), ((0, "red"), (0, "small"), (1, "blue")), (0,), 0)
    pattern = pattern_from_walk(graph, walk)
    assert render(pattern) == "a small red circle left of a blue square"
    assert render(pattern_from_walk(graph, Walk((0,), ((0, "small"),), (), 0))) == "a small circle"


def test_template_chains_with_definite_references_and_appends_pieces() -> None:
    pattern = Pattern(
        (
            Node("circle", (Attr("red"),)),
            Node("square", ()),
            Node("star", (Attr("orange"),)),
            Node("heart", (Attr("large"),)),
        ),
        (Edge(0, "left of", 1), Edge(2, "above", 1)),
    )
    assert render(pattern) == (
        "a red circle left of a square and an orange star above the square and a large heart"
    )


def test_template_disambiguates_repeated_names() -> None:
    pattern = Pattern(
        (Node("circle", (Attr("red"),)), Node("circle", (Attr("blue"),)), Node("star", ())),
        (Edge(0, "left of", 1), Edge(1, "above", 2), Edge(2, "below", 0)),
    )
    assert render(pattern) == (
        "a red circle left of a blue circle and the blue circle above a star "
        "and the star below the red circle"
    )


def test_template_orders_nodes_with_the_same_words() -> None:
    pattern = Pattern(
        (Node("cross", ()), Node("star", ()), Node("cross", ()), Node("cross", (Attr("red"),))),
        (Edge(0, "left of", 1), Edge(2, "above", 0), Edge(3, "below", 2), Edge(1, "above", 3)),
    )
    assert render(pattern) == (
        "a cross left of a star and another cross above the first cross "
        "and a red cross below the second cross and the star above the red cross"
    )


def test_template_negations() -> None:
    base = Pattern(
        (Node("circle", (Attr("red"), Attr("small"))), Node("square", (Attr("blue"),))),
        (Edge(0, "left of", 1),),
    )
    not_red = base.with_node(0, Node("circle", (Attr("red", True), Attr("small"))))
    assert render(not_red) == "a small not red circle left of a blue square"
    not_left = base.with_edge(0, Edge(0, "left of", 1, negated=True))
    assert render(not_left) == "a small red circle that is not left of a blue square"
    has = Pattern((Node("man", ()), Node("hat", ())), (Edge(0, "has", 1, negated=True),))
    assert render(has) == "a man that does not have a hat"
    orange = Pattern((Node("apple", (Attr("orange", True),)),), ())
    assert render(orange) == "a not orange apple"
    assert render(Pattern((Node("apple", (Attr("orange"),)),), ())) == "an orange apple"
    assert render(Pattern((Node("uniform", ()), Node("hour", ())), ())) == "a uniform and an hour"


def test_caption_states_each_atom_once(world_graphs: list[SceneGraph]) -> None:
    generator = rng(5)
    checked: Counter[int] = Counter()
    for graph in world_graphs[:20]:
        for n in (4, 8, 12):
            walk = random_walk(graph, n, generator)
            if walk is None:
                continue
            checked[n] += 1
            pattern = pattern_from_walk(graph, walk)
            assert atom_count(pattern) == n
            text = render(pattern)
            words = text.split(" ")
            # one indefinite mention per object, one clause per relation
            assert sum(words.count(w) for w in ("a", "an", "another")) == len(pattern.nodes)
            assert text.count(" and ") == max(len(pattern.edges), 1) - 1
            for node in pattern.nodes:
                for a in node.attributes:
                    assert a.value in words
    # Walks of every length were found and checked (the loop above cannot pass vacuously).
    assert checked[4] >= 10 and checked[8] >= 5, checked


# -------------------------------------------------------------------- graph checks


def test_holds_agrees_with_brute_force(world_graphs: list[SceneGraph]) -> None:
    generator = rng(3)
    outcomes: Counter[bool] = Counter()
    for graph in world_graphs[:15]:
        for n in (4, 7, 10):
            walk = random_walk(graph, n, generator)
            if walk is None:
                continue
            pattern = pattern_from_walk(graph, walk)
            assert holds(pattern, graph)
            edits = swap_candidates(pattern, lambda _: None) + negation_candidates(pattern)
            for _, edited, _ in edits:
                expected = brute_force_holds(edited, graph)
                assert holds(edited, graph) == expected
                outcomes[expected] += 1
            for other in world_graphs[:5]:
                assert holds(pattern, other) == brute_force_holds(pattern, other)
    assert outcomes[True] > 0 and outcomes[False] > 0


def swap_scene() -> SceneGraph:
    # red circle left of blue square, and elsewhere a blue circle left of a red square
    return graph_of(
        [
            ("circle", ["red"], BOX),
            ("square", ["blue"], BOX),
            ("circle", ["blue"], BOX),
            ("square", ["red"], BOX),
        ],
        [(0, "left of", 1), (2, "left of", 3)],
    )


def test_swap_still_true_of_the_scene_is_rejected() -> None:
    graph = swap_scene()
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "red"), (1, "blue")), (0,), 0))
    positive = render(pattern)
    result = swap_negatives(graph, pattern, positive, rng(), 5)
    texts = [n.text for n in result.negatives]
    assert "a blue circle left of a red square" not in texts  # true: objects 2 and 3
    assert texts == ["a red square left of a blue circle"]
    assert result.true_of_scene == 1 and result.positions == 2
    # without the second pair the attribute swap is a valid negative
    alone = graph_of([("circle", ["red"], BOX), ("square", ["blue"], BOX)], [(0, "left of", 1)])
    result = swap_negatives(alone, pattern, positive, rng(), 5)
    assert sorted(n.text for n in result.negatives) == [
        "a blue circle left of a red square",
        "a red square left of a blue circle",
    ]


def test_swap_with_only_true_edits_fails_the_graph_check() -> None:
    graph = graph_of(
        [
            ("circle", ["red"], BOX),
            ("circle", ["blue"], BOX),
            ("circle", ["blue"], BOX),
            ("circle", ["red"], BOX),
        ],
        [(0, "left of", 1), (2, "left of", 3)],
    )
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "red"), (1, "blue")), (0,), 0))
    result = swap_negatives(graph, pattern, render(pattern), rng(), 5)
    assert result.negatives == [] and result.failure(1) == GRAPH_CHECK
    single = pattern_from_walk(graph, Walk((0,), ((0, "red"),), (), 0))
    result = swap_negatives(graph, single, render(single), rng(), 5)
    assert result.failure(1) == NO_CANDIDATE


def test_swap_respects_attribute_kinds() -> None:
    graph = graph_of(
        [("circle", ["red", "small"], BOX), ("square", ["large", "blue"], BOX)],
        [(0, "left of", 1)],
    )
    walk = Walk((0, 1), ((0, "red"), (0, "small"), (1, "large"), (1, "blue")), (0,), 0)
    pattern = pattern_from_walk(graph, walk)
    kind = attribute_kinds({"colour": ["red", "blue"], "size": ["small", "large"]})
    result = swap_negatives(graph, pattern, render(pattern), rng(), 10, kind)
    swapped = {
        tuple(sorted((n.change["a"], n.change["b"]))) for n in result.negatives if n.target == "att"
    }
    assert swapped == {("blue square", "red circle"), ("large square", "small circle")}


def test_negation_still_true_of_the_scene_is_rejected() -> None:
    # two red circles; only one is left of the square
    graph = graph_of(
        [("circle", ["red"], BOX), ("square", [], BOX), ("circle", ["red"], BOX)],
        [(0, "left of", 1)],
    )
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "red"),), (0,), 0))
    result = negation_negatives(graph, pattern, render(pattern), rng(), 5)
    assert [n.text for n in result.negatives] == ["a not red circle left of a square"]
    assert result.true_of_scene == 1
    alone = graph_of([("circle", ["red"], BOX), ("square", [], BOX)], [(0, "left of", 1)])
    result = negation_negatives(alone, pattern, render(pattern), rng(), 5)
    assert sorted(n.text for n in result.negatives) == [
        "a not red circle left of a square",
        "a red circle that is not left of a square",
    ]


def test_atom_foils_are_checked_and_forbidden_values_dropped() -> None:
    graph = graph_of(
        [("circle", ["red"], BOX), ("square", [], BOX), ("circle", ["blue"], BOX)],
        [(0, "left of", 1), (2, "above", 1)],
    )
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "red"),), (0,), 0))
    calls: list[tuple[str, str, frozenset[str]]] = []

    def provider(kind: str, value: str, forbidden: frozenset[str]) -> list[str]:
        calls.append((kind, value, forbidden))
        # returns forbidden values too: they must be dropped
        rel = ["above", "below", "right of"]
        return {"att": ["blue", "green"], "obj": ["circle", "star"], "rel": rel}[kind]

    result = atom_negatives(graph, pattern, render(pattern), provider, rng(), 10)
    texts = sorted(n.text for n in result.negatives)
    # "a blue circle left of a square" is false (the blue circle is above it): allowed
    # in graph mode. Of the spatial foils only the converse: "a red circle above a square"
    # is false as the graph reads "left of", but true where both hold (boxes apart along
    # both axes).
    assert texts == sorted(
        [
            "a blue circle left of a square",
            "a green circle left of a square",
            "a red star left of a square",
            "a red circle left of a star",
            "a red circle right of a square",
            "a red circle left of a circle",
        ]
    )
    forbidden = {(k, v): f for k, v, f in calls}
    assert "red" in forbidden[("att", "red")]
    assert "blue" not in forbidden[("att", "red")]
    # image mode: no value present anywhere in the image
    calls.clear()
    result = atom_negatives(graph, pattern, render(pattern), provider, rng(), 10, "image")
    att_forbidden = next(f for kind, _, f in calls if kind == "att")
    assert {"blue", "red"} <= att_forbidden
    assert "a blue circle left of a square" not in {n.text for n in result.negatives}
    assert "a red circle above a square" not in {n.text for n in result.negatives}
    for n in result.negatives:
        assert n.change["to"] not in {"blue", "red", "above", "left of", "circle", "square"}


def test_atom_without_provider_counts_no_foil() -> None:
    graph = two_object_graph()
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "red"),), (0,), 0))
    result = atom_negatives(graph, pattern, render(pattern), None, rng(), 5)
    assert result.negatives == [] and result.failure(1) == NO_FOIL


def test_rank_texts_orders_an_atoms_foils() -> None:
    graph = graph_of([("circle", ["red"], BOX)], [])
    pattern = pattern_from_walk(graph, Walk((0,), ((0, "red"),), (), 0))

    def provider(kind: str, value: str, forbidden: frozenset[str]) -> list[str]:
        return ["blue", "green", "pink"] if kind == "att" else []

    def prefer_pink(texts: list[str]) -> list[int]:
        return sorted(range(len(texts)), key=lambda i: ("pink" not in texts[i], texts[i]))

    plain = atom_negatives(graph, pattern, "a red circle", provider, rng(), 1)
    ranked = atom_negatives(
        graph, pattern, "a red circle", provider, rng(), 1, rank_texts=prefer_pink
    )
    assert [n.text for n in plain.negatives] == ["a blue circle"]
    assert [n.text for n in ranked.negatives] == ["a pink circle"]


def test_wordnet_finder_plugs_in() -> None:
    wordnet_foils = pytest.importorskip("vlcomp.negatives.wordnet_foils")
    try:
        finder = wordnet_foils.FoilFinder(
            {
                "object": ["circle", "square", "triangle"],
                "attribute": ["red", "blue", "green", "small", "large"],
                "relation": ["left of", "right of", "above", "below"],
            }
        )
    except wordnet_foils.WordNetMissingError:
        pytest.skip("WordNet is not installed")
    provider = finder_foils(finder)
    assert provider("att", "small", frozenset()) == ["large"]
    assert provider("rel", "left of", frozenset()) == ["right of"]
    assert "blue" not in provider("att", "red", frozenset({"blue"}))
    assert provider("obj", "unicornfish", frozenset()) == []  # a Rejection: no foil
    graph = two_object_graph()
    pattern = pattern_from_walk(graph, Walk((0, 1), ((0, "small"),), (0,), 0))
    result = atom_negatives(graph, pattern, render(pattern), provider, rng(), 5)
    assert "a large circle left of a square" in {n.text for n in result.negatives}
    assert "a small circle right of a square" in {n.text for n in result.negatives}


def test_vocabulary_foils_keep_attribute_kind() -> None:
    provider = vocabulary_foils(
        ["circle", "square"],
        {"colour": ["red", "blue", "green"], "size": ["small", "large"]},
        ["above", "below"],
    )
    assert provider("att", "red", frozenset({"red", "green"})) == ["blue"]
    assert provider("att", "small", frozenset()) == ["large"]
    assert provider("obj", "circle", frozenset()) == ["square"]
    assert provider("rel", "above", frozenset()) == ["below"]


def test_candidate_table_contract(world_run: dict[str, Any]) -> None:
    cands = world_run["candidates"]
    assert dict(cands.schema) == CANDIDATES_SCHEMA
    per_item = cands.group_by("item_id", maintain_order=True).agg(
        pl.col("is_positive").sum().alias("pos"),
        pl.col("is_positive").first().alias("first"),
        pl.col("text").n_unique().alias("distinct"),
        pl.len().alias("rows"),
        pl.col("family").n_unique().alias("families"),
    )
    assert (per_item["pos"] == 1).all() and per_item["first"].all()
    assert (per_item["distinct"] == per_item["rows"]).all()  # no negative repeats a text
    assert (per_item["families"] == 1).all()
    assert (per_item["rows"] <= 1 + 5).all()
    assert set(cands["family"]) == {"atom", "swap", "neg"}
    assert set(cands.filter(~pl.col("is_positive"))["target"]) == {"obj", "att", "rel"}
    assert cands.filter(pl.col("is_positive"))["target"].null_count() == cands["is_positive"].sum()
    assert set(cands["benchmark"]) == {"crepe_productivity"}
    assert set(cands["generator"]) == {"template:productivity"}
    items = world_run["items"]
    assert dict(items.schema) == ITEMS_SCHEMA
    assert sorted(items["item_id"]) == sorted(per_item["item_id"])
    image_of = dict(zip(items["item_id"], items["image_id"], strict=True))
    assert all(image_of[i] == im for i, im in zip(cands["item_id"], cands["image"], strict=True))


# ------------------------------------------------------------ job, seeds, failures


def file_hashes(paths: dict[str, Path]) -> dict[str, str]:
    return {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in paths.items()}


def test_seeded_runs_are_byte_identical(
    world_vg: Path, world_cfg: dict[str, Any], world_run: dict[str, Any], tmp_path: Path
) -> None:
    again = run_benchmark(world_vg, tmp_path / "again", world_cfg)
    assert file_hashes(again["paths"]) == file_hashes(world_run["paths"])
    other = run_benchmark(world_vg, tmp_path / "other", world_cfg, seed=1)
    assert (
        file_hashes(other["paths"])["candidates"] != file_hashes(world_run["paths"])["candidates"]
    )


def test_failures_account_for_every_walk_and_item(
    world_run: dict[str, Any], world_graphs: list[SceneGraph]
) -> None:
    failures = world_run["failures"]
    assert dict(failures.schema) == FAILURES_SCHEMA
    settings = world_run["settings"]
    summary = world_run["summary"].unique(["complexity", "walks"])
    kept = dict(zip(summary["complexity"], summary["walks"], strict=True))
    for n in settings["complexities"]:
        rows = failures.filter(pl.col("complexity") == n)
        fewer = rows.filter(pl.col("reason") == "image: fewer atoms than n")["count"].sum()
        walk_failed = rows.filter(pl.col("reason").str.contains(r"^(walk|crop):"))["count"].sum()
        tried = (len(world_graphs) - fewer) * settings["walks_per_image"]
        assert kept.get(n, 0) + walk_failed == tried
        for family in ("atom", "swap", "neg"):
            items = world_run["summary"].filter(
                (pl.col("complexity") == n) & (pl.col("family") == family)
            )["items"][0]
            dropped = rows.filter(
                (pl.col("family") == family) & pl.col("reason").str.starts_with("item:")
            )["count"].sum()
            assert items + dropped == kept.get(n, 0)
    # the graph checks did reject edits in the world
    rejected = failures.filter(pl.col("reason") == "negative: true of scene graph")
    assert set(rejected["family"]) >= {"swap", "neg"}


def test_summary_matches_candidates(world_run: dict[str, Any]) -> None:
    summary, cands = world_run["summary"], world_run["candidates"]
    assert summary["negatives"].sum() == (~cands["is_positive"]).sum()
    assert summary["items"].sum() == cands["item_id"].n_unique()
    assert summary.filter(pl.col("complexity") == 12)["walks"][0] > 0


def test_min_negatives_drops_items_with_too_few(
    world_vg: Path, world_cfg: dict[str, Any], tmp_path: Path
) -> None:
    run = run_benchmark(world_vg, tmp_path, world_cfg, min_negatives=5, complexities=[4])
    cands = pl.read_parquet(run["paths"]["candidates"])
    sizes = cands.group_by("item_id").len()["len"]
    assert (sizes == 6).all()
    failures = pl.read_parquet(run["paths"]["failures"])
    assert failures.filter(pl.col("reason") == "item: too few negatives")["count"].sum() > 0


def test_no_foil_provider_counts_atom_items(
    world_vg: Path, world_cfg: dict[str, Any], tmp_path: Path
) -> None:
    paths = [tmp_path / f"{k}.parquet" for k in ("c", "i", "f")]
    summary = productivity_benchmark(
        world_vg, *paths, {**WORLD_SETTINGS, "complexities": [5]}, 0, None
    )
    failures = pl.read_parquet(paths[2])
    no_foil = failures.filter(pl.col("reason") == "item: no foil")["count"].sum()
    assert no_foil == summary["walks"][0] > 0
    assert summary.filter(pl.col("family") == "atom")["items"][0] == 0


def test_read_scene_graphs_sizes_and_bad_input(tmp_path: Path) -> None:
    vg = tmp_path / "vg"
    vg.mkdir()
    (vg / "image_data.json").write_text(json.dumps([{"image_id": 5, "width": 50, "height": 40}]))
    entry = {
        "image_id": 5,
        "objects": [
            {
                "object_id": 1,
                "names": ["Dog "],
                "attributes": ["Brown", "brown"],
                "x": 40,
                "y": 0,
                "w": 30,
                "h": 10,
            },
            {"object_id": 2, "names": [], "x": 0, "y": 0, "w": 5, "h": 5},
            {"object_id": 3, "name": "ball", "x": 0, "y": 0, "w": 5, "h": 5},
        ],
        "relationships": [
            {"relationship_id": 1, "subject_id": 1, "object_id": 3, "predicate": "Near"},
            {"relationship_id": 2, "subject_id": 1, "object_id": 99, "predicate": "on"},
        ],
    }
    (vg / "scene_graphs.json").write_text(json.dumps([entry]))
    dropped: Counter[str] = Counter()
    (graph,) = read_scene_graphs(vg, dropped)
    assert (graph.width, graph.height) == (50, 40)
    assert [(o.name, o.attributes, o.box) for o in graph.objects] == [
        ("dog", ("brown",), (40, 0, 10, 10)),
        ("ball", (), (0, 0, 5, 5)),
    ]
    assert [(r.subject, r.predicate, r.object) for r in graph.relations] == [(0, "near", 1)]
    assert dropped == Counter({"input: bad object": 1, "input: bad relationship": 1})


def test_settings_validation() -> None:
    with pytest.raises(ProductivitySettingsError, match="unknown"):
        ProductivitySettings.from_mapping({"walks": 3})
    with pytest.raises(ProductivitySettingsError, match="families"):
        ProductivitySettings.from_mapping({"families": ["atom", "comp"]})
    with pytest.raises(ProductivitySettingsError, match="dedupe_measure"):
        ProductivitySettings.from_mapping({"dedupe_measure": "area"})
    with pytest.raises(ProductivitySettingsError, match="min_negatives"):
        ProductivitySettings.from_mapping({"min_negatives": 6})
    s = ProductivitySettings.from_mapping(
        {"complexities": [4, 5], "attribute_kinds": {"c": ["red"]}}
    )
    assert s.complexities == (4, 5) and s.attribute_kinds == {"c": ("red",)}
    assert ProductivitySettings.from_mapping(None) == ProductivitySettings()


# ------------------------------------------------------------ generic vocabulary


def test_lexicon_kinds_reproduce_the_world_vocabulary(
    world_graphs: list[SceneGraph], world_cfg: dict[str, Any]
) -> None:
    vocabulary = GraphVocabulary.from_graphs(world_graphs)
    assert lexicon_attribute_kinds(vocabulary.attributes) == {
        kind: sorted(values) for kind, values in world_attribute_kinds(world_cfg).items()
    }
    assert set(vocabulary.objects) == set(world_cfg["shapes"])
    assert set(vocabulary.predicates) == set(world_cfg["relations"])


def test_lexicon_foils_match_the_closed_world_vocabulary(
    world_vg: Path, world_cfg: dict[str, Any], world_run: dict[str, Any], tmp_path: Path
) -> None:
    closed = run_benchmark(world_vg, tmp_path, world_cfg, closed_vocabulary=True)
    assert pl.read_parquet(closed["paths"]["candidates"]).equals(world_run["candidates"])
    assert closed["summary"].equals(world_run["summary"])


def test_lexicon_foils() -> None:
    vocabulary = GraphVocabulary(
        objects=("cat", "dog", "man"),
        attributes=("big", "large", "red", "small", "standing", "wooden", "blue"),
        predicates=("behind", "holding", "left of", "riding", "to the right of"),
    )
    provider = lexicon_foils(vocabulary)
    assert set(provider("obj", "cat", frozenset({"man"}))) == {"dog"}
    assert set(provider("att", "red", frozenset())) == {"blue"}
    assert provider("att", "large", frozenset()) == ["small"]  # "big" is a synonym
    assert provider("att", "small", frozenset({"big"})) == []  # so is "large"
    assert provider("att", "standing", frozenset()) == []  # no known kind
    assert set(provider("rel", "left of", frozenset())) == {"behind", "to the right of"}
    assert provider("rel", "riding", frozenset()) == ["holding"]
    with pytest.raises(ValueError, match="atom kind"):
        provider("thing", "x", frozenset())


def test_productivity_job_names_the_benchmark(
    world_vg: Path, world_run: dict[str, Any], tmp_path: Path
) -> None:
    out = {k: str(tmp_path / f"{k}.parquet") for k in ("c", "i", "f", "s")}
    lines: list[str] = []
    productivity_job(
        str(world_vg), WORLD_SETTINGS, 0, "prod_x", out["c"], out["i"], out["f"], out["s"],
        lines.append,
    )  # fmt: skip
    cands = pl.read_parquet(out["c"])
    assert set(cands["benchmark"]) == {"prod_x"}
    assert cands["item_id"].str.starts_with("prod_x/").all()
    renamed = world_run["candidates"].with_columns(
        pl.lit("prod_x").alias("benchmark"),
        pl.col("item_id").str.replace("^crepe_productivity/", "prod_x/"),
    )
    assert cands.equals(renamed)
    items = pl.read_parquet(out["i"])
    assert items.columns == list(ITEMS_SCHEMA)
    assert set(items["item_id"]) == set(cands["item_id"])
    assert pl.read_parquet(out["s"]).equals(world_run["summary"])
    assert any("vocabulary" in line for line in lines)
