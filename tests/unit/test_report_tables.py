"""The Snakemake report shows tables a reader can open: CSV, Markdown, JSON or HTML, never a
Parquet file (a binary download in the report)."""

import re

from tests.conftest import REPO
from tests.test_lint import report_calls


def test_no_report_output_is_parquet():
    shown, parquet = [], []
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for line, arguments in report_calls(smk.read_text()):
            path = re.match(r'\s*"([^"]+)"', arguments)
            assert path, f"{smk.name}:{line}: report() without a path first"
            shown.append(path[1])
            if path[1].endswith(".parquet"):
                parquet.append(f"{smk.name}:{line}: {path[1]}")
    assert len(shown) >= 10 and not parquet, parquet
