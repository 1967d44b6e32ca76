"""Every generator that writes "a"/"an" takes it from vlcomp.text.indefinite_article, so a
letter name or a numeral gets the article of its sound ("an X-ray", "an FBI agent", "an
8-sided circle"), and the LLM validator judges by the same rule (grammar.article_for)."""

from __future__ import annotations

import numpy as np
import pytest

from vlcomp.negatives import graph_edits as ge
from vlcomp.negatives.llm.validate import article_for
from vlcomp.negatives.productivity_text import Attr, Edge, Node, Pattern, render
from vlcomp.text import settled_indefinite_article


def _graph(name: str) -> dict[str, object]:
    return {
        "objects": [{"idx": 0, "name": name, "lemma": name}],
        "attributes": [],
        "relations": [],
    }


@pytest.mark.parametrize(
    ("caption", "foil", "expected"),
    [
        ("A dog on the grass.", "X-ray", "An X-ray on the grass."),
        ("A dog on the grass.", "FBI agent", "An FBI agent on the grass."),
        ("An owl on the grass.", "U-turn sign", "A U-turn sign on the grass."),
        ("An owl on the grass.", "uniform", "A uniform on the grass."),
    ],
)
def test_template_pair_foils_take_the_article_of_their_sound(
    caption: str, foil: str, expected: str
) -> None:
    name = caption.split()[1]
    graph = _graph(name)
    image = ge.ImageContents()
    image.add(graph)
    vocab = ge.Vocabulary(attributes={}, objects=[name, foil])
    edit = ge.replace_object(caption, graph, image, vocab, np.random.default_rng(0))
    assert isinstance(edit, ge.Edit)
    assert edit.text == expected


def test_productivity_captions_take_the_article_of_their_sound() -> None:
    pattern = Pattern(
        nodes=(Node("circle", (Attr("8-sided"),)), Node("star", (Attr("U-shaped"),))),
        edges=(Edge(0, "left of", 1),),
    )
    assert render(pattern) == "an 8-sided circle left of a U-shaped star"


@pytest.mark.parametrize("word", ["X-ray", "FBI", "U-turn", "8", "11", "1800s", "NASA", "herb"])
def test_the_validator_judges_by_the_generators_rule(word: str) -> None:
    assert article_for(word) == settled_indefinite_article(word)
