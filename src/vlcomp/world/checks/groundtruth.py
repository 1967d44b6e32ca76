"""Check derived splits against the synthetic world's controlled hold-outs.

The world's manifest lists, per training corpus, the bindings, relation triples (with
their converses) and atoms that corpus never shows. From an item's graph alone (what its
caption actually mentions) that gives the expected CREPE split:

- ``UA`` when the item mentions a held-out atom (shape, colour, size or relation);
- else ``UC`` when it mentions a held-out binding (attr_obj compound) or triple
  (obj_rel_obj compound, either direction);
- else ``SC``; no split when the item has no compound (as in ``splits``).

and, per binding, expected *unseen* when the binding is held out or holds a held-out atom,
else *seen*; a binding derived as ``perfect`` or ``close`` counts as seen (the LOOSE rule;
how often a seen binding is perfect is not fixed by the manifest). Comparing with the splits
derived from training captions (ground-truth graphs or parser output) measures the counting
and split logic, and, with parsed graphs, the parser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import EVAL_ITEMS_SCHEMA
from vlcomp.counts.units import graph_units
from vlcomp.io import write_json
from vlcomp.splits.assign import normalize_binding
from vlcomp.text import normalise_or_none
from vlcomp.vocabulary import CREPE_SPLITS, LABELS, NO_COMPOUND, NONE, UA, UC

_ATOM_KIND = {"shape": "object", "colour": "attribute", "size": "attribute", "relation": "relation"}


def items_from_truth(truth: Path | pl.DataFrame, source: str = "world_coco") -> pl.DataFrame:
    """Eval items (``EVAL_ITEMS_SCHEMA``) from a world ``truth.parquet``: one per caption,
    whole-image (no region box), item_id = caption_id."""
    frame = pl.read_parquet(truth) if isinstance(truth, Path | str) else truth
    return frame.select(
        pl.col("caption_id").cast(pl.String).alias("item_id"),
        pl.lit(source, pl.String).alias("source"),
        pl.col("image_id").cast(pl.String),
        pl.lit(None, pl.String).alias("region_id"),
        "text",
        *(pl.lit(None, pl.Int64).alias(c) for c in ("x", "y", "width", "height")),
        "objects",
        "attributes",
        "relations",
    ).select([pl.col(c).cast(t) for c, t in EVAL_ITEMS_SCHEMA.items()])


@dataclass(frozen=True)
class HeldOut:
    """One corpus's hold-out, normalized as the split logic keys it."""

    atoms: frozenset[tuple[str, str]]  # (kind, value)
    compounds: frozenset[tuple[str, tuple[str, ...]]]  # (kind, parts)
    bindings: frozenset[tuple[str, str]]  # (attr, obj_lemma)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], corpus: str) -> HeldOut:
        try:
            holdout = manifest["corpora"][corpus]["holdout"]
        except KeyError as err:
            raise ValueError(f"manifest: no hold-out for corpus {corpus!r}") from err

        def norm(word: str) -> str:
            value = normalise_or_none(word)
            assert value is not None
            return value

        atoms = {
            (_ATOM_KIND[kind], norm(v))
            for kind, values in holdout["atoms_by_kind"].items()
            for v in values
        }
        bindings = {normalize_binding(a, s) for a, s in holdout["bindings"]}
        compounds = {("attr_obj", (norm(a), norm(s))) for a, s in holdout["bindings"]}
        compounds |= {
            ("obj_rel_obj", (norm(a), norm(r), norm(b)))
            for a, r, b in holdout["triples_with_converses"]
        }
        return cls(frozenset(atoms), frozenset(compounds), frozenset(bindings))


