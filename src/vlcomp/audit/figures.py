"""Figures of a benchmark audit (PNG + PDF, written deterministically by ``save_figure``).

Each title names the benchmark and the reference corpus; each panel names its variant by key
and by what it is (``variants.VariantInfo``) and, for BindSplit, its rule as ``RULE_TEXT``
writes it (STRICT = perfect only, LOOSE = perfect or close). Every plot returns the titles it
drew (suptitle first, then the panels), so that they can be checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.audit.bindsplit import COMPOSITION, PAIRED, RULE_TEXT
from vlcomp.audit.variants import VariantInfo, type_order
from vlcomp.figure_files import SPLIT_COLOURS, plt, save_figure
from vlcomp.vocabulary import MACRO, RULES

SCORER_COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"]
SIDE_COLOURS = {"positive": "#1b9e77", "negative": "#d95f02"}


def _legend(fig: plt.Figure, axes: np.ndarray) -> None:
    """One legend for the figure, below the panels (labels of every panel, once)."""
    seen: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()), list(seen), loc="outside lower center", fontsize=7,
            ncols=min(4, len(seen)), frameon=False,
        )  # fmt: skip


def _types(frame: pl.DataFrame) -> list[str]:
    return [t for t in type_order(frame["type"].unique().to_list()) if t != MACRO]


def _variants(frame: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["variant"].to_list()))


def variant_title(key: str, infos: Mapping[str, VariantInfo] | None) -> str:
    """``<key>: <what it is>`` (the key alone when nothing describes it)."""
    info = (infos or {}).get(key)
    return f"{key}: {info.label}" if info and info.label != key else key


def _titles(fig: plt.Figure, axes: np.ndarray) -> list[str]:
    suptitle = fig.get_suptitle()
    return [suptitle, *(ax.get_title() for ax in axes.flat)]


def plot_blind_accuracy(
    blind: pl.DataFrame,
    order_blind: pl.DataFrame,
    benchmark: str,
    reference: str,
    png: str | Path,
    pdf: str | Path,
    infos: Mapping[str, VariantInfo] | None = None,
) -> list[str]:
    """Blind accuracy per type, one bar per scorer, one panel per variant; black ticks: the
    order-blind ceiling (ties wrong); dashed: chance for pair sets (0.5). A variant whose
    refinement balanced some scorers says in its title that their 0.5 is by construction."""
    variants = _variants(blind)
    scorers = sorted(blind["scorer"].unique().to_list())
    types = _types(blind)
    fig, axes = plt.subplots(
        len(variants), 1, figsize=(max(6.0, 0.9 * len(types) + 2), 2.8 * len(variants)),
        squeeze=False, sharey=True, layout="constrained",
    )  # fmt: skip
    width = 0.8 / max(1, len(scorers))
    x = np.arange(len(types))
    for ax, variant in zip(axes[:, 0], variants, strict=True):
        rows = blind.filter(pl.col("variant") == variant)
        for k, scorer in enumerate(scorers):
            acc = dict(rows.filter(pl.col("scorer") == scorer).select("type", "accuracy").rows())
            values = [acc.get(t, np.nan) for t in types]
            ax.bar(x - 0.4 + width * (k + 0.5), values, width, label=scorer,
                   color=SCORER_COLOURS[k % len(SCORER_COLOURS)])  # fmt: skip
        ceiling = order_blind.filter(pl.col("variant") == variant)
        cap = dict(ceiling.select("type", "ceiling_ties_wrong").rows())
        pairs = bool(ceiling.height) and bool((ceiling["n_pairs"] == ceiling["n_items"]).all())
        for i, t in enumerate(types):
            if t in cap:
                ax.hlines(cap[t], i - 0.45, i + 0.45, colors="black", linewidth=2, zorder=3,
                          label="order-blind ceiling (ties wrong)" if i == 0 else None)  # fmt: skip
        if pairs:
            ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8, label="chance")
        n = dict(ceiling.select("type", "n_items").rows())
        ax.set_xticks(x, [f"{t}\n(n={n.get(t, 0)})" for t in types], rotation=30, ha="right",
                      fontsize=6)  # fmt: skip
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("accuracy", fontsize=8)
        title = variant_title(variant, infos)
        info = (infos or {}).get(variant)
        if info and info.balanced:
            balanced = " and ".join(info.balanced)
            title += f"\n{balanced}: 0.5 by construction (refinement balanced them)"
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=7)
    _legend(fig, axes)
    fig.suptitle(
        f"{benchmark}: blind (text-only) accuracy per type, ties count as wrong\n"
        f"reference corpus: {reference}",
        fontsize=9,
    )
    titles = _titles(fig, axes)
    save_figure(fig, png, pdf)
    return titles


def plot_seen_shares(
    seen: pl.DataFrame,
    benchmark: str,
    reference: str,
    png: str | Path,
    pdf: str | Path,
    infos: Mapping[str, VariantInfo] | None = None,
) -> list[str]:
    """Share of positives vs negatives whose bindings all count as seen against the
    reference corpus, per type, over the paired items; columns: STRICT (perfect only) /
    LOOSE (perfect or close); rows: variants (BindSplit Fig. 3)."""
    variants, rules, types = _variants(seen), list(RULES), _types(seen)
    fig, axes = plt.subplots(
        len(variants), len(rules), figsize=(max(7.0, 0.75 * len(types) * len(rules) + 1),
                                             2.8 * len(variants)),
        squeeze=False, sharey=True, layout="constrained",
    )  # fmt: skip
    x = np.arange(len(types))
    for r, variant in enumerate(variants):
        for c, rule in enumerate(rules):
            ax = axes[r, c]
            rows = seen.filter((pl.col("variant") == variant) & (pl.col("rule") == rule))
            for k, side in enumerate(("positive", "negative")):
                share = dict(rows.select("type", f"{side}_seen_share").rows())
                values = [share.get(t) for t in types]
                values = [np.nan if v is None else v for v in values]
                ax.bar(x - 0.2 + 0.4 * k, values, 0.4, label=side, color=SIDE_COLOURS[side])
            n = dict(rows.select("type", "n_paired").rows())
            ax.set_xticks(x, [f"{t}\n({PAIRED} n={n.get(t, 0)})" for t in types],
                          rotation=30, ha="right", fontsize=6)  # fmt: skip
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{variant_title(variant, infos)}\n{RULE_TEXT[rule]}", fontsize=8)
            ax.tick_params(labelsize=7)
        axes[r, 0].set_ylabel("share with every binding seen", fontsize=7)
    _legend(fig, axes)
    fig.suptitle(
        f"{benchmark}: positives vs negatives whose bindings all count as seen against "
        f"{reference}\n({RULE_TEXT['strict']}; {RULE_TEXT['loose']}; over the {PAIRED} "
        "items: a binding on both sides)",
        fontsize=9,
    )
    titles = _titles(fig, axes)
    save_figure(fig, png, pdf)
    return titles


def plot_composition(
    composition: pl.DataFrame,
    benchmark: str,
    reference: str,
    png: str | Path,
    pdf: str | Path,
    sides: Sequence[str] = ("positive", "negative"),
    infos: Mapping[str, VariantInfo] | None = None,
) -> list[str]:
    """Seen / mixed / unseen / no_binding composition per type and side, stacked, as shares
    of all the type's items; columns: STRICT / LOOSE; rows: variants (BindSplit Table 1)."""
    variants, rules, types = _variants(composition), list(RULES), _types(composition)
    fig, axes = plt.subplots(
        len(variants), len(rules),
        figsize=(max(7.0, 0.7 * len(types) * len(sides) * len(rules) / 2 + 1),
                 3.0 * len(variants)),
        squeeze=False, sharey=True, layout="constrained",
    )  # fmt: skip
    width = 0.8 / len(sides)
    x = np.arange(len(types))
    for r, variant in enumerate(variants):
        for c, rule in enumerate(rules):
            ax = axes[r, c]
            rows = composition.filter((pl.col("variant") == variant) & (pl.col("rule") == rule))
            for k, side in enumerate(sides):
                part = rows.filter(pl.col("side") == side)
                share = {(t, s): v for t, s, v in part.select("type", "split", "share").rows()}
                bottom = np.zeros(len(types))
                pos = x - 0.4 + width * (k + 0.5)
                for split in COMPOSITION:
                    values = np.array([share.get((t, split)) or 0.0 for t in types])
                    ax.bar(pos, values, width * 0.95, bottom=bottom, color=SPLIT_COLOURS[split],
                           edgecolor="white", linewidth=0.3,
                           label=split if k == 0 else None)  # fmt: skip
                    bottom += values
                for p in pos:
                    ax.text(p, 1.01, side[:3], ha="center", va="bottom", fontsize=5)
            n = dict(rows.select("type", "n").unique().rows())
            ax.set_xticks(x, [f"{t}\n(n_items={n.get(t, 0)})" for t in types], rotation=30,
                          ha="right", fontsize=6)  # fmt: skip
            ax.set_ylim(0, 1.08)
            ax.set_title(f"{variant_title(variant, infos)}\n{RULE_TEXT[rule]}", fontsize=8)
            ax.tick_params(labelsize=7)
        axes[r, 0].set_ylabel("share of all items", fontsize=7)
    _legend(fig, axes)
    fig.suptitle(
        f"{benchmark}: BindSplit composition of positives (pos) and negatives (neg) "
        f"against {reference}\n(share of all items of the type; {RULE_TEXT['strict']}; "
        f"{RULE_TEXT['loose']})",
        fontsize=9,
    )
    titles = _titles(fig, axes)
    save_figure(fig, png, pdf)
    return titles
