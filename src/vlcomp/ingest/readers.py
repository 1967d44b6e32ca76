"""The registry of corpus formats (``FORMATS``): each format's reader, input suffixes,
options and their documentation, and how its caption ids are made.

The readers are generator-style, one module per format family: ``text_formats`` (CC12M
TSV, caption lines, JSON lines, CSV), ``yfcc``, ``parquet_formats`` (LAION, a caption
table), ``json_formats`` (COCO captions, Visual Genome regions); what they yield and
share is in ``reader_types``.

Each reader walks one input file and yields, in file order, a ``Candidate`` (a caption to
screen with ``rules.screen``) or a ``Rejected`` row (the reader could not make a caption of
that part of the file). Readers never hold a whole file: text files are read line by
line, Parquet by row group in batches, JSON with ``jsonstream``. A file that cannot be read
as its format (bad Parquet footer or row group, truncated or broken JSON, an unreadable
compressed stream, a header without the configured columns) raises ``CorruptInputError``
naming the file and the offset, line, row or row group.

caption_id is ``<corpus>/<file key>/<line or row>`` for line and row formats (line numbers
from 1, Parquet rows from 0 within the file; the file key is the file name without its
suffixes) and ``<corpus>/<id>`` where the dataset has its own caption id (COCO annotation
id, Visual Genome region id, a configured id column); such ids are checked for
duplicates (reason ``duplicate_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .json_formats import read_coco_json, read_vg_regions
from .jsonstream import COMPRESSED
from .parquet_formats import READ_BATCH_ROWS, read_laion_parquet, read_text_parquet
from .reader_types import IngestOptionsError, Item
from .text_formats import (
    MAX_LINE_BYTES,
    read_cc12m_tsv,
    read_text_csv,
    read_text_jsonl,
    read_text_lines,
)
from .yfcc import read_yfcc_tsv


@dataclass(frozen=True)
class Format:
    reader: Callable[..., Iterator[Item]]
    suffixes: tuple[str, ...]  # what a directory input is expanded to
    defaults: Mapping[str, Any]
    ids: str  # "line", "row" or "own": how caption ids are made
    id_option: str | None = None  # the option that gives the dataset's own caption ids
    doc: str = ""  # what a file of this format holds (config/README.md)
    option_docs: Mapping[str, str] = field(default_factory=dict)  # one per key of defaults


_LINE = {"max_line_bytes": MAX_LINE_BYTES}
_LINE_DOC = {"max_line_bytes": "Longest line read, in bytes; a longer one is rejected (too_long)."}
_TEXT_SUFFIXES = COMPRESSED
_OWN_ID = "The dataset's own caption id (checked for duplicates); null: {} numbers make the ids."
_IMAGE = "Image id or file name of each caption (null: none, a text-only corpus)."

FORMATS: dict[str, Format] = {
    "cc12m_tsv": Format(
        read_cc12m_tsv,
        (".tsv", ".txt", *_TEXT_SUFFIXES),
        _LINE,
        "line",
        doc="CC12M: `<url>\\t<caption>` per line, no header; the image id is the URL.",
        option_docs=_LINE_DOC,
    ),
    "yfcc_tsv": Format(
        read_yfcc_tsv,
        (".tsv", ".txt", *_TEXT_SUFFIXES),
        {
            **_LINE,
            "header": True,
            "id_column": "photoid",
            "title_column": "title",
            "description_column": "description",
            "text": "title_description",
            "strip_html": True,
            "strip_urls": True,
            "subset_ids": None,
            "subset_column": 1,
        },
        "line",
        doc="YFCC100M metadata TSV (the 15M subset CLIP used, or the full dump); the image "
        "id is the photo id. Titles and descriptions are URL-decoded ('+' is a space).",
        option_docs={
            **_LINE_DOC,
            "header": "The first line names the columns; false: the column options are 0-based "
            "indices.",
            "id_column": "Photo id column (a name, or an index without a header).",
            "title_column": "Title column.",
            "description_column": "Description column.",
            "text": "The caption: title, description, title_description (joined by '. ') or "
            "separate (one caption each, ids ending /title and /description).",
            "strip_html": "Unescape HTML entities and remove tags.",
            "strip_urls": "Remove URLs.",
            "subset_ids": "OpenAI's yfcc100m_subset_data.tsv: only these photo ids are read, the "
            "others are counted as not_in_subset (null: every photo).",
            "subset_column": "0-based column of the photo id in subset_ids.",
        },
    ),
    "laion_parquet": Format(
        read_laion_parquet,
        (".parquet",),
        {"text_column": "TEXT", "url_column": "URL", "read_batch_rows": READ_BATCH_ROWS},
        "row",
        doc="LAION-400M metadata Parquet; the image id is the URL (a row without one is "
        "rejected, missing_field).",
        option_docs={
            "text_column": "Caption column.",
            "url_column": "Image URL column.",
            "read_batch_rows": "Rows read at a time (bounds memory).",
        },
    ),
    "coco_json": Format(
        read_coco_json,
        (".json", *COMPRESSED),
        {},
        "own",
        doc="COCO captions JSON: `annotations` of {id, image_id, caption}; the caption id is "
        "the annotation id, the image id COCO's.",
    ),
    "vg_regions": Format(
        read_vg_regions,
        (".json", *COMPRESSED),
        {},
        "own",
        doc="Visual Genome `region_descriptions.json`: one caption per region (caption id: "
        "the region id); a region without a valid box is rejected (invalid_box).",
    ),
    "text_csv": Format(
        read_text_csv,
        (".csv", *_TEXT_SUFFIXES),
        {"text_column": "caption", "id_column": None, "image_column": None},
        "row",
        "id_column",
        doc="CSV with a header row; quoted fields may span lines.",
        option_docs={
            "text_column": "Caption column.",
            "id_column": _OWN_ID.format("row"),
            "image_column": _IMAGE,
        },
    ),
    "text_lines": Format(
        read_text_lines,
        (".txt", *_TEXT_SUFFIXES),
        _LINE,
        "line",
        doc="One caption per line, no image.",
        option_docs=_LINE_DOC,
    ),
    "text_jsonl": Format(
        read_text_jsonl,
        (".jsonl", *_TEXT_SUFFIXES),
        {**_LINE, "text_field": "text", "id_field": None, "image_field": None},
        "line",
        "id_field",
        doc="JSON lines: one object per line.",
        option_docs={
            **_LINE_DOC,
            "text_field": "Caption field.",
            "id_field": _OWN_ID.format("line"),
            "image_field": _IMAGE,
        },
    ),
    "text_parquet": Format(
        read_text_parquet,
        (".parquet",),
        {
            "text_column": "text",
            "id_column": None,
            "image_column": None,
            "read_batch_rows": READ_BATCH_ROWS,
        },
        "row",
        "id_column",
        doc="Parquet with a caption column.",
        option_docs={
            "text_column": "Caption column.",
            "id_column": _OWN_ID.format("row"),
            "image_column": _IMAGE,
            "read_batch_rows": "Rows read at a time (bounds memory).",
        },
    ),
}


def file_key(path: Path) -> str:
    """The file name without compression and format suffixes ("part-00000.parquet" ->
    "part-00000", "cc12m.tsv.gz" -> "cc12m")."""
    name = path.name
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name


def own_ids(fmt: str, format_opts: Mapping[str, Any]) -> bool:
    """Whether captions of this format and options carry the dataset's own ids (checked
    for duplicates across a job's files) rather than ids made from file and line or row."""
    spec = FORMATS[fmt]
    return spec.ids == "own" or (
        spec.id_option is not None and format_opts.get(spec.id_option) is not None
    )


