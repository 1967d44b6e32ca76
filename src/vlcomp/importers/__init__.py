"""Importers of published benchmarks into the candidates contract (``CANDIDATES_SCHEMA``) and,
for two-image benchmarks (Winoground, BiVLC, VisMin, COLA, ColorSwap, MMVP-VLM, EqBen), the
two-image contract (``TWO_IMAGE_SCHEMA``), and for image selection (SVO-Probes) the
``IMAGE_SELECTION_SCHEMA``. ``registry.FORMATS`` lists every format with its
reader, options, shape, the authors' metrics and chance levels."""

from vlcomp.importers.aro import (
    ARO_FILES,
    ARO_MACRO_EXCLUDED_RELATIONS,
    ORDER_PERTURBATIONS,
    SYMMETRIC_RELATIONS,
    aro_file_task,
    aro_item_groups,
    aro_macro_accuracy,
    read_aro_file,
    symmetric_relation_items,
)
from vlcomp.importers.bivlc import read_bivlc_file
from vlcomp.importers.cola import read_cola_file
from vlcomp.importers.colorswap import read_colorswap_file
from vlcomp.importers.common import (
    Imported,
    ImportFormatError,
    RecordError,
    TwoImageImported,
    concat_imports,
    integer_key_gaps,
    split_region,
)
from vlcomp.importers.crepe import crepe_folder_files, productivity_complexity, read_crepe_csv
from vlcomp.importers.eqben import read_eqben_file
from vlcomp.importers.mmvp import read_mmvp_file
from vlcomp.importers.registry import FORMATS, BenchmarkFormat, Metric
from vlcomp.importers.sugarcrepe import (
    SUGARCREPE_TYPES,
    match_refined,
    read_sugarcrepe_dir,
    read_sugarcrepe_file,
    sugarcrepe_file_type,
    sugarcrepe_type,
    sugarcrepe_variant,
)
from vlcomp.importers.sugarcrepe_pp import (
    SUGARCREPE_PP_TYPES,
    read_sugarcrepe_pp_file,
    sugarcrepe_pp_file_type,
)
from vlcomp.importers.svo_probes import read_svo_probes_file
from vlcomp.importers.valse import read_valse_file
from vlcomp.importers.vismin import read_vismin_file
from vlcomp.importers.vl_checklist import read_vl_checklist_file, vl_checklist_type
from vlcomp.importers.winoground import read_winoground_file

__all__ = [
    "ARO_FILES",
    "ARO_MACRO_EXCLUDED_RELATIONS",
    "FORMATS",
    "ORDER_PERTURBATIONS",
    "SUGARCREPE_PP_TYPES",
    "SUGARCREPE_TYPES",
    "SYMMETRIC_RELATIONS",
    "BenchmarkFormat",
    "ImportFormatError",
    "Imported",
    "Metric",
    "RecordError",
    "TwoImageImported",
    "aro_file_task",
    "aro_item_groups",
    "aro_macro_accuracy",
    "concat_imports",
    "crepe_folder_files",
    "integer_key_gaps",
    "match_refined",
    "productivity_complexity",
    "read_aro_file",
    "read_bivlc_file",
    "read_cola_file",
    "read_colorswap_file",
    "read_crepe_csv",
    "read_eqben_file",
    "read_mmvp_file",
    "read_sugarcrepe_dir",
    "read_sugarcrepe_file",
    "read_sugarcrepe_pp_file",
    "read_svo_probes_file",
    "read_valse_file",
    "read_vismin_file",
    "read_vl_checklist_file",
    "read_winoground_file",
    "split_region",
    "sugarcrepe_file_type",
    "sugarcrepe_pp_file_type",
    "sugarcrepe_type",
    "sugarcrepe_variant",
    "symmetric_relation_items",
    "vl_checklist_type",
]
