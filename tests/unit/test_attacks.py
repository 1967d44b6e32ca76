"""Blind (text-only) attacks on synthetic benchmarks whose leaks are known by construction."""

import random

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from vlcomp.blind.attacks import (
    ATTACKS,
    BALANCED_BY_DESIGN,
    CHANGED_WORDS,
    CONTEXT,
    GENERATOR,
    LENGTH,
    NO_SCORES,
    NO_TRAINING,
    POOLED,
    PREDICTIONS_SCHEMA,
    RESULTS_SCHEMA,
    WORD_PRIOR,
    attack_pairs,
    attack_panel,
    fit_context,
    fit_length,
    fit_linear,
    fit_word_prior,
    score_fitter,
)
from vlcomp.contracts import CANDIDATES_SCHEMA, SCORES_SCHEMA, text_key
from vlcomp.text import words

COLOURS = ["blue", "green", "yellow", "black", "white", "pink", "brown", "grey"]
SHAPES = ["square", "circle", "star", "cube", "ring", "cone", "disk", "heart", "oval"]
OBJECTS = ["cat", "dog", "box", "lamp", "chair", "table", "vase", "ball", "book", "cup"]
FILLER = [f"w{i}" for i in range(60)]


def candidates(items, family="swap", target="att", benchmark="synth", part=None):
    """A candidate table from (positive, [negatives]) items."""
    rows = []
    for i, (positive, negatives) in enumerate(items):
        for text, is_positive in [(positive, True), *((n, False) for n in negatives)]:
            rows.append(
                {
                    "benchmark": benchmark,
                    "item_id": f"{family}_{target}/{i:04d}",
                    "image": f"img{i}.jpg",
                    "text": text,
                    "is_positive": is_positive,
                    "family": family,
                    "target": target,
                    "generator": "template",
                    "provenance": f"seed={i}",
                }
            )
    frame = pl.DataFrame(rows, schema=CANDIDATES_SCHEMA)
    return frame if part is None else frame.with_columns(part=pl.lit(part))


def length_items(n, leak, seed=0):
    """Random filler words; the negative one word longer (``leak``) or either one longer."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        size = rng.randint(3, 6)
        short, long = rng.sample(FILLER, size), rng.sample(FILLER, size + 1)
        flip = not leak and rng.random() < 0.5
        pair = (long, short) if flip else (short, long)
        items.append((" ".join(pair[0]), [" ".join(pair[1])]))
    return items


def relation_items(n, leak, seed=0):
    """ "a X beneath a Y" vs "a X above a Y": one way only (``leak``) or either way."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        x, y = rng.sample(OBJECTS, 2)
        first, second = ("beneath", "above") if leak or rng.random() < 0.5 else ("above", "beneath")
        items.append((f"a {x} {first} a {y}", [f"a {x} {second} a {y}"]))
    return items


