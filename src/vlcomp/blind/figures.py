"""The certificate's figure: every blind attack's accuracy per part and negative type, the
debiasing panel's left of a dotted line, the certification panel's (the verdict) right."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from vlcomp.figure_files import save_figure


def plot_attacks(certificate: pl.DataFrame, png: str | Path, pdf: str | Path) -> None:
    """One panel per (part, negative type), one bar per blind attack and variant (as
    generated solid, debiased hatched): its accuracy with the bootstrap 95 % interval,
    chance as a dashed line, the pairs it decided under the bar; the debiasing panel's
    attacks (blue) left of a dotted line, the certification panel's (orange) right. A
    panel where no attack applies says why."""
    cells = certificate.select("part", "type").unique(maintain_order=True).to_dicts()
    order = {"debias": 0, "certify": 1}
    keyed = certificate.select("panel", "attack").unique(maintain_order=True).rows()
    keyed = sorted(keyed, key=lambda k: order.get(k[0], 2))
    attacks = [attack for _, attack in keyed]
    panel_of = {attack: panel for panel, attack in keyed}
    debiasing = sum(1 for panel, _ in keyed if panel == "debias")
    variants = certificate["variant"].unique(maintain_order=True).to_list()
    columns = min(4, len(cells))
    rows = -(-len(cells) // columns)
    width = min(13.3, max(3.2, 0.32 * len(attacks) * len(variants) + 1.2) * columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(width, 3.1 * rows), squeeze=False, sharey=True,
        constrained_layout=True,
    )  # fmt: skip
    colours = {"debias": "tab:blue", "certify": "tab:orange"}
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
        if 0 < debiasing < len(attacks):
            ax.axvline(debiasing - 0.5, color="grey", linestyle=":", linewidth=0.8)
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
                colour = colours.get(panel_of[attack], "grey")
                ax.bar(left, r["accuracy"], width=bar, color=colour, yerr=error,
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
        f"{benchmark}: text-only attacks, cross-fitted, {shown}; blue: debiasing panel, "
        "orange: certification panel (the verdict); dashed: chance; number in a bar: pairs "
        "the attack decided",
        fontsize=9,
    )
    save_figure(fig, png, pdf)
