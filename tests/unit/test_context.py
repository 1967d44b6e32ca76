"""Negatives the text encoders can read (vlcomp.negatives.context): the context length of the
evaluated text towers, resolved from model config files without torch, and the check in the
template generators (pairs, productivity): a negative that differs from its positive only
after token N is removed and counted, one that differs before is kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO
from vlcomp.contracts import EVAL_ITEMS_SCHEMA
from vlcomp.models.catalogue import (
    DEFAULT_CONTEXT_LENGTH,
    context_length_of,
    resolve_context_length,
)
from vlcomp.negatives.context import ContextCheck, context_reason, identical_negatives
from vlcomp.negatives.jobs import pairs_job
from vlcomp.negatives.pairs import template_pairs
from vlcomp.negatives.productivity_graph import Walk, scene_graph_from_vg
from vlcomp.negatives.productivity_negatives import CONTEXT_ONLY, negation_negatives
from vlcomp.negatives.productivity_text import pattern_from_walk, render

WORLD = {"w": {"open_clip": "vlcomp-world-rn"}, "v": {"open_clip": "vlcomp-world-vit"}}
CLIP = {"clip": {"open_clip": "ViT-B-32-quickgelu", "pretrained": "openai"}}


# ------------------------------------------------------------------ context length


def test_auto_is_the_smallest_context_among_the_evaluated_text_towers() -> None:
    models = {**WORLD, **CLIP}
    assert context_length_of("vlcomp-world-rn") == 32  # ours (models/model_configs)
    assert context_length_of("ViT-B-32-quickgelu") == 77  # open_clip's
    assert resolve_context_length("auto", models, ["clip"]) == 77
    assert resolve_context_length("auto", models, ["clip", "w"]) == 32
    assert resolve_context_length("auto", models, []) == DEFAULT_CONTEXT_LENGTH
    assert resolve_context_length(20, models, ["clip", "w"]) == 20  # an integer as given
    with pytest.raises(ValueError, match="integer >= 3"):
        resolve_context_length(2, models, [])
    with pytest.raises(ValueError, match="not under models"):
        resolve_context_length("auto", models, ["gone"])


def test_a_local_dir_config_and_an_unknown_architecture(tmp_path: Path) -> None:
    folder = tmp_path / "tower"
    folder.mkdir()
    config = {"model_cfg": {"embed_dim": 8, "vision_cfg": {}, "text_cfg": {"context_length": 16}}}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    assert context_length_of(f"local-dir:{folder}") == 16
    assert context_length_of("no-such-architecture") == DEFAULT_CONTEXT_LENGTH


def test_the_workflow_resolves_it_without_importing_torch() -> None:
    code = (
        "import sys, yaml\n"
        "from vlcomp.models.catalogue import resolve_context_length\n"
        "c = yaml.safe_load(open('config/config.yaml'))\n"
        "print(resolve_context_length('auto', c['models'], c['evaluate']['models']))\n"
        "print(sorted(m for m in ('torch', 'open_clip') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["32", "[]"]


# --------------------------------------------------------------------------- check


def test_the_check_reads_only_the_context_of_the_tokenizer() -> None:
    head = "a red square and a small circle"  # 9 tokens with start and end
    check = ContextCheck(9)
    assert check.reason == context_reason(9) == "context: identical within 9 tokens"
    assert check.identical(head + " near a star", head + " near a heart")  # after token 9
    assert not check.identical(head, head.replace("red", "blue"))  # token 3
    assert check.identical("a Red square", "a red square")  # CLIP's BPE lower-cases
    assert not ContextCheck(77).identical(head + " near a star", head + " near a heart")
    with pytest.raises(ValueError, match="its context is not 12"):
        ContextCheck(12, tokenizer=lambda texts: np.zeros((len(texts), 9))).ids("x")


def test_identical_negatives_of_a_candidates_table() -> None:
    tail = " and a circle" * 10
    rows = [
        ("i1", "a red square" + tail, True),
        ("i1", "a red square" + tail + " and a star", False),  # after 32 tokens
        ("i1", "a blue square" + tail, False),
        ("i2", "a red square" + tail + " and a star", True),  # another item's positive
        ("i2", "a red square" + tail + " and a heart", False),
    ]
    frame = pl.DataFrame(rows, schema=["item_id", "text", "is_positive"], orient="row")
    same = identical_negatives(frame, ContextCheck(32))
    assert same.select("item_id", "text").rows() == [rows[1][:2], rows[4][:2]]
    assert identical_negatives(frame, ContextCheck(77)).height == 0


# ------------------------------------------------------------------ template pairs


def _item(item_id: str, image: str, text: str, objects: list[str]) -> dict[str, Any]:
    return {
        "item_id": item_id, "source": "coco", "image_id": image, "region_id": None,
        "text": text, "x": None, "y": None, "width": None, "height": None,
        "objects": [{"idx": i, "name": o, "lemma": o} for i, o in enumerate(objects)],
        "attributes": [], "relations": [],
    }  # fmt: skip


# "dog" is the 10th token with the start token: beyond a context of 8; "cat" is the 3rd.
ITEMS = pl.DataFrame(
    [
        _item("late", "a", "in this picture there is a small brown dog", ["dog"]),
        _item("early", "b", "a cat", ["cat"]),
    ],
    schema=EVAL_ITEMS_SCHEMA,
)


def test_template_pairs_drop_and_count_edits_beyond_the_context() -> None:
    free, free_failures = template_pairs(ITEMS, 0, "pairs")
    assert sorted(set(free["item_id"])) == ["early/replace_obj", "late/replace_obj"]
    candidates, failures = template_pairs(ITEMS, 0, "pairs", ContextCheck(8))
    assert sorted(set(candidates["item_id"])) == ["early/replace_obj"]
    counts = dict(failures.iter_rows())
    assert counts.pop("replace obj: context: identical within 8 tokens") == 1
    assert counts == dict(free_failures.iter_rows())  # nothing else changes
    # the pair kept is the one the unchecked run made (same draws)
    assert candidates.equals(free.filter(pl.col("item_id").str.starts_with("early/")))


def test_pairs_job_takes_the_context_length(tmp_path: Path) -> None:
    ITEMS.write_parquet(tmp_path / "items.parquet")
    out = [str(tmp_path / f"{k}.parquet") for k in ("candidates", "boxes", "failures")]
    lines: list[str] = []
    pairs_job(str(tmp_path / "items.parquet"), 0, "pairs", *out, lines.append, context_length=8)
    assert pl.read_parquet(out[0])["item_id"].unique().to_list() == ["early/replace_obj"]
    assert pl.read_parquet(out[1])["item_id"].to_list() == ["early/replace_obj"]
    failures = dict(pl.read_parquet(out[2]).iter_rows())
    assert failures["replace obj: context: identical within 8 tokens"] == 1
    assert pl.read_parquet_metadata(out[0])["context_length"] == "8"


# -------------------------------------------------------------------- productivity


def _two_objects() -> tuple[Any, Any, str]:
    entry = {
        "image_id": 7,
        "objects": [
            {"object_id": 10, "names": ["circle"], "attributes": ["red", "small"],
             "x": 10, "y": 10, "w": 20, "h": 20},
            {"object_id": 11, "names": ["square"], "attributes": ["blue"],
             "x": 40, "y": 10, "w": 20, "h": 20},
        ],
        "relationships": [
            {"relationship_id": 100, "subject_id": 10, "object_id": 11, "predicate": "left of"}
        ],
    }  # fmt: skip
    graph, dropped = scene_graph_from_vg(entry, 100, 100)
    assert dropped == []
    walk = Walk((0, 1), ((0, "red"), (0, "small"), (1, "blue")), (0,), 0)
    pattern = pattern_from_walk(graph, walk)
    return graph, pattern, render(pattern, ())


def _negations(context: ContextCheck | None) -> Any:
    graph, pattern, positive = _two_objects()
    assert positive == "a red small circle left of a blue square"
    return negation_negatives(graph, pattern, positive, np.random.default_rng(0), 10, (), context)


def test_productivity_negatives_beyond_the_context_are_passed_over() -> None:
    free = _negations(None)
    assert len(free.negatives) == 4 and free.context == 0
    # 6 tokens: start, "a red small circle", end; negating "blue" or the relation is unread
    result = _negations(ContextCheck(6))
    assert sorted(n.change["atom"] for n in result.negatives) == ["red circle", "small circle"]
    assert result.context == 2 and result.failure(1) is None
    # a context of 3 reads one word: no negative is left, and the item says why
    none = _negations(ContextCheck(3))
    assert none.negatives == [] and none.context == 4 and none.failure(1) == CONTEXT_ONLY


def test_productivity_counts_them_per_family_and_complexity() -> None:
    """In the benchmark's failures table: (reason, family, complexity) -> negatives passed
    over; "a red circle left of a not blue square" changes its 8th token, past 6."""
    from vlcomp.negatives.productivity import ProductivitySettings, build_image

    graph, _, _ = _two_objects()
    settings = ProductivitySettings.from_mapping(
        {"complexities": [5], "walks_per_image": 1, "min_area": 0, "min_area_fraction": 0,
         "min_aspect": 0.01, "max_aspect": 100}
    )  # fmt: skip
    free = build_image(graph, settings, 0, None)
    out = build_image(graph, settings, 0, None, context=ContextCheck(6))
    assert "a red circle left of a not blue square" in [c["text"] for c in free.candidates]
    assert "a red circle left of a not blue square" not in [c["text"] for c in out.candidates]
    assert len(out.candidates) == len(free.candidates) - 1
    assert out.failures - free.failures == {("context: identical within 6 tokens", "neg", 5): 1}


def test_the_text_shortcut_agrees_with_the_tokenizer() -> None:
    """``decided_by_text`` is exact: wherever it decides, the real tokenizer agrees."""
    from open_clip.tokenizer import SimpleTokenizer

    from vlcomp.negatives.context import decided_by_text

    rng = np.random.default_rng(0)
    words = "a the dog dogs man riding brown horse on sandy beach next to red, blue car-park"
    words = words.split()
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 25))) for _ in range(300)]
    pairs = [(t, t.upper()) for t in texts[:20]] + [(t, t + " ") for t in texts[20:40]]
    pairs += [(t, t.replace(" ", "  ", 1)) for t in texts[40:60]]
    pairs += [(texts[i], texts[i + 1]) for i in range(60, 299)]
    for t in texts[:100]:  # one word changed at a random place
        cut = t.split()
        cut[int(rng.integers(len(cut)))] = str(rng.choice(words))
        pairs.append((t, " ".join(cut)))
    pairs += [("Tom &amp; Jerry", "Tom & Jerry"), ("a café", "a cafe")]
    decided = 0
    for n in (5, 8, 16, 32, 77):
        tokenizer = SimpleTokenizer(context_length=n)
        for a, b in pairs:
            verdict = decided_by_text(a, b, n)
            if verdict is None:
                continue
            decided += 1
            same = (tokenizer([a]) == tokenizer([b])).all().item()
            assert verdict == same, (n, a, b)
    assert decided > 1500  # most pairs need no tokenizer
