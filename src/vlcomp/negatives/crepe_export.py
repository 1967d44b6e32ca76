"""Write generated systematicity negatives in CREPE's released CSV layout, per split.

CREPE ships one file per (split, training corpus), ``syst_vg_hard_negs_<split>_in_<corpus>.csv``
with ``<split>`` one of ``seen_compounds`` (SC), ``unseen_compounds`` (UC) and
``unseen_atoms`` (UA), and the columns::

    image_id, region_id, caption, x, y, width, height,
    valid_hard_negs_atom, valid_hard_negs_comp, valid_hard_negs_combined

one row per region; the three hard-negative columns hold Python list literals
(``['a blue car', 'a red bike']``, read back with ``ast.literal_eval``). ``combined`` is the
atom negatives followed by the comp negatives not already among them. An item with
negatives of one family only gets ``[]`` in the other column (CREPE's evaluation reads one
column at a time; ``vlcomp.importers.read_crepe_csv`` reports such a row as rejected for
that family). Regions without a box (CREPE crops every region) and items without a CREPE
split are left out and counted.

Inputs: the candidates and region side table of ``systematicity.systematicity_negatives``
and the assignments of ``vlcomp.splits.assign.assign_splits`` for the training
corpus (``item_id``, ``corpus``, ``crepe_split``). Every written file is read back with
``read_crepe_csv`` and compared with what was meant to be written.
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.importers.common import region_image
from vlcomp.importers.crepe import read_crepe_csv
from vlcomp.io import atomic_path, write_json, write_with
from vlcomp.negatives.systematicity import ATOM, COMP
from vlcomp.vocabulary import CREPE_SPLITS

log = logging.getLogger(__name__)

CSV_COLUMNS: tuple[str, ...] = (
    "image_id",
    "region_id",
    "caption",
    "x",
    "y",
    "width",
    "height",
    "valid_hard_negs_atom",
    "valid_hard_negs_comp",
    "valid_hard_negs_combined",
)
SPLIT_NAMES: dict[str, str] = {
    "SC": "seen_compounds",
    "UC": "unseen_compounds",
    "UA": "unseen_atoms",
}
_BOX = ("x", "y", "width", "height")

ROWS_SCHEMA: dict[str, pl.DataType] = {
    "eval_item_id": pl.String,
    "image_id": pl.String,
    "region_id": pl.String,
    "caption": pl.String,
    "x": pl.Int64,
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
    "atom": pl.List(pl.String),
    "comp": pl.List(pl.String),
    "combined": pl.List(pl.String),
}


def csv_name(split: str, corpus: str, eval_set: str = "vg") -> str:
    """CREPE's file name of a split (SC/UC/UA) for a training corpus."""
    if split not in SPLIT_NAMES:
        raise ValueError(f"split must be one of {sorted(SPLIT_NAMES)}, got {split!r}")
    return f"syst_{eval_set}_hard_negs_{SPLIT_NAMES[split]}_in_{corpus}.csv"


NOT_IN_VARIANT = "no candidates in this variant of the benchmark"


def crepe_rows(
    candidates: pl.DataFrame, regions: pl.DataFrame
) -> tuple[pl.DataFrame, Counter[str]]:
    """One row per evaluation item (``ROWS_SCHEMA``, in the order of ``regions``) and the
    items left out, by reason (``NOT_IN_VARIANT``: a region whose item the candidates do
    not hold, as a debiased variant drops items). Negatives keep their order in
    ``candidates``."""
    missing = {"item_id", "text", "is_positive", "family"} - set(candidates.columns)
    if missing:
        raise ValueError(f"candidates: missing column(s) {sorted(missing)}")
    texts: dict[str, dict[str, Any]] = {}
    for item_id, text, positive in candidates.select("item_id", "text", "is_positive").iter_rows():
        entry = texts.setdefault(item_id, {"positive": [], "negatives": []})
        entry["positive" if positive else "negatives"].append(text)
    rows: dict[str, dict[str, Any]] = {}
    skipped: Counter[str] = Counter()
    for region in regions.iter_rows(named=True):
        entry = texts.get(region["item_id"])
        if entry is None:  # a variant that drops items (debiased) leaves regions without any
            skipped[NOT_IN_VARIANT] += 1
            continue
        if len(entry["positive"]) != 1:
            raise ValueError(f"candidates: item {region['item_id']!r} has not one positive")
        eval_id = region["eval_item_id"]
        row = rows.setdefault(
            eval_id,
            {
                "eval_item_id": eval_id,
                "image_id": region["image_id"],
                "region_id": region["region_id"],
                "caption": entry["positive"][0],
                **{k: region[k] for k in _BOX},
                ATOM: [],
                COMP: [],
            },
        )
        if row["caption"] != entry["positive"][0]:
            raise ValueError(f"item {eval_id!r}: the families' positives differ")
        if region["family"] not in (ATOM, COMP):
            raise ValueError(f"regions: unknown family {region['family']!r}")
        row[region["family"]] = list(entry["negatives"])
    out = []
    for row in rows.values():
        if any(row[k] is None for k in _BOX) or row["width"] <= 0 or row["height"] <= 0:
            skipped["no_region_box"] += 1
            continue
        if row["image_id"] is None:
            skipped["no_image_id"] += 1
            continue
        row["combined"] = list(dict.fromkeys([*row[ATOM], *row[COMP]]))
        out.append(row)
    return pl.DataFrame(out, schema=ROWS_SCHEMA), skipped


