"""Entry points: build the eval set, a training corpus, the manifest."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .captions import Caption, alt_text_caption, clean_caption, eval_captions
from .config import CorpusSpec, Holdout, WorldSpec, parse_world_config
from .formats import (
    HOLDOUT_SCHEMA,
    ImageDir,
    coco_captions,
    laion_frame,
    region_graphs,
    scene_frame,
    truth_frame,
    tsv_line,
    visual_genome,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)
from .preset import scale_files
from .render import write_png
from .scenes import MAX_SCENE_TRIES, Scene, SceneSampler, scene_holdout_items
from .vocab import COLOUR_RGB, RELATION_SURFACES, SURFACE_TO_PREDICATE

log = logging.getLogger(__name__)

# twins.parquet: a forced eval image, its twin, and the corpus whose hold-out they contrast.
TWINS_SCHEMA = {"image_id": pl.Int64, "twin_image_id": pl.Int64, "corpus": pl.String}

# Domain tags keep the eval stream and the corpus streams apart for equal seeds.
_EVAL_TAG = 0x5EA1
_CORPUS_TAG = 0xC0DE
PROGRESS_EVERY = 1000


def _streams(entropy: list[int], n: int) -> list[np.random.Generator]:
    """``n`` independent generators (scenes, captions, ...) from one seed list."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(n)]


def _allowed_predicates(spec: WorldSpec, holdout: Holdout | None) -> frozenset[str]:
    held = set(holdout.atoms_of_kind("relation")) if holdout else set()
    return frozenset(r for r in spec.relations if r not in held)


def _is_forced_ok(scene: Scene, holdouts: list[Holdout], kinds: tuple[str, ...]) -> bool:
    return any(k in kinds for h in holdouts for k, _ in scene_holdout_items(scene, h))


TWIN_TRIES = 50


def twin_scene(
    scene: Scene, holdout: Holdout, spec: WorldSpec, rng: np.random.Generator
) -> Scene | None:
    """The scene with the objects of ``holdout``'s bindings and triples changed to seen
    neighbours: the object of a held-out binding gets another colour (a colour binding) or
    shape (at random), one object of a held-out triple another shape; positions and sizes
    stay. The new values are ones the corpus sees. None when no try leaves the scene free
    of the hold-out's bindings and triples."""
    bindings, atoms = set(holdout.bindings), set(holdout.atoms)
    triples = set(holdout.triples_with_converses)

    def seen(shape: str, colour: str, size: str) -> bool:
        return (
            not {shape, colour} & atoms
            and (colour, shape) not in bindings
            and (size, shape) not in bindings
        )

    for _ in range(TWIN_TRIES):
        objs = list(scene.objects)
        n = len(objs)
        in_triple = [
            (i, j)
            for i in range(n)
            for j in range(n)
            if i != j and (objs[i].shape, scene.relation(i, j), objs[j].shape) in triples
        ]
        change = {
            i: "any"
            for i, o in enumerate(objs)
            if (o.colour, o.shape) in bindings or (o.size, o.shape) in bindings
        }
        for i, j in in_triple:
            if i not in change and j not in change:
                change[(i, j)[int(rng.integers(2))]] = "shape"
        for i, what in sorted(change.items()):
            o = objs[i]
            colour_binding = (o.colour, o.shape) in bindings
            by_colour = what == "any" and colour_binding and rng.random() < 0.5
            if by_colour:
                options = [c for c in spec.colours if c != o.colour and seen(o.shape, c, o.size)]
                if options:
                    colour = options[int(rng.integers(len(options)))]
                    objs[i] = dataclasses.replace(o, colour=colour)
                    continue
            options = [s for s in spec.shapes if s != o.shape and seen(s, o.colour, o.size)]
            if options:
                objs[i] = dataclasses.replace(o, shape=options[int(rng.integers(len(options)))])
        twin = Scene(tuple(objs))
        if not any(k in ("binding", "triple") for k, _ in scene_holdout_items(twin, holdout)):
            return twin
    return None


@dataclasses.dataclass(frozen=True)
class EvalScenes:
    """The eval scenes; per scene whether it was forced to hold held-out content; and the
    matched twins: (forced scene index, twin index, corpus)."""

    scenes: list[Scene]
    forced: list[bool]
    twins: list[tuple[int, int, str]]


