"""Systematicity splits (DESIGN §2, stages ``atoms`` and ``splits``).

Training side: ``count_shard`` counts atoms, compounds and BindSplit bindings of one shard
of parsed captions; ``merge_counts`` sums shards (map-reduce). Eval side:
``assign_splits`` gives every eval item its CREPE split (SC / UC / UA) and BindSplit labels,
bucket and STRICT/LOOSE split, plus a summary table. ``check_world_splits`` compares the
result with the synthetic world's hold-outs; ``bench.benchmark_counting`` measures
throughput.
Definitions live in the docstrings of ``counts`` and ``splits``.
"""

from .counts import (
    ATOMS_SCHEMA,
    BINDINGS_SCHEMA,
    COMPOUNDS_SCHEMA,
    COUNT_UNIT,
    count_graphs,
    count_shard,
    merge_counts,
    read_counts,
    read_totals,
)
from .groundtruth import (
    HeldOut,
    WorldAgreement,
    check_world_splits,
    expected_splits,
    items_from_truth,
    world_agreement,
)
from .normalize import normalize_text, singularize
from .splits import (
    ASSIGNMENTS_SCHEMA,
    BUCKETS,
    RULES,
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
from .units import GraphUnits, graph_units

__all__ = [
    "ASSIGNMENTS_SCHEMA",
    "ATOMS_SCHEMA",
    "BINDINGS_SCHEMA",
    "BUCKETS",
    "COMPOUNDS_SCHEMA",
    "COUNT_UNIT",
    "RULES",
    "SUMMARY_SCHEMA",
    "BindSplitSample",
    "GraphUnits",
    "HeldOut",
    "WorldAgreement",
    "assign",
    "assign_splits",
    "binding_label",
    "bindsplit_sample",
    "bucket_of",
    "check_world_splits",
    "collapse",
    "count_graphs",
    "count_shard",
    "crepe_split",
    "expected_splits",
    "graph_bindings",
    "graph_units",
    "items_from_truth",
    "merge_counts",
    "normalize_binding",
    "normalize_text",
    "read_counts",
    "read_totals",
    "singularize",
    "summarize",
    "world_agreement",
]
