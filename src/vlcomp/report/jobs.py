"""Job functions of the report stage: one figure target per call."""

from __future__ import annotations

from pathlib import Path

from vlcomp.report import figures, figures_crepe
from vlcomp.vocabulary import TWO_IMAGE_METRICS, TWO_POSITIVE_METRICS


def plot_benchmark(kind: str, metrics: str | Path, png: str | Path, pdf: str | Path) -> None:
    """``kind``: a benchmark kind, "bindsplit" for a systematicity benchmark's seen / mixed /
    unseen table, or the shape of an imported benchmark ("two_image", "sugarcrepe_pp")."""
    plot = {
        "crepe_systematicity": figures_crepe.plot_splits_by_type,
        "bindsplit": figures_crepe.plot_split_accuracy,
        "crepe_productivity": figures_crepe.plot_complexity,
        "pairs": figures.plot_pair_accuracy,
        "imported": figures.plot_pair_accuracy,
        "retrieval": figures.plot_retrieval,
        "two_image": lambda m, png, pdf: figures.plot_scores(m, png, pdf, list(TWO_IMAGE_METRICS)),
        "sugarcrepe_pp": lambda m, png, pdf: figures.plot_scores(
            m, png, pdf, list(TWO_POSITIVE_METRICS)
        ),
    }
    if kind not in plot:
        raise ValueError(f"no figure for a {kind!r} table ({metrics})")
    plot[kind](metrics, png, pdf)