def swap_items(n, leak, seed=0):
    """Attribute swaps "C1 S1 and C2 S2" vs "C2 S1 and C1 S2", one colour "red": with
    ``leak`` the negative always puts red first; else either text does."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        other, (s1, s2) = rng.choice(COLOURS), rng.sample(SHAPES, 2)
        red_first, red_second = f"red {s1} and {other} {s2}", f"{other} {s1} and red {s2}"
        if leak or rng.random() < 0.5:
            items.append((red_second, [red_first]))
        else:
            items.append((red_first, [red_second]))
    return items


def panel(table, attacks=(LENGTH, WORD_PRIOR, CHANGED_WORDS, CONTEXT), **kwargs):
    return attack_panel(table, attacks=list(attacks), **kwargs)


def cell(results, attack, kind="all"):
    row = results.filter((pl.col("attack") == attack) & (pl.col("type") == kind))
    assert row.height == 1
    return row.row(0, named=True)


def test_length_leak_and_balance():
    results, predictions = panel(candidates(length_items(400, leak=True)))
    assert results.schema == pl.Schema(RESULTS_SCHEMA)
    assert predictions.schema == pl.Schema(PREDICTIONS_SCHEMA)
    assert cell(results, LENGTH)["accuracy"] == 1.0
    assert cell(results, LENGTH)["answered"] == cell(results, LENGTH)["n"] == 400
    assert results["accuracy"].is_between(0, 1).all()
    # the changes are unseen random words: the prior has nothing to go on
    assert abs(cell(results, WORD_PRIOR)["accuracy"] - 0.5) < 0.05
    # one row per (part, type, attack) and per (part, attack) over all types
    assert results.filter(pl.col("attack") == LENGTH).select("part", "type").rows() == [
        ("synth", "swap_att"),
        ("synth", "all"),
    ]

    results, _ = panel(candidates(length_items(1000, leak=False, seed=1)))
    length = cell(results, LENGTH)
    assert abs(length["accuracy"] - 0.5) < 0.05
    assert length["ci_low"] <= 0.5 <= length["ci_high"]
    assert length["ci_high"] - length["ci_low"] < 0.1


def test_relation_prior_leak_and_balance():
    results, _ = panel(candidates(relation_items(300, leak=True), "replace", "rel"))
    assert cell(results, WORD_PRIOR)["accuracy"] == 1.0
    assert cell(results, CHANGED_WORDS)["accuracy"] == 1.0
    assert cell(results, CONTEXT)["accuracy"] == 1.0
    assert cell(results, LENGTH)["answered"] == 0  # same length: every pair a tie
    assert cell(results, LENGTH)["accuracy"] == 0.5

    results, _ = panel(candidates(relation_items(1000, leak=False, seed=2), "replace", "rel"))
    for attack in (WORD_PRIOR, CHANGED_WORDS, CONTEXT):
        row = cell(results, attack)
        assert abs(row["accuracy"] - 0.5) < 0.06, (attack, row)


def test_word_order_leak_needs_context():
    results, _ = panel(candidates(swap_items(300, leak=True)))
    changed = cell(results, CHANGED_WORDS)
    assert changed["accuracy"] == 0.5 and changed["answered"] == 0  # same bag of words
    assert cell(results, WORD_PRIOR)["accuracy"] == 0.5
    assert cell(results, CONTEXT)["accuracy"] > 0.95

    results, _ = panel(candidates(swap_items(1000, leak=False, seed=3)))
    assert abs(cell(results, CONTEXT)["accuracy"] - 0.5) < 0.06


def mixed_benchmark():
    """Three types, two parts, 1+3 sets for one type."""
    three = [(p, [n, n + " today", "today " + n]) for p, (n,) in swap_items(60, leak=True, seed=5)]
    return pl.concat(
        [
            candidates(relation_items(80, leak=True), "replace", "rel", part="a"),
            candidates(swap_items(80, leak=True), part="a"),
            candidates(three, "add", "att", part="b"),
        ]
    )


def test_determinism_folds_and_sets():
    table = mixed_benchmark()
    first = panel(table, resamples=200)
    second = panel(table, resamples=200)
    assert_frame_equal(first[0], second[0])
    assert_frame_equal(first[1], second[1])
    shuffled = table.sample(fraction=1.0, shuffle=True, seed=11)
    assert_frame_equal(panel(shuffled, resamples=200)[0], first[0])

    pairs = attack_pairs(table)
    assert pairs.height == 80 + 80 + 3 * 60
    assert pairs.group_by("item_id").agg(pl.col("fold").n_unique())["fold"].max() == 1
    assert set(pairs["fold"].to_list()) == {0, 1, 2, 3, 4}
    again = attack_pairs(shuffled).select("pair_id", pl.col("fold").alias("again"))
    assert pairs.join(again, on="pair_id").filter(pl.col("fold") != pl.col("again")).is_empty()
    assert attack_pairs(table, seed=1)["fold"].to_list() != pairs["fold"].to_list()
    assert set(attack_pairs(table, k=3)["fold"].to_list()) == {0, 1, 2}
    with pytest.raises(ValueError, match="k >= 2"):
        attack_pairs(table, k=1)

    results = first[0]
    kinds = results.filter(pl.col("attack") == LENGTH).select("part", "type").rows()
    assert kinds == [("a", "replace_rel"), ("a", "swap_att"), ("a", "all")] + [
        ("b", "add_att"),
        ("b", "all"),
    ]
    assert cell(results.filter(pl.col("part") == "b"), LENGTH)["n"] == 180
    # pooled over types: one fit; still sane
    pooled, _ = panel(table, per_type=False, resamples=0)
    assert pooled["ci_low"].is_null().all()
    assert pooled["accuracy"].is_between(0, 1).all()


def test_attacks_never_read_image_or_ground_truth():
    table = mixed_benchmark()
    rng = random.Random(7)
    poisoned = table.with_columns(
        image=pl.Series([f"x{rng.random()}" for _ in range(table.height)]),
        provenance=pl.when(pl.col("is_positive")).then(pl.lit("POSITIVE")).otherwise(None),
        generator=pl.Series([rng.choice(["template", "llm:x", None]) for _ in table.rows()]),
    )
    clean = panel(table, resamples=100)
    dirty = panel(poisoned, resamples=100)
    assert_frame_equal(clean[0], dirty[0])
    assert_frame_equal(clean[1], dirty[1])

    # the decision functions take two texts only and are antisymmetric
    pairs = attack_pairs(table)
    pos, neg = pairs["positive"].to_list(), pairs["negative"].to_list()
    scores = {t: float(len(t)) for t in pos[::2] + neg}
    fits = [fit_length, fit_word_prior, fit_linear, fit_context, score_fitter(scores)]
    for fit in fits:
        decide = fit(pos, neg)
        forward, backward = decide(pos, neg), decide(neg, pos)
        assert np.array_equal(forward, -backward)
        assert (forward != 0).any()
        assert np.array_equal(decide(pos, pos), np.zeros(len(pos)))


def test_generator_attack_transfers():
    training_items = swap_items(400, leak=True, seed=20)
    training = pl.DataFrame(
        {
            "positive": [p for p, _ in training_items],
            "negative": [n for _, (n,) in training_items],
            "family": "swap",
            "target": "att",
        }
    )
    leaking = candidates(swap_items(200, leak=True, seed=21))
    results, predictions = panel(leaking, attacks=[GENERATOR], training=training)
    assert cell(results, GENERATOR)["accuracy"] > 0.95
    assert cell(results, GENERATOR)["note"] is None

    balanced = candidates(swap_items(1000, leak=False, seed=22))
    results, _ = panel(balanced, attacks=[GENERATOR], training=training)
    assert abs(cell(results, GENERATOR)["accuracy"] - 0.5) < 0.06

    # a type the training set lacks: the model over all its types, with a note
    other = candidates(swap_items(200, leak=True, seed=23), "replace", "att")
    results, _ = panel(other, attacks=[GENERATOR], training=training)
    assert cell(results, GENERATOR)["accuracy"] > 0.95
    assert cell(results, GENERATOR)["note"] == POOLED

    results, predictions = panel(leaking, attacks=[GENERATOR])
    assert cell(results, GENERATOR)["note"] == NO_TRAINING
    assert cell(results, GENERATOR)["answered"] == 0
    assert (predictions["d"] == 0).all()


def test_score_attack():
    items = length_items(300, leak=False, seed=30)
    table = candidates(items)
    positives = {p for p, _ in items}
    texts = table["text"].to_list()
    value = {t: (1.0 if t in positives else 0.0) + random.Random(t).random() * 0.5 for t in texts}
    scores = pl.DataFrame(
        {"scorer": "lm", "text_key": [text_key(t) for t in texts], "score": list(value.values())},
        schema=SCORES_SCHEMA,
    )
    # negatives score higher under "neg": the attack learns the direction
    scores = pl.concat([scores, scores.with_columns(scorer=pl.lit("neg"), score=-pl.col("score"))])
    results, _ = attack_panel(table, scores=scores)
    assert results["attack"].unique(maintain_order=True).to_list() == [
        *ATTACKS,
        "score:lm",
        "score:neg",
    ]
    for attack in ("score:lm", "score:neg"):
        assert cell(results, attack)["accuracy"] == 1.0
        assert cell(results, attack)["answered"] == 300
    assert cell(results, GENERATOR)["note"] == NO_TRAINING

    dropped = {text_key(p) for p in list(positives)[:50]}
    partial = scores.filter(~pl.col("text_key").is_in(dropped))
    results, _ = attack_panel(table, attacks=["score:lm", "score:other"], scores=partial)
    assert cell(results, "score:lm")["answered"] == 250
    assert cell(results, "score:lm")["accuracy"] == pytest.approx((250 + 25) / 300)
    assert cell(results, "score:other")["note"] == NO_SCORES
    assert cell(results, "score:other")["accuracy"] == 0.5
    results, _ = attack_panel(table, attacks=["score:lm"])
    assert cell(results, "score:lm")["note"] == NO_SCORES


def test_shapes():
    # SugarCrepe++: two positives against one negative
    table = candidates(swap_items(100, leak=True, seed=40))
    paraphrase = table.filter(pl.col("is_positive")).with_columns(
        text=pl.col("text").str.replace(" and ", " together with ")
    )
    two = pl.concat([table, paraphrase])
    with pytest.raises(ValueError, match="not exactly one positive"):
        attack_pairs(two)
    pairs = attack_pairs(two, shape="two_positives")
    assert pairs.height == 200
    assert pairs["pair_id"].n_unique() == 200
    results, _ = panel(two, shape="two_positives")
    assert cell(results, CONTEXT)["accuracy"] > 0.9
    assert cell(results, CONTEXT)["n"] == 200

    # Winoground-style two-image sets: balanced by design
    sets = pl.DataFrame(
        {
            "benchmark": "wino",
            "item_id": ["0", "1", "2"],
            "image_0": "a.png",
            "image_1": "b.png",
            "caption_0": ["x", "y", "z"],
            "caption_1": ["y", "x", "w"],
            "family": ["swap", "swap", None],
            "target": ["obj", "obj", None],
        }
    )
    results, predictions = attack_panel(sets, shape="two_images")
    assert predictions.is_empty() and results.schema == pl.Schema(RESULTS_SCHEMA)
    assert set(results["note"].to_list()) == {BALANCED_BY_DESIGN["two_images"]}
    assert results["accuracy"].is_null().all() and (results["answered"] == 0).all()
    assert cell(results, LENGTH)["n"] == 3
    assert cell(results, LENGTH, "swap_obj")["n"] == 2
    assert cell(results, LENGTH, "unlabelled")["n"] == 1
    with pytest.raises(ValueError, match="shape"):
        attack_pairs(sets, shape="two_images")


def test_tokenisation_is_the_text_layer():
    decide = fit_length(["a t-shirt's"], ["a red t-shirt's"])
    assert len(words("a t-shirt's")) == 2
    assert decide(["one two"], ["one two three"]).tolist() == [1.0]


# ----------------------------------------------------------- the certificate job and summary


def _certify(tmp_path, parts, debiased=None, resamples=100):
    """Run the certificate job on ``parts`` (part -> candidates file) and, with ``debiased``,
    their debiased variants; returns the output paths (table, predictions, png, pdf)."""
    from vlcomp.blind.jobs import AttackSettings, attacks_stage

    files = (("table", "parquet"), ("predictions", "parquet"), ("png", "png"), ("pdf", "pdf"))
    out = {k: tmp_path / f"{k}.{ext}" for k, ext in files}
    attacks_stage(
        parts, "candidates", debiased=debiased or {}, scores={}, generators={},
        table_out=out["table"], predictions_out=out["predictions"], figure_png=out["png"],
        figure_pdf=out["pdf"], settings=AttackSettings(bootstrap_resamples=resamples),
        log=lambda m: None,
    )  # fmt: skip
    return out


def test_certificate_job_writes_table_predictions_and_figure(tmp_path):
    from vlcomp.blind.jobs import ATTACK_CERTIFICATE_SCHEMA
    from vlcomp.certificate import best_attack_table
    from vlcomp.report.attacks import HACKABLE, attacks_markdown

    candidates = tmp_path / "candidates.parquet"
    _length_pairs(120, 1.0).write_parquet(candidates)
    out = _certify(tmp_path, {"toy": candidates})
    table = pl.read_parquet(out["table"])
    assert list(table.schema) == list(ATTACK_CERTIFICATE_SCHEMA)
    assert set(table["variant"]) == {"as_generated"}
    length = table.filter((pl.col("attack") == "length") & (pl.col("type") == "replace_att"))
    assert length["accuracy"][0] == 1.0
    generator = table.filter(pl.col("attack") == "generator")
    assert generator["accuracy"].to_list() == [0.5, 0.5]
    assert generator["note"][0] == "no training negatives"
    assert out["png"].stat().st_size > 0 and out["pdf"].stat().st_size > 0
    best = best_attack_table([out["table"]])
    assert best.filter(pl.col("type") == "replace_att")["status"][0] == HACKABLE
    text = "\n".join(attacks_markdown([out["table"]]))
    row = next(
        line for line in text.splitlines() if "| toy | toy | as_generated | replace_att |" in line
    )
    assert row.startswith("| toy | toy | as_generated | replace_att | 120 | 120 | ")
    assert f"| {HACKABLE} | length 1.000 [1.000, 1.000] |" in row  # the debiasing panel's best
    assert set(table["panel"]) == {"debias", "certify"}


def _length_pairs(n: int, leaking: float) -> pl.DataFrame:
    """1+1 items whose negative is the longer text in a ``leaking`` share of them."""
    rows = []
    for i in range(n):
        colour, other = ("red", "blue", "green")[i % 3], ("pink", "grey", "brown")[i % 3]
        short, long = (
            f"a {colour} circle left of a square",
            f"a {other} circle left of a big square",
        )
        positive, negative = (short, long) if i % 10 < 10 * leaking else (long, short)
        rows += [
            ("toy", f"{i}", "img", positive, True, "replace", "att", "template:x", ""),
            ("toy", f"{i}", "img", negative, False, "replace", "att", "template:x", ""),
        ]
    columns = ["benchmark", "item_id", "image", "text", "is_positive", "family", "target",
               "generator", "provenance"]  # fmt: skip
    return pl.DataFrame(rows, schema=columns, orient="row")


def test_debias_job_and_the_debiased_certificate(tmp_path):
    from vlcomp.blind.jobs import AttackSettings, debias_stage

    candidates = tmp_path / "candidates.parquet"
    _length_pairs(300, 0.7).write_parquet(candidates)
    debiased = {k: tmp_path / f"debiased_{k}.parquet" for k in ("candidates", "types", "dropped")}
    outputs = dict(
        candidates_out=debiased["candidates"],
        types_out=debiased["types"],
        dropped_out=debiased["dropped"],
        settings=AttackSettings(bootstrap_resamples=100),
        log=lambda m: None,
    )
    debias_stage(candidates, **outputs)
    dropped = pl.read_parquet(debiased["dropped"])
    assert dropped.height > 0 and dropped["reason"].null_count() == 0
    kept = pl.read_parquet(debiased["candidates"])
    assert 0 < kept.height < pl.read_parquet(candidates).height
    table = _certify(tmp_path, {"toy": candidates}, {"toy": debiased["candidates"]})["table"]
    certificate = pl.read_parquet(table)
    assert set(certificate["variant"]) == {"as_generated", "debiased"}
    length = certificate.filter((pl.col("attack") == "length") & (pl.col("type") == "all"))
    by_variant = dict(zip(length["variant"], length["accuracy"], strict=True))
    assert by_variant["as_generated"] > 0.6 and by_variant["debiased"] <= 0.55
    # a benchmark every pair of which leaks keeps nothing: the job fails and says why
    _length_pairs(100, 1.0).write_parquet(candidates)
    with pytest.raises(ValueError, match="debiasing kept no pair; per type: replace_att"):
        debias_stage(candidates, **outputs)


def test_a_part_is_debiased_with_the_certificates_folds(tmp_path):
    """A CREPE set per corpus: each part's table is debiased reading its items as the
    certificate does (``<part>/<item_id>``), so the certificate's verdict on the debiased
    variant is the debiasing's own."""
    from vlcomp.blind.attacks import TEXT_ATTACKS
    from vlcomp.blind.jobs import AttackSettings, attacks_stage, debias_stage

    settings = AttackSettings(bootstrap_resamples=100)
    candidates = tmp_path / "candidates.parquet"
    _length_pairs(300, 0.7).write_parquet(candidates)
    parts, debiased = {}, {}
    for part in ("cc12m", "laion"):
        out = {k: tmp_path / f"{part}_{k}.parquet" for k in ("candidates", "types", "dropped")}
        debias_stage(
            candidates, part=part, candidates_out=out["candidates"], types_out=out["types"],
            dropped_out=out["dropped"], settings=settings, log=lambda m: None,
        )  # fmt: skip
        kept = pl.read_parquet(out["candidates"])
        assert kept.columns == pl.read_parquet(candidates).columns
        assert not kept["item_id"].str.starts_with(f"{part}/").any()
        parts[part], debiased[part] = candidates, out["candidates"]
        types = pl.read_parquet(out["types"])
        assert set(types["part"]) == {part}
    table = tmp_path / "attacks.parquet"
    attacks_stage(
        parts, "candidates", debiased=debiased, scores={}, generators={}, table_out=table,
        predictions_out=tmp_path / "p.parquet", figure_png=tmp_path / "a.png",
        figure_pdf=tmp_path / "a.pdf", settings=settings, log=lambda m: None,
    )  # fmt: skip
    certificate = pl.read_parquet(table).filter(
        (pl.col("variant") == "debiased") & (pl.col("type") == "replace_att")
    )
    for part in ("cc12m", "laion"):
        after = pl.read_parquet(tmp_path / f"{part}_types.parquet").row(0, named=True)
        mine = certificate.filter(
            (pl.col("part") == part) & pl.col("attack").is_in(list(TEXT_ATTACKS))
        ).sort("accuracy", descending=True)  # the generator's note row: no training pairs
        assert mine["accuracy"][0] == pytest.approx(after["accuracy_after"])


