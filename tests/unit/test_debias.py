"""Debiasing synthetic benchmarks whose leaks are known by construction."""

import random

import polars as pl
from polars.testing import assert_frame_equal

from vlcomp.blind.attacks import CHANGED_WORDS, CONTEXT, LENGTH, WORD_PRIOR, attack_pairs
from vlcomp.blind.debias import (
    BALANCE_CHANGES,
    BALANCE_LENGTHS,
    DROPPED_SCHEMA,
    TYPES_SCHEMA,
    balance_changes,
    balance_lengths,
    debias,
)
from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.vocabulary import AT_CHANCE, TOO_FEW

COLOURS = ["blue", "green", "yellow", "black", "white", "pink", "brown", "grey"]
SHAPES = ["square", "circle", "star", "cube", "ring", "cone", "disk", "heart", "oval"]
OBJECTS = ["cat", "dog", "box", "lamp", "chair", "table", "vase", "ball", "book", "cup"]
FILLER = [f"w{i}" for i in range(60)]
RELATIONS = [("left of", "right of"), ("over", "under"), ("near", "behind"), ("on", "inside")]


def row(benchmark, item_id, text, is_positive, family, target):
    return (benchmark, item_id, "img.jpg", text, is_positive, family, target, "template", "")


def candidates(items, family="replace", target="rel", benchmark="synth", start=0):
    """A 1+N table from (positive, [negatives]) items; a negative may be (text, target)."""
    rows = []
    for i, (positive, negatives) in enumerate(items, start):
        item_id = f"{family}/{i:04d}"
        rows.append(row(benchmark, item_id, positive, True, family, None))
        for negative in negatives:
            text, kind = negative if isinstance(negative, tuple) else (negative, target)
            rows.append(row(benchmark, item_id, text, False, family, kind))
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA, orient="row")


def converse_items(n, seed=0):
    """ "a X beneath a Y" -> "a X above a Y", always that way round."""
    rng = random.Random(seed)
    return [
        (f"a {x} beneath a {y}", [f"a {x} above a {y}"])
        for x, y in (rng.sample(OBJECTS, 2) for _ in range(n))
    ]


def relation_items(n, seed=0):
    """Other relation changes, each way round at random."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        (x, y), pair = rng.sample(OBJECTS, 2), list(rng.choice(RELATIONS))
        rng.shuffle(pair)
        items.append((f"a {x} {pair[0]} a {y}", [f"a {x} {pair[1]} a {y}"]))
    return items


def length_items(n, negative_longer, seed=0):
    """Random filler words; the negative one word longer in a ``negative_longer`` share."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        size = rng.randint(3, 6)
        short, long = " ".join(rng.sample(FILLER, size)), " ".join(rng.sample(FILLER, size + 1))
        items.append((short, [long]) if rng.random() < negative_longer else (long, [short]))
    return items


def swap_items(n, leak, seed=0):
    """Attribute swaps "red S1 and C S2" / "C S1 and red S2": the negative puts red first
    in a ``leak`` share of the items."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        other, (s1, s2) = rng.choice(COLOURS), rng.sample(SHAPES, 2)
        red_first, red_second = f"red {s1} and {other} {s2}", f"{other} {s1} and red {s2}"
        items.append(
            (red_second, [red_first]) if rng.random() < leak else (red_first, [red_second])
        )
    return items


def colour_items(n, seed=0):
    """ "a C1 S" -> "a C2 S", both colours at random (no direction preferred)."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        (c1, c2), shape = rng.sample(COLOURS, 2), rng.choice(SHAPES)
        items.append((f"a {c1} {shape}", [f"a {c2} {shape}"]))
    return items


def status(result, kind):
    return result.types.filter(pl.col("type") == kind).row(0, named=True)


def accuracy(result, kind, attack):
    cell = result.after.filter((pl.col("type") == kind) & (pl.col("attack") == attack))
    return cell.row(0, named=True)


def assert_at_chance(result, kind, attacks):
    assert status(result, kind)["status"] == AT_CHANCE, result.types
    for attack in attacks:
        cell = accuracy(result, kind, attack)
        assert abs(cell["accuracy"] - 0.5) <= 0.05, cell
        assert cell["ci_low"] <= 0.5 <= cell["ci_high"], cell


