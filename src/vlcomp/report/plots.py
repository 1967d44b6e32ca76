"""One figure per metric table, chosen by what the table holds (the benchmark's kind)."""

from __future__ import annotations

from pathlib import Path


def plot_benchmark(kind: str, metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """``kind``: a benchmark kind, or "bindsplit" for a systematicity benchmark's
    seen / mixed / unseen table."""
    from vlcomp.report import figures, figures_crepe

    plot = {
        "crepe_systematicity": figures_crepe.plot_splits_by_type,
        "bindsplit": figures_crepe.plot_split_accuracy,
        "crepe_productivity": figures_crepe.plot_complexity,
        "pairs": figures.plot_pair_accuracy,
        "imported": figures.plot_pair_accuracy,
        "retrieval": figures.plot_retrieval,
    }
    if kind not in plot:
        raise ValueError(f"no figure for a {kind!r} table ({metrics})")
    plot[kind](metrics, png, pdf)
