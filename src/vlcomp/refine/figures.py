"""Figures of the refine stage (PNG + PDF, written deterministically)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.colors import LogNorm

from vlcomp.figure_files import save_figure
from vlcomp.refine.candidates import GROUP_COLUMNS
from vlcomp.refine.priors import AUTO, AUTO_MAX_BINS, heatmap_bins, masked_reasons


def _label(row: dict[str, object], group_by: list[str]) -> str:
    return " / ".join(str(row[c]) for c in group_by if row[c] is not None)


def plot_refinement_gaps(
    items: pl.DataFrame,
    png: str | Path,
    pdf: str | Path,
    scorer_names: tuple[str, str] = ("scorer 1", "scorer 2"),
    group_by: list[str] | None = None,
    bins: int = 40,
    counts: pl.DataFrame | None = None,
) -> None:
    """SugarCrepe Fig. 4 style: per group, a 2-D histogram of the two scorers' normalised
    gaps before (left) and after (right) refinement; titles give each scorer's share of
    positive gaps among the nonzero ones, and its number of zero gaps (ties). A group that
    kept nothing says why on its "after" panel (``counts``' ``note``, from
    ``refine_candidates``)."""
    group_by = list(group_by or GROUP_COLUMNS)
    groups = items.select(group_by).unique().sort(group_by, nulls_last=True).to_dicts()
    fig, axes = plt.subplots(
        len(groups), 2, figsize=(6.4, 2.9 * len(groups)), squeeze=False, sharex=True, sharey=True
    )
    edges = np.linspace(-1.0, 1.0, bins + 1)
    notes = {}
    if counts is not None and "note" in counts.columns:
        notes = {
            tuple(row[c] for c in group_by): row["note"]
            for row in counts.filter(pl.col("note").is_not_null()).iter_rows(named=True)
        }
    for row_axes, group in zip(axes, groups, strict=True):
        rows = items.filter(
            pl.all_horizontal(
                pl.col(c).is_null() if group[c] is None else pl.col(c) == group[c] for c in group_by
            )
        )
        for ax, (stage, subset) in zip(
            row_axes, [("before", rows), ("after", rows.filter("kept"))], strict=True
        ):
            x, y = subset["normalised_1"].to_numpy(), subset["normalised_2"].to_numpy()
            counts, _, _ = np.histogram2d(x, y, bins=[edges, edges])
            if counts.any():
                ax.pcolormesh(
                    edges, edges, np.ma.masked_equal(counts.T, 0), norm=LogNorm(), cmap="viridis"
                )
            ax.axhline(0, color="grey", linewidth=0.5)
            ax.axvline(0, color="grey", linewidth=0.5)
            g1, g2 = subset["gap_1"].to_numpy(), subset["gap_2"].to_numpy()
            wins = [f"{(g > 0).sum() / max(1, (g != 0).sum()):.2f}" for g in (g1, g2)]
            ties = [str(int((g == 0).sum())) for g in (g1, g2)]
            ax.set_title(
                f"{_label(group, group_by)}: {stage} (n={subset.height})\n"
                f"P(gap>0 | gap!=0) = {wins[0]} / {wins[1]}; ties {ties[0]} / {ties[1]}",
                fontsize=7,
            )
            ax.set_xlim(-1, 1)
            ax.set_ylim(-1, 1)
            ax.set_aspect("equal")
            ax.tick_params(labelsize=6)
            note = notes.get(tuple(group[c] for c in group_by))
            if stage == "after" and subset.height == 0:
                _say_why(ax, note or "refinement kept no pair of this group")
    for ax in axes[-1]:
        ax.set_xlabel(f"normalised gap, {scorer_names[0]}", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"normalised gap, {scorer_names[1]}", fontsize=7)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def _say_why(ax: plt.Axes, text: str) -> None:
    """Why a panel is empty, written on it."""
    ax.text(0.5, 0.5, textwrap.fill(text, 38), transform=ax.transAxes, ha="center",
            va="center", fontsize=6, wrap=True,
            bbox={"facecolor": "white", "edgecolor": "#999999", "alpha": 0.9})  # fmt: skip


def plot_prior_heatmap(
    table: pl.DataFrame,
    png: str | Path,
    pdf: str | Path,
    lm_name: str = "blind LM",
    bins_setting: int | str | None = None,
) -> None:
    """Accuracy per (positive, negative) perplexity bin, one panel per model; cells with
    fewer than ``min_count`` items are masked (grey). Titles give the b x b bins used; with
    ``bins_setting="auto"`` a caption says how b was chosen. A panel whose every cell is
    masked says why (``priors.masked_reasons``)."""
    models = table["model"].unique().sort().to_list()
    reasons = masked_reasons(table)
    bins = heatmap_bins(table)
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.6), squeeze=False)
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#dddddd")
    image = None
    for ax, model in zip(axes[0], models, strict=True):
        rows = table.filter(pl.col("model") == model).sort("positive_bin", "negative_bin")
        values = rows["accuracy"].fill_null(np.nan).to_numpy().reshape(bins, bins)
        image = ax.imshow(np.ma.masked_invalid(values), origin="lower", cmap=cmap, vmin=0, vmax=1)
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=4.5)
        auto = ", auto" if bins_setting == AUTO else ""
        ax.set_title(
            f"{model}: {bins}x{bins} bins{auto} (masked: n < {int(rows['min_count'][0])})",
            fontsize=8,
        )
        ax.set_xlabel(f"negative perplexity bin ({lm_name}, low to high)", fontsize=7)
        ax.set_ylabel("positive perplexity bin (low to high)", fontsize=7)
        ax.set_xticks(range(bins))
        ax.set_yticks(range(bins))
        ax.tick_params(labelsize=6)
        if model in reasons:
            _say_why(ax, reasons[model])
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="accuracy")
    if bins_setting == AUTO and models:
        n = int(table.group_by("model").agg(pl.col("n").sum())["n"].min())
        fewest = ", the fewest of any model" if len(models) > 1 else ""
        caption = (
            f"priors.bins auto: b = {bins}, the largest b <= {AUTO_MAX_BINS} with "
            f"n / b\u00b2 >= min_count = {int(table['min_count'][0])} (n = {n} items{fewest}), "
            "at least 2"
        )
        fig.text(0.01, 0.01, textwrap.fill(caption, 70 * len(models)), fontsize=6, va="bottom")
    save_figure(fig, png, pdf)


def plot_attacks(certificate: pl.DataFrame, png: str | Path, pdf: str | Path) -> None:
    """One panel per (part, negative type), one bar per blind attack and variant (as
    generated solid, debiased hatched): its accuracy with the bootstrap 95 % interval,
    chance as a dashed line, the pairs it decided under the bar. A panel where no attack
    applies says why."""
    cells = certificate.select("part", "type").unique(maintain_order=True).to_dicts()
    attacks = certificate["attack"].unique(maintain_order=True).to_list()
    variants = certificate["variant"].unique(maintain_order=True).to_list()
    columns = min(4, len(cells))
    rows = -(-len(cells) // columns)
    width = min(13.3, max(3.2, 0.32 * len(attacks) * len(variants) + 1.2) * columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(width, 3.1 * rows), squeeze=False, sharey=True,
        constrained_layout=True,
    )  # fmt: skip
    colours = plt.get_cmap("tab20")
    bar = 0.8 / len(variants)
    for ax, cell in zip(axes.flat, cells, strict=False):
        rows_of = certificate.filter(
            (pl.col("part") == cell["part"]) & (pl.col("type") == cell["type"])
        )
        by_key = {(r["variant"], r["attack"]): r for r in rows_of.iter_rows(named=True)}
        title = cell["type"] if certificate["part"].n_unique() == 1 else (
            f"{cell['part']}: {cell['type']}"
        )  # fmt: skip
        sizes = ", ".join(
            f"{v} {max(r['n'] for k, r in by_key.items() if k[0] == v)}"
            for v in variants
            if any(k[0] == v for k in by_key)
        )
        ax.set_title(f"{title} (n: {sizes})", fontsize=7)
        ax.axhline(0.5, color="black", linestyle="--", linewidth=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(range(len(attacks)))
        ax.set_xticklabels(attacks, rotation=60, ha="right", fontsize=6)
        notes = {r["note"] for r in by_key.values() if r["accuracy"] is None and r["note"]}
        for x, attack in enumerate(attacks):
            for j, variant in enumerate(variants):
                r = by_key.get((variant, attack))
                if r is None or r["accuracy"] is None:
                    continue
                low, high = r["ci_low"], r["ci_high"]
                error = None if low is None else [[r["accuracy"] - low], [high - r["accuracy"]]]
                left = x - 0.4 + bar * (j + 0.5)
                ax.bar(left, r["accuracy"], width=bar, color=colours(x % 20), yerr=error,
                       capsize=1.5, hatch="////" if j else None, edgecolor="white")  # fmt: skip
                ax.text(left, 0.02, f"{r['answered']}", rotation=90, fontsize=4.5, ha="center")
        if notes and all(r["accuracy"] is None for r in by_key.values()):
            ax.text(0.5, 0.5, textwrap.fill("; ".join(sorted(notes)), 40),
                    transform=ax.transAxes, ha="center", va="center", fontsize=7)  # fmt: skip
    for ax in axes.flat[len(cells) :]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("blind accuracy (tie = 1/2)")
    benchmark = certificate["benchmark"][0] if certificate.height else ""
    shown = " (solid), ".join(variants) + (" (hatched)" if len(variants) > 1 else "")
    fig.suptitle(
        f"{benchmark}: text-only attacks, cross-fitted, {shown}; dashed: chance; "
        "number in a bar: pairs the attack decided",
        fontsize=9,
    )
    save_figure(fig, png, pdf)