def eval_scenes(spec: WorldSpec) -> EvalScenes:
    """The eval scenes, forced scenes and their twins.

    ``round(heldout_fraction * n_images)`` scenes, at positions chosen at random, are
    resampled until they contain a held-out binding or triple of their corpus (the
    corpora that hold out compounds, in turn; any held-out item of any corpus when none
    does). With ``matched_twins``, each forced scene gets a twin (``twin_scene``) at
    another random position, as long as there are positions left; the rest are random.
    """
    scene_rng, pick_rng, twin_rng = _streams([spec.seed, _EVAL_TAG, 0], 3)
    sampler = SceneSampler(spec)
    holdouts = [c.holdout for c in spec.corpora if not c.holdout.is_empty]
    targets = [h for h in holdouts if h.bindings or h.triples]
    n = spec.eval.n_images
    n_forced = round(spec.eval.heldout_fraction * n) if holdouts else 0
    with_twins = spec.eval.matched_twins and bool(targets)
    n_twins = min(n_forced, n - n_forced) if with_twins else 0
    order = pick_rng.permutation(n).tolist()
    forced_at, twin_at = order[:n_forced], order[n_forced : n_forced + n_twins]
    scenes: list[Scene | None] = [None] * n
    twins: list[tuple[int, int, str]] = []
    for j, k in enumerate(forced_at):
        target = [targets[j % len(targets)]] if targets else holdouts
        kinds = ("binding", "triple") if targets else ("binding", "triple", "atom")
        for _ in range(MAX_SCENE_TRIES):
            scene = sampler.sample(scene_rng)
            if not _is_forced_ok(scene, target, kinds):
                continue
            twin = twin_scene(scene, target[0], spec, twin_rng) if j < n_twins else None
            if j < n_twins and twin is None:
                continue
            scenes[k] = scene
            if twin is not None:
                scenes[twin_at[j]] = twin
                twins.append((k, twin_at[j], target[0].corpus))
            break
        else:
            raise RuntimeError(f"eval image {k + 1}: no scene with held-out content found")
    for k in range(n):
        if scenes[k] is None:
            scenes[k] = sampler.sample(scene_rng)
    forced = [False] * n
    for k in forced_at:
        forced[k] = True
    return EvalScenes([s for s in scenes if s is not None], forced, twins)


def corpus_scenes(spec: WorldSpec, corpus: CorpusSpec) -> list[Scene]:
    """The training scenes of one corpus (none holds a held-out item)."""
    (scene_rng,) = _streams([spec.seed, _CORPUS_TAG, corpus.seed, 0], 1)
    sampler = SceneSampler(spec, corpus.holdout)
    return [sampler.sample(scene_rng) for _ in range(corpus.n_images)]


def _render_all(spec: WorldSpec, scenes: list[Scene], out_dir: Path, what: str) -> list[str]:
    """Render scenes as images/<k>.png (k from 1); returns the relative paths."""
    images = ImageDir(out_dir)
    urls = []
    try:
        for k, scene in enumerate(scenes, start=1):
            write_png(scene, spec.image_size, images.path(f"{k}.png"))
            urls.append(f"images/{k}.png")
            if k % PROGRESS_EVERY == 0:
                log.info("%s: rendered %d/%d images", what, k, len(scenes))
    except BaseException:
        images.abort()
        raise
    images.commit()
    return urls


def build_eval_set(world_cfg: Mapping[str, Any], out_dir: Path) -> None:
    """Render the eval set and write its annotations under ``out_dir``.

    Writes ``images/<image_id>.png`` (ids from 1); Visual Genome JSON in ``vg/``
    (image_data, objects, attributes, relationships, region_descriptions,
    scene_graphs, and region_graphs: per region exactly the objects, attributes and
    relations its phrase states; ``url`` is the image path relative to ``out_dir``);
    ``coco_captions.json`` (``file_name`` relative to ``images/``);
    ``truth.parquet`` (one row per COCO caption: caption_id "coco-<annotation id>",
    image_id, text and the ``graphs`` columns); ``holdout.parquet`` (image_id,
    corpus, kind, value: the held-out items of each corpus each image contains);
    ``scenes.parquet`` (one row per drawn object with its box); and ``twins.parquet``
    (``TWINS_SCHEMA``: each forced image with its matched twin, ``eval_scenes``).
    """
    spec = parse_world_config(world_cfg)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = eval_scenes(spec)
    scenes = drawn.scenes
    (caption_rng,) = _streams([spec.seed, _EVAL_TAG, 1], 1)
    allowed = _allowed_predicates(spec, None)
    image_ids = list(range(1, len(scenes) + 1))

    per_image: list[list[Caption]] = []
    whole_caps: list[Caption] = []
    for scene in scenes:
        per_image.append(eval_captions(scene, caption_rng, allowed, spec.eval.captions_per_image))
        whole_caps.append(clean_caption(scene, caption_rng, allowed, mention_all=True))
    whole = [c.text for c in whole_caps]

    urls = _render_all(spec, scenes, out_dir, "eval")
    vg = visual_genome(image_ids, scenes, spec.image_size, urls, whole)
    vg["region_graphs"] = region_graphs(vg, scenes, whole_caps)
    for stem, doc in vg.items():
        write_json_atomic(out_dir / "vg" / f"{stem}.json", doc)

    ann_rows: list[tuple[int, int, str]] = []
    flat: list[Caption] = []
    for image_id, caps in zip(image_ids, per_image, strict=True):
        for cap in caps:
            ann_rows.append((len(ann_rows) + 1, image_id, cap.text))
            flat.append(cap)
    coco = coco_captions(image_ids, [f"{i}.png" for i in image_ids], spec.image_size, ann_rows)
    write_json_atomic(out_dir / "coco_captions.json", coco)

    leading = {
        "caption_id": pl.Series("caption_id", [f"coco-{a}" for a, _, _ in ann_rows], pl.Utf8),
        "image_id": pl.Series("image_id", [i for _, i, _ in ann_rows], pl.Int64),
    }
    write_parquet_atomic(out_dir / "truth.parquet", truth_frame(leading, flat))
    write_parquet_atomic(out_dir / "holdout.parquet", holdout_frame(spec, image_ids, scenes))
    write_parquet_atomic(out_dir / "scenes.parquet", scene_frame(image_ids, scenes))
    twins = pl.DataFrame(
        [(image_ids[a], image_ids[b], corpus) for a, b, corpus in drawn.twins],
        schema=TWINS_SCHEMA,
        orient="row",
    )
    write_parquet_atomic(out_dir / "twins.parquet", twins)
    log.info(
        "eval: %d images (%d forced, %d twins), %d captions written to %s",
        len(scenes), sum(drawn.forced), len(drawn.twins), len(flat), out_dir,
    )  # fmt: skip


