"""One item shape for every selection task (``evaluate.selection``) and the one scoring path
(``Scorer.score_selection``): each task's items laid out as (instances, texts, images), and
an embedding model's scores equal to the dot products of its embeddings, cell by cell."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.unit import test_embed_loader
from vlcomp.evaluate.embed import embed_image_refs, embed_texts
from vlcomp.evaluate.images import ImageRef, UnreadableImageError
from vlcomp.evaluate.scoring import scorer_of
from vlcomp.evaluate.selection import (
    Selection,
    candidate_selection,
    image_pair_selection,
    scatter,
    triple_selection,
)

A, B, C = ImageRef("a.jpg"), ImageRef("b.jpg"), ImageRef("b.jpg", (1, 2, 3, 4))


def test_candidate_sets_of_different_sizes_are_padded_in_row_order():
    candidates = pl.DataFrame(
        {"item_id": ["x", "y", "x", "y", "y"], "image": ["ia", "ib", "ia", "ib", "ib"],
         "text": ["x0", "y0", "x1", "y1", "y2"]}
    )  # fmt: skip
    selection, position = candidate_selection(candidates, {"x": A, "y": C})
    assert selection.shape == (2, 3, 1)
    assert selection.texts == (("x0", "x1", None), ("y0", "y1", "y2"))
    assert selection.refs == ((A,), (C,)) and selection.image_ids == (("ia",), ("ib",))
    assert position == [(0, 0), (1, 0), (0, 1), (1, 1), (1, 2)]
    assert selection.cells([True, False]) == [(0, 0, 0), (0, 1, 0)]


def test_two_image_image_selection_and_triples_fill_the_same_shape():
    images = {"0": "a.jpg", "1": "b.jpg"}
    items = pl.DataFrame({"caption_0": ["c0"], "caption_1": ["c1"], "caption": ["c"],
                          "image_0": ["0"], "image_1": ["1"]})  # fmt: skip
    two = image_pair_selection(items, images, ["caption_0", "caption_1"])
    assert two.shape == (1, 2, 2) and two.texts == (("c0", "c1"),) and two.refs == ((A, B),)
    assert two.cells([True]) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)]
    assert image_pair_selection(items, images, ["caption"]).shape == (1, 1, 2)
    with pytest.raises(ValueError, match="1 image\\(s\\) without a file, e.g. '1'"):
        image_pair_selection(items, {"0": "a.jpg"}, ["caption"])
    triples = pl.DataFrame({"item_id": ["t"], "image": ["1"], "p1": ["p"], "p2": ["q"],
                            "n": ["n"]})  # fmt: skip
    three = triple_selection(triples, images, {"t": (1, 2, 3, 4)})
    assert three.shape == (1, 3, 1) and three.refs == ((C,),) and three.image_ids == (("1",),)


def test_a_failed_image_takes_its_whole_instance_and_is_reported_by_id():
    selection = Selection(((A, B), (B, A), (A, A)), (("s", "t"),) * 3,
                          (("ia", "ib"), ("ib", "ia"), ("ia", "ia")))  # fmt: skip
    failed = {B: "broken"}
    assert selection.usable(failed) == [False, False, True]
    assert selection.unreadable(failed) == {"ib": "broken"}
    assert selection.distinct_refs() == [A, B]
    out = scatter(selection.shape, selection.cells([False, False, True]), np.arange(4.0))
    assert np.isnan(out[:2]).all() and out[2].tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_ragged_rows_are_refused():
    with pytest.raises(ValueError, match="different numbers of texts"):
        Selection(((A,), (B,)), (("s",), ("s", "t")), (("a",), ("b",)))
    with pytest.raises(ValueError, match="2 image rows, 1 text rows"):
        Selection(((A,), (B,)), (("s",),), (("a",), ("b",)))


# fixtures: a random open_clip world ViT, and JPEG photos and crops (refs[4]: not an image)
checkpoint = test_embed_loader.checkpoint
world = test_embed_loader.world_model
refs = test_embed_loader.refs


@pytest.fixture(scope="module")
def photos(refs) -> list[ImageRef]:
    """Two photos, a crop, and a file that is not an image."""
    return [refs[0], refs[3], refs[1], refs[4]]


def test_embedding_scores_are_the_embeddings_dot_products_cell_by_cell(world, photos):
    texts = ("a red cube", "a blue ball", "two green cones", "a cat")
    selection = Selection(
        ((photos[0], photos[1]), (photos[2], photos[0])),
        ((texts[0], texts[1], None), (texts[2], texts[3], texts[0])),
        (("p0", "p1"), ("p2", "p0")),
    )
    scores = scorer_of(world).score_selection(
        selection, 2, None, None, lambda label: None, None, None
    )
    images, _ = embed_image_refs(world, photos[:3], 4)
    vectors, _ = embed_texts(world, list(texts), 4)
    assert scores.shape == (2, 3, 2) and scores.dtype == np.float64
    assert np.isnan(scores[0, 2]).all()  # padding
    first = vectors[[0, 1]] @ images[[0, 1]].T  # [text, image]
    second = vectors[[2, 3, 0]] @ images[[2, 0]].T
    assert scores[0, :2] == pytest.approx(first, abs=1e-6)
    assert scores[1] == pytest.approx(second, abs=1e-6)


def test_an_unreadable_image_raises_or_is_recorded(world, photos):
    selection = Selection(((photos[0],), (photos[3],)), (("a cat",), ("a dog",)),
                          (("good",), ("bad",)))  # fmt: skip
    scorer = scorer_of(world)
    with pytest.raises(UnreadableImageError):
        scorer.score_selection(selection, 2, None, None, lambda label: None, None, None)
    failed: dict[ImageRef, str] = {}
    lines: list[str] = []
    scores = scorer.score_selection(
        selection, 2, None, None, lambda label: None, lines.append, failed
    )
    assert list(failed) == [photos[3]] and selection.unreadable(failed).keys() == {"bad"}
    assert np.isfinite(scores[0]).all() and np.isnan(scores[1]).all()
    assert "1 images or crops could not be decoded" in lines[0]
    assert "1/1 texts" in lines[0]  # the excluded instance's text is not embedded
