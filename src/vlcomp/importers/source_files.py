"""The files an import reads: the paths a benchmark's source names (``source_entries``) and,
for a folder among them, which of its files the format reads (``expand_entries``). A folder's
files are read in name order; the files a format passes over in it are listed as skipped and
logged, never read; a folder without a file of the format stops the import, naming it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from vlcomp.importers.aro import ARO_FILES, aro_file_task
from vlcomp.importers.cola import MULTI_OBJECT_FILE, SINGLE_OBJECT_PREFIX
from vlcomp.importers.common import ROW_SUFFIXES, ImportFormatError
from vlcomp.importers.crepe import crepe_folder_files
from vlcomp.importers.mmvp import QUESTIONS_FILE
from vlcomp.importers.registry import TWO_IMAGES, formats_of
from vlcomp.importers.sugarcrepe import SUGARCREPE_TYPES, sugarcrepe_file_type
from vlcomp.importers.sugarcrepe_pp import SUGARCREPE_PP_TYPES, sugarcrepe_pp_file_type
from vlcomp.importers.valse import VALSE_FILES, valse_file_piece
from vlcomp.importers.vl_checklist import YAML_SUFFIXES, vl_checklist_type

Log = Callable[[str], None]


def source_entries(source: Mapping[str, Any]) -> list[Path]:
    """The files and folders of ``source["files"]`` (or ``dir``; one path or a list), each
    on disk."""
    if not isinstance(source, Mapping):
        raise ValueError(f"source must be a mapping with 'files', got {type(source).__name__}")
    files = source.get("files", source.get("dir"))
    if files is None:
        raise ValueError("source needs 'files': a list of benchmark files or folders")
    if isinstance(files, str | Path):
        files = [files]
    if not files:
        raise ValueError("source 'files' is empty")
    entries = [Path(f) for f in files]
    for entry in entries:
        if not entry.exists():
            raise FileNotFoundError(f"benchmark file or folder {entry} does not exist")
    return entries


def expand_entries(
    fmt: str, entries: list[Path], source: Mapping[str, Any], skipped: list[str], log: Log
) -> list[Path]:
    """The files to read, in the order given (a folder's files sorted by name); the files
    passed over in a folder are appended to ``skipped``."""
    files: list[Path] = []
    for entry in entries:
        if entry.is_file():
            files.append(entry)
            continue
        wanted, others, expected, why = _folder_files(fmt, entry, source, skipped, log)
        if not wanted:
            raise ImportFormatError(f"{entry}: no {expected}")
        for other in others:
            skipped.append(str(other))
            log(f"{other}: {why}; skipped")
        files.extend(wanted)
    return files


def aro_task(path: Path, source: Mapping[str, Any]) -> str | None:
    """The ARO task of a file: the source's ``tasks`` entry for its path, name or stem, else
    the one its name says (``aro.aro_file_task``)."""
    tasks = source.get("tasks") or {}
    for key in (str(path), path.name, path.stem):
        if key in tasks:
            return tasks[key]
    return aro_file_task(path)


def _folder_files(
    fmt: str, entry: Path, source: Mapping[str, Any], skipped: list[str], log: Log
) -> tuple[list[Path], list[Path], str, str]:
    """The folder layout of a format: (the files it reads in folder ``entry``, the files it
    passes over, what the folder should hold, why a passed-over file is not read)."""
    why = f"not a {fmt} file name"
    if fmt == "sugarcrepe":
        nested = sorted(
            d.name
            for d in entry.iterdir()
            if d.is_dir() and any(sugarcrepe_file_type(p) for p in d.glob("*.json"))
        )
        if nested:
            raise ImportFormatError(
                f"{entry}: holds SugarCrepe files in the subfolder(s) {nested}, which are "
                f"different benchmarks: name one of them in files (e.g. {entry / nested[0]})"
            )
        wanted, others = _partition(entry.glob("*.json"), sugarcrepe_file_type)
        return wanted, others, f"<type>.json files ({', '.join(SUGARCREPE_TYPES)})", why
    if fmt == "sugarcrepe_pp":
        wanted, others = _partition(entry.glob("*.json"), sugarcrepe_pp_file_type)
        expected = f"SugarCrepe++ <subset>.json files ({', '.join(SUGARCREPE_PP_TYPES)})"
        return wanted, others, expected, why
    if fmt == "winoground":
        wanted = [entry / "examples.jsonl"] if (entry / "examples.jsonl").is_file() else []
        return wanted, [], "Winoground examples.jsonl", why
    if fmt == "mmvp_vlm":
        wanted = [entry / QUESTIONS_FILE] if (entry / QUESTIONS_FILE).is_file() else []
        return wanted, [], f"MMVP-VLM {QUESTIONS_FILE}", why
    if fmt == "cola":
        found = sorted(entry.glob("*.json"))
        return (
            [p for p in found if p.name == MULTI_OBJECT_FILE],
            [p for p in found if p.name.startswith(SINGLE_OBJECT_PREFIX)],
            f"COLA {MULTI_OBJECT_FILE}",
            "COLA's single-object setting (scored by mAP) is not a two-image set",
        )
    if fmt == "valse":
        wanted, others = _partition(entry.glob("*.json"), valse_file_piece)
        return wanted, others, f"VALSE files ({', '.join(f'{n}.json' for n in VALSE_FILES)})", why
    if fmt == "vl_checklist":
        # a release root holds both corpus/ (YAML) and data/ (JSON): read the YAMLs then
        found = sorted(p for s in YAML_SUFFIXES for p in entry.rglob(f"*{s}"))
        wanted, others = _partition(found or entry.rglob("*.json"), vl_checklist_type)
        expected = "VL-CheckList corpus YAMLs (corpus/<version>/...) or data/ JSON files"
        return wanted, others, expected, why
    if fmt == "svo_probes":
        return sorted(entry.glob("*.csv")), [], "SVO-Probes svo_probes.csv", why
    if fmt == "eqben":
        return sorted(entry.glob("*.json")), [], "EqBen *.json annotation files", why
    if fmt in formats_of(TWO_IMAGES):  # the others (BiVLC, VisMin, ColorSwap): row files
        wanted = sorted(
            p for p in entry.iterdir() if p.is_file() and p.suffix.lower() in ROW_SUFFIXES
        )
        return wanted, [], f"{fmt} row files ({', '.join(f'*{s}' for s in ROW_SUFFIXES)})", why
    if fmt == "aro":
        wanted, others = _partition(entry.glob("*.json"), lambda p: aro_task(p, source))
        return wanted, others, f"ARO files ({', '.join(f'{n}.json' for n in ARO_FILES)})", why
    if fmt == "crepe_csv":
        wanted, passed = crepe_folder_files(entry)
        for other, reason in passed:
            skipped.append(str(other))
            log(f"{other}: {reason}; skipped")
        expected = (
            "CREPE *.csv files (or the productivity subfolders atom/, negate/, swap/ of "
            "prod_hard_negatives/)"
        )
        return wanted, [], expected, why
    # a format that names no folder layout reads the files it is given
    raise ImportFormatError(f"{entry}: a folder; the {fmt} importer reads files: name them")


def _partition(
    paths: Iterable[Path], takes: Callable[[Path], Any]
) -> tuple[list[Path], list[Path]]:
    """``paths`` sorted by name, split into (those ``takes`` says something of, the rest)."""
    ordered = sorted(paths)
    return [p for p in ordered if takes(p)], [p for p in ordered if not takes(p)]
