"""One figure per metric table, chosen by what the table holds (the benchmark's kind)."""

from __future__ import annotations

from pathlib import Path


def plot_benchmark(kind: str, metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """``kind``: a benchmark kind, "bindsplit" for a systematicity benchmark's seen / mixed /
    unseen table, or the shape of an imported benchmark ("two_image", "sugarcrepe_pp")."""
    from vlcomp.report import figures, figures_crepe

    plot = {
        "crepe_systematicity": figures_crepe.plot_splits_by_type,
        "bindsplit": figures_crepe.plot_split_accuracy,
        "crepe_productivity": figures_crepe.plot_complexity,
        "pairs": figures.plot_pair_accuracy,
        "imported": figures.plot_pair_accuracy,
        "retrieval": figures.plot_retrieval,
        "two_image": lambda m, png, pdf: figures.plot_scores(
            m, png, pdf, ["text_score", "image_score", "group_score"]
        ),
        "sugarcrepe_pp": lambda m, png, pdf: figures.plot_scores(
            m, png, pdf, ["itt_accuracy", "tot_accuracy"]
        ),
    }
    if kind not in plot:
        raise ValueError(f"no figure for a {kind!r} table ({metrics})")
    plot[kind](metrics, png, pdf)
