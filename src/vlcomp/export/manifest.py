"""The files of an export and its manifest.

An export is one folder, written whole or not at all (:func:`atomic_dir`): benchmark files
in a published layout, the images they name (whole images hard-linked or copied from the
eval set's image index, regions cut out and saved as PNG), ``keys.csv`` (which of our items
each exported record is) and ``manifest.json``: every other file with its sha256 and size,
the counts per type, the items left out and why, the config section that produced the
benchmark, the vlcomp and library versions, the generators (and seeds / prompt versions)
the candidates name, and how the tie policies of vlcomp and of the reading tool differ.

The manifest holds no time stamps or absolute paths of its own making, so the same inputs
give the same manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.evaluate.images import Box, UnreadableImageError, crop, open_rgb
from vlcomp.io import atomic_dir as atomic_dir  # re-exported: the export's folder
from vlcomp.io import write_json
from vlcomp.models.versions import provenance

MANIFEST = "manifest.json"
KEYS = "keys.csv"
MANIFEST_VERSION = 1

# Why an item was left out of an export (the manifest counts them per reason).
IMAGE_MISSING = "image missing"
IMAGE_UNREADABLE = "image unreadable"
BOX_OUTSIDE = "box outside the image"
NO_NEGATIVE = "no negative"
SAME_TEXT = "negative equals positive"

TIE_POLICY_NOTE = (
    "vlcomp counts a tie as wrong (a positive must score strictly above every negative); "
    "CLIP_benchmark's image_caption_selection task takes torch.argmax, which resolves a tie "
    "to the first candidate, i.e. to the positive caption (SugarCrepe) or the matching "
    "caption / image (Winoground), and so counts a tie as right when its float32 scores are "
    "bit-equal; rounding in its batched products can also put a tie one ulp either way. With "
    "CLIP_benchmark in float32 (--no_amp) the two tools differ only on tied items; vlcomp's "
    "per-item predictions of a model (<metrics>/<model>/<benchmark>_predictions.parquet) hold "
    "the similarities that show them (python -m vlcomp.export.clip_benchmark ties lists those "
    "of a SugarCrepe export)."
)


# --------------------------------------------------------------------------- files


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def file_entries(root: str | Path, exclude: Sequence[str] = (MANIFEST,)) -> list[dict[str, Any]]:
    """Every file under ``root`` (but ``exclude``, relative POSIX paths) as
    ``{path, sha256, size}``, sorted by path."""
    root = Path(root)
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in exclude:
            continue
        entries.append({"path": rel, "sha256": sha256_file(path), "size": path.stat().st_size})
    return entries


WORKFLOW_BOOKKEEPING = frozenset({".snakemake_timestamp"})


def verify_manifest(folder: str | Path) -> list[str]:
    """The problems of an export folder against its manifest (a missing, changed or unlisted
    file); empty when every file is as listed. Workflow bookkeeping (Snakemake's
    ``.snakemake_timestamp`` in a directory output) is not part of the export."""
    folder = Path(folder)
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    listed = {e["path"]: e for e in manifest["files"]}
    found = {e["path"]: e for e in file_entries(folder) if e["path"] not in WORKFLOW_BOOKKEEPING}
    problems = [f"{p}: missing" for p in sorted(set(listed) - set(found))]
    problems += [f"{p}: not in the manifest" for p in sorted(set(found) - set(listed))]
    for path in sorted(set(listed) & set(found)):
        want, got = listed[path], found[path]
        if (want["sha256"], want["size"]) != (got["sha256"], got["size"]):
            problems.append(f"{path}: sha256/size differ from the manifest")
    return problems


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 120


def safe_stem(text: str) -> str:
    """A file-name stem from any text: runs of characters other than letters, digits, ``.``,
    ``_`` and ``-`` become ``_``; no leading dot; long names are cut and given a hash."""
    stem = _UNSAFE.sub("_", text).lstrip(".") or "_"
    if len(stem) > _MAX_STEM:
        stem = f"{stem[:_MAX_STEM]}-{_short_hash(text)}"
    return stem


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------- images


@dataclass
class ImageFiles:
    """The images of an export, each written once under ``folder`` with a unique name.

    A whole image is hard-linked to its source file (``link``; copied where a link cannot
    be made, e.g. across file systems) or, with ``png=True`` and a source that is not a PNG,
    decoded and saved as PNG. A region is cut out as evaluation cuts it
    (``vlcomp.evaluate.images.crop`` of the RGB image) and saved as PNG. ``place`` returns
    the name under ``folder``, or raises ``UnreadableImageError`` (a file that cannot be
    read or decoded, including one gone since the index was made) or ``ValueError`` (a box
    outside the image).
    """

    folder: Path
    link: bool = True
    png: bool = False
    how: Counter[str] = field(default_factory=Counter)  # hardlink / copy / png / crop
    _names: dict[str, str] = field(default_factory=dict)  # name -> source key
    _placed: dict[tuple[str, Box | None], str] = field(default_factory=dict)
    _decoded: tuple[Path, Any] | None = None  # the last image decoded (regions of one image)

    def __len__(self) -> int:
        """The number of image files written."""
        return len(set(self._placed.values()))

    def place(self, image_id: str, path: str, box: Box | None) -> str:
        key = (path, box)
        if key in self._placed:
            return self._placed[key]
        source = Path(path)
        base = _IMAGE_SUFFIX.sub("", safe_stem(image_id)) or "_"
        if box is not None:
            x, y, width, height = box
            name = self._name(f"{base}_x{x}_y{y}_w{width}_h{height}", ".png", key)
            self._save_png(source, box, name)
            self.how["crop"] += 1
        elif self.png and not _is_png(source):
            name = self._name(base, ".png", key)
            self._save_png(source, None, name)
            self.how["png"] += 1
        else:
            name = self._name(base, ".png" if self.png else source.suffix.lower(), key)
            self.how[self._link_or_copy(source, self.folder / name)] += 1
        self._placed[key] = name
        return name

    def _name(self, stem: str, suffix: str, key: tuple[str, Box | None]) -> str:
        name = f"{stem}{suffix}"
        if name.lower() in self._names:
            name = f"{stem}-{_short_hash(repr(key))}{suffix}"
        self._names[name.lower()] = repr(key)
        return name

    def _save_png(self, source: Path, box: Box | None, name: str) -> None:
        if self._decoded is None or self._decoded[0] != source:
            self._decoded = (source, open_rgb(source))
        image = crop(self._decoded[1], box)
        self.folder.mkdir(parents=True, exist_ok=True)
        # No time stamps or other metadata: the same region gives the same bytes.
        image.save(self.folder / name, format="PNG", optimize=False)

    def _link_or_copy(self, source: Path, target: Path) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.link:
            try:
                os.link(source, target)
                return "hardlink"
            except OSError:
                pass
        try:
            shutil.copyfile(source, target)
        except OSError as error:
            raise UnreadableImageError(f"{type(error).__name__}: {error}") from error
        return "copy"


_IMAGE_SUFFIX = re.compile(r"\.(png|jpe?g|webp|gif|bmp|tiff?)$", re.IGNORECASE)


def _is_png(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(8) == b"\x89PNG\r\n\x1a\n"
    except OSError:
        return False  # decoding it then says why


# --------------------------------------------------------------------------- contents


_SEED = re.compile(r"\bseed[\s=:]+(\S+?)[;,)]?(?:\s|$)", re.IGNORECASE)
_PROMPT = re.compile(r"\bprompt[\s_-]*(?:version)?[\s=:]+(\S+?)[;,)]?(?:\s|$)", re.IGNORECASE)


def generator_info(candidates: pl.DataFrame) -> dict[str, Any]:
    """What the candidates say about how they were made: items per ``generator`` and the
    seeds and prompt versions their ``provenance`` texts name."""
    out: dict[str, Any] = {"generators": {}, "seeds": [], "prompt_versions": []}
    if "generator" in candidates.columns:
        per = candidates.group_by("generator").agg(pl.col("item_id").n_unique().alias("items"))
        out["generators"] = {str(g): int(n) for g, n in sorted(per.iter_rows(), key=str)}
    if "provenance" in candidates.columns:
        texts = candidates["provenance"].drop_nulls().unique().to_list()
        out["seeds"] = sorted({m for t in texts for m in _SEED.findall(t)})
        out["prompt_versions"] = sorted({m for t in texts for m in _PROMPT.findall(t)})
    return out


def versions() -> dict[str, str]:
    """vlcomp, the libraries of its model stages, and the ones that wrote the export."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    out = dict(provenance())
    for package in ("polars", "pillow"):
        try:
            out[package] = installed(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    out["python"] = platform.python_version()
    return dict(sorted(out.items()))


def input_entry(path: str | Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    return {"path": str(path), "sha256": sha256_file(path), "size": Path(path).stat().st_size}


def left_out_section(left_out: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{count, per_reason, items}`` of the items left out (each item_id, reason, detail)."""
    ordered = sorted(left_out, key=lambda r: (str(r["reason"]), str(r["item_id"])))
    return {
        "count": len(ordered),
        "per_reason": dict(sorted(Counter(str(r["reason"]) for r in ordered).items())),
        "items": [dict(r) for r in ordered],
    }


def write_manifest(folder: str | Path, **sections: Any) -> dict[str, Any]:
    """Write ``manifest.json`` in ``folder``: ``sections`` plus the list of every other file
    of the folder (``files``: path, sha256, size). Returns the manifest."""
    folder = Path(folder)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        **sections,
        "files": file_entries(folder),
    }
    write_json(_plain(manifest), folder / MANIFEST)
    return manifest


def _plain(value: Any) -> Any:
    """A JSON-ready copy: mappings and sequences of the config as dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