def holdout_frame(spec: WorldSpec, image_ids: list[int], scenes: list[Scene]) -> pl.DataFrame:
    """Long table of the held-out items (per configured corpus) each scene contains."""
    rows: dict[str, list[Any]] = {k: [] for k in HOLDOUT_SCHEMA}
    for image_id, scene in zip(image_ids, scenes, strict=True):
        for corpus in spec.corpora:
            for kind, value in scene_holdout_items(scene, corpus.holdout):
                for key, v in zip(
                    HOLDOUT_SCHEMA, (image_id, corpus.name, kind, value), strict=True
                ):
                    rows[key].append(v)
    return pl.DataFrame(rows, schema=HOLDOUT_SCHEMA)


def build_corpus(world_cfg: Mapping[str, Any], corpus: str, out_dir: Path) -> None:
    """Render one training corpus and write its captions in the corpus's native format.

    Under ``out_dir``: ``images/<n>.png`` (n from 1); ``captions.tsv`` (format
    ``cc12m_tsv``: no header, ``<url>\\t<caption>``, url relative to ``out_dir``) or
    ``part-00000.parquet`` (format ``laion_parquet``: LAION-400M columns);
    ``truth.parquet`` (caption_id "<corpus>-<n>", image_id, image, text, graph
    columns) and ``scenes.parquet``. One caption per image. No scene and no caption
    contains an item of the corpus's hold-out (see ``scenes.SceneSampler``).
    """
    spec = parse_world_config(world_cfg)
    cspec = spec.corpus(corpus)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    scenes = corpus_scenes(spec, cspec)
    (caption_rng,) = _streams([spec.seed, _CORPUS_TAG, cspec.seed, 1], 1)
    allowed = _allowed_predicates(spec, cspec.holdout)
    if cspec.caption_style == "clean":
        caps = [clean_caption(s, caption_rng, allowed) for s in scenes]
    else:
        caps = [alt_text_caption(s, caption_rng, allowed) for s in scenes]

    urls = _render_all(spec, scenes, out_dir, corpus)
    ids = list(range(1, len(scenes) + 1))
    texts = [" ".join(c.text.split()) for c in caps]
    if cspec.format == "cc12m_tsv":
        write_text_atomic(
            out_dir / "captions.tsv",
            "".join(tsv_line(u, t) for u, t in zip(urls, texts, strict=True)),
        )
    else:
        write_parquet_atomic(
            out_dir / "part-00000.parquet", laion_frame(ids, urls, texts, spec.image_size)
        )
    leading = {
        "caption_id": pl.Series("caption_id", [f"{corpus}-{i}" for i in ids], pl.Utf8),
        "image_id": pl.Series("image_id", ids, pl.Int64),
        "image": pl.Series("image", urls, pl.Utf8),
    }
    write_parquet_atomic(out_dir / "truth.parquet", truth_frame(leading, caps))
    write_parquet_atomic(out_dir / "scenes.parquet", scene_frame(ids, scenes))
    log.info("%s: %d images and captions written to %s", corpus, len(scenes), out_dir)