def split_rows(
    rows: pl.DataFrame, assignments: pl.DataFrame, splits: Sequence[str] = CREPE_SPLITS
) -> tuple[dict[str, pl.DataFrame], Counter[str]]:
    """The rows of each CREPE split (row order kept) and the rows without one, by reason."""
    missing = {"item_id", "crepe_split"} - set(assignments.columns)
    if missing:
        raise ValueError(f"assignments: missing column(s) {sorted(missing)}")
    split_of = assignments.select(
        pl.col("item_id").cast(pl.String).alias("eval_item_id"), "crepe_split"
    )
    joined = rows.join(split_of, on="eval_item_id", how="left", maintain_order="left")
    skipped: Counter[str] = Counter()
    known = set(split_of["eval_item_id"])
    for eval_id, split in joined.select("eval_item_id", "crepe_split").iter_rows():
        if eval_id not in known:
            skipped["not_in_assignments"] += 1
        elif split is None:
            skipped["no_crepe_split"] += 1
        elif split not in splits:
            skipped[f"split_{split}_not_exported"] += 1
    tables = {
        split: joined.filter(pl.col("crepe_split") == split).drop("crepe_split") for split in splits
    }
    return tables, skipped


def _literal(values: Sequence[str]) -> str:
    return repr([str(v) for v in values])


def write_crepe_csv(rows: pl.DataFrame, path: str | Path) -> None:
    """Write rows (``ROWS_SCHEMA``) as one CREPE CSV, atomically."""
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows.iter_rows(named=True):
            writer.writerow(
                [
                    row["image_id"],
                    row["region_id"] or "",
                    row["caption"],
                    *(row[k] for k in _BOX),
                    _literal(row["atom"]),
                    _literal(row["comp"]),
                    _literal(row["combined"]),
                ]
            )


def check_round_trip(path: str | Path, rows: pl.DataFrame) -> None:
    """Read ``path`` with ``read_crepe_csv`` and check that every row comes back with its
    caption, region and negatives (rows with an empty family must be its only rejections);
    raise ``ValueError`` naming the first difference."""
    path = Path(path)
    kinds = ("atom", "comp", "combined")
    imported = read_crepe_csv(path, kinds=kinds)
    got: dict[str, dict[str, Any]] = {}
    for item_id, image, text, positive in imported.candidates.select(
        "item_id", "image", "text", "is_positive"
    ).iter_rows():
        entry = got.setdefault(item_id, {"image": image, "positive": [], "negatives": []})
        entry["positive" if positive else "negatives"].append(text)
    expected_rejections = 0
    for index, row in enumerate(rows.iter_rows(named=True)):
        image = region_image(row["image_id"], *(row[k] for k in _BOX))
        for kind in kinds:
            item_id = f"crepe/{path.stem}/{index}/{kind}"
            if not row[kind]:
                expected_rejections += 1
                if item_id in got:
                    raise ValueError(f"{path}: row {index} {kind}: read back negatives from []")
                continue
            entry = got.get(item_id)
            if entry is None:
                raise ValueError(f"{path}: row {index} {kind} did not read back")
            if entry["positive"] != [row["caption"]] or entry["negatives"] != list(row[kind]):
                raise ValueError(f"{path}: row {index} {kind} reads back differently: {entry}")
            if entry["image"] != image:
                raise ValueError(f"{path}: row {index} image {entry['image']!r} != {image!r}")
    if imported.rejected.height != expected_rejections:
        raise ValueError(
            f"{path}: {imported.rejected.height} rejected rows on reading, expected "
            f"{expected_rejections}: {imported.rejected.head(3).to_dicts()}"
        )
    n_items = sum(bool(r) for k in kinds for r in rows[k].to_list())
    if len(got) != n_items:
        raise ValueError(f"{path}: read back {len(got)} items, wrote {n_items}")


