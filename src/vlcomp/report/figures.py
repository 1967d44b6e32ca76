"""Figures, one function per figure target. PNG and PDF are written deterministically."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from vlcomp.io import write_with  # noqa: E402

SPLIT_ORDER = ["held_in", "held_out", "all"]
SPLIT_COLOURS = {"held_in": "#1b9e77", "held_out": "#d95f02", "all": "#7570b3"}


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    # Fixed metadata so that the same table gives the same bytes.
    write_with(
        png, lambda tmp: fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    )
    write_with(
        pdf,
        lambda tmp: fig.savefig(
            tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None}
        ),
    )
    plt.close(fig)


def plot_world_retrieval(metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """Recall@K per split and direction, one panel per model, chance as black ticks."""
    table = pl.read_parquet(metrics)
    models = [m for m in table["model"].unique(maintain_order=True).to_list() if m != "chance"]
    metric_names = table["metric"].unique(maintain_order=True).to_list()
    splits = [s for s in SPLIT_ORDER if s in set(table["split"].to_list())]
    splits += sorted(set(table["split"].to_list()) - set(splits))
    fig, axes = plt.subplots(
        1, len(models), figsize=(1.0 + 1.6 * len(metric_names), 3.6), squeeze=False, sharey=True
    )
    width = 0.8 / max(1, len(splits))
    for ax, model in zip(axes[0], models, strict=True):
        rows = table.filter(pl.col("model") == model)
        chance = table.filter(pl.col("model") == "chance")
        for s_index, split in enumerate(splits):
            for m_index, metric in enumerate(metric_names):
                x = m_index + (s_index - (len(splits) - 1) / 2) * width
                value = rows.filter((pl.col("split") == split) & (pl.col("metric") == metric))
                base = chance.filter((pl.col("split") == split) & (pl.col("metric") == metric))
                if value.height:
                    ax.bar(
                        x,
                        value["value"][0],
                        width,
                        color=SPLIT_COLOURS.get(split, "#999999"),
                        label=f"{split}" if m_index == 0 else None,
                    )
                    ax.text(
                        x,
                        value["value"][0] + 0.01,
                        f"{value['value'][0]:.2f}",
                        ha="center",
                        va="bottom",
                        fontsize=6,
                        rotation=90,
                    )
                if base.height:
                    ax.plot(
                        [x - width / 2, x + width / 2],
                        [base["value"][0]] * 2,
                        color="black",
                        linewidth=1.2,
                    )
        ax.set_xticks(range(len(metric_names)), metric_names, rotation=30, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(model, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("recall (tie counts as wrong)")
    axes[0][-1].legend(
        fontsize=7, title="split (black: chance)", title_fontsize=7, loc="upper left"
    )
    fig.suptitle("Image-text retrieval on the synthetic world", fontsize=11)
    fig.tight_layout()
    save_figure(fig, png, pdf)


def plot_pair_accuracy(metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """Accuracy per negative type (x) and split (bars), one panel per model; chance at 0.5."""
    table = pl.read_parquet(metrics).filter(pl.col("metric") == "accuracy")
    models = [m for m in table["model"].unique(maintain_order=True).to_list() if m != "chance"]
    families = sorted(set(table["family"].to_list()))
    splits = [s for s in SPLIT_ORDER if s in set(table["split"].to_list())]
    fig, axes = plt.subplots(
        1, len(models), figsize=(1.2 + 1.5 * len(families), 3.6), squeeze=False, sharey=True
    )
    width = 0.8 / max(1, len(splits))
    for ax, model in zip(axes[0], models, strict=True):
        rows = table.filter(pl.col("model") == model)
        for s_index, split in enumerate(splits):
            xs, values, ns = [], [], []
            for f_index, family in enumerate(families):
                cell = rows.filter((pl.col("split") == split) & (pl.col("family") == family))
                if cell.height:
                    xs.append(f_index + (s_index - (len(splits) - 1) / 2) * width)
                    values.append(cell["value"][0])
                    ns.append(cell["n"][0])
            ax.bar(xs, values, width, color=SPLIT_COLOURS.get(split, "#999999"), label=split)
            for x, value, n in zip(xs, values, ns, strict=True):
                ax.text(x, value + 0.01, f"{value:.2f} n={n}", ha="center", va="bottom",
                        fontsize=5.5, rotation=90)  # fmt: skip
        ax.axhline(0.5, color="black", linewidth=1.0, linestyle="--")
        ax.set_xticks(range(len(families)), families, rotation=20, fontsize=8)
        ax.set_ylim(0, 1.15)
        ax.set_title(model, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("accuracy (tie counts as wrong)")
    axes[0][-1].legend(fontsize=7, title="split (dashed: chance)", title_fontsize=7,
                       loc="upper right", ncols=len(splits))  # fmt: skip
    fig.suptitle("Caption vs one-change hard negative on the synthetic world", fontsize=11)
    fig.tight_layout()
    save_figure(fig, png, pdf)
