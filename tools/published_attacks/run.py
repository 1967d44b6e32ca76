"""The blind-attack panel on published benchmarks' released annotation files
(../shared/data): SugarCrepe refined and unrefined, SugarCrepe++, VALSE; the two-image sets
(BiVLC, COLA) are balanced by design. Text attacks only (no corpus here to train the
generator attack or the text scorers on). Usage: python tools/published_attacks/run.py [OUT]
prints one table and writes OUT (Parquet) when given."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl

from vlcomp.blind import attacks
from vlcomp.importers.registry import FORMATS

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TEXT_ATTACKS = [a for a in attacks.ATTACKS if a != attacks.GENERATOR]
SETS = {
    "sugarcrepe/refined": ("sugarcrepe", DATA / "sugarcrepe" / "refined", {}),
    "sugarcrepe/unrefined": ("sugarcrepe", DATA / "sugarcrepe" / "unrefined", {}),
    "sugarcrepe_pp": ("sugarcrepe_pp", DATA / "releases" / "Sri-Harsha+scpp" / "data", {}),
    "valse": ("valse", DATA / "releases" / "Heidelberg-NLP+VALSE" / "data", {}),
}


def read(fmt: str, folder: Path, options: dict) -> pl.DataFrame:
    reader = FORMATS[fmt].reader
    files = sorted(folder.glob("*.json"))
    tables = []
    for path in files:
        imported = reader(path, on_error="reject", **options)
        table = imported.candidates.with_columns(part=pl.lit(path.stem))
        tables.append(table)
    return pl.concat(tables, how="diagonal_relaxed")


def main() -> None:
    rows = []
    for name, (fmt, folder, options) in SETS.items():
        if not folder.exists():
            print(f"{name}: shared data missing ({folder})")
            continue
        started = time.perf_counter()
        table = read(fmt, folder, options)
        shape = FORMATS[fmt].shape
        results, _ = attacks.attack_panel(table, shape, TEXT_ATTACKS, resamples=1000)
        rows.append(results.with_columns(benchmark=pl.lit(name)))
        print(f"{name}: {table['item_id'].n_unique()} items, {time.perf_counter() - started:.0f} s")
    table = pl.concat(rows)
    if len(sys.argv) > 1:
        table.write_parquet(sys.argv[1])
    best = (
        table.filter(pl.col("type") != "all")
        .sort("accuracy", descending=True)
        .group_by("benchmark", "part", maintain_order=True)
        .first()
        .sort("benchmark", "part")
    )
    wide = table.filter(pl.col("type") != "all").pivot(
        "attack", index=["benchmark", "part", "n"], values="accuracy"
    )
    with pl.Config(tbl_rows=200, tbl_width_chars=200, fmt_str_lengths=30, tbl_cols=20):
        print(wide.join(best.select("benchmark", "part", pl.col("attack").alias("best"),
                                    "ci_low", "ci_high"), on=["benchmark", "part"])
              .sort("benchmark", "part").with_columns(pl.selectors.float().round(3)))  # fmt: skip


if __name__ == "__main__":
    main()
