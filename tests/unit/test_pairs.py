"""The generic pair benchmark: one-change hard negatives of any evaluation set's items."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA
from vlcomp.io import read_parquet_metadata
from vlcomp.negatives import graph_edits as ge
from vlcomp.negatives import lexicon
from vlcomp.negatives.jobs import pairs_job
from vlcomp.negatives.pairs import BOXES_SCHEMA, GENERATOR, pair_boxes, template_pairs

# ------------------------------------------------------------------------- helpers

Obj = str | tuple[str, str]  # lemma, or (name as written, lemma)


def item(
    item_id: str,
    image_id: str | None,
    text: str,
    objects: list[Obj],
    attributes: list[tuple[int, str]] = (),  # type: ignore[assignment]
    relations: list[tuple[int, str, int]] = (),  # type: ignore[assignment]
    box: tuple[int, int, int, int] | None = None,
) -> dict[str, Any]:
    x, y, w, h = box if box is not None else (None, None, None, None)
    return {
        "item_id": item_id,
        "source": "coco" if box is None else "vg_regions",
        "image_id": image_id,
        "region_id": None if box is None else item_id,
        "text": text,
        "x": x,
        "y": y,
        "width": w,
        "height": h,
        "objects": [
            {
                "idx": i,
                "name": o if isinstance(o, str) else o[0],
                "lemma": o if isinstance(o, str) else o[1],
            }
            for i, o in enumerate(objects)
        ],
        "attributes": [{"obj": o, "value": v} for o, v in attributes],
        "relations": [{"subj": s, "pred": p, "obj": o} for s, p, o in relations],
    }


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EVAL_ITEMS_SCHEMA)


# A COCO-like image with several captions, and other images that give the vocabulary.
STREET = [
    item(
        "c1",
        "street",
        "A red car is parked to the left of a blue truck.",
        ["car", "truck"],
        [(0, "red"), (1, "blue")],
        [(0, "left of", 1)],
    ),
    item(
        "c2",
        "street",
        "A man in a white shirt stands behind the red car.",
        ["man", "shirt", "car"],
        [(1, "white"), (2, "red")],
        [(0, "behind", 2)],
    ),
    item(
        "c3",
        "street",
        "Two small dogs sit under a wooden bench.",
        [("dogs", "dog"), "bench"],
        [(0, "small"), (1, "wooden")],
        [(0, "under", 1)],
    ),
]
OTHERS = [
    item(
        "o1",
        "park",
        "A green bus in front of a large building.",
        ["bus", "building"],
        [(0, "green"), (1, "large")],
        [(0, "in front of", 1)],
    ),
    item(
        "o2",
        "park",
        "A yellow cat on top of a metal box.",
        ["cat", "box"],
        [(0, "yellow"), (1, "metal")],
        [(0, "on top of", 1)],
    ),
    item(
        "o3",
        "yard",
        "an orange umbrella above a black chair",
        ["umbrella", "chair"],
        [(0, "orange"), (1, "black")],
        [(0, "above", 1)],
    ),
    item(
        "o4",
        "yard",
        "a standing dog to the right of a tree below a lamp",
        ["dog", "tree", "lamp"],
        [(0, "standing")],
        [(0, "right of", 1), (1, "below", 2)],
    ),
]
ITEMS = frame(STREET + OTHERS)
STREET_VALUES = {"red", "blue", "white", "small", "wooden"}
STREET_OBJECTS = {"car", "truck", "man", "shirt", "dog", "bench"}


def negatives(candidates: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {
        r["item_id"]: r for r in candidates.filter(~pl.col("is_positive")).iter_rows(named=True)
    }


def foil_of(provenance: str) -> str:
    """'edit red->green; seed 0' -> 'green'."""
    return provenance.split(";")[0].split("->")[-1].split("<->")[-1]


# --------------------------------------------------------------------- the benchmark


def test_candidate_table_contract() -> None:
    candidates, failures = template_pairs(ITEMS, 0, "coco_pairs")
    assert candidates.schema == pl.Schema(CANDIDATES_SCHEMA)
    assert set(candidates["benchmark"]) == {"coco_pairs"}
    assert set(candidates["generator"]) == {GENERATOR}
    per_item = candidates.group_by("item_id").agg(
        pl.col("is_positive").sum().alias("pos"), pl.len().alias("n"), pl.col("text")
    )
    assert (per_item["pos"] == 1).all() and (per_item["n"] == 2).all()
    assert all(texts[0] != texts[1] for texts in per_item["text"])
    source = {r["item_id"]: r for r in ITEMS.iter_rows(named=True)}
    for row in candidates.iter_rows(named=True):
        eval_id, kind = row["item_id"].rsplit("/", 1)
        assert kind == f"{row['family']}_{row['target']}"
        assert row["image"] == source[eval_id]["image_id"]
        if row["is_positive"]:
            assert row["text"] == source[eval_id]["text"]
    assert set(candidates["family"]) == {"replace", "swap"}
    assert set(candidates["target"]) == {"obj", "att", "rel"}
    assert failures.columns == ["reason", "count"]
    assert set(failures["reason"]) <= set(ge.REASONS)


@pytest.mark.parametrize("seed", range(25))
def test_foils_are_nothing_another_caption_of_the_image_states(seed: int) -> None:
    candidates, _ = template_pairs(ITEMS, seed, "coco_pairs")
    for item_id, row in negatives(candidates).items():
        if row["image"] != "street" or row["family"] != "replace":
            continue
        foil = foil_of(row["provenance"])
        if row["target"] == "att":
            assert foil not in STREET_VALUES, item_id
            kind = lexicon.attribute_kind(foil)
            allowed = {"colour": {"green", "yellow", "orange", "black"}, "material": {"metal"}}
            assert foil in allowed.get(kind, {"large"}), item_id  # "large": size of o1
        elif row["target"] == "obj":
            assert foil.removesuffix("s") not in STREET_OBJECTS, item_id


def test_synonyms_stated_by_the_image_are_no_foils() -> None:
    # c3's "small" may become "large" (the other size of the set) ...
    found = set()
    for seed in range(20):
        candidates, _ = template_pairs(ITEMS, seed, "p")
        found.add(negatives(candidates)["c3/replace_att"]["text"])
    assert found == {
        "Two large dogs sit under a wooden bench.",
        "Two small dogs sit under a metal bench.",
    }
    # ... but not once another caption of the image says "big"
    big = item("c4", "street", "a big red car", ["car"], [(0, "big"), (0, "red")])
    for seed in range(20):
        candidates, _ = template_pairs(frame([*STREET, big, *OTHERS]), seed, "p")
        text = negatives(candidates)["c3/replace_att"]["text"]
        assert text == "Two small dogs sit under a metal bench."


def test_vocabulary_is_the_eval_sets_own() -> None:
    vocab = ge.Vocabulary.from_graphs(ITEMS.to_dicts())
    assert vocab.attributes == {
        "colour": ["black", "blue", "green", "orange", "red", "white", "yellow"],
        "material": ["metal", "wooden"],
        "size": ["large", "small"],
    }
    assert "standing" not in {v for vs in vocab.attributes.values() for v in vs}
    assert "tree" in vocab.objects and "dogs" not in vocab.objects
    assert vocab.predicates == {
        "left of",
        "right of",
        "behind",
        "in front of",
        "below",
        "above",
        "on top of",
    }


def test_unknown_kind_is_not_replaced_and_counted() -> None:
    lonely = item("u1", "u", "a standing man", ["man"], [(0, "standing")])
    candidates, failures = template_pairs(frame([lonely, *OTHERS]), 0, "p")
    assert not candidates.filter(pl.col("item_id") == "u1/replace_att").height
    counts = dict(failures.iter_rows())
    assert counts[ge.UNKNOWN_KIND] >= 1


def test_relations_become_their_converse_written_alike() -> None:
    candidates, _ = template_pairs(ITEMS, 0, "p")
    neg = negatives(candidates)
    assert neg["c1/replace_rel"]["text"] == "A red car is parked to the right of a blue truck."
    assert neg["c2/replace_rel"]["text"] == "A man in a white shirt stands in front of the red car."
    # the set writes "above" but never "over": the converse phrase is one it writes
    assert neg["c3/replace_rel"]["text"] == "Two small dogs sit above a wooden bench."
    assert neg["o2/replace_rel"]["text"] == "A yellow cat under a metal box."


def _vertical_set() -> pl.DataFrame:
    """Above and below as often as each other, written as the world writes them: "above" and
    "over" for one, "below", "under", "beneath" and "underneath" for the other."""
    phrases = {"above": ("above", "over"), "below": ("below", "under", "beneath", "underneath")}
    rows = []
    for pred, written in phrases.items():
        for i in range(20):
            phrase = written[i % len(written)]
            rows.append(item(f"{pred}{i:02d}", f"img{pred}{i}", f"a red circle {phrase} a square",
                             ["circle", "square"], [(0, "red")], [(0, pred, 1)]))  # fmt: skip
    return frame(rows)


def _phrase_surplus(candidates: pl.DataFrame) -> dict[str, int]:
    """Per relation phrase: pairs whose negative writes it minus pairs whose positive does."""
    surplus: dict[str, int] = {}
    for r in negatives(candidates).values():
        if r["target"] == "rel":
            before, after = r["provenance"].split(";")[0].removeprefix("edit ").split("->")
            surplus[before] = surplus.get(before, 0) - 1
            surplus[after] = surplus.get(after, 0) + 1
    return surplus


def test_vertical_phrases_are_the_negative_as_often_as_the_positive() -> None:
    candidates, _ = template_pairs(_vertical_set(), 0, "p")
    surplus = _phrase_surplus(candidates)
    assert len(surplus) == 6 and all(abs(v) <= 1 for v in surplus.values()), surplus
    # each phrase's fixed converse ("beneath" -> "above" only) would not be balanced
    fixed = {}
    for r in negatives(candidates).values():
        before = r["provenance"].split(";")[0].removeprefix("edit ").split("->")[0]
        after = lexicon.CONVERSE_SURFACE[before]
        fixed[before], fixed[after] = fixed.get(before, 0) - 1, fixed.get(after, 0) + 1
    assert max(abs(v) for v in fixed.values()) >= 5


def test_relation_phrases_a_set_never_writes_are_no_foils() -> None:
    rows = _vertical_set().filter(~pl.col("text").str.contains("over"))
    candidates, _ = template_pairs(rows, 0, "p")
    foils = {foil_of(p) for p in negatives(candidates).values() for p in [p["provenance"]]}
    assert "over" not in foils and not foils & {"atop", "on top of", "on the top of"}


def test_relation_without_converse_in_the_set_is_not_edited() -> None:
    only_left = [
        item("a", "i", "a cup left of a plate", ["cup", "plate"], [], [(0, "left of", 1)]),
        item("b", "j", "a man on a horse", ["man", "horse"], [], [(0, "on", 1)]),
    ]
    candidates, failures = template_pairs(frame(only_left), 0, "p")
    assert "rel" not in set(candidates["target"])
    assert dict(failures.iter_rows())[ge.NO_CONVERSE] == 2


def test_converse_true_of_the_image_is_rejected() -> None:
    rows = [
        # alike ends: "a circle right of a circle" is just as true
        item("a", "i", "a circle left of a circle", ["circle", "circle"], [], [(0, "left of", 1)]),
        # another caption states the converse for the same kinds of objects
        item("b", "j", "a red cup left of a plate", ["cup", "plate"], [(0, "red")],
             [(0, "left of", 1)]),
        item("c", "j", "a cup right of a plate", ["cup", "plate"], [], [(0, "right of", 1)]),
        # told apart by colour: fine
        item(
            "d", "k", "a red circle left of a blue circle", ["circle", "circle"],
            [(0, "red"), (1, "blue")], [(0, "left of", 1)],
        ),
    ]  # fmt: skip
    candidates, failures = template_pairs(frame(rows), 0, "p")
    edited = set(candidates.filter(pl.col("target") == "rel")["item_id"])
    assert edited == {"d/replace_rel"}
    assert dict(failures.iter_rows())[ge.CONVERSE_TRUE] == 3


def test_swap_true_of_the_image_is_rejected() -> None:
    rows = [
        item("a", "i", "a red cup and a blue plate", ["cup", "plate"],
             [(0, "red"), (1, "blue")]),
        item("b", "i", "a blue cup next to a red plate", ["cup", "plate"],
             [(0, "blue"), (1, "red")]),
        item("c", "k", "a green cup and a yellow plate", ["cup", "plate"],
             [(0, "green"), (1, "yellow")]),
    ]  # fmt: skip
    candidates, failures = template_pairs(frame(rows), 0, "p")
    swaps = negatives(candidates)
    assert "a/swap_att" not in swaps and "b/swap_att" not in swaps
    assert swaps["c/swap_att"]["text"] == "a yellow cup and a green plate"
    assert dict(failures.iter_rows())[ge.SWAP_TRUE] == 2


def test_plural_kept_and_article_fixed() -> None:
    vocab = ge.Vocabulary(attributes={"colour": ["red", "orange"]}, objects=["dog", "apple"])
    graph = item("x", "i", "", [("dogs", "dog"), "umbrella"], [(1, "red")])
    image = ge.ImageContents()
    image.add(graph)
    rng = np.random.default_rng(0)
    edit = ge.replace_attribute("two dogs and a red umbrella", graph, image, vocab, rng)
    assert isinstance(edit, ge.Edit) and edit.text == "two dogs and an orange umbrella"
    one = item("y", "i", "", ["dog"])
    image = ge.ImageContents()
    image.add(one)
    edit = ge.replace_object("A dog", one, image, vocab, rng)
    assert isinstance(edit, ge.Edit) and edit.text == "An apple"
    image.add(graph)
    edit = ge.replace_object("three dogs", graph, image, vocab, rng)
    assert isinstance(edit, ge.Edit) and edit.text == "three apples"


def test_foils_take_the_text_layer_plural_and_article() -> None:
    rng = np.random.default_rng(0)
    men = ge.Vocabulary(attributes={}, objects=["dog", "man"])
    dogs = item("x", "i", "", [("dogs", "dog")])
    image = ge.ImageContents()
    image.add(dogs)
    edit = ge.replace_object("three dogs", dogs, image, men, rng)
    assert isinstance(edit, ge.Edit) and edit.text == "three men"
    uniform = ge.Vocabulary(attributes={}, objects=["apple", "uniform"])
    apple = item("y", "i", "", ["apple"])
    image = ge.ImageContents()
    image.add(apple)
    edit = ge.replace_object("An apple", apple, image, uniform, rng)
    assert isinstance(edit, ge.Edit) and edit.text == "A uniform"


def test_deterministic_and_independent_of_item_order() -> None:
    a = template_pairs(ITEMS, 3, "p")
    b = template_pairs(ITEMS.sample(fraction=1.0, shuffle=True, seed=7), 3, "p")
    assert a[0].equals(b[0]) and a[1].equals(b[1])
    c = pl.concat([template_pairs(ITEMS, s, "p")[0] for s in range(10)])
    assert c.filter(~pl.col("is_positive"))["text"].n_unique() > a[0].height // 2


def test_repeated_item_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="repeats"):
        template_pairs(frame([STREET[0], STREET[0]]), 0, "p")


def test_items_without_text_or_graph() -> None:
    rows = [
        item("e", "i", "", ["cup"]),
        {
            **item("g", "i", "a red cup", ["cup"]),
            "objects": None,
            "attributes": None,
            "relations": None,
        },
    ]
    candidates, failures = template_pairs(frame(rows), 0, "p")
    assert candidates.height == 0
    counts = dict(failures.iter_rows())
    assert counts["item: no text"] == 1 and counts[ge.NO_OBJECT] == 1


def test_boxes_follow_the_eval_item() -> None:
    rows = [
        item("r1", "i", "a red cup left of a blue plate", ["cup", "plate"],
             [(0, "red"), (1, "blue")], [(0, "left of", 1)], box=(5, 6, 70, 80)),
        item("r2", "i", "a blue plate right of a red cup", ["plate", "cup"],
             [(0, "blue"), (1, "red")], [(0, "right of", 1)]),
        item("r3", "j", "a green bowl", ["bowl"], [(0, "green")]),
    ]  # fmt: skip
    items = frame(rows)
    candidates, _ = template_pairs(items, 0, "p")
    boxes = pair_boxes(candidates, items)
    assert boxes.schema == pl.Schema(BOXES_SCHEMA)
    assert boxes.height == candidates["item_id"].n_unique()
    by_id = {r["item_id"]: r for r in boxes.iter_rows(named=True)}
    assert by_id["r1/replace_obj"] == {
        "item_id": "r1/replace_obj", "x": 5, "y": 6, "width": 70, "height": 80,
        "eval_item_id": "r1",
    }  # fmt: skip
    assert by_id["r2/replace_obj"]["x"] is None and by_id["r2/replace_obj"]["eval_item_id"] == "r2"


def test_pairs_job_writes_three_tables(tmp_path: Path) -> None:
    src = tmp_path / "items.parquet"
    ITEMS.write_parquet(src)
    out = {k: str(tmp_path / f"{k}.parquet") for k in ("cand", "boxes", "fail")}
    lines: list[str] = []
    pairs_job(str(src), 4, "coco_pairs", out["cand"], out["boxes"], out["fail"], lines.append)
    candidates, failures = template_pairs(ITEMS, 4, "coco_pairs")
    assert pl.read_parquet(out["cand"]).equals(candidates)
    assert pl.read_parquet(out["fail"]).equals(failures)
    assert pl.read_parquet(out["boxes"]).equals(pair_boxes(candidates, ITEMS))
    assert read_parquet_metadata(out["cand"])["seed"] == "4"
    assert any("replace/rel" in line for line in lines)


# ------------------------------------------------------------------------- lexicon


def test_lexicon_kinds_and_predicates() -> None:
    assert lexicon.attribute_kind("Light Blue") == "colour"
    assert lexicon.attribute_kind("wooden") == "material"
    assert lexicon.attribute_kind("striped") == "pattern"
    assert lexicon.attribute_kind("old") == "age"
    assert lexicon.attribute_kind("round") == "shape"
    assert lexicon.attribute_kind("standing") is None
    assert lexicon.predicate_of("standing behind") == "behind"
    assert lexicon.predicate_of("To the left of") == "left of"
    assert lexicon.predicate_of("on") is None
    for surface, foil in lexicon.CONVERSE_SURFACE.items():
        assert lexicon.predicate_of(foil) == lexicon.CONVERSE[lexicon.predicate_of(surface)]
    for surfaces in lexicon.RELATIONS.values():
        assert set(surfaces) <= set(lexicon.CONVERSE_SURFACE)


def test_lexicon_covers_the_world_vocabulary() -> None:
    """The synthetic world's words, read from its own module (only tests may)."""
    from vlcomp.world import vocab

    for table in (vocab.RELATION_SURFACES, vocab.ALT_RELATION_SURFACES):
        for pred, surfaces in table.items():
            assert lexicon.CONVERSE[pred] == vocab.CONVERSE[pred]
            for surface in surfaces:
                assert lexicon.predicate_of(surface) == pred
                assert surface in lexicon.surfaces_of(pred)
    for colour in [*vocab.COLOUR_RGB, *vocab.DEFAULT_COLOURS]:
        assert lexicon.attribute_kind(colour) == "colour"
    for size in vocab.DEFAULT_SIZES:
        assert lexicon.attribute_kind(size) == "size"


