"""Ingest: caption corpora in their native formats -> sharded ``captions`` tables, and
Visual Genome regions -> evaluation items.

Formats (``readers.FORMATS``): ``cc12m_tsv``, ``yfcc_tsv``, ``laion_parquet``,
``coco_json``, ``vg_regions``, ``text_lines``, ``text_jsonl``, ``text_parquet``.
Job-level entry points: ``ingest`` and ``eval_items_from_vg``; generator-style access to
one file: ``iter_captions``.

Rejection reasons (column ``reason`` of the rejected-rows table):

- from the readers: ``missing_columns``, ``extra_columns`` (TSV field count),
  ``malformed_row`` (wrong JSON type, non-integer photo id), ``broken_json`` (a JSON line
  that does not parse), ``duplicate_id``, ``invalid_box`` (Visual Genome), ``too_long``
  (a line over ``max_line_bytes``), ``bad_encoding``, ``missing_field``, ``empty``;
- from caption screening (``rules``): ``missing_field``, ``control_chars``,
  ``bad_encoding``, ``empty``, ``too_long``, ``no_letters``, ``non_english``;
- from the evaluation-item filters (``vg``): see ``vg.REGION_REASONS``.
"""

from .job import (
    CaptionRow,
    IngestOptions,
    IngestSummary,
    ingest,
    iter_captions,
    screen_items,
    shard_name,
    shard_of,
)
from .jsonstream import CorruptInputError, iter_json_array
from .reader_types import Candidate, IngestOptionsError, Rejected
from .readers import FORMATS
from .rules import CaptionRules, RulesError, screen
from .vg import RegionFilters, eval_items_from_vg, iter_eval_items

__all__ = [
    "FORMATS",
    "Candidate",
    "CaptionRow",
    "CaptionRules",
    "CorruptInputError",
    "IngestOptions",
    "IngestOptionsError",
    "IngestSummary",
    "Rejected",
    "RegionFilters",
    "RulesError",
    "eval_items_from_vg",
    "ingest",
    "iter_captions",
    "iter_eval_items",
    "iter_json_array",
    "screen",
    "screen_items",
    "shard_name",
    "shard_of",
]
