"""VL-CheckList (Zhao et al., 2022) corpora as 1+1 candidate sets.

The release (github.com/om-ai-lab/VL-CheckList) describes each test corpus with a YAML file
``corpus/<version>/<Category>/<...>/<corpus>.yaml`` (``corpus/v1/Attribute/color/vaw.yaml``,
``corpus/v1/Object/Location/center/vg_obj.yaml``, ``corpus/v1/Relation/action/swig.yaml``)
holding ``ANNO_PATH`` (its JSON file, relative to the release root:
``data/Attribute/vaw/color.json``), ``IMG_ROOT`` (the image dataset's folder: ``vg``,
``swig/``, ``hake/``) and ``TYPE: "TUPLE_JSON"``. The JSON file is a list of
``[image path, {"POS": [texts], "NEG": [texts]}]``, the image path relative to ``IMG_ROOT``.

A YAML file or a JSON file under the release's ``data/`` can be given. From a YAML file the
image is ``<IMG_ROOT>/<image path>`` (so the eval set's images folder is the folder holding
``vg/``, ``swig/`` and ``hake/``) and the type comes from the YAML's place under
``corpus/<version>/``; from a JSON file the image is the path as given and the type comes
from its place under ``data/``.

The authors' image-text contrastive evaluation (``vl_checklist/evaluate.py``, task ``itc``)
scores the image against the FIRST positive and the FIRST negative text of each entry and
counts it right when the positive's probability is strictly higher: accuracy, chance 0.5.
Each entry is therefore one item, ``POS[0]`` against ``NEG[0]``; the other texts (the SWiG
corpora list three of each) are not scored. ``family`` is the category (``attribute``,
``object``, ``relation``) and ``target`` the rest of the type (``color``,
``location_center``, ``size_large``, ``action``, ``spatial``), the breakdown the authors
report.

Two protocols (the ``protocol`` option):

- ``vlcomp`` (the default): every entry of the corpus; an entry whose first negative equals
  its first positive is rejected (``negative equals the positive``): it tests nothing.
- ``authors``: what ``vl_checklist/evaluate.py`` (task ``itc``) scores. It keeps the first
  ``int(MAX_NUM / 2)`` entries of each corpus (``MAX_NUM`` is 2000 in the release's
  ``configs/sample.yaml`` and README, so 1,000 entries; 0 keeps all), and the later entries are
  rejected rows (``beyond the authors' cap ...``). Entries whose first negative equals their
  first positive are kept: the positive's score then equals the negative's, and the
  authors' strict ``>`` counts that tie as wrong, as vlcomp's evaluation does (the provenance
  notes ``tie=equal_texts``). The authors' loader drops entries whose image file is missing
  BEFORE the cap (``data_loader.py``: ``if os.path.exists(path)``); the cap here counts
  entries in file order, so the two keep the same entries when every image is present.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import polars as pl
import yaml

from vlcomp.importers.common import (
    CandidateRows,
    Imported,
    ImportFormatError,
    OnError,
    RecordError,
    check_on_error,
    image_reference,
    raw_json,
    read_records,
    read_text,
    require_text,
    source_label,
)

GENERATOR = "imported:vl_checklist"
PROTOCOLS = ("vlcomp", "authors")
MAX_NUM = 2000  # the release's configs/sample.yaml and README
EQUAL_TEXTS_NOTE = "tie=equal_texts"  # provenance of an item kept with equal texts (authors)
CATEGORIES = ("Attribute", "Object", "Relation")
YAML_SUFFIXES = (".yaml", ".yml")


def _type_from_yaml(path: Path) -> tuple[str, tuple[str, ...], str] | None:
    parts = path.parts
    for i in range(len(parts) - 3, -1, -1):
        if parts[i] == "corpus" and parts[i + 2] in CATEGORIES:
            sub = tuple(parts[i + 3 : -1])
            return (parts[i + 2], sub, path.stem) if sub else None
    return None


def _type_from_json(path: Path) -> tuple[str, tuple[str, ...], str] | None:
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "data" or parts[i + 1] not in CATEGORIES:
            continue
        category, rest, stem = parts[i + 1], parts[i + 2 : -1], path.stem
        if category == "Attribute" and len(rest) == 1:  # data/Attribute/<corpus>/<attr>.json
            return category, (stem,), rest[0]
        if category == "Relation":  # data/Relation/<corpus>/<rel>.json or <corpus>_<rel>.json
            if len(rest) == 1:
                return category, (stem,), rest[0]
            if not rest and "_" in stem:
                corpus, relation = stem.rsplit("_", 1)
                return category, (relation,), corpus
        if category == "Object" and rest and "_" in stem:  # .../<corpus>_<value>.json
            corpus, value = stem.rsplit("_", 1)
            return category, (rest[0], value), corpus
        return None
    return None


def vl_checklist_type(path: str | Path) -> tuple[str, tuple[str, ...], str] | None:
    """(category, subtype parts, corpus) from a YAML file's place under
    ``corpus/<version>/`` or a JSON file's place under ``data/``; None for another path."""
    path = Path(path)
    if path.suffix.lower() in YAML_SUFFIXES:
        return _type_from_yaml(path)
    if path.suffix.lower() == ".json":
        return _type_from_json(path)
    return None


