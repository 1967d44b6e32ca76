"""Modules of jobs that never open a model import neither torch nor open_clip.

Every Snakemake job is a fresh Python process: importing torch and open_clip costs seconds,
which a job that only reads tables (collecting metrics, the world's oracles, exports,
reports, audits) must not pay. Each check runs in a new interpreter, so that what this test
session has already imported does not hide an import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

TABLE_ONLY = (
    "vlcomp.evaluate.jobs",
    "vlcomp.evaluate.retrieval_sets",
    "vlcomp.world.checks.oracle_evaluation",
    "vlcomp.world.checks.heldout",
    "vlcomp.export.jobs",
    "vlcomp.report.jobs",
    "vlcomp.audit",
)
HEAVY = ("torch", "open_clip")


def loaded_after(*modules: str) -> list[str]:
    """Which of ``HEAVY`` are in ``sys.modules`` after importing ``modules`` in a fresh
    interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_table_only_modules_import_neither_torch_nor_open_clip() -> None:
    assert loaded_after(*TABLE_ONLY) == []


def test_the_embedding_module_does_import_torch() -> None:
    """The check above can fail: the module that embeds does load torch."""
    assert "torch" in loaded_after("vlcomp.evaluate.embed")


def test_provenance_names_the_versions_without_importing_them() -> None:
    """collect_metrics writes the model libraries' versions without loading them, and they
    are the versions the libraries report once imported (local label included)."""
    code = (
        "import json, sys\n"
        "from vlcomp.models.versions import provenance\n"
        "versions = provenance()\n"
        "loaded = [m for m in ('torch', 'open_clip', 'torchvision') if m in sys.modules]\n"
        "import open_clip, torch, torchvision\n"
        "real = {'torch': torch.__version__, 'torchvision': torchvision.__version__,\n"
        "        'open_clip': open_clip.__version__}\n"
        "print(json.dumps([loaded, {k: versions[k] for k in real}, real]))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded, recorded, real = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == []
    assert recorded == real
