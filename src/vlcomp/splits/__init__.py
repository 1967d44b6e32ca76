"""Stage ``splits``: every evaluation item's CREPE split (SC / UC / UA) and BindSplit labels,
bucket and STRICT/LOOSE split against a training corpus's counts (``assign_splits``)."""

from .assign import (
    ASSIGNMENTS_SCHEMA,
    SUMMARY_SCHEMA,
    BindSplitSample,
    assign,
    assign_splits,
    binding_label,
    bindsplit_sample,
    bucket_of,
    collapse,
    crepe_split,
    graph_bindings,
    normalize_binding,
    summarize,
)

__all__ = [
    "ASSIGNMENTS_SCHEMA",
    "SUMMARY_SCHEMA",
    "BindSplitSample",
    "assign",
    "assign_splits",
    "binding_label",
    "bindsplit_sample",
    "bucket_of",
    "collapse",
    "crepe_split",
    "graph_bindings",
    "normalize_binding",
    "summarize",
]