def _corpus_yaml(path: Path) -> tuple[Path, str]:
    """The annotation file and image root a corpus YAML names."""
    try:
        spec = yaml.safe_load(read_text(path))
    except yaml.YAMLError as error:
        raise ImportFormatError(f"{path}: not valid YAML ({error})") from error
    if not isinstance(spec, dict) or not isinstance(spec.get("ANNO_PATH"), str):
        raise ImportFormatError(f"{path}: a VL-CheckList corpus YAML needs ANNO_PATH (a string)")
    if spec.get("TYPE", "TUPLE_JSON") != "TUPLE_JSON":
        raise ImportFormatError(
            f"{path}: TYPE {spec['TYPE']!r} is not read (only TUPLE_JSON, the release's type)"
        )
    root = spec.get("IMG_ROOT", "")
    if not isinstance(root, str):
        raise ImportFormatError(f"{path}: IMG_ROOT must be a string, got {root!r}")
    anno = Path(spec["ANNO_PATH"])
    # ANNO_PATH is relative to the release root (the folder holding corpus/ and data/).
    candidates = [anno] if anno.is_absolute() else [p / anno for p in path.parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate, root
    raise ImportFormatError(
        f"{path}: ANNO_PATH {spec['ANNO_PATH']!r} not found in any folder above the YAML file "
        "(the release root holds corpus/ and data/)"
    )


def _label(path: Path) -> str:
    # Under data/ the file name alone is ambiguous (Attribute/vg/action.json and
    # Relation/vg/action.json): keep the path below data/.
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "data" and parts[i + 1] in CATEGORIES:
            return "/".join(parts[i + 1 :])
    return source_label(path)


def _texts(value: object, name: str, where: str) -> str:
    if not isinstance(value, list) or not value:
        raise RecordError(where, f"{name} must be a non-empty list of texts")
    return require_text(value[0], f"{name}[0]", where)


def _entry(value: object, where: str) -> tuple[str, str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise RecordError(where, "expected [image path, {POS, NEG}]")
    image, texts = value
    image = image_reference(image, "image path", where)
    if not isinstance(texts, dict):
        raise RecordError(where, "expected [image path, {POS, NEG}]")
    missing = [k for k in ("POS", "NEG") if k not in texts]
    if missing:
        raise RecordError(where, f"missing field(s) {missing}")
    return image, _texts(texts["POS"], "POS", where), _texts(texts["NEG"], "NEG", where)


def authors_cap(protocol: str, max_num: object) -> int | None:
    """The entries kept per corpus: ``int(max_num / 2)`` under the ``authors`` protocol (None
    when ``max_num`` is 0: all, as ``evaluate.py``'s ``if max_number:``), None under
    ``vlcomp``. Bad option values raise ``ValueError`` naming the option."""
    if protocol not in PROTOCOLS:
        raise ValueError(
            f"vl_checklist option protocol must be one of {PROTOCOLS}, got {protocol!r}"
        )
    if isinstance(max_num, bool) or not isinstance(max_num, int) or max_num < 0:
        raise ValueError(
            f"vl_checklist option max_num must be a non-negative integer, got {max_num!r}"
        )
    if protocol != "authors" or not max_num:
        return None
    return max_num // 2


def read_vl_checklist_file(
    path: str | Path,
    benchmark: str = "vl_checklist",
    on_error: OnError = "raise",
    *,
    protocol: str = "vlcomp",
    max_num: int = MAX_NUM,
) -> Imported:
    """One corpus YAML (and the JSON file it names) or one JSON file of ``data/``. item_id is
    ``vl_checklist/<category>/<subtype>/<corpus>/<index>``.

    Rejected with ``on_error="reject"`` (located by ``record=<index>``): malformed entries;
    under ``protocol="vlcomp"`` entries whose first negative equals their first positive;
    under ``protocol="authors"`` the entries after the first ``int(max_num / 2)`` (see the
    module docstring; those are rejected whatever ``on_error`` says, being well-formed). A
    file that cannot be read (a YAML without ANNO_PATH, an annotation file that is not a JSON
    list, a path whose type cannot be told) raises naming it.
    """
    check_on_error(on_error)
    cap = authors_cap(protocol, max_num)
    path = Path(path)
    kind = vl_checklist_type(path)
    if kind is None:
        raise ImportFormatError(
            f"{path}: cannot tell the VL-CheckList type: expected a corpus YAML under "
            "corpus/<version>/<Attribute|Object|Relation>/... or a JSON file under "
            "data/<Attribute|Object|Relation>/... as in the release"
        )
    category, sub, corpus = kind
    root = ""
    annotations = path
    if path.suffix.lower() in YAML_SUFFIXES:
        annotations, root = _corpus_yaml(path)
    records = read_records(annotations, on_error)
    if records and any(r.key is not None for r in records):
        raise ImportFormatError(f"{annotations}: expected a JSON list of entries, got an object")
    family, target = category.lower(), "_".join(sub).lower()
    label = _label(annotations)
    prefix = f"vl_checklist/{family}/{target}/{corpus}"
    rows = CandidateRows()
    for record in records:
        where = f"{annotations}, {record.location.replace('=', ' ', 1)}"
        raw = record.value if isinstance(record.value, str) else raw_json(record.value)
        if cap is not None and record.index >= cap:
            reason = f"beyond the authors' cap (the first {cap} entries: MAX_NUM {max_num} / 2)"
            rows.reject(label, record.location, reason, raw)
            continue
        try:
            if record.error:
                raise RecordError(where, record.error)
            image, positive, negative = _entry(record.value, where)
            if negative == positive and protocol != "authors":
                raise RecordError(where, "negative equals the positive")
        except RecordError as error:
            if on_error == "raise":
                raise
            rows.reject(label, record.location, error.reason, raw)
            continue
        tie = f";{EQUAL_TEXTS_NOTE}" if negative == positive else ""
        rows.add_item(
            benchmark=benchmark,
            item_id=f"{prefix}/{record.index}",
            image=posixpath.join(root, image) if root else image,
            positive=positive,
            negatives=[negative],
            family=family,
            target=target,
            generator=GENERATOR,
            provenance=f"{label}#{record.location};corpus={corpus}{tie}",
        )
    return rows.build()


def protocol_notes(candidates: pl.DataFrame, protocol: str, max_num: int) -> list[str]:
    """What an import under ``protocol`` kept that the default would not, for the summary."""
    cap = authors_cap(protocol, max_num)
    if protocol != "authors":
        return []
    tied = pl.col("provenance").str.contains(EQUAL_TEXTS_NOTE, literal=True)
    ties = candidates.filter(pl.col("is_positive"), tied)["item_id"].n_unique()
    kept = "every entry" if cap is None else f"the first {cap} entries (MAX_NUM {max_num} / 2)"
    return [
        f"protocol authors: each corpus keeps {kept}, as vl_checklist/evaluate.py does; "
        f"{ties} items whose first negative equals the first positive are kept (every model "
        "ties on them, counted wrong, as the authors' strict > does)"
    ]