def test_bootstrap_interval_packed_sums_equal_float_sums():
    from vlcomp.blind.attacks import bootstrap_interval

    rng = np.random.default_rng(3)
    counts = rng.integers(1, 7, size=500).astype(np.int64)
    credits = rng.integers(0, 2 * counts + 1) / 2  # multiples of 1/2, at most the count
    packed = bootstrap_interval(credits, counts, 300, np.random.default_rng(0))
    draws = np.random.default_rng(0).integers(0, 500, size=(300, 500))
    floats = credits[draws].sum(axis=1) / counts[draws].sum(axis=1)
    assert packed == tuple(float(q) for q in np.quantile(floats, [0.025, 0.975]))
    # credits that are not halves take the float sums
    thirds = counts / 3
    low, high = bootstrap_interval(thirds, counts, 300, np.random.default_rng(0))
    assert low == pytest.approx(1 / 3) and high == pytest.approx(1 / 3)


def test_certificate_writes_every_variants_decisions_with_their_pairs(tmp_path):
    from vlcomp.blind.attacks import DECISIONS_SCHEMA
    from vlcomp.contracts import text_key

    table = _length_pairs(40, 1.0)
    candidates, debiased = tmp_path / "candidates.parquet", tmp_path / "debiased.parquet"
    table.write_parquet(candidates)
    table.filter(pl.col("item_id").cast(pl.Int64) < 20).write_parquet(debiased)
    out = _certify(tmp_path, {"toy": candidates}, {"toy": debiased}, resamples=10)
    decisions = pl.read_parquet(out["predictions"])
    assert decisions.schema == pl.Schema(DECISIONS_SCHEMA)
    pairs = decisions.group_by("variant").agg(pl.col("pair_id").n_unique())
    assert dict(pairs.iter_rows()) == {"as_generated": 40, "debiased": 20}
    row = decisions.filter((pl.col("variant") == "debiased") & (pl.col("item_id") == "3")).row(
        0, named=True
    )
    item = table.filter(pl.col("item_id") == "3")
    assert (row["part"], row["type"]) == ("toy", "replace_att")
    assert row["positive_key"] == text_key(item.filter(pl.col("is_positive"))["text"][0])
    assert row["negative_key"] == text_key(item.filter(~pl.col("is_positive"))["text"][0])


def test_what_the_summary_reads_of_decisions_is_what_the_certificate_writes():
    from vlcomp.blind.attacks import DECISIONS_SCHEMA
    from vlcomp.certificate import DECISION_COLUMNS

    assert {c: DECISIONS_SCHEMA[c] for c in DECISION_COLUMNS} == DECISION_COLUMNS
