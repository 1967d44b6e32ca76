"""The versions of the libraries that compute embeddings and scores, read without importing
them: a job that only writes tables (collect_metrics) records them without paying for
torch and open_clip."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from vlcomp import __version__

_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def package_version(package: str) -> str:
    """``package.__version__`` as the package states it in its ``version.py`` (with a local
    label such as ``+cu130``, which the installed metadata lacks); imported only when that
    file does not state it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return "not installed"
    version_file = Path(spec.origin).with_name("version.py")
    if version_file.is_file():
        found = _VERSION_LINE.search(version_file.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    return str(importlib.import_module(package).__version__)


def library_versions() -> dict[str, str]:
    """torch, torchvision, open_clip and transformers (from its installed metadata)."""
    try:
        transformers_version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        transformers_version = "not installed"
    return {
        "torch": package_version("torch"),
        "torchvision": package_version("torchvision"),
        "open_clip": package_version("open_clip"),
        "transformers": transformers_version,
    }


def provenance(**extra: str) -> dict[str, str]:
    """Key-value metadata written into every Parquet file a model stage produces."""
    return {"vlcomp": __version__, **library_versions(), **extra}
