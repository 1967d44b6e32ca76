"""Stage ``atoms``: atoms, compounds and BindSplit bindings counted per shard of parsed
captions (``count_shard``) and summed across shards (``merge_counts``, map-reduce)."""

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
from .units import GraphUnits, graph_units

__all__ = [
    "ATOMS_SCHEMA",
    "BINDINGS_SCHEMA",
    "COMPOUNDS_SCHEMA",
    "COUNT_UNIT",
    "GraphUnits",
    "count_graphs",
    "count_shard",
    "graph_units",
    "merge_counts",
    "read_counts",
    "read_totals",
]
