"""The CSV copy of a Parquet table (what the Snakemake report shows of a table)."""

import polars as pl
import pytest

from vlcomp.io import write_csv_copy


def test_csv_copy_holds_every_row_and_column(tmp_path):
    frame = pl.DataFrame(
        {"reason": ["text: empty", "edit: not one change"], "count": [3, 12],
         "share": [1 / 3, None], "significant": [True, False]}
    )  # fmt: skip
    frame.write_parquet(tmp_path / "t.parquet")
    write_csv_copy(tmp_path / "t.parquet", tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_text()
    assert text.splitlines() == [
        "reason,count,share,significant",
        "text: empty,3,0.333333,true",
        "edit: not one change,12,,false",
    ]
    assert pl.read_csv(tmp_path / "t.csv")["count"].to_list() == [3, 12]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.parquet"]


def test_a_nested_column_is_refused_naming_file_and_column(tmp_path):
    pl.DataFrame({"item": ["a"], "texts": [["x", "y"]]}).write_parquet(tmp_path / "n.parquet")
    with pytest.raises(ValueError, match=r"n\.parquet: column 'texts' is nested"):
        write_csv_copy(tmp_path / "n.parquet", tmp_path / "n.csv")
    assert not (tmp_path / "n.csv").exists()
