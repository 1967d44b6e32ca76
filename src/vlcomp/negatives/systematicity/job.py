"""The job function of the systematicity negatives (``systematicity_negatives``): reads the
eval items, the training corpus's atoms (the foil vocabulary), the scorer and the split
assignments, and writes the candidates, failure counts and region boxes."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.io import write_parquet
from vlcomp.negatives.context import ContextCheck
from vlcomp.negatives.wordnet_foils import FoilFinder
from vlcomp.scorers.base import TextScorer

from .build import build_systematicity_negatives
from .graph import CompoundKey
from .settings import BENCHMARK, GENERATOR, resolve_settings

log = logging.getLogger(__name__)


def _as_scorer(spec: TextScorer | Mapping[str, Any] | str | Path) -> TextScorer:
    if isinstance(spec, TextScorer):
        return spec
    if isinstance(spec, Mapping):
        from vlcomp.scorers.factory import make_scorer

        return make_scorer(dict(spec))
    from vlcomp.scorers.ngram import NgramLM

    return NgramLM.load(Path(spec))


def read_unseen(assignments: Path) -> dict[str, set[CompoundKey]]:
    """eval item_id -> unseen compound keys, from a split assignments table."""
    frame = pl.read_parquet(assignments, columns=["item_id", "unseen_compounds"])
    out: dict[str, set[CompoundKey]] = {}
    for item_id, unseen in frame.iter_rows():
        out[str(item_id)] = {(u["kind"], tuple(u["parts"])) for u in unseen or []}
    return out


def systematicity_negatives(
    items: Path,
    atoms: Path,
    scorer: TextScorer | Mapping[str, Any] | str | Path,
    out_candidates: Path,
    out_failures: Path,
    settings: Mapping[str, Any] | None,
    seed: int,
    *,
    out_regions: Path | None = None,
    assignments: Path | None = None,
    wordnet: Any = None,
    benchmark: str = BENCHMARK,
    context_length: int | None = None,
) -> None:
    """Write CREPE systematicity candidates, failure counts and (optionally) region boxes.

    ``items``: eval items Parquet (``EVAL_ITEMS_SCHEMA``); ``atoms``: the training corpus's
    atoms table (the foil vocabulary); ``scorer``: a ``TextScorer``, a scorer spec for
    ``vlcomp.scorers.make_scorer`` (``{kind: ngram, model: ...}``, or a masked/causal LM a
    user has), or the path of an n-gram model; ``settings``: ``DEFAULT_SETTINGS`` keys;
    ``assignments``: the split assignments for the same corpus (unseen compounds are
    preferred as targets); ``benchmark``: the benchmark's name (the config key), written
    in the candidates' ``benchmark`` column; ``context_length``: the text encoders' context
    (``negatives.context``; None: no context check).
    """
    cfg = resolve_settings(settings)
    text_scorer = _as_scorer(scorer)
    finder = FoilFinder.from_atoms(
        atoms,
        cfg["min_count"],
        wordnet,
        senses=cfg["senses"],
        max_hops=cfg["max_hops"],
        min_depth=cfg["min_depth"],
    )
    unseen = read_unseen(Path(assignments)) if assignments is not None else None
    context = None if context_length is None else ContextCheck(context_length)
    result = build_systematicity_negatives(
        pl.read_parquet(items), finder, text_scorer, cfg, seed, unseen, benchmark, context
    )
    meta = {
        "vlcomp.stage": "negatives/crepe_systematicity",
        "vlcomp.benchmark": benchmark,
        "vlcomp.generator": GENERATOR,
        "vlcomp.seed": str(seed),
        "vlcomp.settings": json.dumps(cfg, sort_keys=True),
        "vlcomp.foils": json.dumps(finder.describe(), sort_keys=True),
        "vlcomp.scorer": text_scorer.name,
        "vlcomp.vocabulary": f"{Path(atoms).parent.name}/{Path(atoms).name}",
        "vlcomp.assignments": "yes" if assignments is not None else "no",
    }
    if context_length is not None:
        meta["vlcomp.context_length"] = str(context_length)
    write_parquet(result.candidates, out_candidates, meta)
    write_parquet(result.failures, out_failures, meta)
    if out_regions is not None:
        write_parquet(result.regions, out_regions, meta)
    n_items = result.regions.group_by("family").len().sort("family").rows()
    dropped = result.failures.filter(pl.col("level") == "item")
    log.info(
        "%s: candidate items per family %s; without negatives %s",
        items,
        dict(n_items),
        dict(dropped.group_by("family").agg(pl.col("count").sum()).rows()),
    )
