"""How often the pair validator is wrong, measured on a labelled JSONL file.

Each line of the file is one LLM output with its label::

    {"positive": "...", "negative": "...", "family": "replace", "target": "obj",
     "category": "framing_prefix", "valid": false, "note": "..."}

``category`` is "valid" for the rows with ``valid: true`` and names the kind of fault
otherwise (``tests/fixtures/validator/README.md`` lists them). ``confusion`` runs a
validator over the rows and counts, per (family, target, category): rows, accepted,
rejected, false accepts (an invalid row accepted) and false rejects (a valid row
rejected). The validator is built as ``jobs.llm_pairs_job`` builds it: our parser with
the default ``parse`` settings and ``max_chars`` 300.

    python -m vlcomp_dev.llm_precision tests/fixtures/validator/pairs.jsonl

prints per family the false-reject and false-accept rates, per invalid category its
false accepts, and every wrong decision with the validator's reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.llm.settings import DEFAULTS as LLM_DEFAULTS
from vlcomp.negatives.llm.validate import RULES, GraphReader, PairCheck, PairValidator
from vlcomp.splits.items import make_parser

VALID = "valid"
MAX_CHARS = LLM_DEFAULTS["max_chars"]
REQUIRED: dict[str, type] = {
    "positive": str,
    "negative": str,
    "family": str,
    "target": str,
    "category": str,
    "valid": bool,
}
ROWS_SCHEMA: dict[str, pl.DataType] = {
    "line": pl.Int64,
    "positive": pl.String,
    "negative": pl.String,
    "family": pl.String,
    "target": pl.String,
    "category": pl.String,
    "valid": pl.Boolean,
    "note": pl.String,
}


def load_labelled(path: str | Path) -> pl.DataFrame:
    """The rows of a labelled JSONL file (``ROWS_SCHEMA``, ``line`` 1-based); a bad row
    raises ``ValueError`` naming the file, the line and what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: labelled validator file not found")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not JSON ({error.msg})") from error
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected a JSON object")
            for key, kind in REQUIRED.items():
                if not isinstance(row.get(key), kind):
                    raise ValueError(f"{where}: {key!r} must be a {kind.__name__}")
            if (row["family"], row["target"]) not in RULES:
                raise ValueError(f"{where}: unknown family/target {row['family']}/{row['target']}")
            if row["valid"] != (row["category"] == VALID):
                raise ValueError(
                    f"{where}: category {row['category']!r} with valid={row['valid']} "
                    f"(only category {VALID!r} is valid)"
                )
            note = row.get("note")
            if note is not None and not isinstance(note, str):
                raise ValueError(f"{where}: 'note' must be a str")
            rows.append({"line": number, **{k: row[k] for k in REQUIRED}, "note": note})
    if not rows:
        raise ValueError(f"{path}: no labelled rows")
    return pl.DataFrame(rows, schema=ROWS_SCHEMA)


def default_validator() -> PairValidator:
    """The validator of ``jobs.llm_pairs_job`` with the default settings."""
    return PairValidator(GraphReader(make_parser({})), MAX_CHARS)


def judge(rows: pl.DataFrame, validator: PairValidator) -> pl.DataFrame:
    """``rows`` with the validator's ``reason`` (null: accepted) and ``accepted``."""
    checks = [
        PairCheck(r["positive"], r["negative"], r["family"], r["target"])
        for r in rows.iter_rows(named=True)
    ]
    reasons = validator.check(checks)
    return rows.with_columns(
        pl.Series("reason", reasons, dtype=pl.String),
        pl.Series("accepted", [r is None for r in reasons], dtype=pl.Boolean),
    )


def confusion(judged: pl.DataFrame) -> pl.DataFrame:
    """Counts per (family, target, category) of ``judge``'s output."""
    return (
        judged.group_by("family", "target", "category", "valid")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("accepted").sum().cast(pl.Int64).alias("accepted"),
        )
        .with_columns(
            (pl.col("n") - pl.col("accepted")).alias("rejected"),
            pl.when(pl.col("valid"))
            .then(0)
            .otherwise(pl.col("accepted"))
            .cast(pl.Int64)
            .alias("false_accepts"),
            pl.when(pl.col("valid"))
            .then(pl.col("n") - pl.col("accepted"))
            .otherwise(0)
            .cast(pl.Int64)
            .alias("false_rejects"),
        )
        .sort("family", "target", "category")
    )


def measure(path: str | Path, validator: PairValidator | None = None) -> pl.DataFrame:
    """The confusion matrix (``confusion``) of ``validator`` (default: the job's) on a
    labelled JSONL file."""
    return confusion(judge(load_labelled(path), validator or default_validator()))


def _rate(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(None)


def by_family(matrix: pl.DataFrame) -> pl.DataFrame:
    """Per family/target (and "all"): valid rows, false rejects, FR rate, invalid rows,
    false accepts, FA rate."""
    sums = [
        pl.col("n").filter(pl.col("valid")).sum().alias("valid_n"),
        pl.col("false_rejects").sum(),
        pl.col("n").filter(~pl.col("valid")).sum().alias("invalid_n"),
        pl.col("false_accepts").sum(),
    ]
    per = (
        matrix.with_columns(pl.concat_str("family", "target", separator="_").alias("task"))
        .group_by("task")
        .agg(sums)
        .sort("task")
    )
    overall = matrix.select(sums).with_columns(pl.lit("all").alias("task"))
    return (
        pl.concat([per, overall.select(per.columns)])
        .with_columns(pl.col(c).cast(pl.Int64) for c in per.columns[1:])
        .with_columns(
            _rate("false_rejects", "valid_n").alias("fr_rate"),
            _rate("false_accepts", "invalid_n").alias("fa_rate"),
        )
        .select(
            "task", "valid_n", "false_rejects", "fr_rate", "invalid_n", "false_accepts", "fa_rate"
        )
    )


def by_category(matrix: pl.DataFrame) -> pl.DataFrame:
    """Per invalid category: rows, false accepts, FA rate."""
    return (
        matrix.filter(~pl.col("valid"))
        .group_by("category")
        .agg(pl.col("n").sum(), pl.col("false_accepts").sum())
        .with_columns(_rate("false_accepts", "n").alias("fa_rate"))
        .sort("category")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vlcomp_dev.llm_precision", description=__doc__.split("\n")[0]
    )
    parser.add_argument("file", help="labelled JSONL (positive, negative, family, ...)")
    args = parser.parse_args(argv)
    judged = judge(load_labelled(args.file), default_validator())
    matrix = confusion(judged)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=3, tbl_hide_dataframe_shape=True):
        print(by_family(matrix))
        print(by_category(matrix))
    wrong = judged.filter(pl.col("accepted") != pl.col("valid"))
    for r in wrong.iter_rows(named=True):
        verdict = f"rejected ({r['reason']})" if r["valid"] else "accepted"
        print(f"line {r['line']} {r['family']}_{r['target']} [{r['category']}] {verdict}:")
        print(f"  {r['positive']}\n  -> {r['negative']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