# ----------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world_items(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    from vlcomp.ingest.vg import eval_items_from_vg
    from vlcomp.world import DEFAULT_WORLD_CONFIG, build_eval_set

    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg["eval"] = {"n_images": 40, "captions_per_image": 2, "heldout_fraction": 0.5}
    root = tmp_path_factory.mktemp("world")
    build_eval_set(cfg, root / "eval")
    eval_items_from_vg(
        root / "eval" / "vg", root / "items.parquet", root / "rejected.parquet", {"min_area": 0}
    )
    scenes = pl.read_parquet(root / "eval" / "scenes.parquet")
    return pl.read_parquet(root / "items.parquet"), scenes


def test_world_regions_get_every_kind_of_negative(
    world_items: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    items, scenes = world_items
    candidates, _ = template_pairs(items, 0, "world_pairs")
    kinds = candidates.filter(~pl.col("is_positive")).group_by("family", "target").len()
    got = {(f, t): n for f, t, n in kinds.iter_rows()}
    assert set(got) == {("replace", "att"), ("replace", "obj"), ("replace", "rel"), ("swap", "att")}
    assert all(n >= items.height // 2 for n in got.values()), got
    shapes = scenes.group_by(pl.col("image_id").cast(pl.String)).agg(pl.col("shape"))
    shapes_of = {i: set(s) for i, s in shapes.iter_rows()}
    for row in negatives(candidates).values():
        if row["target"] == "obj":  # an object type absent from the drawn scene
            foil = foil_of(row["provenance"])
            assert not {foil, foil[:-1], foil[:-2]} & shapes_of[row["image"]], row


def test_object_foil_from_a_large_vocabulary_is_absent() -> None:
    pool = [f"thing{i:03d}" for i in range(300)]
    vocab = ge.Vocabulary(attributes={}, objects=pool)
    graph = item("x", "i", "", ["thing000"])
    crowded = ge.ImageContents()
    for name in pool[:-1]:
        crowded.add(item("y", "i", "", [name]))
    sparse = ge.ImageContents()
    sparse.add(graph)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        edit = ge.replace_object("a thing000", graph, crowded, vocab, rng)
        assert isinstance(edit, ge.Edit) and edit.text == "a thing299"
        edit = ge.replace_object("a thing000", graph, sparse, vocab, rng)
        assert isinstance(edit, ge.Edit) and edit.text != "a thing000"
    crowded.add(item("z", "i", "", ["thing299"]))
    assert ge.replace_object("a thing000", graph, crowded, vocab, rng) == ge.NO_OBJECT_FOIL


def test_training_negatives_follow_the_captions_and_skip_failed_parses():
    from vlcomp.negatives.jobs import TRAINING_NEGATIVES_SCHEMA, training_negatives

    graph_columns = {k: EVAL_ITEMS_SCHEMA[k] for k in ("objects", "attributes", "relations")}
    rows = [
        item("c2", "1", "a red circle above a blue square", ["circle", "square"],
             [(0, "red"), (1, "blue")], [(0, "above", 1)]),
        item("c1", "2", "a green star below a pink heart", ["star", "heart"],
             [(0, "green"), (1, "pink")], [(0, "below", 1)]),
        item("c3", "3", "a yellow heart left of a red cross", ["heart", "cross"],
             [(0, "yellow"), (1, "red")], [(0, "left of", 1)]),
    ]  # fmt: skip
    captions = pl.DataFrame(
        [{"caption_id": r["item_id"], "image_id": r["image_id"], "text": r["text"]} for r in rows]
    )
    graphs = pl.DataFrame(
        [{"caption_id": r["item_id"], **{k: r[k] for k in graph_columns}} for r in rows],
        schema={"caption_id": pl.String, **graph_columns},
    ).with_columns(ok=pl.Series([True, True, False]))
    negatives, failures = training_negatives(captions, graphs, seed=0, corpus="c")
    assert negatives.schema == pl.Schema(TRAINING_NEGATIVES_SCHEMA)
    assert negatives["caption_id"].unique(maintain_order=True).to_list() == ["c2", "c1"]
    by_kind = {(f, t): n for _, f, t, n in negatives.filter(pl.col("caption_id") == "c2").rows()}
    assert by_kind[("replace", "rel")] == "a red circle below a blue square"
    assert by_kind[("swap", "att")] == "a blue circle above a red square"
    # c3's parse failed: its words are in no foil vocabulary and it gets no negative.
    assert not negatives["negative"].str.contains("yellow|cross").any()


# Parsed graphs of a caption set where the parser made a colour the noun once ("a small
# purple" for "a small purple cross") and kept a depiction noun ("an image of ...").
VOTE_ITEMS = [
    item("v1", "v1", "a purple circle to the left of a red square", ["circle", "square"],
         [(0, "purple"), (1, "red")], [(0, "left of", 1)]),
    item("v2", "v2", "a purple star and a blue square", ["star", "square"],
         [(0, "purple"), (1, "blue")]),
    item("v3", "v3", "a red triangle and a small purple", ["triangle", "purple"],
         [(0, "red"), (1, "small")]),
    item("v4", "v4", "an image of a green circle", ["image", "circle"], [(1, "green")]),
    item("v5", "v5", "a purple heart", ["heart"], [(0, "purple")]),
]  # fmt: skip


def test_object_substitutes_are_voted_objects_and_no_depiction_nouns() -> None:
    vocab = ge.Vocabulary.from_graphs(VOTE_ITEMS)
    # "purple": 1 graph as object, 3 as attribute; "image": a depiction noun
    assert vocab.objects == ["circle", "heart", "square", "star", "triangle"]
    assert not vocab.is_object("purple") and not vocab.is_object("Image")
    # a vote, not a ban on colour words: an object more often than an attribute stays
    oranges = [
        item("o1", "o1", "two oranges", [("oranges", "orange")]),
        item("o2", "o2", "an orange and a bowl", ["orange", "bowl"]),
        item("o3", "o3", "an orange bowl", ["bowl"], [(0, "orange")]),
    ]
    assert ge.Vocabulary.from_graphs(oranges).objects == ["bowl", "orange"]
    for seed in range(20):
        candidates, _ = template_pairs(frame(VOTE_ITEMS), seed, "p")
        edits = {k: r for k, r in negatives(candidates).items() if k.endswith("/replace_obj")}
        assert {"v1/replace_obj", "v3/replace_obj", "v4/replace_obj"} <= set(edits)
        for row in edits.values():
            original, foil = row["provenance"].split(";")[0].removeprefix("edit ").split("->")
            assert foil not in {"purple", "image"} and original not in {"purple", "image"}
        assert edits["v3/replace_obj"]["text"].endswith("and a small purple")
        assert edits["v4/replace_obj"]["text"].startswith("an image of a green ")


def test_an_item_with_no_substitutable_object_says_why() -> None:
    vocab = ge.Vocabulary.from_graphs(VOTE_ITEMS)
    graph = VOTE_ITEMS[3] | {"objects": VOTE_ITEMS[3]["objects"][:1], "attributes": []}
    image = ge.ImageContents()
    image.add(graph)
    rng = np.random.default_rng(0)
    assert ge.replace_object("an image", graph, image, vocab, rng) == ge.NO_OBJECT_TYPE


def test_meta_nouns_and_the_object_vote() -> None:
    assert lexicon.is_meta_noun("Image") and lexicon.is_meta_noun("stock photo")
    assert lexicon.is_meta_noun("city view") and lexicon.is_meta_noun("background")
    assert not lexicon.is_meta_noun("circle") and not lexicon.is_meta_noun("photographer")
    counts = {"purple": 33, "cross": 6291, "pink": 5, "orange": 8, "photo": 40}
    attributes = {"purple": 5464, "cross": 34, "pink": 5, "orange": 2}
    # a tie is no majority
    assert lexicon.substitute_objects(counts, attributes) == {"cross", "orange"}