def manifest(world_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest document (see ``write_manifest``)."""
    spec = parse_world_config(world_cfg)
    corpora = {}
    for c in spec.corpora:
        h = c.holdout
        corpora[c.name] = {
            "holdout": {
                "bindings": [list(b) for b in h.bindings],
                "triples": [list(t) for t in h.triples],
                "triples_with_converses": [list(t) for t in h.triples_with_converses],
                "atoms": list(h.atoms),
                "atoms_by_kind": {
                    kind: list(h.atoms_of_kind(kind))
                    for kind in ("shape", "colour", "size", "relation")
                },
            },
        }
    return {
        "generator": "vlcomp.world",
        "seed": spec.seed,
        "image_size": spec.image_size,
        "objects_per_scene": [spec.min_objects, spec.max_objects],
        "vocab": {
            "shapes": list(spec.shapes),
            "colours": list(spec.colours),
            "sizes": list(spec.sizes),
            "relations": list(spec.relations),
        },
        "colour_rgb": {c: list(COLOUR_RGB[c]) for c in spec.colours},
        "size_pixels": {s: spec.size_pixels(s) for s in spec.sizes},
        "relation_surface_forms": {p: list(RELATION_SURFACES[p]) for p in spec.relations},
        "eval": {
            "n_images": spec.eval.n_images,
            "captions_per_image": spec.eval.captions_per_image,
            "n_captions": spec.eval.n_images * spec.eval.captions_per_image,
            "heldout_fraction": spec.eval.heldout_fraction,
        },
        "corpora": corpora,
    }


def write_manifest(world_cfg: Mapping[str, Any], path: Path) -> None:
    """Write the world's manifest as JSON: vocab, seeds, and per corpus the held-out
    bindings, triples (converses listed explicitly) and atoms. A corpus's size, style and
    seed are not in it, so that changing them leaves the manifest (and the checks that
    read it) untouched."""
    write_json_atomic(Path(path), manifest(world_cfg))


def write_predicate_map(path: Path) -> None:
    """Write the world's relation surface forms -> canonical predicates as JSON, the file
    the parse settings' ``predicate_map`` names (``"to the left of"`` -> ``"left of"``)."""
    write_json_atomic(Path(path), dict(sorted(SURFACE_TO_PREDICATE.items())))


SCALE_CHUNK = 100_000


def scale_corpus(
    world_cfg: Mapping[str, Any], corpus: str, n_captions: int, path: Path, pool: int = 20_000
) -> Path:
    """One file (``path``, one of ``preset.scale_files``) of ``n_captions`` captions in the
    style and format of world corpus ``corpus``, without images, for the scale benchmark:
    ``pool`` distinct captions (scenes of the corpus, its hold-out respected) cycled with
    distinct ids; file k of F holds captions k * n / F to (k + 1) * n / F. Returns ``path``."""
    spec = parse_world_config(world_cfg)
    cspec = spec.corpus(corpus)
    files = scale_files(cspec.format)
    path = Path(path)
    if path.name not in files:
        raise ValueError(f"{path}: a {cspec.format} scale corpus is written to {files}")
    k = files.index(path.name)
    first, stop = k * n_captions // len(files), (k + 1) * n_captions // len(files)
    scenes = corpus_scenes(spec, dataclasses.replace(cspec, n_images=min(pool, n_captions)))
    (caption_rng,) = _streams([spec.seed, _CORPUS_TAG, cspec.seed, 1], 1)
    allowed = _allowed_predicates(spec, cspec.holdout)
    make = clean_caption if cspec.caption_style == "clean" else alt_text_caption
    texts = [" ".join(make(s, caption_rng, allowed).text.split()) for s in scenes]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if cspec.format == "cc12m_tsv":
        with tmp.open("w", encoding="utf-8") as out:
            for start in range(first, stop, SCALE_CHUNK):
                end = min(stop, start + SCALE_CHUNK)
                out.write(
                    "".join(
                        tsv_line(f"scale/{i}.png", texts[i % len(texts)]) for i in range(start, end)
                    )
                )
    else:
        import pyarrow.parquet as pq

        writer = None
        for start in range(first, stop, SCALE_CHUNK):
            ids = list(range(start + 1, min(stop, start + SCALE_CHUNK) + 1))
            frame = laion_frame(
                ids,
                [f"scale/{i}.png" for i in ids],
                [texts[(i - 1) % len(texts)] for i in ids],
                spec.image_size,
            ).to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, frame.schema, compression="zstd")
            writer.write_table(frame)
        assert writer is not None, "a scale corpus part holds at least one caption"
        writer.close()
    tmp.replace(path)
    log.info("scale corpus %s: %d captions (%d distinct) in %s", corpus, stop - first,
             len(texts), path)  # fmt: skip
    return path
