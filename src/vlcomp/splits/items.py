"""Evaluation sets as data: the items of a configured evaluation set and the index of the
image files it refers to.

``eval_items_job`` writes an evaluation set's items (``contracts.EVAL_ITEMS_SCHEMA``) and
the records it could not use (``contracts.REJECTED_SCHEMA``):

- ``visual_genome``: regions of a Visual Genome folder with CREPE's filters (see
  ``vlcomp.ingest.vg``; the graphs come from the dataset's annotation);
- ``coco_captions``: one whole-image item per caption annotation of a COCO captions JSON,
  with the scene graph from our parser (``vlcomp.parse``). An annotation that is not an
  object (``malformed_row``), lacks its id, image id or caption (``missing_field``), has a
  blank caption (``empty``), repeats an earlier id (``duplicate_id``) or names an image
  that is not in the file's ``images`` (``unknown_image``) is rejected.

``image_index_job`` resolves every image id that an evaluation set's tables refer to to a
file under the set's ``images`` folder and decodes the whole file as evaluation will
(``IMAGE_INDEX_SCHEMA``): a truncated or undecodable file is ``unreadable``, with PIL's
error, never ``ok``. Evaluation looks image files up there and never guesses names. The
decode results are kept in a cache keyed by (path, size, mtime_ns) (``ImageChecks``), so
a rerun decodes only new or changed files; the index is the same with or without it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

import polars as pl

from vlcomp.contracts import EVAL_ITEMS_SCHEMA, REJECTED_SCHEMA, conform
from vlcomp.ingest.jsonstream import iter_json_array
from vlcomp.ingest.rules import truncate
from vlcomp.ingest.vg import eval_items_from_vg
from vlcomp.ingest.visual_genome import read_image_data
from vlcomp.io import read_parquet_metadata, write_json, write_parquet
from vlcomp.parse.backends import DEFAULT_MAX_CHARS
from vlcomp.parse.parser import CaptionParser, graph_canon, make_options
from vlcomp.text import collapse_spaces
from vlcomp.text.lemma import DEFAULT_SPACY_MODEL

EVAL_FORMATS: tuple[str, ...] = ("visual_genome", "coco_captions")
COCO_SOURCE = "coco"
COCO_REASONS: tuple[str, ...] = (
    "malformed_row",
    "missing_field",
    "empty",
    "duplicate_id",
    "unknown_image",
)
RAW_CHARS = 300  # as much of a rejected record as the rejected table keeps

IMAGE_INDEX_SCHEMA: dict[str, pl.DataType] = {
    "image_id": pl.String,
    "path": pl.String,  # null unless status is "ok"
    "status": pl.String,  # "ok", "missing" or "unreadable"
    "detail": pl.String,  # "<width>x<height>", the error, or the paths tried
}
IMAGE_STATUSES: tuple[str, ...] = ("ok", "missing", "unreadable")
IMAGE_SUFFIXES: tuple[str, ...] = ("jpg", "jpeg", "png", "webp")
SHOW_MISSING = 5
CHECK_THREADS = 8
# What ``check_image`` accepts; a cache written under another version is not trusted.
IMAGE_CHECK_VERSION = "full-decode-rgb-1"
CHECK_CACHE_SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "status": pl.String,
    "detail": pl.String,
}


def _require(source: Mapping[str, Any], key: str, fmt: str) -> Any:
    value = source.get(key)
    if value is None or value == "":
        raise ValueError(f"eval set of format {fmt!r}: source needs {key!r} (got {dict(source)})")
    return value


# ---------------------------------------------------------------------------- eval items


def make_parser(settings: Mapping[str, Any]) -> CaptionParser:
    """A ``CaptionParser`` from a ``parse`` config mapping (backend, model, numerals,
    strip_verbs, predicate_map and optionally max_chars, stop_objects, frame_objects)."""
    options = make_options(
        settings.get("predicate_map"),
        strip_verbs=settings.get("strip_verbs"),
        stop_objects=settings.get("stop_objects"),
        frame_objects=settings.get("frame_objects"),
        numerals=bool(settings.get("numerals", False)),
    )
    backend = settings.get("backend") or "spacy"
    kwargs: dict[str, Any] = {"max_chars": settings.get("max_chars") or DEFAULT_MAX_CHARS}
    if backend == "spacy":
        kwargs["model"] = settings.get("model") or DEFAULT_SPACY_MODEL
    return CaptionParser(backend, options, **kwargs)


def _valid_id(value: Any) -> bool:
    return value is not None and not isinstance(value, bool | dict | list | float)


def coco_image_files(captions: str | Path) -> dict[str, str]:
    """Image id (as text) -> ``file_name`` ("" when absent) of a COCO JSON's ``images``;
    entries without a usable id are skipped, a repeated id keeps its first entry."""
    files: dict[str, str] = {}
    for _, _, entry in iter_json_array(Path(captions), "images"):
        if isinstance(entry, dict) and _valid_id(entry.get("id")):
            name = entry.get("file_name")
            files.setdefault(str(entry["id"]), name if isinstance(name, str) else "")
    return files


def coco_items(
    captions: str | Path, parse_settings: Mapping[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """(items, rejected, parser metadata) of a COCO captions JSON (see module docstring)."""
    path = Path(captions)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: COCO captions JSON not found")
    images = coco_image_files(path)
    kept: list[tuple[str, str, str]] = []
    rejected: dict[str, list[Any]] = {k: [] for k in REJECTED_SCHEMA}
    seen: set[str] = set()
    for i, offset, ann in iter_json_array(path, "annotations"):
        loc = f"annotations[{i}] (byte {offset})"
        reason = None
        if not isinstance(ann, dict):
            reason = "malformed_row"
        else:
            own, image, text = ann.get("id"), ann.get("image_id"), ann.get("caption")
            if not (_valid_id(own) and _valid_id(image) and isinstance(text, str)):
                reason = "missing_field"
            elif not text.split():
                reason = "empty"
            elif str(own) in seen:
                reason = "duplicate_id"
            elif str(image) not in images:
                reason = "unknown_image"
            else:
                seen.add(str(own))
                kept.append((str(own), str(image), collapse_spaces(text)))
        if reason is not None:
            for key, value in zip(
                REJECTED_SCHEMA, (str(path), loc, reason, truncate(ann, RAW_CHARS)), strict=True
            ):
                rejected[key].append(value)
    parser = make_parser(parse_settings)
    graphs = parser.parse(
        [t for _, _, t in kept],
        batch_size=int(parse_settings.get("batch_size") or 256),
        n_process=int(parse_settings.get("n_process") or 1),
    )
    rows: dict[str, list[Any]] = {k: [] for k in EVAL_ITEMS_SCHEMA}
    for (own, image, text), graph in zip(kept, graphs, strict=True):
        row = {
            "item_id": own,
            "source": COCO_SOURCE,
            "image_id": image,
            "region_id": None,
            "text": text,
            "x": None,
            "y": None,
            "width": None,
            "height": None,
            **graph.row(),
        }
        for key in EVAL_ITEMS_SCHEMA:
            rows[key].append(row[key])
    items = conform(pl.DataFrame(rows, schema=EVAL_ITEMS_SCHEMA), EVAL_ITEMS_SCHEMA, "eval items")
    bad = conform(pl.DataFrame(rejected, schema=REJECTED_SCHEMA), REJECTED_SCHEMA, "rejected")
    return items, bad, parser.metadata()


def eval_items_job(
    fmt: str,
    source: Mapping[str, Any],
    parse_settings: Mapping[str, Any],
    items_out: str,
    rejected_out: str,
    log: Callable[[str], None] = print,
    summary_out: str | None = None,
) -> dict[str, Any]:
    """Write the items of an evaluation set (``EVAL_ITEMS_SCHEMA``) to ``items_out`` and the
    records it could not use (``REJECTED_SCHEMA``) to ``rejected_out``, and the counts to
    ``summary_out`` (JSON) when given.

    ``fmt`` "visual_genome": ``source`` {dir, images, regions: filter options of
    ``vlcomp.ingest.vg.RegionFilters``}, annotations put in the form of the parser that
    ``parse_settings`` configures (``graph_canon``); "coco_captions": {captions, images},
    graphs from that parser. Returns the counts (format, items, rejected,
    rejected_by_reason, items_with_attributes, items_with_relations; for VG also
    clipped_boxes, merged and warnings; for COCO empty_graphs), also logged.
    """
    source = dict(source or {})
    if fmt == "visual_genome":
        vg_dir = Path(_require(source, "dir", fmt))
        result = eval_items_from_vg(
            vg_dir,
            Path(items_out),
            Path(rejected_out),
            source.get("regions"),
            canon=graph_canon(parse_settings or {}),
        )
        summary: dict[str, Any] = {"format": fmt, **result.as_dict()}
        summary["warnings"] = result.warnings()
    elif fmt == "coco_captions":
        captions = Path(_require(source, "captions", fmt))
        items, rejected, parser_meta = coco_items(captions, parse_settings or {})
        if items.is_empty():
            reasons = dict(sorted(Counter(rejected["reason"].to_list()).items()))
            raise ValueError(
                f"{captions}: no caption became an evaluation item ({rejected.height} "
                f"annotations rejected: {reasons or 'the file has none'})"
            )
        meta = {
            "vlcomp.stage": "eval_items",
            "vlcomp.parser": json.dumps(parser_meta, sort_keys=True),
        }
        write_parquet(items, items_out, metadata=meta)
        write_parquet(rejected, rejected_out, metadata={"vlcomp.stage": "eval_items"})
        reasons = dict(sorted(Counter(rejected["reason"].to_list()).items()))
        summary = {
            "format": fmt,
            "items": items.height,
            "rejected": rejected.height,
            "rejected_by_reason": reasons,
            "empty_graphs": int((items["objects"].list.len() == 0).sum()),
            "items_with_attributes": int((items["attributes"].list.len() > 0).sum()),
            "items_with_relations": int((items["relations"].list.len() > 0).sum()),
        }
    else:
        raise ValueError(f"eval items: unknown format {fmt!r} (known: {list(EVAL_FORMATS)})")
    log(f"eval items ({fmt}): {json.dumps(summary, sort_keys=True)}")
    if summary_out is not None:
        write_json(summary, summary_out)
    return summary


# --------------------------------------------------------------------------- image index


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders runs of digits numerically ("2" < "10", "img2" < "img10")."""
    parts = re.split(r"(\d+)", text)
    return (*(int(p) if k % 2 else p for k, p in enumerate(parts)), text)


