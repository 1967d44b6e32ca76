"""Synthetic world: rendered scenes of coloured shapes, captions with ground-truth
scene graphs, and training corpora with controlled hold-outs.

Entry points: ``build_eval_set``, ``build_corpus``, ``write_manifest``,
``write_predicate_map``; helpers ``parse_world_config``, ``load_holdout`` and
``scene_holdout_items``.
"""

from .build import (
    build_corpus,
    build_eval_set,
    corpus_scenes,
    eval_scenes,
    manifest,
    write_manifest,
    write_predicate_map,
)
from .captions import Caption, alt_text_caption, clean_caption, eval_captions
from .config import CorpusSpec, Holdout, WorldSpec, load_holdout, parse_world_config
from .render import render_scene
from .scenes import Scene, SceneObject, SceneSampler, relation_between, scene_holdout_items
from .vocab import CONVERSE, DEFAULT_WORLD_CONFIG, SURFACE_TO_PREDICATE

__all__ = [
    "CONVERSE",
    "DEFAULT_WORLD_CONFIG",
    "SURFACE_TO_PREDICATE",
    "Caption",
    "CorpusSpec",
    "Holdout",
    "Scene",
    "SceneObject",
    "SceneSampler",
    "WorldSpec",
    "alt_text_caption",
    "build_corpus",
    "build_eval_set",
    "clean_caption",
    "corpus_scenes",
    "eval_captions",
    "eval_scenes",
    "load_holdout",
    "manifest",
    "parse_world_config",
    "relation_between",
    "render_scene",
    "scene_holdout_items",
    "write_manifest",
    "write_predicate_map",
]
