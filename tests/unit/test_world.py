"""Unit tests of the synthetic world generator (vlcomp.world)."""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from PIL import Image

from vlcomp.world import (
    CONVERSE,
    DEFAULT_WORLD_CONFIG,
    Scene,
    SceneObject,
    build_corpus,
    build_eval_set,
    corpus_scenes,
    load_holdout,
    parse_world_config,
    render_scene,
    scene_holdout_items,
    write_manifest,
)
from vlcomp.world.vocab import (
    ALT_RELATION_SURFACES,
    BACKGROUND_RGB,
    COLOUR_RGB,
    RELATION_SURFACES,
    SURFACE_TO_PREDICATE,
)


def small_config() -> dict[str, Any]:
    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg["eval"] = {"n_images": 40, "captions_per_image": 3, "heldout_fraction": 0.5}
    for corpus in cfg["corpora"].values():
        corpus["n_images"] = 60
    # Relation atoms too, to check that held-out predicates are never stated.
    cfg["corpora"]["cc12m"]["holdout"]["atoms"] = ["hexagon", "above"]
    cfg["corpora"]["laion"]["holdout"]["atoms"] = ["pink", "left of"]
    return cfg


def build_all(cfg: dict[str, Any], root: Path) -> Path:
    build_eval_set(cfg, root / "eval")
    for name in cfg["corpora"]:
        build_corpus(cfg, name, root / name)
    write_manifest(cfg, root / "manifest.json")
    return root


@pytest.fixture(scope="module")
def cfg() -> dict[str, Any]:
    return small_config()