def test_relation_converse_leak():
    table = pl.concat(
        [candidates(converse_items(150)), candidates(relation_items(450, seed=1), start=150)]
    )
    result = debias(table)
    assert result.types.schema == pl.Schema(TYPES_SCHEMA)
    assert result.dropped.schema == pl.Schema(DROPPED_SCHEMA)
    before = result.before.filter(
        (pl.col("type") == "replace_rel") & (pl.col("attack") == WORD_PRIOR)
    )
    assert before["accuracy"][0] > 0.6
    assert_at_chance(result, "replace_rel", [WORD_PRIOR, CHANGED_WORDS, CONTEXT])
    kept = result.candidates["text"].to_list()
    assert not any("beneath" in t for t in kept)  # the one-way change is gone
    by_changes = result.dropped.filter(pl.col("step") == BALANCE_CHANGES)
    assert "change 'beneath'->'above' over-represented (150 vs 0 reversed)" in set(
        by_changes["reason"]
    )
    balanced = result.candidates.filter(pl.col("item_id") >= "replace/0150")
    assert balanced.height // 2 >= 0.75 * 450  # most balanced items kept (82 %)
    row = status(result, "replace_rel")
    assert row["pairs_before"] == row["items_before"] == 600
    assert (
        row["after_balance_changes"] <= 450 and row["pairs_after"] == result.candidates.height // 2
    )


def test_length_leak():
    table = candidates(length_items(600, negative_longer=0.7, seed=2), "add", "att")
    result = debias(table)
    before = result.before.filter((pl.col("type") == "add_att") & (pl.col("attack") == LENGTH))
    assert before["accuracy"][0] > 0.65
    assert_at_chance(result, "add_att", [LENGTH, CHANGED_WORDS])
    steps = set(result.dropped["step"])
    assert BALANCE_LENGTHS in steps and BALANCE_CHANGES not in steps  # every change unique
    assert set(
        result.dropped.filter(pl.col("step") == BALANCE_LENGTHS)["reason"].str.slice(0, 35)
    ) == {"negative longer over-represented (4"}
    row = status(result, "add_att")
    assert row["pairs_after"] >= 0.55 * 600


def test_word_order_leak_aflite():
    result = debias(candidates(swap_items(800, leak=0.75, seed=3), "swap", "att"))
    before = result.before.filter((pl.col("type") == "swap_att") & (pl.col("attack") == CONTEXT))
    assert before["accuracy"][0] > 0.7
    assert_at_chance(result, "swap_att", [CONTEXT])
    assert result.dropped["step"].str.starts_with("aflite:").all()
    assert result.dropped["reason"].str.contains("context").all()
    assert status(result, "swap_att")["aflite_rounds"] >= 1
    assert status(result, "swap_att")["pairs_after"] >= 0.5 * 800


def balanced_table():
    return pl.concat(
        [
            candidates(relation_items(400, seed=4)),
            candidates(length_items(400, 0.5, seed=5), "add", "att"),
            candidates(swap_items(400, leak=0.5, seed=6), "swap", "att"),
            candidates(colour_items(400, seed=7), "replace", "att", start=400),
        ]
    )


def test_balanced_benchmark_is_left_alone():
    result = debias(balanced_table())
    assert result.dropped.height <= 0.02 * 1600, result.dropped
    assert (result.types["status"] == AT_CHANCE).all(), result.types


def test_deterministic_and_row_order_free():
    table = pl.concat(
        [
            candidates(converse_items(60)),
            candidates(relation_items(120, seed=8), start=60),
            candidates(swap_items(200, leak=0.8, seed=9), "swap", "att"),
        ]
    )
    first, again = debias(table, seed=1), debias(table, seed=1)
    shuffled = debias(table.sample(fraction=1.0, shuffle=True, seed=3), seed=1)
    for name in ("types", "dropped", "candidates", "after"):
        assert_frame_equal(getattr(first, name), getattr(again, name))
    for name in ("types", "dropped", "after"):
        assert_frame_equal(getattr(first, name), getattr(shuffled, name))
    order = ["benchmark", "item_id", "text"]
    assert_frame_equal(first.candidates.sort(order), shuffled.candidates.sort(order))
    # the kept rows keep the input's order
    kept = table.with_row_index().join(first.candidates, on=table.columns, nulls_equal=True)
    assert kept["index"].is_sorted()
    assert not first.dropped.is_empty()
    assert debias(table, seed=2).dropped["pair_id"].to_list() != first.dropped["pair_id"].to_list()