def referenced_image_ids(references: Iterable[str | Path]) -> list[str]:
    """Distinct non-null image ids of Parquet files (the ``image_id`` column, else ``image``,
    else a two-image table's ``image_0`` and ``image_1``), in natural order; a file with
    none of them raises naming it."""
    ids: set[str] = set()
    for ref in references:
        names = pl.read_parquet_schema(ref)
        column = next((c for c in ("image_id", "image") if c in names), None)
        columns = [column] if column else [c for c in ("image_0", "image_1") if c in names]
        if not columns:
            raise ValueError(
                f"{ref}: no 'image_id', 'image' or 'image_0'/'image_1' column "
                f"(columns: {list(names)})"
            )
        frame = pl.read_parquet(ref, columns=columns)
        for name in columns:
            ids.update(frame[name].cast(pl.String).drop_nulls().unique().to_list())
    return sorted(ids, key=natural_key)


def url_suffixes(url: str) -> list[str]:
    """Relative paths a Visual Genome ``url`` may be stored under: its path and every
    shorter tail of it, down to the file name ("https://h/a/VG_100K/1.jpg" gives
    "a/VG_100K/1.jpg", "VG_100K/1.jpg", "1.jpg")."""
    path = urlsplit(url).path if "://" in url else url
    parts = [p for p in PurePosixPath(unquote(path)).parts if p not in ("/", "", ".")]
    return ["/".join(parts[k:]) for k in range(len(parts))]


