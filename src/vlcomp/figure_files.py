"""Figure files: matplotlib without a display, and PNG / PDF files that the same figure
writes byte for byte (fixed metadata). Every stage that draws (report, refine, audit) saves
through ``save_figure``."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from vlcomp.io import write_with  # noqa: E402

DPI = 150
# One colour per split label, the same in every figure that shows splits.
SPLIT_COLOURS = {
    "all": "#7570b3", "held_in": "#1b9e77", "held_out": "#d95f02",
    "SC": "#1b9e77", "UC": "#d95f02", "UA": "#e7298a",
    "seen": "#1b9e77", "mixed": "#e6ab02", "unseen": "#d95f02", "no_binding": "#bbbbbb",
    "no_compound": "#bbbbbb", "no_split": "#bbbbbb", "not_in_splits": "#888888",
    "text_score": "#1b9e77", "image_score": "#d95f02", "group_score": "#7570b3",
    "itt_accuracy": "#1b9e77", "tot_accuracy": "#d95f02",
}  # fmt: skip

__all__ = ["DPI", "SPLIT_COLOURS", "plt", "save_figure"]


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    """Write ``fig`` as PNG and PDF (each atomically) and close it."""
    write_with(
        png, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    )
    write_with(
        pdf,
        lambda tmp: fig.savefig(
            tmp, format="pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None}
        ),
    )
    plt.close(fig)
