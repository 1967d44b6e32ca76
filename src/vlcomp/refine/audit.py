"""Checks of our refine stage against the published SugarCrepe release.

(a) blind accuracy of each scorer per type on ``unrefined/`` and ``refined/``;
(b) our refinement of ``unrefined/`` with two scorers: kept counts per type next to the
    published refined counts, overlap with the published items, blind accuracy after;
(c) the share of pairs whose two captions are the same multiset of words, per type.

Each check returns a tidy table and its Markdown; :func:`sugarcrepe_audit` runs all three
and writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from vlcomp.importers.common import Imported
from vlcomp.importers.sugarcrepe import match_refined, read_sugarcrepe_dir
from vlcomp.io import atomic_path, write_parquet
from vlcomp.refine.blind import TiePolicy, blind_accuracy
from vlcomp.refine.figures import plot_refinement_gaps
from vlcomp.refine.refinement import RefinementResult, refine_candidates
from vlcomp.refine.report import markdown_table
from vlcomp.refine.scores import ScorerLike, resolve_scorer, score_candidates
from vlcomp.refine.words import same_word_share

PUBLISHED_REFINED_COUNTS = {
    "add_att": 692,
    "add_obj": 2062,
    "replace_att": 788,
    "replace_obj": 1652,
    "replace_rel": 1406,
    "swap_att": 666,
    "swap_obj": 245,
}
PUBLISHED_UNREFINED_TOTAL = 17_478
# (pairs with identical word multisets, pairs) in the published refined swap files, with
# ``vlcomp.text.words`` (swap_att was 408 when hyphens split words).
PUBLISHED_SAME_WORDS = {"swap_obj": (164, 245), "swap_att": (407, 666)}

_TYPE = pl.format("{}_{}", "family", "target").alias("type")


@dataclass(frozen=True)
class Check:
    table: pl.DataFrame
    markdown: str


def _typed(frame: pl.DataFrame) -> pl.DataFrame:
    """Replace (family, target) by the SugarCrepe type name; keep "all" rows as "all"."""
    return frame.with_columns(
        pl.when(pl.col("family") == "all").then(pl.lit("all")).otherwise(_TYPE).alias("type")
    ).drop("family", "target")


def check_blind_by_type(
    refined: pl.DataFrame,
    unrefined: pl.DataFrame,
    scores: pl.DataFrame,
    scorers: Sequence[str],
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> Check:
    parts = []
    for variant, candidates in [("unrefined", unrefined), ("refined", refined)]:
        table = blind_accuracy(candidates, scores, scorers, tie_policy)
        parts.append(
            _typed(table)
            .with_columns(variant=pl.lit(variant))
            .select("scorer", "variant", "type", "average", "n", "ties", "accuracy", "tie_policy")
        )
    table = pl.concat(parts)
    lines = [f"Blind accuracy per type (tie policy: {tie_policy}; ties: positive = negative)\n"]
    for scorer in scorers:
        rows = table.filter(pl.col("scorer") == scorer).with_columns(
            pl.when(pl.col("average") == "group")
            .then(pl.col("type"))
            .otherwise(pl.col("average"))
            .alias("type")
        )
        pivot = rows.pivot("variant", index="type", values=["n", "accuracy", "ties"])
        lines += [f"\n**{scorer}**\n\n", markdown_table(pivot)]
    return Check(table, "".join(lines))


def check_refinement(
    refined: pl.DataFrame,
    unrefined: pl.DataFrame,
    scores: pl.DataFrame,
    scorers: tuple[str, str],
    grid: int | str = 100,
    seed: int = 0,
    normalisation: tuple[str, str] = ("auto", "auto"),
    tie_policy: TiePolicy = "tie_counts_as_wrong",
) -> tuple[Check, RefinementResult]:
    result = refine_candidates(
        unrefined,
        scores,
        scorers,
        grid=grid,
        seed=seed,
        normalisation=normalisation,
        tie_policy=tie_policy,
    )
    published_ids = match_refined(refined, unrefined).drop_nulls()["unrefined_item_id"]
    counts = _typed(
        result.items.with_columns(in_published=pl.col("item_id").is_in(published_ids.implode()))
        .group_by("family", "target")
        .agg(
            n_unrefined=pl.len().cast(pl.Int64),
            kept=pl.col("kept").sum().cast(pl.Int64),
            kept_in_published=(pl.col("kept") & pl.col("in_published")).sum().cast(pl.Int64),
        )
    ).with_columns(
        published_refined=pl.col("type").replace_strict(
            PUBLISHED_REFINED_COUNTS, return_dtype=pl.Int64
        )
    )
    total = counts.select(
        pl.lit("all").alias("type"), *(pl.col(c).sum() for c in counts.columns if c != "type")
    )
    counts = pl.concat([counts.sort("type"), total.select(counts.columns)]).with_columns(
        kept_share=pl.col("kept") / pl.col("n_unrefined")
    )
    accuracy = _typed(result.accuracy.filter(pl.col("average") != "macro")).select(
        "stage", "scorer", "type", "n", "ties", "accuracy"
    )
    wide = accuracy.pivot("stage", index=["scorer", "type"], values=["accuracy", "ties"])
    kept = result.items.filter("kept")
    balance = pl.concat(
        [
            _typed(kept.with_columns(gap=pl.col(f"gap_{k + 1}"), scorer=pl.lit(name)))
            for k, name in enumerate(scorers)
        ]
    )
    balance = (
        pl.concat([balance, balance.with_columns(type=pl.lit("all"))])
        .group_by("scorer", "type")
        .agg(p_win_untied_after=(pl.col("gap") > 0).sum() / (pl.col("gap") != 0).sum())
    )
    table = (
        counts.join(wide, on="type", how="left")
        .join(balance, on=["scorer", "type"], how="left")
        .select(
            "type",
            "n_unrefined",
            "published_refined",
            "kept",
            "kept_share",
            "kept_in_published",
            "scorer",
            "accuracy_before",
            "accuracy_after",
            "ties_before",
            "ties_after",
            "p_win_untied_after",
        )
        .sort(pl.col("type") == "all", "type", "scorer")
    )
    resolved = result.counts.select("family", "target", "normalisation_1", "normalisation_2")
    text = (
        f"Refinement of unrefined/ with {scorers[0]} (1) and {scorers[1]} (2): K={grid} "
        f"(per type {sorted(set(result.counts['grid'].to_list()))}), "
        f"seed={seed}, normalisation={list(normalisation)} resolved per type to "
        f"{sorted(set(resolved['normalisation_1']))} / {sorted(set(resolved['normalisation_2']))}; "
        f"accuracy tie policy {tie_policy} (rows 'all' are micro averages); "
        "p_win_untied_after: share of positive gaps among the nonzero gaps of the kept pairs "
        f"(1/2 by construction). Published: "
        f"{sum(PUBLISHED_REFINED_COUNTS.values())} of {PUBLISHED_UNREFINED_TOTAL}.\n\n"
        + markdown_table(table)
    )
    notes = result.notes()
    if notes:
        text += "\nGroups that kept nothing:\n\n" + "".join(f"- {n}\n" for n in notes)
    return Check(table, text), result


def check_word_multisets(refined: pl.DataFrame, unrefined: pl.DataFrame) -> Check:
    parts = [
        _typed(same_word_share(c)).with_columns(variant=pl.lit(v))
        for v, c in [("refined", refined), ("unrefined", unrefined)]
    ]
    published = pl.DataFrame(
        {
            "type": list(PUBLISHED_SAME_WORDS),
            "published_same_words": [v[0] for v in PUBLISHED_SAME_WORDS.values()],
            "published_n": [v[1] for v in PUBLISHED_SAME_WORDS.values()],
            "variant": ["refined"] * len(PUBLISHED_SAME_WORDS),
        }
    )
    table = (
        pl.concat(parts)
        .join(published, on=["type", "variant"], how="left")
        .select(
            "variant", "type", "n", "same_words", "share", "published_same_words", "published_n"
        )
        .sort("variant", "type", descending=[True, False])
    )
    text = (
        "Pairs whose positive and negative are the same multiset of words (lower-cased; "
        "words are runs of letters/digits joined across inner apostrophes and hyphens; "
        "other punctuation separates words).\n\n" + markdown_table(table)
    )
    return Check(table, text)


def load_sugarcrepe(sugarcrepe_dir: str | Path) -> tuple[Imported, Imported]:
    root = Path(sugarcrepe_dir)
    return read_sugarcrepe_dir(root / "refined"), read_sugarcrepe_dir(root / "unrefined")


def sugarcrepe_audit(
    sugarcrepe_dir: str | Path,
    scorers: Sequence[ScorerLike],
    out_dir: str | Path,
    *,
    grid: int | str = 100,
    seed: int = 0,
    normalisation: tuple[str, str] = ("auto", "auto"),
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    scores_cache: str | Path | None = None,
) -> dict[str, Path]:
    """Run checks (a)-(c) and write tables (Parquet + Markdown), the refinement's items and
    gap figure, the scores, and ``audit.md`` with everything. (b) uses the first two scorers
    and is skipped with fewer. ``scores_cache``: the shared score cache of ``vlcomp.scorers``
    (read and extended), so that reruns score nothing twice.
    """
    out = Path(out_dir)
    refined, unrefined = load_sugarcrepe(sugarcrepe_dir)
    objects = [resolve_scorer(s) for s in scorers]
    names = [s.name for s in objects]
    texts = pl.concat([refined.candidates, unrefined.candidates])
    scores = score_candidates(texts, objects, scores_cache)
    meta = {"scorers": json.dumps(names), "sugarcrepe_dir": str(sugarcrepe_dir)}
    paths: dict[str, Path] = {"scores": out / "scores.parquet"}
    write_parquet(scores, paths["scores"], meta)
    checks = {
        "blind_by_type": check_blind_by_type(
            refined.candidates, unrefined.candidates, scores, names, tie_policy
        )
    }
    if len(names) >= 2:
        pair = (names[0], names[1])
        check, result = check_refinement(
            refined.candidates,
            unrefined.candidates,
            scores,
            pair,
            grid,
            seed,
            normalisation,
            tie_policy,
        )
        checks["refinement"] = check
        meta_refine = meta | result.params
        paths["refinement_items"] = out / "refinement_items.parquet"
        write_parquet(result.items, paths["refinement_items"], meta_refine)
        paths["refinement_figure_png"] = out / "refinement_gaps.png"
        paths["refinement_figure_pdf"] = out / "refinement_gaps.pdf"
        plot_refinement_gaps(
            result.items, paths["refinement_figure_png"], paths["refinement_figure_pdf"], pair,
            counts=result.counts,
        )  # fmt: skip
    checks["word_multisets"] = check_word_multisets(refined.candidates, unrefined.candidates)
    sections = []
    for name, check in checks.items():
        paths[name] = out / f"{name}.parquet"
        write_parquet(check.table, paths[name], meta)
        paths[f"{name}_md"] = out / f"{name}.md"
        write_text(paths[f"{name}_md"], check.markdown)
        sections.append(f"## {name}\n\n{check.markdown}")
    paths["audit"] = out / "audit.md"
    write_text(paths["audit"], "# SugarCrepe audit\n\n" + "\n".join(sections))
    return paths


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