def vg_image_urls(vg_dir: str | Path) -> dict[str, str]:
    """Image id (as text) -> ``url`` of a Visual Genome ``image_data.json``."""
    images = read_image_data(Path(vg_dir), needed_for="image file names")
    return {k: v.url for k, v in images.items() if v.url}


def dataset_names(fmt: str, source: Mapping[str, Any]) -> Callable[[str], list[str]]:
    """Image id -> relative file names that the dataset's own metadata gives (COCO
    ``file_name``, Visual Genome ``url``), tried before the id itself."""
    if fmt == "coco_captions" and source.get("captions"):
        files = coco_image_files(source["captions"])

        def coco(image_id: str) -> list[str]:
            name = files.get(image_id)
            return [name, PurePosixPath(name).name] if name else []

        return coco
    if fmt == "visual_genome" and source.get("dir"):
        urls = vg_image_urls(source["dir"])
        return lambda image_id: url_suffixes(urls[image_id]) if image_id in urls else []
    return lambda image_id: []


def candidate_names(image_id: str, known: Sequence[str] = ()) -> list[str]:
    """Relative names to try for ``image_id``, in order: ``known`` (from the dataset's
    metadata), the id itself, then the id with each of ``IMAGE_SUFFIXES``."""
    names = [*known, image_id, *(f"{image_id}.{s}" for s in IMAGE_SUFFIXES)]
    return [n for n in dict.fromkeys(names) if n]