def test_items_keep_positive_and_lose_leaking_negatives():
    """1+2 items: a one-way relation negative (leaks) and an attribute negative (no prior:
    random words each way); 1+1 items with a relation negative only."""
    rng = random.Random(10)
    items = []
    for _ in range(300):
        (x, y), (c1, c2) = rng.sample(OBJECTS, 2), rng.sample(FILLER, 2)
        negatives = [(f"a {c1} {x} above a {y}", "rel"), (f"a {c2} {x} beneath a {y}", "att")]
        items.append((f"a {c1} {x} beneath a {y}", negatives))
    lonely = [(p, [(n, "rel")]) for p, (n,) in converse_items(40, seed=11)]
    table = candidates(items + lonely, family="atom", target=None)
    result = debias(table)
    again = debias(table.reverse())
    for name in ("types", "dropped", "before", "after"):
        assert_frame_equal(getattr(result, name), getattr(again, name))
    kept = result.candidates
    assert_frame_equal(kept, again.candidates.reverse())
    per_item = kept.group_by("item_id").agg(
        positives=pl.col("is_positive").sum(), rel=(pl.col("target") == "rel").sum()
    )
    assert (per_item["positives"] == 1).all() and (per_item["rel"] == 0).all()
    assert kept.filter(pl.col("item_id").str.slice(5).cast(int) >= 300).is_empty()
    assert per_item.height >= 0.9 * 300  # the attribute negatives stay
    assert status(result, "atom_rel")["pairs_after"] == 0
    assert status(result, "atom_rel")["status"] == TOO_FEW
    assert status(result, "atom_att")["status"] == AT_CHANCE
    assert result.dropped.filter(pl.col("type") == "atom_att").height <= 0.1 * 300
    dropped = result.dropped.filter(pl.col("type") == "atom_rel")
    assert dropped.height == 340 and set(dropped["step"]) == {BALANCE_CHANGES}
    assert dropped["negative"].str.contains(" above ").all()


def test_balancing_steps_alone():
    texts = [("a cat on a mat", "a cat under a mat")] * 5 + [
        ("a cat under a mat", "a cat on a mat")
    ] * 2
    texts += [("a cat by a mat", "a dog by a mat"), ("one two", "one two three")]
    table = candidates([(p, [n]) for p, n in texts])
    pairs = attack_pairs(table)
    kept, dropped = balance_changes(pairs, seed=0)
    assert kept.height == 2 + 2 + 1 + 1  # the singletons stay
    assert dropped.height == 3 and set(dropped["step"]) == {BALANCE_CHANGES}
    assert set(dropped["reason"]) == {"change 'on'->'under' over-represented (5 vs 2 reversed)"}
    other, _ = balance_changes(pairs, seed=1)
    assert set(other["pair_id"]) != set(kept["pair_id"])
    untouched, none = balance_changes(pairs, groups=[("synth", "other")])
    assert untouched.height == pairs.height and none.is_empty()

    kept, dropped = balance_lengths(attack_pairs(candidates(length_items(40, 0.75, seed=12))))
    gap = [
        len(n.split()) - len(p.split())
        for p, n in zip(kept["positive"], kept["negative"], strict=True)
    ]
    assert gap.count(1) == gap.count(-1) == 40 - dropped.height - gap.count(1)
    assert dropped["reason"].str.starts_with("negative longer over-represented").all()


def test_the_panel_holds_the_corpus_attacks_and_they_end_at_chance():
    from vlcomp.blind.debias import Panel

    table = pl.concat(
        [candidates(converse_items(150)), candidates(relation_items(450, seed=1), start=150)]
    )
    # a generator that writes "above" into every relation negative, as the benchmark does
    training = pl.DataFrame(
        [(p, n[0], "replace", "rel") for p, n in converse_items(400, seed=7)],
        schema=["positive", "negative", "family", "target"],
        orient="row",
    )
    from vlcomp.contracts import text_key

    texts = table["text"].unique().sort().to_list()
    scores = pl.DataFrame(
        {
            "scorer": "length",
            "text_key": [text_key(t) for t in texts],
            "score": [float(len(t)) for t in texts],
        }
    )
    panel = Panel(scores={"c": scores}, training={"c": training})
    result = debias(table, panel=panel)
    attacks = set(result.before["attack"])
    assert {"generator@c", "score:length@c"} <= attacks, attacks
    before = result.before.filter(
        (pl.col("type") == "replace_rel") & (pl.col("attack") == "generator@c")
    )
    assert before["accuracy"][0] > 0.6
    assert_at_chance(result, "replace_rel", ["generator@c", "score:length@c", WORD_PRIOR])