@pytest.fixture(scope="module")
def world(cfg: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_all(cfg, tmp_path_factory.mktemp("world"))


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def read_scenes(path: Path) -> dict[int, Scene]:
    df = pl.read_parquet(path).sort("image_id", "object_idx")
    out: dict[int, list[SceneObject]] = {}
    for r in df.iter_rows(named=True):
        assert r["w"] == r["h"]
        obj = SceneObject(r["shape"], r["colour"], r["size"], r["x"], r["y"], r["w"])
        out.setdefault(r["image_id"], []).append(obj)
    return {k: Scene(tuple(v)) for k, v in out.items()}


def node_matches(obj: SceneObject, lemma: str, attrs: set[str]) -> bool:
    return obj.shape == lemma and attrs <= {obj.colour, obj.size}


# ----------------------------------------------------------------------------- determinism


def test_two_builds_are_byte_identical(cfg: dict[str, Any], world: Path, tmp_path: Path) -> None:
    again = build_all(cfg, tmp_path / "again")
    first, second = tree_hashes(world), tree_hashes(again)
    assert first == second
    assert any(k.endswith(".png") for k in first)
    assert not any(Path(k).name.startswith(".") for k in first), "temporary files left behind"


def test_different_seed_changes_output(cfg: dict[str, Any], tmp_path: Path) -> None:
    other = copy.deepcopy(cfg)
    other["corpora"]["cc12m"]["seed"] = 99
    build_corpus(cfg, "cc12m", tmp_path / "a")
    build_corpus(other, "cc12m", tmp_path / "b")
    assert (tmp_path / "a/captions.tsv").read_bytes() != (tmp_path / "b/captions.tsv").read_bytes()


def test_rebuild_replaces_stale_images(cfg: dict[str, Any], tmp_path: Path) -> None:
    build_corpus(cfg, "cc12m", tmp_path)
    fewer = copy.deepcopy(cfg)
    fewer["corpora"]["cc12m"]["n_images"] = 7
    build_corpus(fewer, "cc12m", tmp_path)
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == sorted(
        f"{i}.png" for i in range(1, 8)
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------------------- hold-outs


@pytest.mark.parametrize("corpus", ["cc12m", "laion"])
def test_training_scenes_hold_no_held_out_item(cfg: dict[str, Any], corpus: str) -> None:
    spec = parse_world_config(cfg)
    holdout = load_holdout(cfg, corpus)
    big = copy.deepcopy(cfg)
    big["corpora"][corpus]["n_images"] = 1500
    scenes = corpus_scenes(parse_world_config(big), parse_world_config(big).corpus(corpus))
    relation_atoms = set(holdout.atoms_of_kind("relation"))
    for scene in scenes:
        items = [(k, v) for k, v in scene_holdout_items(scene, holdout) if v not in relation_atoms]
        assert items == []
        for i, pred, j in scene.relations():
            a, b = scene.objects[i].shape, scene.objects[j].shape
            assert (a, pred, b) not in holdout.triples_with_converses
    assert spec.corpus(corpus).holdout == holdout


@pytest.mark.parametrize("corpus", ["cc12m", "laion"])
def test_written_training_scenes_hold_no_held_out_item(world: Path, cfg: dict, corpus: str) -> None:
    holdout = load_holdout(cfg, corpus)
    scenes = read_scenes(world / corpus / "scenes.parquet")
    assert len(scenes) == cfg["corpora"][corpus]["n_images"]
    for scene in scenes.values():
        assert all(
            kind == "atom" and v in {"above", "left of"}
            for kind, v in scene_holdout_items(scene, holdout)
        )


@pytest.mark.parametrize("corpus", ["cc12m", "laion"])
def test_training_captions_mention_no_held_out_item(world: Path, cfg: dict, corpus: str) -> None:
    holdout = load_holdout(cfg, corpus)
    atoms = set(holdout.atoms)
    triples = set(holdout.triples_with_converses)
    assert ("square", "below", "circle") in triples or corpus != "cc12m"
    truth = pl.read_parquet(world / corpus / "truth.parquet")
    stated = set()
    for row in truth.iter_rows(named=True):
        lemma = {o["idx"]: o["lemma"] for o in row["objects"]}
        assert not atoms & set(lemma.values())
        for a in row["attributes"]:
            assert a["value"] not in atoms
            assert (a["value"], lemma[a["obj"]]) not in holdout.bindings
        for r in row["relations"]:
            stated.add(r["pred"])
            assert r["pred"] not in atoms
            assert (lemma[r["subj"]], r["pred"], lemma[r["obj"]]) not in triples
        words = set(re.findall(r"[a-z]+", row["text"].lower()))
        assert not words & {a for a in atoms if " " not in a}
        for rel in holdout.atoms_of_kind("relation"):
            surfaces = RELATION_SURFACES[rel] + ALT_RELATION_SURFACES[rel]
            text = f" {row['text'].lower()} "
            assert not any(re.search(rf"\b{re.escape(s)}\b", text) for s in surfaces)
    assert stated, "some captions should state relations"


def test_scene_holdout_items_match_converse_triples(cfg: dict[str, Any]) -> None:
    holdout = load_holdout(cfg, "cc12m")
    square = SceneObject("square", "blue", "large", 20, 40, 20)
    circle = SceneObject("circle", "yellow", "small", 24, 5, 11)
    hexagon = SceneObject("hexagon", "red", "small", 50, 44, 11)
    # Listed square-first: the pair reads "square below circle", the converse of the triple.
    scene = Scene((square, circle, hexagon))
    assert scene.relation(0, 1) == "below"
    items = scene_holdout_items(scene, holdout)
    assert ("triple", "circle above square") in items
    assert ("atom", "hexagon") in items
    assert ("atom", "above") in items  # relation atoms count by geometry
    assert not [i for i in items if i[0] == "binding"]
    laion = load_holdout(cfg, "laion")
    assert scene_holdout_items(Scene((circle,)), laion) == []


def test_manifest_lists_converses(world: Path) -> None:
    manifest = json.loads((world / "manifest.json").read_text())
    cc = manifest["corpora"]["cc12m"]["holdout"]
    assert ["square", "below", "circle"] in cc["triples_with_converses"]
    assert cc["atoms_by_kind"]["relation"] == ["above"]
    assert set(manifest["corpora"]["laion"]) == {"holdout"}
    assert manifest["eval"]["n_captions"] == 40 * 3


def test_holdout_table_agrees_with_recomputation(world: Path, cfg: dict[str, Any]) -> None:
    scenes = read_scenes(world / "eval" / "scenes.parquet")
    table = pl.read_parquet(world / "eval" / "holdout.parquet")
    assert table.schema == {
        "image_id": pl.Int64,
        "corpus": pl.Utf8,
        "kind": pl.Utf8,
        "value": pl.Utf8,
    }
    expected = []
    for image_id in sorted(scenes):
        for corpus in cfg["corpora"]:
            holdout = load_holdout(cfg, corpus)
            expected += [
                (image_id, corpus, k, v) for k, v in scene_holdout_items(scenes[image_id], holdout)
            ]
    assert table.rows() == expected
    # Independent recomputation of bindings from the raw scene objects.
    for image_id, scene in scenes.items():
        for corpus in cfg["corpora"]:
            holdout = load_holdout(cfg, corpus)
            got = set(
                table.filter(
                    (pl.col("image_id") == image_id)
                    & (pl.col("corpus") == corpus)
                    & (pl.col("kind") == "binding")
                )["value"]
            )
            want = {
                f"{a} {s}"
                for a, s in holdout.bindings
                if any(o.shape == s and a in (o.colour, o.size) for o in scene.objects)
            }
            assert got == want


def test_eval_forces_held_out_content(world: Path, cfg: dict[str, Any]) -> None:
    table = pl.read_parquet(world / "eval" / "holdout.parquet")
    compound = table.filter(pl.col("kind").is_in(["binding", "triple"]))["image_id"].n_unique()
    assert compound >= round(cfg["eval"]["heldout_fraction"] * cfg["eval"]["n_images"])


def test_eval_twins_are_matched_seen_neighbours(world: Path, cfg: dict[str, Any]) -> None:
    """Each forced scene holds a held-out binding or triple of its corpus (the corpora in
    turn); its twin is the same scene (objects, positions, sizes) with some objects'
    colour or shape changed, and holds none of that corpus's held-out bindings or triples."""
    from vlcomp.world import eval_scenes

    spec = parse_world_config(cfg)
    drawn = eval_scenes(spec)
    n_forced = round(cfg["eval"]["heldout_fraction"] * cfg["eval"]["n_images"])
    assert sum(drawn.forced) == n_forced and len(drawn.twins) == n_forced
    assert [c for _, _, c in drawn.twins[:4]] == ["cc12m", "laion", "cc12m", "laion"]
    holdout = {c.name: c.holdout for c in spec.corpora}
    changed = 0
    for a, b, corpus in drawn.twins:
        original, twin = drawn.scenes[a], drawn.scenes[b]
        assert drawn.forced[a] and not drawn.forced[b]
        compounds = [k for k, _ in scene_holdout_items(original, holdout[corpus])]
        assert {"binding", "triple"} & set(compounds)
        assert not {"binding", "triple"} & {
            k for k, _ in scene_holdout_items(twin, holdout[corpus])
        }
        assert len(original.objects) == len(twin.objects)
        for o, w in zip(original.objects, twin.objects, strict=True):
            assert (o.x, o.y, o.side, o.size) == (w.x, w.y, w.side, w.size)
            assert o.colour == w.colour or o.shape == w.shape  # one of the two changes
            changed += (o.colour, o.shape) != (w.colour, w.shape)
    assert changed >= len(drawn.twins)
    table = pl.read_parquet(world / "eval" / "twins.parquet")
    assert table.rows() == [(a + 1, b + 1, c) for a, b, c in drawn.twins]


# ------------------------------------------------------------------- geometry and images


def test_relations_are_consistent_with_drawn_boxes(world: Path) -> None:
    objects = json.loads((world / "eval/vg/objects.json").read_text())
    rels = json.loads((world / "eval/vg/relationships.json").read_text())
    for img_objs, img_rels in zip(objects, rels, strict=True):
        image_id = img_objs["image_id"]
        assert img_rels["image_id"] == image_id
        boxes = {o["object_id"]: o for o in img_objs["objects"]}
        pixels = np.asarray(Image.open(world / f"eval/images/{image_id}.png").convert("RGB"))
        n = len(boxes)
        assert len(img_rels["relationships"]) == n * (n - 1)
        for r in img_rels["relationships"]:
            s, o = boxes[r["subject"]["object_id"]], boxes[r["object"]["object_id"]]
            dx = (s["x"] + s["w"] / 2) - (o["x"] + o["w"] / 2)
            dy = (s["y"] + s["h"] / 2) - (o["y"] + o["h"] / 2)
            assert max(abs(dx), abs(dy)) > 1.4 * min(abs(dx), abs(dy))
            if abs(dx) > abs(dy):
                want = "left of" if dx < 0 else "right of"
            else:
                want = "above" if dy < 0 else "below"
            assert r["predicate"] == want
        # Boxes are tight around the drawn pixels and the background is untouched elsewhere.
        covered = np.zeros(pixels.shape[:2], dtype=bool)
        for b in boxes.values():
            region = pixels[b["y"] : b["y"] + b["h"], b["x"] : b["x"] + b["w"]]
            ink = np.any(region != BACKGROUND_RGB, axis=-1)
            ys, xs = np.nonzero(ink)
            assert xs.min() == 0 and ys.min() == 0
            assert xs.max() == b["w"] - 1 and ys.max() == b["h"] - 1
            covered[b["y"] : b["y"] + b["h"], b["x"] : b["x"] + b["w"]] = True
        assert np.all(pixels[~covered] == BACKGROUND_RGB)


def test_rendered_shapes_are_visible_and_distinct() -> None:
    spec = parse_world_config(small_config())
    side = spec.size_pixels("large")
    images = {}
    for shape in spec.shapes:
        scene = Scene((SceneObject(shape, "red", "large", 20, 20, side),))
        arr = np.asarray(render_scene(scene, spec.image_size))
        red = np.all(arr == COLOUR_RGB["red"], axis=-1)
        assert red.sum() > 0.25 * side * side, shape
        images[shape] = arr
    names = list(images)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            diff = np.any(images[a] != images[b], axis=-1).sum()
            assert diff > 20, (a, b)
    assert spec.size_pixels("large") >= 1.5 * spec.size_pixels("small")


def test_png_files_are_rgb_of_configured_size(world: Path) -> None:
    img = Image.open(world / "cc12m/images/1.png")
    assert img.mode == "RGB" and img.size == (64, 64)
    assert len(np.unique(np.asarray(img).reshape(-1, 3), axis=0)) > 2


# ------------------------------------------------------------------------------ formats


def test_visual_genome_files(world: Path) -> None:
    vg = world / "eval/vg"
    docs = {p.stem: json.loads(p.read_text()) for p in vg.glob("*.json")}
    assert set(docs) == {
        "image_data",
        "objects",
        "attributes",
        "relationships",
        "region_descriptions",
        "scene_graphs",
        "region_graphs",
    }
    size = 64
    for im in docs["image_data"]:
        assert set(im) == {"image_id", "width", "height", "url", "coco_id", "flickr_id"}
        assert (world / "eval" / im["url"]).is_file()
    object_ids = set()

    def in_bounds(b: dict[str, int], w: str = "w", h: str = "h") -> None:
        assert b["x"] >= 0 and b["y"] >= 0 and b[w] > 0 and b[h] > 0
        assert b["x"] + b[w] <= size and b["y"] + b[h] <= size

    for entry in docs["objects"]:
        for o in entry["objects"]:
            assert set(o) == {"object_id", "x", "y", "w", "h", "names", "synsets"}
            in_bounds(o)
            assert o["object_id"] not in object_ids
            object_ids.add(o["object_id"])
    for entry in docs["attributes"]:
        for o in entry["attributes"]:
            colour, sz = o["attributes"]
            assert colour in COLOUR_RGB and sz in ("small", "large")
    for entry in docs["relationships"]:
        for r in entry["relationships"]:
            assert {"relationship_id", "predicate", "synsets", "subject", "object"} <= set(r)
            assert set(r["subject"]) >= {"object_id", "x", "y", "w", "h", "name"}
    for entry in docs["region_descriptions"]:
        assert entry["regions"] and all(r["image_id"] == entry["id"] for r in entry["regions"])
        for r in entry["regions"]:
            in_bounds(r, "width", "height")
            assert r["phrase"]
    for sg in docs["scene_graphs"]:
        ids = {o["object_id"] for o in sg["objects"]}
        for r in sg["relationships"]:
            assert r["subject_id"] in ids and r["object_id"] in ids
            assert r["predicate"] in CONVERSE


def test_region_graphs_state_exactly_what_the_phrase_states(world: Path) -> None:
    vg = world / "eval/vg"
    described = json.loads((vg / "region_descriptions.json").read_text())
    graphs = json.loads((vg / "region_graphs.json").read_text())
    scene_graphs = json.loads((vg / "scene_graphs.json").read_text())
    assert [g["image_id"] for g in graphs] == [d["id"] for d in described]
    for entry, graph, sg in zip(described, graphs, scene_graphs, strict=True):
        objects = {o["object_id"]: o for o in sg["objects"]}
        rels = {(r["subject_id"], r["object_id"]): r for r in sg["relationships"]}
        n = len(objects)
        assert len(graph["regions"]) == len(entry["regions"]) == n + n * (n - 1) // 2 + 1
        for k, (region, rg) in enumerate(zip(entry["regions"], graph["regions"], strict=True)):
            assert {key: rg[key] for key in region} == region  # same id, phrase and box
            for o in rg["objects"]:
                full = objects[o["object_id"]]
                assert o["name"] == full["names"][0]
                assert {c: o[c] for c in "xywh"} == {c: full[c] for c in "xywh"}
                assert set(o["attributes"]) <= set(full["attributes"])
            for r in rg["relationships"]:
                ref = rels[(r["subject_id"], r["object_id"])]
                assert (r["relationship_id"], r["predicate"]) == (
                    ref["relationship_id"],
                    ref["predicate"],
                )
            words = [[*o["attributes"], o["name"]] for o in rg["objects"]]
            if k < n:  # one object: "a small red circle"
                assert not rg["relationships"] and len(words[0]) == 3
                assert rg["phrase"].split()[1:] == words[0]
            elif k < len(entry["regions"]) - 1:  # a pair: "red circle above blue square"
                (rel,) = rg["relationships"]
                assert rg["phrase"] == " ".join([*words[0], rel["predicate"], *words[1]])
            else:  # the whole image: every object, with its colour; relations as written
                assert sorted(o["object_id"] for o in rg["objects"]) == sorted(objects)
                text = rg["phrase"].lower()
                for o in rg["objects"]:
                    assert objects[o["object_id"]]["attributes"][0] in o["attributes"]
                    assert all(w in text for w in [*o["attributes"], o["name"]])
                for r in rg["relationships"]:
                    forms = [s for s, p in SURFACE_TO_PREDICATE.items() if p == r["predicate"]]
                    assert any(f in text for f in forms), (text, r["predicate"])


def test_coco_captions_mention_every_object(world: Path, cfg: dict[str, Any]) -> None:
    coco = json.loads((world / "eval/coco_captions.json").read_text())
    assert set(coco) == {"info", "licenses", "images", "annotations"}
    image_ids = {im["id"] for im in coco["images"]}
    assert len(image_ids) == cfg["eval"]["n_images"]
    for im in coco["images"]:
        assert (world / "eval/images" / im["file_name"]).is_file()
    anns = coco["annotations"]
    assert len(anns) == cfg["eval"]["n_images"] * cfg["eval"]["captions_per_image"]
    assert len({a["id"] for a in anns}) == len(anns)
    assert all(a["image_id"] in image_ids for a in anns)

    scenes = read_scenes(world / "eval/scenes.parquet")
    truth = pl.read_parquet(world / "eval/truth.parquet")
    assert truth["caption_id"].to_list() == [f"coco-{a['id']}" for a in anns]
    assert truth["text"].to_list() == [a["caption"] for a in anns]
    for row in truth.iter_rows(named=True):
        scene = scenes[row["image_id"]]
        attrs: dict[int, set[str]] = {}
        for a in row["attributes"]:
            attrs.setdefault(a["obj"], set()).add(a["value"])
        nodes = [(o["lemma"], attrs.get(o["idx"], set())) for o in row["objects"]]
        text = row["text"].lower()
        for obj in scene.objects:
            assert any(lem == obj.shape and obj.colour in at for lem, at in nodes), row["text"]
            assert obj.colour in text and obj.shape in text


@pytest.mark.parametrize("corpus", ["cc12m", "laion"])
def test_caption_graphs_are_true_of_their_scene(world: Path, corpus: str) -> None:
    scenes = read_scenes(world / corpus / "scenes.parquet")
    truth = pl.read_parquet(world / corpus / "truth.parquet")
    assert truth.columns == [
        "caption_id",
        "image_id",
        "image",
        "text",
        "objects",
        "attributes",
        "relations",
    ]
    assert truth["caption_id"][0] == f"{corpus}-1"
    plural_seen = False
    for row in truth.iter_rows(named=True):
        scene = scenes[row["image_id"]]
        attrs: dict[int, set[str]] = {}
        for a in row["attributes"]:
            attrs.setdefault(a["obj"], set()).add(a["value"])
        match = {
            o["idx"]: [
                s for s in scene.objects if node_matches(s, o["lemma"], attrs.get(o["idx"], set()))
            ]
            for o in row["objects"]
        }
        assert [o["idx"] for o in row["objects"]] == list(range(len(row["objects"])))
        for o in row["objects"]:
            assert match[o["idx"]], (row["text"], o)
            assert o["name"].lower() in row["text"].lower()
            if o["name"].lower() != o["lemma"]:
                plural_seen = True
                assert len(match[o["idx"]]) >= 2
        for r in row["relations"]:
            assert any(
                Scene((a, b)).relation(0, 1) == r["pred"]
                for a in match[r["subj"]]
                for b in match[r["obj"]]
            ), row["text"]
    assert truth.height == len(scenes)
    assert plural_seen or truth.height < 60


def test_cc12m_tsv(world: Path, cfg: dict[str, Any]) -> None:
    path = world / "cc12m/captions.tsv"
    raw = path.read_text(encoding="utf-8")
    assert raw.endswith("\n") and "\r" not in raw
    lines = raw.splitlines()
    assert len(lines) == cfg["corpora"]["cc12m"]["n_images"]
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert all(len(r) == 2 for r in rows)
    for url, caption in rows:
        assert (world / "cc12m" / url).is_file()
        assert caption == caption.strip() and caption
    truth = pl.read_parquet(world / "cc12m/truth.parquet")
    assert truth["text"].to_list() == [c for _, c in rows]
    assert len(set(truth["text"])) > 0.8 * truth.height


def test_laion_parquet_schema(world: Path, cfg: dict[str, Any]) -> None:
    df = pl.read_parquet(world / "laion/part-00000.parquet")
    assert df.schema == {
        "SAMPLE_ID": pl.Int64,
        "URL": pl.Utf8,
        "TEXT": pl.Utf8,
        "HEIGHT": pl.Int32,
        "WIDTH": pl.Int32,
        "LICENSE": pl.Utf8,
        "NSFW": pl.Utf8,
        "similarity": pl.Float32,
    }
    assert df.height == cfg["corpora"]["laion"]["n_images"]
    assert df["SAMPLE_ID"].is_unique().all()
    assert set(df["LICENSE"]) == {"?"} and set(df["NSFW"]) == {"UNLIKELY"}
    assert all((world / "laion" / u).is_file() for u in df["URL"])
    assert not any("\t" in t or "\n" in t for t in df["TEXT"])


def test_surface_forms_map_to_canonical_predicates() -> None:
    assert set(SURFACE_TO_PREDICATE.values()) == set(CONVERSE)
    assert SURFACE_TO_PREDICATE["beneath"] == "below"
    assert SURFACE_TO_PREDICATE["to the left of"] == "left of"


# ------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("corpora", "cc12m", "holdout", "bindings"),
            [["red", "circle"], ["x", "y"], ["teal", "star"]],
            "world.corpora.cc12m.holdout.bindings[1]: 'x' is not a colour or size",
        ),
        (
            ("corpora", "laion", "holdout", "triples"),
            [["star", "near", "cross"]],
            "world.corpora.laion.holdout.triples[0]: 'near'",
        ),
        (
            ("corpora", "laion", "holdout", "atoms"),
            ["pink", "blob"],
            "world.corpora.laion.holdout.atoms[1]",
        ),
        (("objects_per_scene",), [4, 2], "world.objects_per_scene"),
        (("objects_per_scene",), [2, 6], "world.objects_per_scene[1]"),
        (("shapes",), ["circle", "blob"], "world.shapes[1]"),
        (("colours",), ["red", "teal"], "world.colours[1]"),
        (("relations",), ["left of", "near"], "world.relations[1]"),
        (("corpora", "cc12m", "format"), "csv", "world.corpora.cc12m.format"),
        (("eval", "heldout_fraction"), 1.5, "world.eval.heldout_fraction"),
        (("image_size",), 8, "world.image_size"),
        (
            ("corpora", "cc12m", "holdout", "atoms"),
            ["small", "large"],
            "world.corpora.cc12m.holdout.atoms: holds out every size",
        ),
    ],
)
def test_config_errors_name_the_key(path: tuple[str, ...], value: Any, message: str) -> None:
    cfg = small_config()
    node = cfg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ValueError) as err:
        parse_world_config(cfg)
    assert str(err.value).startswith(message), str(err.value)


def test_holdout_that_leaves_no_object_type_is_rejected() -> None:
    cfg = small_config()
    cfg["shapes"] = ["circle"]
    cfg["colours"] = ["red", "green"]
    cfg["corpora"] = {
        "tiny": {
            "format": "cc12m_tsv",
            "n_images": 5,
            "seed": 3,
            "holdout": {"bindings": [["red", "circle"], ["green", "circle"]]},
        }
    }
    with pytest.raises(ValueError, match=r"^world\.corpora\.tiny\.holdout: bindings and atoms"):
        parse_world_config(cfg)


def test_unknown_corpus_is_named() -> None:
    with pytest.raises(ValueError, match="world.corpora: no corpus named 'yfcc'"):
        load_holdout(small_config(), "yfcc")


def test_surface_mapping_covers_caption_text(world: Path) -> None:
    truth = pl.read_parquet(world / "eval/truth.parquet")
    forms = sorted(SURFACE_TO_PREDICATE, key=len, reverse=True)
    found = set()
    for text in truth["text"]:
        low = text.lower()
        for form in forms:
            if re.search(rf"\b{re.escape(form)}\b", low):
                found.add(form)
    assert len(found) >= 8, found
