"""Importers of published benchmarks into the candidates contract (``CANDIDATES_SCHEMA``)."""

from vlcomp.importers.aro import ARO_FILES, aro_file_task, read_aro_file
from vlcomp.importers.common import (
    Imported,
    ImportFormatError,
    RecordError,
    concat_imports,
    split_region,
)
from vlcomp.importers.crepe import productivity_complexity, read_crepe_csv
from vlcomp.importers.sugarcrepe import (
    SUGARCREPE_TYPES,
    match_refined,
    read_sugarcrepe_dir,
    read_sugarcrepe_file,
    sugarcrepe_file_type,
    sugarcrepe_type,
)

__all__ = [
    "ARO_FILES",
    "SUGARCREPE_TYPES",
    "ImportFormatError",
    "Imported",
    "RecordError",
    "aro_file_task",
    "concat_imports",
    "match_refined",
    "productivity_complexity",
    "read_aro_file",
    "read_crepe_csv",
    "read_sugarcrepe_dir",
    "read_sugarcrepe_file",
    "split_region",
    "sugarcrepe_file_type",
    "sugarcrepe_type",
]