def format_options(fmt: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The format's defaults updated with ``options``; unknown keys raise."""
    if fmt not in FORMATS:
        raise IngestOptionsError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    defaults = FORMATS[fmt].defaults
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise IngestOptionsError(
            f"{fmt}: unknown option(s) {unknown} (known: {sorted(defaults) or 'none'})"
        )
    merged = {**defaults, **options}
    for name in ("max_line_bytes", "read_batch_rows"):
        if name in merged and (not isinstance(merged[name], int) or merged[name] < 1):
            raise IngestOptionsError(f"{fmt}.{name}: must be a positive integer")
    return merged


def expand_inputs(fmt: str, inputs: list[Path], glob: str | None = None) -> list[tuple[Path, str]]:
    """Input files with their file keys. A directory is expanded to its files matching
    ``glob`` (default: the format's suffixes), sorted by name; two inputs with the same key
    raise when caption ids are made from file keys (they would collide)."""
    suffixes = FORMATS[fmt].suffixes
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            candidates = item.glob(glob) if glob else item.iterdir()
            found = sorted(
                p for p in candidates if p.is_file() and (glob or p.name.endswith(suffixes))
            )
            if not found:
                wanted = glob or ", ".join(suffixes)
                raise IngestOptionsError(f"{item}: no {fmt} input files ({wanted})")
            files += found
        elif item.is_file():
            files.append(item)
        else:
            raise FileNotFoundError(f"{item}: input not found")
    keyed = [(p, file_key(p)) for p in files]
    seen: dict[str, Path] = {}
    for p, k in keyed:
        if k in seen and FORMATS[fmt].ids != "own":
            raise IngestOptionsError(f"inputs {seen[k]} and {p} share the file key {k!r}")
        seen[k] = p
    return keyed
