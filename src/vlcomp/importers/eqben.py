"""EqBen (Wang et al., ICCV 2023) as a two-image set.

EqBen pairs two images that differ minimally (video frames, Kubric and Stable Diffusion
renders) with a caption each. The files read here are the ones whose layout the release
(github.com/Wangt-CN/EqBen, ``src/eqben/eqben_utils.py``) reads pair by pair:

- the Winoground-style annotation (the released 10 % subset
  ``eqben_subset_10percent_final.json``, and the original annotation published in 2023-09):
  a JSON list of ``{"image0", "caption0", "image1", "caption1"}``;
- the per-subset annotations: a JSON object ``{video: [pairs]}`` (``EqBenYoucook2``,
  ``EqBenGEBC``) or ``{video: {subject: [pairs]}}`` (``EqBenAG``, whose captions are lists:
  the authors score the first).

``caption0`` describes ``image0`` and ``caption1`` describes ``image1``; image paths are
relative to the image folder and begin with the subset (``eqbenag/...``,
``eqbenkubric_attr/...``). The authors' metrics are Winoground's text, image and group scores
(chance 0.25, 0.25, 1/6), reported per subset. ``family`` / ``target`` come from that first
path component: ``ag``, ``youcook2``, ``gebc``, ``sd``, and ``kubric`` with ``loc``, ``att``
or ``count``; ``eqben`` when an image path names no known subset. The randomised annotation
for the evaluation server (``ann_json_finegrained_random.json``: single image-caption pairs
whose pairing is private) is not a two-image set and is not read.

Known limitation: EqBen-YouCook2 images are NumPy arrays (``.npy``, BGR), which the image
index does not decode; those items are reported unreadable by the eval set's image index.
"""

from __future__ import annotations

from pathlib import Path

from vlcomp.importers.common import (
    ImportFormatError,
    OnError,
    Record,
    RecordError,
    TwoImageImported,
    TwoImageItem,
    check_fields,
    check_on_error,
    image_reference,
    load_json,
    require_text,
    two_image_items,
)

GENERATOR = "imported:eqben"
FIELDS = ("image0", "caption0", "image1", "caption1")
# first folder of an image path -> (family, target)
SUBSETS: dict[str, tuple[str, str | None]] = {
    "eqbenag": ("ag", None),
    "eqbenyoucook2": ("youcook2", None),
    "eqbengebc": ("gebc", None),
    "eqbenkubric_loc": ("kubric", "loc"),
    "eqbenkubric_attr": ("kubric", "att"),
    "eqbenkubric_cnt": ("kubric", "count"),
    "eqbensd": ("sd", None),
}


def _caption(value: object, name: str, where: str) -> tuple[str, int]:
    """The caption and how many the record lists (EqBenAG lists several; the first is
    scored)."""
    if isinstance(value, list):
        if not value:
            raise RecordError(where, f"{name} is an empty list")
        return require_text(value[0], f"{name}[0]", where), len(value)
    return require_text(value, name, where), 1


def _convert(record: object, where: str) -> TwoImageItem:
    value = check_fields(record, FIELDS, where)
    image_0 = image_reference(value["image0"], "image0", where)
    image_1 = image_reference(value["image1"], "image1", where)
    caption_0, n_0 = _caption(value["caption0"], "caption0", where)
    caption_1, n_1 = _caption(value["caption1"], "caption1", where)
    subset = image_0.split("/", 1)[0] if "/" in image_0 else ""
    family, target = SUBSETS.get(subset, ("eqben", None))
    notes = [f"subset={subset}"] if subset in SUBSETS else []
    if n_0 > 1 or n_1 > 1:
        notes.append(f"captions={n_0},{n_1}")
    return TwoImageItem(image_0, image_1, caption_0, caption_1, family, target, ";".join(notes))


def _records(path: Path, on_error: OnError) -> list[Record]:
    """The pairs of a list, a ``{video: [pairs]}`` or a ``{video: {subject: [pairs]}}``
    file, keyed by position (``3``) or by ``<video>/<i>`` / ``<video>/<subject>/<i>``."""
    data = load_json(path, on_error)
    if isinstance(data, list):
        return [Record(f"record={i}", i, str(i), v) for i, v in enumerate(data)]
    if not isinstance(data, dict):
        raise ImportFormatError(
            f"{path}: expected a JSON list of pairs or an object keyed by video, got "
            f"{type(data).__name__}"
        )
    records: list[Record] = []

    def add(key: str, value: object, error: str | None = None) -> None:
        records.append(Record(f"key={key}", len(records), key, value, error))

    def walk(key: str, value: object, depth: int) -> None:
        if isinstance(value, list):
            for i, pair in enumerate(value):
                add(f"{key}/{i}", pair)
        elif isinstance(value, dict) and depth == 0:
            for inner, pairs in value.items():
                walk(f"{key}/{inner}", pairs, 1)
            for inner, pairs in getattr(value, "duplicates", []):
                add(f"{key}/{inner}", pairs, "duplicate key")
        elif depth == 0:
            add(key, value, "expected a list of pairs or an object of lists")
        else:
            add(key, value, "expected a list of pairs")

    for video, value in data.items():
        walk(video, value, 0)
    for video, value in getattr(data, "duplicates", []):
        add(video, value, "duplicate key")
    return records


def read_eqben_file(
    path: str | Path, benchmark: str = "eqben", on_error: OnError = "raise"
) -> TwoImageImported:
    """One EqBen annotation file (see the module docstring). item_id is
    ``eqben/<file stem>/<key>``; malformed pairs, a repeated video key, equal captions and
    equal images are rejected (``key=<key>``)."""
    check_on_error(on_error)
    path = Path(path)
    if path.suffix.lower() != ".json":
        raise ImportFormatError(f"{path}: EqBen annotations are JSON files")
    return two_image_items(
        path,
        _records(path, on_error),
        _convert,
        id_field=None,
        benchmark=benchmark,
        prefix=f"eqben/{path.stem}",
        generator=GENERATOR,
        on_error=on_error,
    )
