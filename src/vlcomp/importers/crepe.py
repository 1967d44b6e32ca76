"""CREPE hard-negative CSVs (Ma et al., 2023) as candidates.

Systematicity files (``syst_vg_hard_negs_<split>_in_<corpus>.csv``) have ``image_id,
region_id, caption, x, y, width, height, valid_hard_negs_atom, valid_hard_negs_comp,
valid_hard_negs_combined``; productivity files (``prod_vg_hard_negs_<type>_complexity_<n>.csv``,
type atom / negate / swap) have ``hard_negs`` instead. The hard-negative columns hold
Python list literals. One CSV row gives one item per hard-negative kind; the item's image is
the Visual Genome image id with the region as ``#xywh=``.

Folders (:func:`crepe_folder_files`): the release unpacks to ``syst_hard_negatives/`` (the
systematicity files side by side) and ``prod_hard_negatives/`` with one subfolder per
hard-negative type, ``prod_hard_negatives/<atom|negate|swap>/
prod_vg_hard_negs_<type>_complexity_<n>.csv`` for n = 4..12, the paths the authors'
``crepe_prod_eval_*.py`` and ``crepe_compo_eval_open_clip.py`` (``gather_params``) open.
"""

from __future__ import annotations

import ast
import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path

from vlcomp.importers.common import (
    CandidateRows,
    Imported,
    ImportFormatError,
    OnError,
    RecordError,
    check_on_error,
    image_reference,
    read_text,
    region_image,
    require_text,
    source_label,
)

GENERATOR = "imported:crepe"
SYSTEMATICITY_KINDS = {"atom": "atom", "comp": "comp", "combined": "combined"}
# productivity hard-negative type (from the file name) -> family
PRODUCTIVITY_FAMILIES = {"atom": "atom", "negate": "neg", "swap": "swap"}
_PROD_NAME = re.compile(r"prod_vg_hard_negs_(atom|negate|swap)_complexity_(\d+)$")
_BOX = ("x", "y", "width", "height")


def _parse_list(raw: str, column: str, where: str) -> list[str]:
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as error:
        raise RecordError(
            where, f"{column} is not a Python list literal", f": {raw[:80]!r}"
        ) from error
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise RecordError(where, f"{column} must be a list of strings", f", got {raw[:80]!r}")
    return list(value)


def _box(row: dict[str, str], where: str) -> tuple[float, ...]:
    values = []
    for name in _BOX:
        try:
            value = float(row[name])
        except ValueError as error:
            raise RecordError(where, f"{name} is not a number", f": {row[name]!r}") from error
        if value < 0 or value != value or value == float("inf"):
            raise RecordError(where, f"{name} is invalid", f" ({row[name]!r})")
        values.append(value)
    if values[2] <= 0 or values[3] <= 0:
        raise RecordError(where, "empty region", f" (width={values[2]}, height={values[3]})")
    return tuple(values)


def productivity_complexity(path: str | Path) -> int | None:
    """The complexity n a productivity file name gives (``..._complexity_<n>.csv``)."""
    match = _PROD_NAME.search(Path(path).stem)
    return int(match.group(2)) if match else None


