"""One item shape for every selection task: N instances, each with its images (or crops) and
its candidate texts, scored as an (N, texts, images) array by one path
(``scoring.Scorer.score_selection``), as CLIP_benchmark's ``image_caption_selection`` scores
Winoground and SugarCrepe alike.

How each task fills the shape (``[n, c, i]`` = the score of text c with image i):

- candidate sets (CREPE, SugarCrepe, ARO, generated pairs; ``candidate_selection``): one
  image or crop and the item's candidate rows; sets of different sizes are padded;
- two-image items (Winoground, BiVLC, VisMin; ``image_pair_selection``): two images, the two
  captions; image selection (SVO-Probes): two images, one caption;
- SugarCrepe++ triples (``triple_selection``): one image or crop, and P1, P2, N.

A padding cell (text None) is never scored and holds NaN, as does every cell of an instance
one of whose images failed to decode. Torch-free: building a selection opens no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from vlcomp.evaluate.images import Box, ImageRef


@dataclass(frozen=True)
class Selection:
    """``refs[n]``: instance n's images (or crops), one length for all; ``texts[n]``: its
    texts, one length for all, None where a shorter instance is padded; ``image_ids[n]``:
    the eval set's id of each of its images (what an unreadable image is reported as)."""

    refs: tuple[tuple[ImageRef, ...], ...]
    texts: tuple[tuple[str | None, ...], ...]
    image_ids: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        if not len(self.refs) == len(self.texts) == len(self.image_ids):
            raise ValueError(
                f"selection: {len(self.refs)} image rows, {len(self.texts)} text rows and "
                f"{len(self.image_ids)} image-id rows"
            )
        for name, rows in (("images", self.refs), ("texts", self.texts), ("ids", self.image_ids)):
            if len({len(row) for row in rows}) > 1:
                raise ValueError(f"selection: instances with different numbers of {name}")
        if any(len(r) != len(i) for r, i in zip(self.refs, self.image_ids, strict=True)):
            raise ValueError("selection: an image id for every image")

    @property
    def shape(self) -> tuple[int, int, int]:
        """(instances, texts, images)."""
        n = len(self.refs)
        return n, len(self.texts[0]) if n else 0, len(self.refs[0]) if n else 0

    def distinct_refs(self) -> list[ImageRef]:
        """Every image (or crop), once, in order of first appearance."""
        return list(dict.fromkeys(ref for row in self.refs for ref in row))

    def usable(self, failed: Mapping[ImageRef, str]) -> list[bool]:
        """Per instance: whether every one of its images decoded."""
        return [not any(ref in failed for ref in row) for row in self.refs]

    def cells(self, usable: Sequence[bool]) -> list[tuple[int, int, int]]:
        """The (instance, text, image) cells to score: every text that is not padding with
        every image, of the ``usable`` instances."""
        return [
            (n, c, i)
            for n, (row, ok) in enumerate(zip(self.texts, usable, strict=True))
            if ok
            for c, text in enumerate(row)
            if text is not None
            for i in range(len(self.refs[n]))
        ]

    def unreadable(self, failed: Mapping[ImageRef, str]) -> dict[str, str]:
        """image id -> message, for the images in ``failed``."""
        out: dict[str, str] = {}
        for refs, ids in zip(self.refs, self.image_ids, strict=True):
            for ref, image_id in zip(refs, ids, strict=True):
                if ref in failed:
                    out.setdefault(image_id, failed[ref])
        return out


def scatter(shape: tuple[int, int, int], cells: Sequence[tuple[int, int, int]],
            values: np.ndarray) -> np.ndarray:  # fmt: skip
    """An array of ``shape``, float64, NaN but at ``cells``, which get ``values``."""
    out = np.full(shape, np.nan, dtype=np.float64)
    if cells:
        n, c, i = (np.asarray(axis, np.int64) for axis in zip(*cells, strict=True))
        out[n, c, i] = values
    return out


def row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products (cosines of normalised vectors), computed in the vectors' own
    precision and returned as float64."""
    return np.einsum("nd,nd->n", a, b).astype(np.float64)


def candidate_selection(
    candidates: pl.DataFrame, ref_of_item: Mapping[str, ImageRef]
) -> tuple[Selection, list[tuple[int, int]]]:
    """One instance per item (in order of first appearance) with its image (or crop) and its
    candidate rows' texts in row order, and each row's (instance, text) position."""
    order: dict[str, int] = {}
    texts: list[list[str]] = []
    images: list[str] = []
    position: list[tuple[int, int]] = []
    for item_id, image, text in candidates.select("item_id", "image", "text").iter_rows():
        if item_id not in order:
            order[item_id] = len(texts)
            texts.append([])
            images.append(image)
        n = order[item_id]
        position.append((n, len(texts[n])))
        texts[n].append(text)
    width = max((len(row) for row in texts), default=0)
    selection = Selection(
        refs=tuple((ref_of_item[item_id],) for item_id in order),
        texts=tuple((*row, *[None] * (width - len(row))) for row in texts),
        image_ids=tuple((image,) for image in images),
    )
    return selection, position


def image_pair_selection(
    items: pl.DataFrame, images: Mapping[str, str], text_columns: Sequence[str]
) -> Selection:
    """Each item's image_0 and image_1, and its ``text_columns`` (two captions, or one)."""
    ids = sorted(set(items["image_0"].to_list()) | set(items["image_1"].to_list()))
    unknown = [i for i in ids if i not in images]
    if unknown:
        raise ValueError(f"two-image: {len(unknown)} image(s) without a file, e.g. {unknown[0]!r}")
    pairs = items.select("image_0", "image_1").rows()
    return Selection(
        refs=tuple((ImageRef(images[a]), ImageRef(images[b])) for a, b in pairs),
        texts=tuple(items.select(text_columns).rows()),
        image_ids=tuple(pairs),
    )


def triple_selection(
    triples: pl.DataFrame, images: Mapping[str, str], boxes: Mapping[str, Box | None]
) -> Selection:
    """Each SugarCrepe++ triple's image (or its ``boxes`` crop) with P1, P2 and N."""
    rows = triples.select("item_id", "image").rows()
    return Selection(
        refs=tuple((ImageRef(images[image], boxes.get(item)),) for item, image in rows),
        texts=tuple(triples.select("p1", "p2", "n").rows()),
        image_ids=tuple((image,) for _, image in rows),
    )
