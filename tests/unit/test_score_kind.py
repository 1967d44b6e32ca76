"""What a model's numbers are computed from: every scorer names its score kind (cosine, ITM
log-odds, BLIP's retrieval score, log-probability), the metric tables carry it per model row
(null for chance and oracles; SugarCrepe++'s text-only accuracy: cosine for every model),
and the summary and the figures say it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.unit.test_hf_joint import blip, blip_hf, folders, llava, llava_legacy  # noqa: F401
from tests.unit.test_two_image import sc_candidates
from vlcomp.evaluate.metrics import (
    COSINE,
    ITM_LOG_ODDS,
    ITM_LOGIT_PLUS_COSINE,
    LOG_PROBABILITY,
    METRIC_SCHEMA,
    SCORE_KINDS,
    EvalSettings,
    recall_table,
    retrieval_ranks,
    with_score_kind,
)
from vlcomp.evaluate.scoring import SCORE_KIND_OF, score_kind_of, scorer_of
from vlcomp.evaluate.two_image import (
    sugarcrepe_pp_metric_table,
    sugarcrepe_pp_predictions,
    sugarcrepe_pp_triples,
    two_image_metric_table,
    two_image_predictions,
)
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.joint import BlipRetrievalScore, MatchingHead
from vlcomp.models.loading import load_model
from vlcomp.report.accounting import SCORE_KIND_TEXT, legend_markdown, score_kinds_text
from vlcomp.vocabulary import CHANCE

SETTINGS = EvalSettings(ks=(1,), resamples=20)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """An open_clip dual encoder (random weights)."""
    import open_clip
    import torch

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("world") / "random.pt"
    torch.save(open_clip.create_model("vlcomp-world-vit").state_dict(), path)
    return load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=str(path)), "cpu")


# ----------------------------------------------------------------------------- scorers


def test_each_scorer_names_the_kind_of_its_scores(world, blip, blip_hf, llava, llava_legacy):  # noqa: F811
    kinds = {
        name: (scorer_of(m).score_kind, scorer_of(m).retrieval_score_kind)
        for name, m in [("world", world), ("blip", blip), ("blip_hf", blip_hf),
                        ("llava", llava), ("llava_legacy", llava_legacy)]
    }  # fmt: skip
    assert kinds == {
        "world": (COSINE, COSINE),
        # BLIP's own retrieval evaluation reranks by ITM match logit + ITC cosine
        "blip": (ITM_LOG_ODDS, ITM_LOGIT_PLUS_COSINE),
        "blip_hf": (ITM_LOG_ODDS, ITM_LOG_ODDS),
        "llava": (LOG_PROBABILITY, LOG_PROBABILITY),
        "llava_legacy": (LOG_PROBABILITY, LOG_PROBABILITY),
    }


def test_every_known_score_has_a_kind_and_an_unknown_one_is_refused():
    assert set(SCORE_KIND_OF.values()) == set(SCORE_KINDS)
    for name in (MatchingHead.score_name, BlipRetrievalScore.score_name, "cosine"):
        assert score_kind_of(name) in SCORE_KINDS
    with pytest.raises(ValueError, match="'itm_probability' has no score kind"):
        score_kind_of("itm_probability")


# ------------------------------------------------------------------------ metric tables


def _retrieval_table() -> pl.DataFrame:
    emb = np.eye(3, dtype=np.float32)
    ranks = retrieval_ranks("m", "b", ["1", "2", "3"], emb, ["a", "b", "c"], ["1", "2", "3"], emb)
    return recall_table(ranks, SETTINGS)


def test_the_job_gives_its_model_rows_the_kind_and_chance_keeps_none():
    table = _retrieval_table()
    assert table.schema == pl.Schema(METRIC_SCHEMA)
    assert table["score_kind"].is_null().all()  # the builders leave it to the job
    kinded = with_score_kind(table, "m", ITM_LOGIT_PLUS_COSINE)
    by_model = dict(kinded.group_by("model").agg(pl.col("score_kind").unique()).iter_rows())
    assert by_model == {"m": [ITM_LOGIT_PLUS_COSINE], CHANCE: [None]}
    assert kinded.drop("score_kind").equals(table.drop("score_kind"))


def test_a_kind_must_be_known_and_belong_to_a_model_of_the_table():
    table = _retrieval_table()
    with pytest.raises(ValueError, match="'similarity' of m: not one of"):
        with_score_kind(table, "m", "similarity")
    with pytest.raises(ValueError, match=r"no metric row of model 'other' \(the table has"):
        with_score_kind(table, "other", COSINE)
    with pytest.raises(ValueError, match="chance rows have no score kind"):
        with_score_kind(table, CHANCE, COSINE)


def test_oracle_rows_of_a_stacked_table_keep_no_kind():
    table = _retrieval_table()
    oracle = table.filter(pl.col("model") == "m").with_columns(model=pl.lit("oracle:exact"))
    kinded = with_score_kind(pl.concat([table, oracle]), "m", COSINE)
    assert kinded.filter(pl.col("model") == "oracle:exact")["score_kind"].is_null().all()


def test_sugarcrepe_pp_text_only_accuracy_is_cosine_for_every_model():
    triples = sugarcrepe_pp_triples(sc_candidates({
        "a": ("0", "p1a", "p2a", [("na", "swap", "att")]),
        "b": ("1", "p1b", "p2b", [("nb", "replace", "obj")]),
    }))  # fmt: skip
    sims = np.array([[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]])
    table = sugarcrepe_pp_metric_table(
        sugarcrepe_pp_predictions("blip", triples, sims, sims), SETTINGS
    )
    kinded = with_score_kind(table, "blip", ITM_LOG_ODDS)
    kind_of = {
        (model, metric.split("_accuracy")[0]): kind
        for model, metric, kind in kinded.select("model", "metric", "score_kind").unique().rows()
    }
    assert kind_of == {("blip", "itt"): ITM_LOG_ODDS, ("blip", "tot"): COSINE,
                       (CHANCE, "itt"): None, (CHANCE, "tot"): None}  # fmt: skip


# ----------------------------------------------------------------------------- report


def _pair_table(path: Path) -> Path:
    """Two-image scores of a dual encoder and a matching head (and chance)."""
    from tests.unit.test_two_image import two_image_items

    items = two_image_items([(f"i{k}", "a", "b", "x", "y", "swap", "att") for k in range(4)])
    perfect = np.tile(np.array([[0.9, 0.1], [0.2, 0.8]]), (4, 1, 1))
    tables = [
        with_score_kind(
            two_image_metric_table(two_image_predictions(model, items, perfect), SETTINGS),
            model, kind,
        )
        for model, kind in (("clip", COSINE), ("blip", ITM_LOG_ODDS))
    ]  # fmt: skip
    pl.concat(tables).unique(maintain_order=True).write_parquet(path)
    return path


def test_every_score_kind_is_explained_in_the_summary_legend():
    assert set(SCORE_KIND_TEXT) == set(SCORE_KINDS)
    legend = "\n".join(legend_markdown())
    for kind, (label, _) in SCORE_KIND_TEXT.items():
        assert f"**{label}** (`{kind}`)" in legend


def test_scores_line_names_each_models_kind(tmp_path):
    table = pl.read_parquet(_pair_table(tmp_path / "wino.parquet"))
    assert score_kinds_text(table) == "Scores: cosine: clip; ITM log-odds: blip."
    # a model with two kinds (SugarCrepe++) is named with the metrics of each; no kind last
    mixed = pl.concat([
        table,
        table.filter(pl.col("model") == "blip").with_columns(
            model=pl.lit("oracle:x"), score_kind=pl.lit(None, pl.String)
        ),
        table.filter((pl.col("model") == "blip") & (pl.col("metric") == "text_score"))
        .with_columns(score_kind=pl.lit(COSINE)),
    ])  # fmt: skip
    assert score_kinds_text(mixed) == (
        "Scores: cosine: blip (text_score), clip; ITM log-odds: blip (group_score, "
        "group_score_macro, group_score_micro, image_score, image_score_macro, "
        "image_score_micro, text_score, text_score_macro, text_score_micro); "
        "no score kind: oracle:x."
    )
    assert score_kinds_text(table.drop("score_kind")) == ""  # written before it was recorded
    with pytest.raises(ValueError, match="wino.parquet: unknown score kind"):
        score_kinds_text(table.with_columns(score_kind=pl.lit("dot")), tmp_path / "wino.parquet")


def test_summary_and_figures_say_what_the_values_are(tmp_path, monkeypatch):
    import vlcomp.report.figures as figures
    from vlcomp.figure_files import save_figure
    from vlcomp.report.figures_crepe import metrics_markdown

    emb = np.eye(3, dtype=np.float32)
    tables = [
        with_score_kind(
            recall_table(retrieval_ranks(model, "coco", ["1", "2", "3"], emb, ["a", "b", "c"],
                                         ["1", "2", "3"], emb), SETTINGS),
            model, kind,
        )
        for model, kind in (("clip", COSINE), ("blip", ITM_LOGIT_PLUS_COSINE))
    ]  # fmt: skip
    retrieval = tmp_path / "coco.parquet"
    pl.concat(tables).unique(maintain_order=True).write_parquet(retrieval)
    out = tmp_path / "summary.md"
    metrics_markdown([retrieval], out)
    section = out.read_text().split("\n## coco\n")[1]
    assert "\nScores: cosine: clip; ITM logit + ITC cosine: blip.\n" in section
    path = _pair_table(tmp_path / "wino.parquet")
    notes: list[str] = []

    def capture(fig, png, pdf):
        notes.append(" ".join(fig._supxlabel.get_text().split()))
        save_figure(fig, png, pdf)

    monkeypatch.setattr(figures, "save_figure", capture)
    figures.plot_scores(path, tmp_path / "s.png", tmp_path / "s.pdf", ["text_score"])
    assert notes == ["Scores: cosine: clip; ITM log-odds: blip."]


def test_crepe_figures_say_what_the_values_are(tmp_path, monkeypatch):
    import vlcomp.report.figures_crepe as figures_crepe
    from vlcomp.figure_files import save_figure

    rows = [
        (model, "crepe", None, split, family, "R@1", value, 40, level)
        for model, value in (("clip", 0.6), ("blip", 0.7), (CHANCE, 0.2))
        for split in ("all", "SC", "no_compound")
        for family in ("atom_att", "comp_rel")
        for level in (None, 4, 5)
    ]  # fmt: skip
    frame = pl.DataFrame(
        rows, orient="row",
        schema=["model", "benchmark", "part", "split", "family", "metric", "value", "n",
                "complexity"],
    ).with_columns(
        ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1,
        score_kind=pl.col("model").replace_strict(
            {"clip": COSINE, "blip": ITM_LOG_ODDS}, default=None, return_dtype=pl.String
        ),
    )  # fmt: skip
    frame.write_parquet(tmp_path / "crepe.parquet")
    notes: list[str] = []

    def capture(fig, png, pdf):
        notes.append(" ".join(fig._supxlabel.get_text().split()))
        save_figure(fig, png, pdf)

    monkeypatch.setattr(figures_crepe, "save_figure", capture)
    figures_crepe.plot_splits_by_type(tmp_path / "crepe.parquet", tmp_path / "a.png",
                                      tmp_path / "a.pdf")  # fmt: skip
    figures_crepe.plot_complexity(tmp_path / "crepe.parquet", tmp_path / "b.png",
                                  tmp_path / "b.pdf")  # fmt: skip
    scores = "Scores: cosine: clip; ITM log-odds: blip."
    assert notes == [
        f"Not shown: 80 items have no compound (no_compound). {scores}",
        f"complexity n (atoms) {scores}",
    ]
