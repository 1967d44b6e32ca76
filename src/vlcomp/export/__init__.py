"""Exports of generated benchmarks in the layouts other tools read, with a manifest.

- SugarCrepe JSON (``export.sugarcrepe``): what CLIP_benchmark's ``sugar_crepe`` loader and
  ``vlcomp.importers.read_sugarcrepe_file`` read;
- Winoground JSONL (``export.winoground``) for two-image sets;
- CREPE CSV: ``vlcomp.negatives.crepe_export`` writes it, ``crepe_manifest_job`` adds the
  manifest.

Every export folder holds ``manifest.json`` (``export.manifest``): file hashes and sizes,
counts per type, the items left out and why, the config, versions and generators.
"""

from vlcomp.export.jobs import FORMATS, crepe_manifest_job, export_benchmark_job
from vlcomp.export.manifest import MANIFEST, atomic_dir, verify_manifest
from vlcomp.export.sugarcrepe import pair_items, write_sugarcrepe
from vlcomp.export.winoground import write_winoground

__all__ = [
    "FORMATS",
    "MANIFEST",
    "atomic_dir",
    "crepe_manifest_job",
    "export_benchmark_job",
    "pair_items",
    "verify_manifest",
    "write_sugarcrepe",
    "write_winoground",
]
