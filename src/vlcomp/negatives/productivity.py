"""CREPE productivity benchmark: random-walk captions of n atoms with hard negatives.

For each evaluation image (Visual Genome ``scene_graphs.json`` + ``image_data.json``) and
each complexity n (default 4..12):

1. ``walks_per_image`` random walks of exactly n atoms (``productivity_graph``); a walk
   that ends short, or repeats the subgraph of a kept walk, is dropped;
2. its crop is the union of the walk's object boxes, filtered like CREPE's regions
   (``min_area`` pixels, ``min_area_fraction`` of the image, ``min_aspect`` <= w/h <=
   ``max_aspect``; defaults those of ``vlcomp.ingest.vg.RegionFilters``) and de-duplicated:
   a crop whose overlap with a crop already kept for the same image and n is >=
   ``dedupe_overlap`` is dropped. Overlap is IoU (``dedupe_measure: iou``) or intersection
   over the smaller area (``min``, stricter: also drops crops inside a kept one);
3. the caption is the template rendering of the walk (``productivity_text``);
4. hard negatives per family (``productivity_negatives``): up to ``negatives_per_type``
   each of HN-ATOM / HN-SWAP / HN-NEG, each checked against the full scene graph.

Outputs: ``CANDIDATES_SCHEMA`` rows, one item per (walk, family) with the positive first
(benchmark ``crepe_productivity`` unless named, item_id
``<benchmark>/<image>/n<n>/w<k>/<family>``, image = the image id, generator
``template:productivity``, provenance JSON); an items table (item_id, image_id,
complexity, x, y, width, height: the crop); a failure table
(reason, family, complexity, count); and a summary (complexity, family, walks, items,
negatives), CREPE Table 4 style.

Failure units, by reason prefix: ``image:`` counts images (the scene graph has fewer
atoms than n, so no walk was tried); ``walk:`` / ``crop:`` count walk attempts (family
null); ``item:`` counts items of a family dropped for want of negatives; ``negative:``
counts edits tried and rejected (true of the scene graph, duplicate text) — also for items
that were kept; ``context:`` counts them too: edits whose text tokenises like the positive
within the text encoders' context (``context.ContextCheck``; the next edit takes the
place). ``input:`` counts scene-graph objects and relationships that could not be read.

Randomness: every (image, n) has its own generator seeded from (seed, crc32(image id), n),
and every (walk, family) one from (seed, crc32(image id), n, walk, family), so an image's
output does not depend on the other images and the same inputs give identical files.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.ingest.visual_genome import image_sizes, scene_graphs
from vlcomp.io import write_parquet

from .context import ContextCheck
from .productivity_graph import (
    SceneGraph,
    SceneObject,
    Walk,
    random_walk,
    scene_graph_from_vg,
    walk_crop,
)
from .productivity_negatives import (
    FAMILIES,
    FOIL_FORBID,
    REJECTED_DUPLICATE,
    REJECTED_TRUE,
    FamilyResult,
    FoilProvider,
    GraphVocabulary,
    Negative,
    TextRanker,
    atom_negatives,
    attribute_kinds,
    finder_foils,
    lexicon_attribute_kinds,
    lexicon_foils,
    negation_negatives,
    swap_negatives,
    vocabulary_foils,
)
from .productivity_text import SIZE_WORDS, Pattern, holds, pattern_from_walk, render

__all__ = [
    "BENCHMARK",
    "FAILURES_SCHEMA",
    "FAMILIES",
    "GENERATOR",
    "ITEMS_SCHEMA",
    "SUMMARY_SCHEMA",
    "FoilProvider",
    "GraphVocabulary",
    "KeptWalk",
    "Pattern",
    "ProductivitySettings",
    "SceneGraph",
    "SceneObject",
    "Walk",
    "build_image",
    "crop_filter",
    "finder_foils",
    "holds",
    "lexicon_attribute_kinds",
    "lexicon_foils",
    "overlap",
    "pattern_from_walk",
    "productivity_benchmark",
    "random_walk",
    "read_scene_graphs",
    "render",
    "sample_walks",
    "summarise",
    "vocabulary_foils",
    "walk_crop",
]

log = logging.getLogger(__name__)

BENCHMARK = "crepe_productivity"
GENERATOR = "template:productivity"
PROGRESS_EVERY = 1000

ITEMS_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,
    "image_id": pl.String,
    "complexity": pl.Int64,
    "x": pl.Int64,
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
}
FAILURES_SCHEMA: dict[str, pl.DataType] = {
    "reason": pl.String,
    "family": pl.String,  # null for image, input, walk and crop reasons
    "complexity": pl.Int64,  # null for input reasons
    "count": pl.Int64,
}
SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "complexity": pl.Int64,
    "family": pl.String,
    "walks": pl.Int64,  # kept walks (image-caption pairs) of this complexity
    "items": pl.Int64,  # of them, items with negatives of this family
    "negatives": pl.Int64,
}

# walk / crop reasons
FEWER_ATOMS = "image: fewer atoms than n"
TOO_SHORT = "walk: too short"
DUPLICATE_WALK = "walk: duplicate subgraph"
TOO_SMALL = "crop: too small"
TOO_SMALL_FRACTION = "crop: too small fraction"
ASPECT = "crop: aspect ratio"
OVERLAP = "crop: overlaps a kept crop"


class SettingsError(ValueError):
    """A productivity setting that is unknown or out of range; names the key."""


@dataclass(frozen=True)
class ProductivitySettings:
    """Settings of the productivity benchmark (config ``negatives: productivity:``)."""

    complexities: tuple[int, ...] = tuple(range(4, 13))
    walks_per_image: int = 10  # walk attempts per image and complexity
    negatives_per_type: int = 5  # CREPE scores 1 positive against 5 negatives per type
    min_negatives: int = 1  # items with fewer negatives of a family are dropped (counted)
    families: tuple[str, ...] = FAMILIES
    min_area: int = 40_000
    min_area_fraction: float = 0.10
    min_aspect: float = 0.5
    max_aspect: float = 2.0
    dedupe_overlap: float = 0.75
    dedupe_measure: str = "iou"
    one_relation_per_pair: bool = True
    foil_forbid: str = "graph"
    attribute_kinds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    leading_attributes: tuple[str, ...] = SIZE_WORDS

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> ProductivitySettings:
        """From a config mapping; unknown keys and bad values raise ``SettingsError``."""
        raw = dict(settings or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise SettingsError(f"productivity: unknown key(s) {unknown} (known: {sorted(known)})")
        for key in ("complexities", "families", "leading_attributes"):
            if key in raw:
                if isinstance(raw[key], str) or not isinstance(raw[key], Sequence):
                    raise SettingsError(f"productivity: {key} must be a list")
                raw[key] = tuple(raw[key])
        if "attribute_kinds" in raw:
            kinds = raw["attribute_kinds"]
            if not isinstance(kinds, Mapping) or not all(
                isinstance(v, Sequence)
                and not isinstance(v, str)
                and all(isinstance(x, str) for x in v)
                for v in kinds.values()
            ):
                raise SettingsError("productivity: attribute_kinds must map kind -> [values]")
            raw["attribute_kinds"] = {str(k): tuple(v) for k, v in kinds.items()}
        settings_ = cls(**raw)
        settings_.validate()
        return settings_

    def validate(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise SettingsError(f"productivity: {message}")

        def integer(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        def number(value: Any) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        need(bool(self.complexities), "complexities must not be empty")
        need(all(integer(n) and n >= 1 for n in self.complexities), "complexities must be >= 1")
        need(len(set(self.complexities)) == len(self.complexities), "complexities repeat")
        for key in ("walks_per_image", "negatives_per_type"):
            need(integer(getattr(self, key)) and getattr(self, key) >= 1, f"{key} must be >= 1")
        need(
            integer(self.min_negatives) and 0 <= self.min_negatives <= self.negatives_per_type,
            "min_negatives must lie in [0, negatives_per_type]",
        )
        need(bool(self.families), "families must not be empty")
        need(set(self.families) <= set(FAMILIES), f"families must be among {list(FAMILIES)}")
        need(len(set(self.families)) == len(self.families), "families repeat")
        for key in ("min_area", "min_area_fraction", "min_aspect", "max_aspect"):
            need(number(getattr(self, key)) and getattr(self, key) >= 0, f"{key} must be >= 0")
        need(0 < self.min_aspect <= self.max_aspect, "need 0 < min_aspect <= max_aspect")
        need(
            number(self.dedupe_overlap) and 0 < self.dedupe_overlap <= 1,
            "dedupe_overlap must lie in (0, 1]",
        )
        need(self.dedupe_measure in ("iou", "min"), "dedupe_measure must be 'iou' or 'min'")
        need(self.foil_forbid in FOIL_FORBID, f"foil_forbid must be one of {list(FOIL_FORBID)}")
        need(isinstance(self.one_relation_per_pair, bool), "one_relation_per_pair: a boolean")

    def as_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["attribute_kinds"] = {k: list(v) for k, v in self.attribute_kinds.items()}
        return json.dumps(data, sort_keys=True, default=list)


# ----------------------------------------------------------------------------- crops


def crop_filter(
    box: tuple[int, int, int, int], width: int, height: int, s: ProductivitySettings
) -> str | None:
    """The first CREPE region filter the crop fails (None when it passes)."""
    _, _, w, h = box
    if w <= 0 or h <= 0 or w * h < s.min_area:
        return TOO_SMALL
    if w * h < s.min_area_fraction * width * height:
        return TOO_SMALL_FRACTION
    if not s.min_aspect <= w / h <= s.max_aspect:
        return ASPECT
    return None


def overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int], measure: str) -> float:
    """IoU of two (x, y, w, h) boxes, or intersection over the smaller area ("min")."""
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area_a, area_b = a[2] * a[3], b[2] * b[3]
    denominator = min(area_a, area_b) if measure == "min" else area_a + area_b - inter
    return inter / denominator if denominator > 0 else 0.0


# ----------------------------------------------------------------------------- walks


@dataclass(frozen=True)
class KeptWalk:
    complexity: int
    index: int  # among kept walks of this image and complexity
    walk: Walk
    crop: tuple[int, int, int, int]


def _image_key(image_id: str) -> int:
    return zlib.crc32(image_id.encode("utf-8"))


def sample_walks(
    graph: SceneGraph, n: int, settings: ProductivitySettings, seed: int
) -> tuple[list[KeptWalk], Counter[str]]:
    """The kept walks of one image and complexity, and the drop reasons (counts)."""
    failures: Counter[str] = Counter()
    if graph.max_atoms(settings.one_relation_per_pair) < n:
        failures[FEWER_ATOMS] += 1
        return [], failures
    rng = np.random.default_rng([seed, _image_key(graph.image_id), n])
    kept: list[KeptWalk] = []
    keys: set[tuple[frozenset, frozenset, frozenset]] = set()
    for _ in range(settings.walks_per_image):
        walk = random_walk(graph, n, rng, settings.one_relation_per_pair)
        if walk is None:
            failures[TOO_SHORT] += 1
            continue
        if walk.key() in keys:
            failures[DUPLICATE_WALK] += 1
            continue
        keys.add(walk.key())
        crop = walk_crop(graph, walk.objects)
        reason = crop_filter(crop, graph.width, graph.height, settings)
        if reason is None and any(
            overlap(crop, k.crop, settings.dedupe_measure) >= settings.dedupe_overlap for k in kept
        ):
            reason = OVERLAP
        if reason is not None:
            failures[reason] += 1
            continue
        kept.append(KeptWalk(n, len(kept), walk, crop))
    return kept, failures


# ----------------------------------------------------------------------------- items


@dataclass
class ImageOutput:
    candidates: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    failures: Counter[tuple[str, str | None, int | None]] = field(default_factory=Counter)
    walks: Counter[int] = field(default_factory=Counter)  # kept walks per complexity


def _family_result(
    family: str,
    graph: SceneGraph,
    pattern: Pattern,
    positive: str,
    rng: np.random.Generator,
    settings: ProductivitySettings,
    foils: FoilProvider | None,
    rank_texts: TextRanker | None = None,
    context: ContextCheck | None = None,
) -> FamilyResult:
    k, leading = settings.negatives_per_type, settings.leading_attributes
    if family == "atom":
        return atom_negatives(
            graph, pattern, positive, foils, rng, k, settings.foil_forbid, leading, rank_texts,
            context,
        )  # fmt: skip
    if family == "swap":
        kind = attribute_kinds(settings.attribute_kinds)
        return swap_negatives(graph, pattern, positive, rng, k, kind, leading, context)
    return negation_negatives(graph, pattern, positive, rng, k, leading, context)


def _provenance(
    graph: SceneGraph, kept: KeptWalk, seed: int, change: Mapping[str, Any] | None
) -> str:
    record = {
        "complexity": kept.complexity,
        "crop": {"x": kept.crop[0], "y": kept.crop[1], "w": kept.crop[2], "h": kept.crop[3]},
        "seed": seed,
        "walk": kept.index,
        "jumps": kept.walk.jumps,
        "object_ids": [graph.objects[i].object_id for i in kept.walk.objects],
        "change": dict(change) if change is not None else None,
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def build_image(
    graph: SceneGraph,
    settings: ProductivitySettings,
    seed: int,
    foils: FoilProvider | None,
    rank_texts: TextRanker | None = None,
    benchmark: str = BENCHMARK,
    context: ContextCheck | None = None,
) -> ImageOutput:
    """Candidates, item rows and failure counts of one image, all complexities."""
    out = ImageOutput()
    key = _image_key(graph.image_id)
    for n in sorted(settings.complexities):
        walks, walk_failures = sample_walks(graph, n, settings, seed)
        for reason, count in walk_failures.items():
            out.failures[(reason, None, n)] += count
        out.walks[n] += len(walks)
        for kept in walks:
            pattern = pattern_from_walk(graph, kept.walk)
            positive = render(pattern, settings.leading_attributes)
            for family in settings.families:
                rng = np.random.default_rng([seed, key, n, kept.index, FAMILIES.index(family)])
                result = _family_result(
                    family, graph, pattern, positive, rng, settings, foils, rank_texts, context
                )
                if result.true_of_scene:
                    out.failures[(REJECTED_TRUE, family, n)] += result.true_of_scene
                if result.duplicate:
                    out.failures[(REJECTED_DUPLICATE, family, n)] += result.duplicate
                if context is not None and result.context:
                    out.failures[(context.reason, family, n)] += result.context
                reason = result.failure(settings.min_negatives)
                if reason is not None:
                    out.failures[(reason, family, n)] += 1
                    continue
                _add_item(out, graph, kept, family, positive, result.negatives, seed, benchmark)
    return out


def _add_item(
    out: ImageOutput,
    graph: SceneGraph,
    kept: KeptWalk,
    family: str,
    positive: str,
    negatives: list[Negative],
    seed: int,
    benchmark: str = BENCHMARK,
) -> None:
    item_id = f"{benchmark}/{graph.image_id}/n{kept.complexity}/w{kept.index}/{family}"
    common = {
        "benchmark": benchmark,
        "item_id": item_id,
        "image": graph.image_id,
        "family": family,
        "generator": GENERATOR,
    }
    out.candidates.append(
        {
            **common,
            "text": positive,
            "is_positive": True,
            "target": None,
            "provenance": _provenance(graph, kept, seed, None),
        }
    )
    for negative in negatives:
        out.candidates.append(
            {
                **common,
                "text": negative.text,
                "is_positive": False,
                "target": negative.target,
                "provenance": _provenance(graph, kept, seed, negative.change),
            }
        )
    x, y, w, h = kept.crop
    out.items.append(
        {
            "item_id": item_id,
            "image_id": graph.image_id,
            "complexity": kept.complexity,
            "x": x,
            "y": y,
            "width": w,
            "height": h,
        }
    )


# ------------------------------------------------------------------------------ input


def read_scene_graphs(vg_dir: Path, dropped: Counter[str] | None = None) -> Iterator[SceneGraph]:
    """Scene graphs of the Visual Genome folder ``vg_dir`` (``scene_graphs.json``, else
    objects + attributes + relationships, read by ``ingest.visual_genome``), streamed in
    file order.

    Image sizes come from ``image_data.json`` (required; else the entry's own
    width/height); an image of unknown size raises ``ValueError``. Unreadable objects and
    relationships are counted in ``dropped`` (``input: bad object`` / ``input: bad
    relationship``).
    """
    sizes = image_sizes(Path(vg_dir), needed_for="scene graph sizes")
    for index, (image_id, entry) in enumerate(scene_graphs(Path(vg_dir))):
        if image_id is None:
            raise ValueError(f"{vg_dir}: scene graph {index} is not an image entry with an id")
        size = sizes.get(image_id)
        if size is None and isinstance(entry.get("width"), int):
            size = (entry["width"], entry["height"])
        if size is None:
            raise ValueError(f"{vg_dir}: image {image_id}: size unknown (not in image_data.json)")
        graph, bad = scene_graph_from_vg(entry, *size)
        if dropped is not None:
            dropped.update(f"input: {reason}" for reason in bad)
        yield graph


# -------------------------------------------------------------------------------- job


def summarise(
    candidates: pl.DataFrame,
    walks: Mapping[int, int],
    complexities: Sequence[int],
    families: Sequence[str],
) -> pl.DataFrame:
    """Sizes per complexity and family (CREPE Table 4): kept walks (image-caption pairs,
    with or without negatives), items with negatives of the family, negatives."""
    per = (
        candidates.with_columns(
            pl.col("provenance").str.json_path_match("$.complexity").cast(pl.Int64).alias("n")
        )
        .group_by("n", "family")
        .agg(
            pl.col("item_id").n_unique().alias("items"),
            (~pl.col("is_positive")).sum().cast(pl.Int64).alias("negatives"),
        )
    )
    counts = {(r["n"], r["family"]): r for r in per.iter_rows(named=True)}
    rows = []
    for n in sorted(complexities):
        for family in families:
            row = counts.get((n, family), {"items": 0, "negatives": 0})
            rows.append((n, family, walks.get(n, 0), row["items"], row["negatives"]))
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA, orient="row")


def productivity_benchmark(
    vg_dir: Path,
    out_candidates: Path,
    out_items: Path,
    out_failures: Path,
    settings: Mapping[str, Any] | ProductivitySettings | None,
    seed: int,
    foils: FoilProvider | None,
    out_summary: Path | None = None,
    rank_texts: TextRanker | None = None,
    benchmark: str = BENCHMARK,
    context: ContextCheck | None = None,
) -> pl.DataFrame:
    """Build the benchmark from ``vg_dir`` and write its tables; returns the summary.

    Images are processed in file order (streamed); rows follow image, complexity, walk,
    family order, the positive first.

    ``foils`` is the HN-ATOM foil provider (``vlcomp.negatives.wordnet_foils`` for real
    data, wrapped by ``finder_foils``; ``lexicon_foils`` for the data's own vocabulary
    with the generic lexicon); with None every item of the atom family fails with
    ``item: no foil``.
    ``rank_texts`` (optional) orders each atom's foils by the plausibility of the edited
    caption, e.g. ``lambda texts: wordnet_foils.rank(texts, scorer)``. ``benchmark``
    names the candidates' benchmark and prefixes their item ids. ``context`` drops (and
    counts) negatives identical to their positive within the text encoders' context.
    """
    s = (
        settings
        if isinstance(settings, ProductivitySettings)
        else ProductivitySettings.from_mapping(settings)
    )
    dropped: Counter[str] = Counter()
    candidates: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    failures: Counter[tuple[str, str | None, int | None]] = Counter()
    walks: Counter[int] = Counter()
    seen: set[str] = set()
    for done, graph in enumerate(read_scene_graphs(Path(vg_dir), dropped), start=1):
        if graph.image_id in seen:
            raise ValueError(f"{vg_dir}/scene_graphs.json: image {graph.image_id} repeats")
        seen.add(graph.image_id)
        out = build_image(graph, s, seed, foils, rank_texts, benchmark, context)
        candidates.extend(out.candidates)
        items.extend(out.items)
        failures.update(out.failures)
        walks.update(out.walks)
        if done % PROGRESS_EVERY == 0:
            log.info("productivity: %d images, %d items", done, len(items))
    for reason, count in dropped.items():
        failures[(reason, None, None)] += count
    cand = pl.DataFrame(candidates, schema=CANDIDATES_SCHEMA)
    item_table = pl.DataFrame(items, schema=ITEMS_SCHEMA)
    failure_table = pl.DataFrame(
        [(r, f, n, c) for (r, f, n), c in failures.items()], schema=FAILURES_SCHEMA, orient="row"
    ).sort(["reason", "family", "complexity"], nulls_last=True)
    summary = summarise(cand, walks, s.complexities, s.families)
    metadata = {
        "seed": str(seed),
        "settings": s.as_json(),
        "generator": GENERATOR,
        "benchmark": benchmark,
    }
    if context is not None:
        metadata["context_length"] = str(context.context_length)
    write_parquet(cand, out_candidates, metadata=metadata)
    write_parquet(item_table, out_items, metadata=metadata)
    write_parquet(failure_table, out_failures, metadata=metadata)
    if out_summary is not None:
        write_parquet(summary, out_summary, metadata=metadata)
    for row in summary.iter_rows(named=True):
        log.info("productivity: %s", row)
    return summary
