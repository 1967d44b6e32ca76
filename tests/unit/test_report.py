"""The Markdown summary of metric tables."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from vlcomp.report.figures_crepe import metrics_markdown


def table(rows: list[tuple], path: Path) -> Path:
    columns = ["model", "benchmark", "part", "split", "family", "metric", "value", "n"]
    frame = pl.DataFrame(rows, schema=columns, orient="row").with_columns(
        ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1, complexity=pl.lit(None)
    )
    frame.write_parquet(path)
    return path


def test_each_cell_once_per_table_with_parts_and_retrieval(tmp_path: Path) -> None:
    crepe = table(
        [
            ("m", "crepe", "cc12m", "all", "all", "R@1_micro", 0.5, 10),
            ("m", "crepe", "cc12m", "SC", "atom_att", "R@1", 0.6, 4),
            ("m", "crepe", "cc12m", "all", "atom_att", "R@1", 0.55, 10),
            ("m", "crepe", "laion", "all", "atom_att", "R@1", 0.45, 10),
            ("chance", "crepe", "cc12m", "all", "atom_att", "R@1", 0.2, 10),
        ],
        tmp_path / "crepe.parquet",
    )
    bindsplit = table(
        [
            ("m", "crepe", "cc12m", "all", "atom_att", "R@1", 0.55, 10),
            ("m", "crepe", "cc12m", "seen", "atom_att", "R@1", 0.7, 3),
        ],
        tmp_path / "crepe_bindsplit.parquet",
    )
    retrieval = table(
        [
            ("m", "ret", None, "all", "all", "i2t_R@1", 0.3, 60),
            ("m", "ret", None, "all", "all", "t2i_R@1", 0.2, 180),
            ("m", "ret", None, "all", "all", "i2t_R@5", 0.9, 60),
        ],
        tmp_path / "ret.parquet",
    )
    out = tmp_path / "summary.md"
    metrics_markdown([crepe, bindsplit, retrieval], out)
    text = out.read_text()
    sections = text.split("\n## ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["crepe", "crepe_bindsplit", "ret"]
    crepe_rows = [line for line in sections[0].splitlines() if line.startswith("| m |")]
    assert crepe_rows == [
        "| m | cc12m | all | all | 0.500 | [0.400, 0.600] | 10 |  |",
        "| m | cc12m | all | atom_att | 0.550 | [0.450, 0.650] | 10 | 0.200 |",
        "| m | cc12m | SC | atom_att | 0.600 | [0.500, 0.700] | 4 |  |",
        "| m | laion | all | atom_att | 0.450 | [0.350, 0.550] | 10 |  |",
    ]
    bindsplit_rows = [line for line in sections[1].splitlines() if line.startswith("| m |")]
    assert len(bindsplit_rows) == 2
    retrieval_rows = [line for line in sections[2].splitlines() if line.startswith("| m |")]
    assert retrieval_rows == [
        "| m | all | i2t | 0.300 | [0.200, 0.400] | 60 |  |",
        "| m | all | t2i | 0.200 | [0.100, 0.300] | 180 |  |",
    ]
