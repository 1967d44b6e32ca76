"""Markdown rendering of small tidy tables."""

from __future__ import annotations

import polars as pl


def _cell(value: object, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}" if value == value else "nan"
    return str(value).replace("|", "\\|")


def markdown_table(frame: pl.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table; floats with ``digits`` decimals."""
    header = "| " + " | ".join(frame.columns) + " |"
    rule = (
        "|"
        + "|".join("---:" if frame[c].dtype.is_numeric() else "---" for c in frame.columns)
        + "|"
    )
    rows = ["| " + " | ".join(_cell(v, digits) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows]) + "\n"
