"""The familiarity-shortcut test: "pick the more familiar caption" rules (binding counts in
the reference corpus, text scorers such as the n-gram) next to the models' accuracies;
see ``checks``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from vlcomp.contracts import GRAPH_SCHEMA, SCORES_SCHEMA
from vlcomp.counts.units import graph_units
from vlcomp.refine.blind import TiePolicy
from vlcomp.refine.scores import with_text_keys
from vlcomp.vocabulary import ALL, MACRO

from .blind_checks import blind_table
from .variants import variant_sorted

BINDING_RULES: dict[str, str] = {
    # familiarity rule -> the count summed (log1p) over a caption's distinct bindings
    "bindings_strict": "perfect_count",
    "bindings_loose": "perfect_count + close_count",
}
FAMILIARITY_SCHEMA: dict[str, pl.DataType] = {
    "variant": pl.String,
    "type": pl.String,
    "predictor": pl.String,
    "kind": pl.String,  # familiarity rule | text scorer | model | chance
    "n": pl.Int64,
    "ties": pl.Int64,  # null for models (their tables carry no tie count)
    "decided": pl.Int64,  # n - ties (null for models)
    "correct": pl.Float64,  # credit summed over items (accuracy * n for models)
    "wins": pl.Int64,  # items won outright (null for models)
    "accuracy": pl.Float64,
    "accuracy_decided": pl.Float64,  # wins / decided (null for models)
    "tie_policy": pl.String,
}


def binding_familiarity_scores(graphs: pl.DataFrame, bindings: pl.DataFrame) -> pl.DataFrame:
    """``SCORES_SCHEMA`` rows of the binding-count familiarity rules for every text of
    ``graphs`` (``text`` + graph columns): the sum over the caption's distinct (attribute,
    object) bindings (same extraction as the counts) of log(1 + count) in the reference
    ``bindings`` table, with count = ``perfect_count`` (``bindings_strict``) or
    ``perfect_count + close_count`` (``bindings_loose``). A caption without a binding, or
    with only unseen ones, scores 0."""
    texts = graphs.select("text", *GRAPH_SCHEMA).unique("text", keep="first").sort("text")
    keyed = with_text_keys(texts)
    units = graph_units(keyed.drop("text").lazy(), "text_key")
    found = (
        units.decoded_bindings()
        .select("doc", "attr", "obj_lemma")
        .unique()
        .join(bindings.lazy(), on=["attr", "obj_lemma"], how="left")
        .select(
            "doc",
            pl.col("perfect_count").fill_null(0).alias("strict"),
            (pl.col("perfect_count").fill_null(0) + pl.col("close_count").fill_null(0)).alias(
                "loose"
            ),
        )
        .collect()
    )
    # math.fsum is exactly rounded, hence independent of the order of a caption's bindings:
    # two captions with the same bindings get the same score (a float sum in a group_by
    # need not be, and a familiarity rule lives on exact ties).
    terms: dict[str, tuple[list[float], list[float]]] = {}
    for doc, strict, loose in found.iter_rows():
        pair = terms.setdefault(doc, ([], []))
        pair[0].append(math.log1p(strict))
        pair[1].append(math.log1p(loose))
    sums = {doc: (math.fsum(a), math.fsum(b)) for doc, (a, b) in terms.items()}
    key_list = keyed["text_key"].to_list()
    scored = pl.DataFrame(
        {
            "text_key": key_list,
            "bindings_strict": [sums.get(k, (0.0, 0.0))[0] for k in key_list],
            "bindings_loose": [sums.get(k, (0.0, 0.0))[1] for k in key_list],
        },
        schema={"text_key": pl.String, "bindings_strict": pl.Float64, "bindings_loose": pl.Float64},
    )
    parts = [
        scored.select(pl.lit(rule).alias("scorer"), "text_key", pl.col(rule).alias("score"))
        for rule in BINDING_RULES
    ]
    return (
        pl.concat(parts)
        .select([pl.col(c).cast(t) for c, t in SCORES_SCHEMA.items()])
        .sort("scorer", "text_key")
    )


MODEL_METRICS = (("accuracy", "accuracy_micro"), ("R@1", "R@1_micro"))


def model_accuracy_table(
    metrics: pl.DataFrame, variants: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """``FAMILIARITY_SCHEMA`` rows of the models (and chance) in ``METRIC_SCHEMA`` tables:
    the split ``all`` rows (every complexity) of each variant's benchmark(s), per type
    ``accuracy`` (or ``R@1`` for sets with several negatives) and its ``_micro`` average as
    type ``all``. A labelled part is shown as ``model [part]``."""
    out = []
    if metrics.height == 0:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    frame = metrics.filter(pl.col("split") == ALL)
    if "complexity" in frame.columns:
        frame = frame.filter(pl.col("complexity").is_null())
    if "part" not in frame.columns:
        frame = frame.with_columns(part=pl.lit(None, pl.String))
    for variant, candidates in variants.items():
        names = candidates["benchmark"].unique().to_list()
        rows = frame.filter(pl.col("benchmark").is_in(names))
        for per_type, micro in MODEL_METRICS:
            chosen = rows.filter(
                ((pl.col("metric") == per_type) & (pl.col("family") != ALL))
                | ((pl.col("metric") == micro) & (pl.col("family") == ALL))
            )
            if chosen.height:
                break
        if not chosen.height:
            continue
        out.append(
            chosen.select(
                pl.lit(variant).alias("variant"),
                pl.col("family").alias("type"),
                pl.when(pl.col("part").is_null())
                .then(pl.col("model"))
                .otherwise(pl.format("{} [{}]", "model", "part"))
                .alias("predictor"),
                pl.when(pl.col("model") == "chance")
                .then(pl.lit("chance"))
                .otherwise(pl.lit("model"))
                .alias("kind"),
                pl.col("n").cast(pl.Int64),
                pl.lit(None, pl.Int64).alias("ties"),
                pl.lit(None, pl.Int64).alias("decided"),
                (pl.col("value") * pl.col("n")).alias("correct"),
                pl.lit(None, pl.Int64).alias("wins"),
                pl.col("value").alias("accuracy"),
                pl.lit(None, pl.Float64).alias("accuracy_decided"),
                pl.col("tie_policy"),
            ).unique(["variant", "type", "predictor"], keep="first", maintain_order=True)
        )
    if not out:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    return pl.concat(out).select([pl.col(c).cast(t) for c, t in FAMILIARITY_SCHEMA.items()])


def familiarity_table(
    variants: Mapping[str, pl.DataFrame],
    scores: pl.DataFrame,
    rules: Sequence[str],
    text_scorers: Sequence[str],
    models: pl.DataFrame | None = None,
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> pl.DataFrame:
    """``FAMILIARITY_SCHEMA``: accuracy of "pick the more familiar caption" per type: the
    familiarity ``rules`` and ``text_scorers`` (both scored in ``scores``, e.g. the
    ``binding_familiarity_scores`` and the n-gram's), then the models' accuracies
    (``models``). For the rules and scorers also ``decided`` (items where the predictor does
    not tie) and ``accuracy_decided`` (items won among those)."""
    parts = []
    names = [*rules, *text_scorers]
    if names:
        table, _ = blind_table(variants, scores, names, tie_policy)
        wrong = table
        if tie_policy != "tie_counts_as_wrong":
            wrong, _ = blind_table(variants, scores, names, "tie_counts_as_wrong")
        wins = wrong.select("variant", "scorer", "type", pl.col("correct").alias("_wins"))
        parts.append(
            table.join(wins, on=["variant", "scorer", "type"], how="left")
            .filter(pl.col("type") != MACRO)
            .with_columns(
                decided=pl.col("n") - pl.col("ties"),
                wins=pl.col("_wins").round().cast(pl.Int64),
                kind=pl.when(pl.col("scorer").is_in(list(rules)))
                .then(pl.lit("familiarity rule"))
                .otherwise(pl.lit("text scorer")),
            )
            .with_columns(
                accuracy_decided=pl.when(pl.col("decided") > 0).then(
                    pl.col("_wins") / pl.col("decided")
                )
            )
            .rename({"scorer": "predictor"})
        )
    if models is not None and models.height:
        parts.append(models)
    if not parts:
        return pl.DataFrame(schema=FAMILIARITY_SCHEMA)
    table = pl.concat(
        [p.select(list(FAMILIARITY_SCHEMA)) for p in parts], how="vertical_relaxed"
    ).select([pl.col(c).cast(t) for c, t in FAMILIARITY_SCHEMA.items()])
    kinds = {"familiarity rule": 0, "text scorer": 1, "model": 2, "chance": 3}
    frame = table.with_columns(_k=pl.col("kind").replace_strict(kinds, return_dtype=pl.Int64))
    return variant_sorted(frame, variants, then=["_k", "predictor"]).drop("_k")