def expected_splits(items: pl.DataFrame, held: HeldOut) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(item_id, expected_crepe) per item and (item_id, attr, obj_lemma, expected_seen)
    per distinct binding of an item, from the items' graphs and the hold-out."""
    units = graph_units(items.lazy().with_columns(pl.col("item_id").cast(pl.String)), "item_id")
    atoms, compounds, bindings = pl.collect_all(
        [units.decoded_atoms(), units.decoded_compounds(), units.decoded_bindings()]
    )
    held_atoms = pl.DataFrame(
        [{"kind": k, "value": v} for k, v in sorted(held.atoms)],
        schema={"kind": pl.String, "value": pl.String},
    )
    held_compounds = pl.DataFrame(
        [{"kind": k, "parts": list(p)} for k, p in sorted(held.compounds)],
        schema={"kind": pl.String, "parts": pl.List(pl.String)},
    )
    flag = pl.lit(True).alias("held")
    ua = atoms.join(held_atoms.with_columns(flag), on=["kind", "value"], how="inner")
    uc = compounds.join(held_compounds.with_columns(flag), on=["kind", "parts"], how="inner")
    has_compound = compounds.select("doc").unique()
    per_item = items.select(pl.col("item_id").cast(pl.String)).with_columns(
        pl.when(~pl.col("item_id").is_in(has_compound["doc"].implode()))
        .then(None)
        .when(pl.col("item_id").is_in(ua["doc"].unique().implode()))
        .then(pl.lit(UA))
        .when(pl.col("item_id").is_in(uc["doc"].unique().implode()))
        .then(pl.lit(UC))
        .otherwise(pl.lit("SC"))
        .alias("expected_crepe")
    )
    held_attr = [v for k, v in held.atoms if k == "attribute"]
    held_obj = [v for k, v in held.atoms if k == "object"]
    held_bind = pl.DataFrame(
        sorted(held.bindings), schema={"attr": pl.String, "obj_lemma": pl.String}, orient="row"
    ).with_columns(flag)
    per_binding = (
        bindings.select(pl.col("doc").alias("item_id"), "attr", "obj_lemma")
        .unique()
        .join(held_bind, on=["attr", "obj_lemma"], how="left")
        .with_columns(
            ~(
                pl.col("held").fill_null(False)
                | pl.col("attr").is_in(held_attr)
                | pl.col("obj_lemma").is_in(held_obj)
            ).alias("expected_seen")
        )
        .drop("held")
        .sort("item_id", "attr", "obj_lemma")
    )
    return per_item, per_binding


@dataclass(frozen=True)
class WorldAgreement:
    """Agreement of derived with expected splits.

    crepe_confusion: expected, derived, items (``no_compound`` for no split);
    binding_confusion: expected (seen/unseen), derived (perfect/close/none), bindings;
    gaps: kind, unit, items: units unseen in training although not held out (by chance, or
    from parse errors when the training graphs are parsed), with the number of items that
    mention them; they explain derived splits stricter than expected.
    """

    corpus: str
    crepe_confusion: pl.DataFrame
    crepe_rate: float
    crepe_n: int
    binding_confusion: pl.DataFrame
    binding_rate: float
    binding_n: int
    gaps: pl.DataFrame

    def as_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "crepe": {
                "rate": self.crepe_rate,
                "n": self.crepe_n,
                "confusion": self.crepe_confusion.to_dicts(),
            },
            "bindings": {
                "rate": self.binding_rate,
                "n": self.binding_n,
                "confusion": self.binding_confusion.to_dicts(),
            },
            "gaps": self.gaps.to_dicts(),
        }