def check_image(path: Path) -> tuple[str, str]:
    """("ok", "<width>x<height>") when PIL decodes the whole of ``path`` to RGB, as
    evaluation does, else ("unreadable", the error). Only a full decode finds a truncated
    JPEG (opening reads the header alone, and ``verify`` does not check JPEG data); run
    under ``strict_decoding`` so that PIL does not accept a truncated file."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()
            if image.mode != "RGB":
                image.convert("RGB")  # some modes decode but fail only here
            width, height = image.size
    except Exception as err:  # PIL raises many kinds (OSError, SyntaxError, ValueError...)
        return "unreadable", f"{path}: {type(err).__name__}: {err}"
    return "ok", f"{width}x{height}"


@contextmanager
def strict_decoding() -> Iterator[None]:
    """PIL's ``ImageFile.LOAD_TRUNCATED_IMAGES`` off for the block (a process-wide flag
    that another library may have set), restored after it."""
    from PIL import ImageFile

    before = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = before


def check_version() -> str:
    import PIL

    return f"{IMAGE_CHECK_VERSION}; Pillow {PIL.__version__}"


CheckKey = tuple[str, int, int]


class ImageChecks:
    """``check_image`` results keyed by (path, size, mtime_ns), read from and written back
    to the Parquet file ``cache`` (none: nothing is kept), so that a rerun over unchanged
    files decodes none of them. A cache of another ``check_version`` or one that cannot be
    read is ignored, saying why. ``save`` keeps the entries of this run only. Thread-safe.

    ``check`` replaces ``check_image`` (the benchmark's header-only baseline)."""

    def __init__(
        self,
        cache: str | Path | None = None,
        log: Callable[[str], None] = print,
        check: Callable[[Path], tuple[str, str]] | None = None,
    ) -> None:
        self.cache = Path(cache) if cache else None
        self.check = check
        name = getattr(check, "__qualname__", repr(check))
        self.version = check_version() if check is None else f"custom check {name}"
        self.known: dict[CheckKey, tuple[str, str]] = {}
        self.used: dict[CheckKey, tuple[str, str]] = {}
        self.decoded = self.hits = 0
        self._lock = threading.Lock()
        if self.cache is not None and self.cache.exists():
            self.known = self._read(self.cache, log)

    def _read(self, cache: Path, log: Callable[[str], None]) -> dict[CheckKey, tuple[str, str]]:
        try:
            version = read_parquet_metadata(cache).get("vlcomp.image_check")
            table = pl.read_parquet(cache)
            if table.schema != pl.Schema(CHECK_CACHE_SCHEMA):
                raise ValueError(f"columns {dict(table.schema)}, not {CHECK_CACHE_SCHEMA}")
        except Exception as err:  # a cache is disposable: say so and decode again
            log(f"image index: cache {cache} unreadable ({type(err).__name__}: {err}); ignored")
            return {}
        if version != self.version:
            log(f"image index: cache {cache} is of check {version!r}, not {self.version!r}; "
                "decoding every file again")  # fmt: skip
            return {}
        return {
            (path, size, mtime): (status, detail)
            for path, size, mtime, status, detail in table.iter_rows()
        }

    def __call__(self, path: Path) -> tuple[str, str]:
        try:
            stat = path.stat()
        except OSError as err:
            return "unreadable", f"{path}: {type(err).__name__}: {err}"
        key = (str(path), stat.st_size, stat.st_mtime_ns)  # taken before the decode
        result = self.known.get(key)
        hit = result is not None
        if result is None:
            result = (self.check or check_image)(path)
        with self._lock:
            self.hits += int(hit)
            self.decoded += int(not hit)
            self.used[key] = result
        return result

    def save(self) -> None:
        if self.cache is None:
            return
        rows = [(*key, *value) for key, value in sorted(self.used.items())]
        table = pl.DataFrame(rows, schema=CHECK_CACHE_SCHEMA, orient="row")
        write_parquet(table, self.cache, metadata={"vlcomp.image_check": self.version})


def resolve_image(
    image_id: str, images: Path | None, known: Sequence[str] = (), checks: ImageChecks | None = None
) -> tuple[str, str | None, str, str]:
    """(image_id, path, status, detail): the first existing candidate file decides."""
    if images is None:
        return image_id, None, "missing", "no images folder configured"
    tried = []
    for name in candidate_names(image_id, known):
        path = images / name
        if path.is_file():
            status, detail = (checks or check_image)(path)
            return image_id, (str(path) if status == "ok" else None), status, detail
        tried.append(str(path))
    return image_id, None, "missing", "tried " + ", ".join(tried)


def image_index(
    fmt: str,
    source: Mapping[str, Any],
    image_ids: Sequence[str],
    threads: int = CHECK_THREADS,
    checks: ImageChecks | None = None,
) -> pl.DataFrame:
    """The ``IMAGE_INDEX_SCHEMA`` table of ``image_ids`` (in the given order); files are
    checked through ``checks`` (default: every file decoded, nothing cached)."""
    images = source.get("images")
    folder = Path(images) if images else None
    names = dataset_names(fmt, source)
    checks = checks or ImageChecks()
    workers = max(1, min(threads, os.cpu_count() or 1))
    with strict_decoding(), ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(lambda i: resolve_image(i, folder, names(i), checks), image_ids))
    return pl.DataFrame(rows, schema=IMAGE_INDEX_SCHEMA, orient="row")


