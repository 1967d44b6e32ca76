"""Outputs get the mode the process umask gives a plain ``open`` / ``mkdir`` (vlcomp.io),
not ``mkstemp``'s 0600. ``vlcomp.io`` reads the umask once, at import, so each case runs
in a fresh interpreter started under that umask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

WRITE_ALL = """
import json, os, stat, sys
from pathlib import Path
import polars as pl
from vlcomp.io import atomic_dir, write_json, write_parquet, write_parquet_chunks, write_with
from vlcomp.llm.batch import write_batch_files

out = Path(sys.argv[1])
frame = pl.DataFrame({"a": [1, 2]})
write_parquet(frame, out / "t.parquet")
write_parquet(frame, out / "d.parquet", dictionary=True)
write_parquet_chunks([frame], out / "c.parquet", dict)
write_json({"a": 1}, out / "t.json")
write_with(out / "t.txt", lambda tmp: tmp.write_text("text"))
with atomic_dir(out / "folder") as tmp:
    (tmp / "inside.txt").write_text("x")
batch = write_batch_files([{"custom_id": "1"}], out / "batch")[0]
paths = [*out.glob("*.*"), out / "folder", out / "folder" / "inside.txt", batch]
print(json.dumps({p.relative_to(out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in paths}))
"""


def modes_under(umask: int, out: Path) -> dict[str, int]:
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", WRITE_ALL, str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        preexec_fn=lambda: os.umask(umask),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("umask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_outputs_honour_the_umask(
    tmp_path: Path, umask: int, file_mode: int, dir_mode: int
) -> None:
    modes = modes_under(umask, tmp_path / "out")
    assert {"t.parquet", "d.parquet", "c.parquet", "t.json", "t.txt"} <= set(modes)
    folders = {name: mode for name, mode in modes.items() if name == "folder"}
    files = {name: mode for name, mode in modes.items() if name != "folder"}
    assert folders == {"folder": dir_mode}
    assert all(mode == file_mode for mode in files.values()), {k: oct(v) for k, v in files.items()}
    assert not [p for p in (tmp_path / "out").rglob("*.tmp")]
