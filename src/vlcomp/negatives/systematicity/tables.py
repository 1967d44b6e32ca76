"""The tables of the systematicity negatives: the result (``SystematicityNegatives``), the
region and failure schemas, and the candidate rows of one retrieval set (the positive and
its negatives with their provenance, ``candidate_rows``) and its region row."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .atoms import AtomCandidate, Target
from .compounds import CompCandidate
from .graph import Compound
from .settings import BENCHMARK, COMP_TARGET, GENERATOR, POSITION_TARGET

REGIONS_SCHEMA: dict[str, pl.DataType] = {
    "item_id": pl.String,  # candidate item: <eval item_id>/<family>
    "eval_item_id": pl.String,
    "family": pl.String,
    "image_id": pl.String,
    "region_id": pl.String,
    "x": pl.Int64,
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "compound_kind": pl.String,  # attr_obj | obj_rel_obj
    "compound": pl.List(pl.String),  # the target compound's parts
}
FAILURES_SCHEMA: dict[str, pl.DataType] = {
    "level": pl.String,  # item | kept_short | foil | negative
    "family": pl.String,
    "reason": pl.String,
    "count": pl.Int64,
}


@dataclass(frozen=True)
class SystematicityNegatives:
    """The three tables of ``build_systematicity_negatives``."""

    candidates: pl.DataFrame  # CANDIDATES_SCHEMA
    regions: pl.DataFrame  # REGIONS_SCHEMA
    failures: pl.DataFrame  # FAILURES_SCHEMA


def _image_ref(row: Mapping[str, Any], how: str) -> str | None:
    image = row.get("image_id")
    if image is None or how == "image_id":
        return image
    box = [row.get(k) for k in ("x", "y", "width", "height")]
    if any(v is None for v in box):
        return image
    return f"{image}#xywh={','.join(str(int(v)) for v in box)}"


def _compound_json(compound: Compound) -> dict[str, Any]:
    return {"kind": compound.kind, "parts": list(compound.parts)}


Negative = tuple[str, str, dict[str, Any]]  # text, target label, provenance detail


def atom_negative(c: AtomCandidate) -> Negative:
    """An HN-ATOM negative: its text, target label and provenance detail."""
    detail = {
        "foil": c.foil.value,
        "original": c.original,
        "position": c.position,
        "relation": c.foil.relation,
        "via": c.foil.via,
    }
    return c.text, POSITION_TARGET[c.position], detail


def comp_negative(c: CompCandidate, compound: Compound) -> Negative:
    """An HN-COMP negative: its text, target label and provenance detail (lists of two)."""
    pair = (c.first, c.second)
    detail = {
        "foil": [a.foil.value for a in pair],
        "original": [a.original for a in pair],
        "position": [a.position for a in pair],
        "relation": [a.foil.relation for a in pair],
        "via": [a.foil.via for a in pair],
    }
    return c.text, COMP_TARGET[compound.kind], detail


def candidate_rows(
    row: Mapping[str, Any],
    family: str,
    target: Target,
    negatives: Sequence[Negative],
    cfg: Mapping[str, Any],
    seed: int,
    benchmark: str = BENCHMARK,
) -> list[dict[str, Any]]:
    """The positive and the negatives of one retrieval set, as CANDIDATES_SCHEMA rows."""
    eval_id = str(row["item_id"])
    compound = _compound_json(target.mention.compound)
    common = {
        "benchmark": benchmark,
        "item_id": f"{eval_id}/{family}",
        "image": _image_ref(row, cfg["image_ref"]),
        "family": family,
        "generator": GENERATOR,
    }
    texts: list[tuple[str, bool, str | None, dict[str, Any]]] = [
        (row["text"], True, None, {"item": eval_id})
    ]
    texts += [(text, False, label, detail) for text, label, detail in negatives]
    return [
        {
            **common,
            "text": text,
            "is_positive": positive,
            "target": label,
            "provenance": json.dumps(
                {**detail, "compound": compound, "seed": seed}, sort_keys=True
            ),
        }
        for text, positive, label, detail in texts
    ]


def region_row(row: Mapping[str, Any], family: str, compound: Compound) -> dict[str, Any]:
    """The region box of one retrieval set (``REGIONS_SCHEMA``)."""
    return {
        "item_id": f"{row['item_id']}/{family}",
        "eval_item_id": str(row["item_id"]),
        "family": family,
        **{k: row.get(k) for k in ("image_id", "region_id", "x", "y", "width", "height")},
        "compound_kind": compound.kind,
        "compound": list(compound.parts),
    }