def image_index_job(
    fmt: str,
    source: Mapping[str, Any],
    references: Sequence[str],
    out: str,
    log: Callable[[str], None] = print,
    cache: str | None = None,
    threads: int = CHECK_THREADS,
) -> dict[str, Any]:
    """Write the image index (``IMAGE_INDEX_SCHEMA``) of an evaluation set: one row per
    distinct image id of the ``references`` Parquet files (eval items or imported
    candidates), in natural order. Names are resolved under ``source["images"]``: the COCO
    ``file_name`` (as given, then its base name), the Visual Genome ``url`` (its path and
    shorter tails of it), the id itself, then ``<id>.<jpg|jpeg|png|webp>``. Each file found
    is decoded whole on up to ``threads`` threads, unless ``cache`` (an ``ImageChecks``
    file) holds it at the same size and mtime. Returns the counts per status (also
    logged)."""
    source = dict(source or {})
    ids = referenced_image_ids(references)
    checks = ImageChecks(cache, log)
    table = image_index(fmt, source, ids, threads, checks)
    write_parquet(
        table,
        out,
        metadata={"vlcomp.stage": "image_index", "vlcomp.images": str(source.get("images"))},
    )
    checks.save()
    counts = Counter(table["status"].to_list())
    summary: dict[str, Any] = {"images": table.height, **{s: counts[s] for s in IMAGE_STATUSES}}
    log(f"image index ({fmt}, {source.get('images')}): {json.dumps(summary, sort_keys=True)}")
    log(f"image index: {checks.decoded} files decoded, {checks.hits} unchanged ones taken "
        f"from the cache ({cache or 'none'})")  # fmt: skip
    for status in ("missing", "unreadable"):
        bad = table.filter(pl.col("status") == status)
        if bad.height:
            shown = ", ".join(bad["image_id"].head(SHOW_MISSING).to_list())
            more = f" and {bad.height - SHOW_MISSING} more" if bad.height > SHOW_MISSING else ""
            log(f"image index: {status}: {shown}{more} (first: {bad['detail'][0]})")
    return summary