def export_crepe_csv(
    candidates: Path,
    regions: Path,
    assignments: Path,
    out_dir: Path,
    corpus: str | None = None,
    *,
    eval_set: str = "vg",
    splits: Sequence[str] = CREPE_SPLITS,
    summary_out: Path | None = None,
    verify: bool = True,
) -> dict[str, Path]:
    """Write one CREPE CSV per split into ``out_dir`` (every split, empty ones with a header
    only) and return split -> path. ``corpus`` names the training corpus in the file names
    (default: the assignments' ``corpus``); ``summary_out``: JSON with the rows per split
    and the items left out by reason; ``verify``: read each file back (``check_round_trip``).
    """
    assignment_frame = pl.read_parquet(assignments)
    if corpus is None:
        corpora = assignment_frame["corpus"].drop_nulls().unique().to_list()
        if len(corpora) != 1:
            raise ValueError(f"{assignments}: name the corpus, the table holds {corpora}")
        corpus = str(corpora[0])
    rows, skipped = crepe_rows(pl.read_parquet(candidates), pl.read_parquet(regions))
    tables, unsplit = split_rows(rows, assignment_frame, splits)
    skipped.update(unsplit)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for split, table in tables.items():
        path = out_dir / csv_name(split, corpus, eval_set)
        write_crepe_csv(table, path)
        if verify:
            check_round_trip(path, table)
        paths[split] = path
    summary: Mapping[str, Any] = {
        "corpus": corpus,
        "rows": {split: table.height for split, table in tables.items()},
        "left_out": dict(sorted(skipped.items())),
    }
    if summary_out is not None:
        write_json(summary, summary_out)
    log.info("CREPE CSVs for %s in %s: %s", corpus, out_dir, summary)
    return paths


PRODUCTIVITY_FILE_TYPES = {"atom": "atom", "neg": "negate", "swap": "swap"}


def export_productivity_csv(
    candidates: Path, items: Path, out_dir: Path, *, verify: bool = True
) -> dict[str, Path]:
    """CREPE's productivity layout: ``prod_vg_hard_negs_<atom|negate|swap>_complexity_<n>.csv``
    with ``image_id, x, y, width, height, caption, hard_negs`` (a Python list literal), one
    file per negative type and complexity; each file is read back with ``read_crepe_csv``."""
    table = pl.read_parquet(candidates)
    boxes = pl.read_parquet(items)
    positives = table.filter(pl.col("is_positive")).select("item_id", "family", caption="text")
    negatives = (
        table.filter(~pl.col("is_positive"))
        .group_by("item_id", maintain_order=True)
        .agg(hard_negs=pl.col("text"))
    )
    rows = (
        positives.join(negatives, on="item_id", how="inner")
        .join(boxes, on="item_id", how="inner")
        .sort("family", "complexity", "item_id")
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for (family, complexity), part in rows.group_by(["family", "complexity"], maintain_order=True):
        name = f"prod_vg_hard_negs_{PRODUCTIVITY_FILE_TYPES[family]}_complexity_{complexity}"
        path = out_dir / f"{name}.csv"

        def write(tmp: Path, part: pl.DataFrame = part) -> None:
            with open(tmp, "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["image_id", "x", "y", "width", "height", "caption", "hard_negs"])
                for row in part.iter_rows(named=True):
                    box = [row["x"], row["y"], row["width"], row["height"]]
                    writer.writerow([row["image_id"], *box, row["caption"], repr(row["hard_negs"])])

        write_with(path, write)
        if verify:
            back = read_crepe_csv(path).candidates
            if back.filter(pl.col("is_positive")).height != part.height:
                raise ValueError(f"{path}: CREPE CSV did not round-trip")
        written[name] = path
    return written