def crepe_folder_files(directory: str | Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The CREPE CSV files of a folder, in reading order, and the CSV files skipped with why.

    Read: the folder's own ``*.csv`` (systematicity files, or productivity files named
    ``prod_vg_hard_negs_<type>_complexity_<n>.csv``), by name; then, in its type subfolders
    ``atom/``, ``negate/``, ``swap/`` (the release's ``prod_hard_negatives/<type>/``), the
    productivity files of that type, by complexity. Skipped: other ``prod_vg_hard_negs_*``
    names (not one complexity) and CSV files in a type subfolder that are not its type's
    productivity files. A folder holding neither, but the release's ``syst_hard_negatives/``
    and / or ``prod_hard_negatives/``, raises naming them (two benchmarks: name one).
    """
    directory = Path(directory)
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in sorted(directory.glob("*.csv")):
        if path.stem.startswith("prod_vg_hard_negs_") and not _PROD_NAME.search(path.stem):
            skipped.append((path, "not a productivity file of one complexity"))
        else:
            files.append(path)
    for kind in sorted(PRODUCTIVITY_FAMILIES):
        folder = directory / kind
        if not folder.is_dir():
            continue
        found: list[tuple[int, Path]] = []
        for path in sorted(folder.glob("*.csv")):
            match = _PROD_NAME.search(path.stem)
            if match and match.group(1) == kind:
                found.append((int(match.group(2)), path))
            else:
                why = (
                    f"not a {kind} productivity file (prod_vg_hard_negs_{kind}_complexity_<n>.csv)"
                )
                skipped.append((path, why))
        files += [path for _, path in sorted(found)]
    if not files:
        parts = sorted(
            d.name
            for d in directory.iterdir()
            if d.is_dir() and d.name in ("syst_hard_negatives", "prod_hard_negatives")
        )
        if parts:
            which = "one of them (two benchmarks)" if len(parts) > 1 else "it"
            raise ImportFormatError(
                f"{directory}: no CREPE CSV file here but the release's "
                f"{', '.join(f'{p}/' for p in parts)}: name {which} in files "
                f"(e.g. {directory / parts[0]})"
            )
    return files, skipped


def _raw_row(row: dict, header: list[str]) -> str:
    fields = [row[c] for c in header if row.get(c) is not None] + list(row.get(None) or [])
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def read_crepe_csv(
    path: str | Path,
    kinds: Sequence[str] = ("atom", "comp"),
    benchmark: str | None = None,
    on_error: OnError = "raise",
) -> Imported:
    """Systematicity or productivity file, told apart by its header.

    ``kinds`` picks the systematicity hard-negative columns (atom, comp, combined); it is
    ignored for productivity files, whose family comes from the file name. item_id is
    ``crepe/<file stem>/<row>/<kind>`` with the 0-based data row. Rows whose negatives are
    empty, or negatives equal to the caption or repeated, go to ``rejected``; so do malformed
    rows (located by ``row=<index>``) with ``on_error="reject"``.
    """
    check_on_error(on_error)
    path = Path(path)
    label = source_label(path)
    # utf-8-sig: a spreadsheet's byte-order mark must not rename the first column.
    handle = io.StringIO(read_text(path, "utf-8-sig"), newline="")
    try:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        base = ["image_id", "caption", *_BOX]
        if "hard_negs" in header:
            match = _PROD_NAME.search(path.stem)
            if not match:
                raise ImportFormatError(
                    f"{path}: productivity file name must look like "
                    "prod_vg_hard_negs_<atom|negate|swap>_complexity_<n>.csv"
                )
            columns = {PRODUCTIVITY_FAMILIES[match.group(1)]: "hard_negs"}
            benchmark = benchmark or "crepe_productivity"
        else:
            unknown = [k for k in kinds if k not in SYSTEMATICITY_KINDS]
            if unknown:
                raise ValueError(
                    f"unknown CREPE kind(s) {unknown}; expected {sorted(SYSTEMATICITY_KINDS)}"
                )
            columns = {SYSTEMATICITY_KINDS[k]: f"valid_hard_negs_{k}" for k in kinds}
            benchmark = benchmark or "crepe_systematicity"
        missing = [c for c in [*base, *columns.values()] if c not in header]
        if missing:
            raise ImportFormatError(f"{path}: missing column(s) {missing} (header: {header})")
        rows = CandidateRows()
        for index, row in enumerate(reader):
            where = f"{path}, row {index} (line {reader.line_num})"
            try:
                if None in row or any(row.get(c) is None for c in header):
                    raise RecordError(where, "wrong number of fields")
                image_id = image_reference(row["image_id"], "image_id", where).strip()
                caption = require_text(row["caption"], "caption", where)
                image = region_image(image_id, *_box(row, where))
                lists = {
                    family: _parse_list(row[column], column, where)
                    for family, column in columns.items()
                }
            except RecordError as error:
                if on_error == "raise":
                    raise
                rows.reject(label, f"row={index}", error.reason, _raw_row(row, header))
                continue
            region = f";region_id={row['region_id']}" if row.get("region_id") else ""
            for family, column in columns.items():
                kept: list[str] = []
                for negative in lists[family]:
                    if negative == caption:
                        reason = f"{column}: negative equals the caption"
                    elif negative in kept:
                        reason = f"{column}: repeated negative"
                    elif not negative.strip():
                        reason = f"{column}: empty negative"
                    else:
                        kept.append(negative)
                        continue
                    rows.reject(label, f"row={index}", reason, negative)
                if not kept:
                    rows.reject(
                        label, f"row={index}", f"{column}: no usable hard negatives", row[column]
                    )
                    continue
                rows.add_item(
                    benchmark=benchmark,
                    item_id=f"crepe/{path.stem}/{index}/{family}",
                    image=image,
                    positive=caption,
                    negatives=kept,
                    family=family,
                    target=None,
                    generator=GENERATOR,
                    provenance=f"{label}#row={index}{region}",
                )
    except csv.Error as error:
        raise ImportFormatError(f"{path}: not a readable CSV file ({error})") from error
    return rows.build()