def world_agreement(
    items: pl.DataFrame, assignments: pl.DataFrame, manifest: Mapping[str, Any], corpus: str
) -> WorldAgreement:
    """Compare ``assignments`` (from ``splits.assign``) with the manifest's hold-outs."""
    held = HeldOut.from_manifest(manifest, corpus)
    per_item, per_binding = expected_splits(items, held)
    crepe = per_item.join(
        assignments.select("item_id", pl.col("crepe_split").alias("derived")),
        on="item_id",
        how="left",
    ).with_columns(
        pl.col("expected_crepe").fill_null(NO_COMPOUND).alias("expected"),
        pl.col("derived").fill_null(NO_COMPOUND),
    )
    order = [*CREPE_SPLITS, NO_COMPOUND]
    crepe_conf = _confusion(crepe, order, order, "items")
    crepe_n = crepe.height
    crepe_rate = _rate(int((crepe["expected"] == crepe["derived"]).sum()), crepe_n)

    derived_bindings = assignments.select("item_id", "pos_bindings").explode("pos_bindings")
    derived_bindings = derived_bindings.filter(pl.col("pos_bindings").is_not_null()).select(
        "item_id", pl.col("pos_bindings").struct.unnest()
    )
    b = per_binding.join(derived_bindings, on=["item_id", "attr", "obj_lemma"], how="left")
    b = b.with_columns(
        pl.when(pl.col("expected_seen"))
        .then(pl.lit("seen"))
        .otherwise(pl.lit("unseen"))
        .alias("expected"),
        pl.col("label").fill_null("missing").alias("derived"),
    )
    binding_conf = _confusion(b, ["seen", "unseen"], [*LABELS, "missing"], "bindings")
    agree = (pl.col("expected") == "seen") & pl.col("derived").is_in(["perfect", "close"])
    agree = agree | ((pl.col("expected") == "unseen") & (pl.col("derived") == NONE))
    binding_rate = _rate(int(b.select(agree.sum()).item()), b.height)
    return WorldAgreement(
        corpus,
        crepe_conf,
        crepe_rate,
        crepe_n,
        binding_conf,
        binding_rate,
        b.height,
        _gaps(assignments, held),
    )


def _gaps(assignments: pl.DataFrame, held: HeldOut) -> pl.DataFrame:
    """Unseen units that the hold-out does not explain (a compound is explained when it is
    held out or holds a held-out atom)."""
    held_values = sorted({v for _, v in held.atoms})
    atoms = assignments.select("item_id", "unseen_atoms").explode("unseen_atoms").drop_nulls()
    atoms = atoms.unnest("unseen_atoms").select("item_id", "kind", pl.col("value").alias("unit"))
    compounds = assignments.select("item_id", "unseen_compounds")
    compounds = (
        compounds.explode("unseen_compounds")
        .drop_nulls()
        .unnest("unseen_compounds")
        .filter(~pl.col("parts").list.eval(pl.element().is_in(held_values)).list.any())
        .select("item_id", "kind", pl.col("parts").list.join(" | ").alias("unit"))
    )
    held_units = [(k, v) for k, v in held.atoms] + [(k, " | ".join(p)) for k, p in held.compounds]
    known = pl.DataFrame(held_units, schema={"kind": pl.String, "unit": pl.String}, orient="row")
    return (
        pl.concat([atoms, compounds])
        .join(known, on=["kind", "unit"], how="anti")
        .group_by("kind", "unit")
        .agg(pl.col("item_id").n_unique().cast(pl.Int64).alias("items"))
        .sort("kind", "unit")
    )


def _rate(k: int, n: int) -> float:
    return k / n if n else float("nan")


def _confusion(frame: pl.DataFrame, rows: list[str], cols: list[str], what: str) -> pl.DataFrame:
    """Full expected x derived grid (zeros included) in a fixed order."""
    counts = frame.group_by("expected", "derived").agg(pl.len().cast(pl.Int64).alias(what))
    extra_rows = sorted(set(counts["expected"]) - set(rows))
    extra_cols = sorted(set(counts["derived"]) - set(cols))
    grid = pl.DataFrame(
        [(r, c) for r in rows + extra_rows for c in cols + extra_cols],
        schema={"expected": pl.String, "derived": pl.String},
        orient="row",
    )
    return grid.join(
        counts, on=["expected", "derived"], how="left", maintain_order="left"
    ).with_columns(pl.col(what).fill_null(0))


def check_world_splits(
    items: Path, assignments: Path, manifest: Path, corpus: str, out: Path | None = None
) -> WorldAgreement:
    """Job level: agreement of an assignments file with the world manifest; optionally
    written as JSON to ``out``."""
    report = world_agreement(
        pl.read_parquet(items),
        pl.read_parquet(assignments),
        json.loads(Path(manifest).read_text()),
        corpus,
    )
    if out is not None:
        write_json(report.as_dict(), out)
    return report
