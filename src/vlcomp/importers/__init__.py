"""Importers of published benchmarks into the candidates contract (``CANDIDATES_SCHEMA``)."""

from vlcomp.importers.aro import read_aro_file
from vlcomp.importers.common import Imported, ImportFormatError, concat_imports
from vlcomp.importers.crepe import read_crepe_csv
from vlcomp.importers.sugarcrepe import (
    SUGARCREPE_TYPES,
    match_refined,
    read_sugarcrepe_dir,
    read_sugarcrepe_file,
    sugarcrepe_type,
)

__all__ = [
    "SUGARCREPE_TYPES",
    "ImportFormatError",
    "Imported",
    "concat_imports",
    "match_refined",
    "read_aro_file",
    "read_crepe_csv",
    "read_sugarcrepe_dir",
    "read_sugarcrepe_file",
    "sugarcrepe_type",
]
