"""Adversarial refinement (SugarCrepe, Hsieh et al. 2023, Algorithm 1 and appendix C.3).

For paired items (one positive, one negative) two text-only scorers each give a score gap
g = score(positive) - score(negative). A blind model that picks the text with the higher
score is right exactly when g > 0. The gaps, normalised to [-1, 1], place every item in a
K x K grid over [-1, 1]^2; for every pair of cells symmetric about the origin the larger
cell is sampled down (seeded) to the size of the smaller. Within a cell pair the two cells
then hold equally many items with g > 0 and g < 0 for *both* scorers, so each scorer's
P(positive wins) is exactly 1/2 among the kept items whose gap is not zero.

Cells. K must be even, so that 0 is a cell edge and no cell is its own mirror. With
h = K / 2, a nonzero gap g falls in magnitude bin m = min(floor(|g| * h), h - 1): bins are
[m/h, (m+1)/h), closed at the inner edge, so a gap exactly on an edge goes to the cell
farther from 0, and the outermost bin is closed on both sides, so |g| = 1 lands in it (the
public demo indexes one bin past the end there and crashes). The axis cell is h + m for
g > 0 and h - 1 - m for g < 0. Because the cell depends only on sign(g) and |g|, the cell
of -g is always the mirror K - 1 - cell of g, also in floating point.

Zero gaps (exact ties) have no side and are handled as in SugarCrepe's public code: items
with both gaps zero are all kept; items with one gap zero are balanced along the other
gap alone (a 1-D version of the same rule, ``zero_axis_grid`` bins over [-1, 1]; the
demo used 10, the default here is K so that the 1-D cells are the grid's own rows and
columns). They are reported separately, as ties of the scorer whose gap is zero.

Grid size. SugarCrepe used K = 100 on thousands of pairs per type. On a small group most of
the K x K cells then hold no pair, and a cell whose mirror is empty keeps nothing, so a
100 x 100 grid keeps none of a hundred pairs. ``grid="auto"`` (``auto_grid``) takes per
group the largest even K <= 100 whose cells hold at least two pairs on average
(K * K * 2 <= n), and at least 2 (the four quadrants); a fixed K is used as given.

Sampling is seeded and independent of the input row order: items are ordered by item_id,
each refinement group draws one random permutation from ``(seed, group)``, and a cell
keeps the items with the smallest draws. (The public demo is unseeded.)

Normalisation (how a raw gap becomes a value in [-1, 1]). Any odd, monotone map gives the
balance property; the choice only decides which gaps count as "similar" (share a cell).

- ``identity``: the scores are probabilities (SugarCrepe's Vera and CoLA-grammar scores),
  so gaps already lie in [-1, 1]; an error otherwise.
- ``rank`` (default for scores that are not all in [0, 1], such as log-probabilities):
  sign(g) * F(|g|), F the empirical CDF of the nonzero |g| in the group, i.e. the share of
  nonzero gaps with |g_j| <= |g|. Scale-free, so a scorer's units or outliers do not squash
  the items into a few central cells; the largest |g| maps to exactly 1.
- ``pair_softmax``: tanh(g / 2) = P(pos) - P(neg) under a softmax over the pair's two
  (log-)scores. A fixed transform, but it saturates for gaps of more than a few nats.
- ``max_abs``: g / max |g| over the group. Sensitive to a single outlier.
- ``auto``: ``identity`` when every score of the scorer in the group lies in [0, 1], else
  ``rank``. The resolved choice is reported.

Zero-ness and side always come from the raw gap, so a tiny nonzero gap that a transform
rounds to 0 still counts as nonzero on its own side.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import numpy as np

Normalisation = Literal["auto", "identity", "rank", "pair_softmax", "max_abs"]
NORMALISATIONS: tuple[str, ...] = ("auto", "identity", "rank", "pair_softmax", "max_abs")

AUTO = "auto"
AUTO_MAX_GRID = 100  # SugarCrepe's K
AUTO_PAIRS_PER_CELL = 2

# Stratum codes of refine_mask's second return value.
GRID, ZERO_FIRST, ZERO_SECOND, ZERO_BOTH = 0, 1, 2, 3
STRATA = {GRID: "grid", ZERO_FIRST: "zero_gap_1", ZERO_SECOND: "zero_gap_2", ZERO_BOTH: "zero_both"}


def resolve_normalisation(
    method: str, positive_scores: np.ndarray, negative_scores: np.ndarray
) -> str:
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {method!r}; expected one of {NORMALISATIONS}")
    if method != "auto":
        return method
    both = np.concatenate([positive_scores, negative_scores])
    return "identity" if both.size and ((both >= 0) & (both <= 1)).all() else "rank"


def normalise_gaps(gaps: np.ndarray, method: str) -> np.ndarray:
    """Map raw gaps to [-1, 1] with ``method`` (not ``auto``: resolve it first)."""
    gaps = np.asarray(gaps, dtype=np.float64)
    if not np.isfinite(gaps).all():
        raise ValueError("score gaps must be finite")
    magnitude = np.abs(gaps)
    if method == "identity":
        if (magnitude > 1).any():
            raise ValueError(
                f"normalisation 'identity' needs gaps in [-1, 1] (probability scores); the "
                f"largest |gap| is {magnitude.max():g}: use 'rank', 'pair_softmax' or 'max_abs'"
            )
        scaled = magnitude
    elif method == "rank":
        nonzero = np.sort(magnitude[magnitude > 0])
        scaled = (
            np.searchsorted(nonzero, magnitude, side="right") / nonzero.size
            if nonzero.size
            else magnitude
        )
    elif method == "pair_softmax":
        scaled = np.tanh(magnitude / 2)
    elif method == "max_abs":
        top = magnitude.max(initial=0.0)
        scaled = magnitude / top if top > 0 else magnitude
    else:
        raise ValueError(f"unknown normalisation {method!r}; expected one of {NORMALISATIONS[1:]}")
    return np.sign(gaps) * scaled


def axis_cells(gaps: np.ndarray, normalised: np.ndarray, bins: int) -> np.ndarray:
    """Cell index in [0, bins) along one axis; the side comes from the sign of the raw gap.

    Entries where the raw gap is 0 are meaningless (-1); callers treat zeros apart.
    """
    if bins < 2 or bins % 2:
        raise ValueError(f"the number of cells per axis must be even and >= 2, got {bins}")
    if not (np.abs(normalised) <= 1).all():
        raise ValueError("normalised gaps must lie in [-1, 1]")
    half = bins // 2
    magnitude = np.minimum(np.floor(np.abs(normalised) * half).astype(np.int64), half - 1)
    cells = np.where(gaps > 0, half + magnitude, half - 1 - magnitude)
    return np.where(gaps == 0, -1, cells)


def auto_grid(
    n_pairs: int, max_grid: int = AUTO_MAX_GRID, pairs_per_cell: int = AUTO_PAIRS_PER_CELL
) -> int:
    """K of ``grid="auto"`` for a group of ``n_pairs``: the largest even K <= ``max_grid``
    with K * K * ``pairs_per_cell`` <= ``n_pairs``, and at least 2."""
    if max_grid < 2 or max_grid % 2 or pairs_per_cell < 1:
        raise ValueError(f"auto_grid needs an even max_grid >= 2, got {max_grid}")
    k = math.isqrt(max(n_pairs, 0) // pairs_per_cell)
    return max(2, min(max_grid, k - k % 2))


def resolve_grid(grid: int | str, n_pairs: int) -> int:
    """The K a group of ``n_pairs`` is refined with: ``auto_grid`` for "auto", else
    ``grid`` (an even integer >= 2)."""
    if grid == AUTO:
        return auto_grid(n_pairs)
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 2 or grid % 2:
        raise ValueError(f"refine grid must be 'auto' or an even integer >= 2, got {grid!r}")
    return grid


def group_seed(seed: int, group: str) -> np.random.Generator:
    digest = hashlib.sha256(group.encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def _balance(cell: np.ndarray, mirror: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """Keep, for each pair {c, mirror(c)}, min(|c|, |mirror(c)|) items of each cell: those
    with the smallest ``draw`` (distinct random numbers)."""
    keep = np.zeros(cell.size, dtype=bool)
    if cell.size == 0:
        return keep
    canonical = np.minimum(cell, mirror)
    side = (cell > mirror).astype(np.int64)
    order = np.lexsort((draw, side, canonical))
    block = canonical[order] * 2 + side[order]
    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    sizes = np.diff(np.r_[starts, block.size])
    rank = np.arange(block.size) - np.repeat(starts, sizes)
    # Blocks ascend; a block's mirror block differs only in the side bit.
    ids = block[starts]
    at = np.minimum(np.searchsorted(ids, ids ^ 1), ids.size - 1)
    mirror_size = np.where(ids[at] == (ids ^ 1), sizes[at], 0)
    quota = np.minimum(sizes, mirror_size)
    keep[order] = rank < np.repeat(quota, sizes)
    return keep


def refine_mask(
    gap_1: np.ndarray,
    gap_2: np.ndarray,
    normalised_1: np.ndarray,
    normalised_2: np.ndarray,
    rng: np.random.Generator,
    grid: int = 100,
    zero_axis_grid: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which items refinement keeps, for one group whose rows are in a fixed order.

    Returns (keep, stratum code, axis cell of scorer 1, axis cell of scorer 2); a zero gap's
    cell is -1, and in the 1-D zero strata the other scorer's cell uses ``zero_axis_grid``.
    """
    gap_1, gap_2 = np.asarray(gap_1, np.float64), np.asarray(gap_2, np.float64)
    n = gap_1.size
    zero_grid = grid if zero_axis_grid is None else zero_axis_grid
    zero_1, zero_2 = gap_1 == 0, gap_2 == 0
    stratum = np.select(
        [zero_1 & zero_2, zero_1, zero_2], [ZERO_BOTH, ZERO_FIRST, ZERO_SECOND], GRID
    )
    cell_1 = np.where(
        zero_2 & ~zero_1,
        axis_cells(gap_1, normalised_1, zero_grid),
        axis_cells(gap_1, normalised_1, grid),
    )
    cell_2 = np.where(
        zero_1 & ~zero_2,
        axis_cells(gap_2, normalised_2, zero_grid),
        axis_cells(gap_2, normalised_2, grid),
    )
    # One id space for all strata, so that one pass balances them all.
    cell = np.select(
        [stratum == GRID, stratum == ZERO_FIRST, stratum == ZERO_SECOND],
        [cell_1 * grid + cell_2, grid * grid + cell_2, grid * grid + zero_grid + cell_1],
        -1,
    )
    mirror = np.select(
        [stratum == GRID, stratum == ZERO_FIRST, stratum == ZERO_SECOND],
        [
            (grid - 1 - cell_1) * grid + (grid - 1 - cell_2),
            grid * grid + (zero_grid - 1 - cell_2),
            grid * grid + zero_grid + (zero_grid - 1 - cell_1),
        ],
        -1,
    )
    draw = rng.permutation(n)
    keep = stratum == ZERO_BOTH
    balanced = ~keep
    keep[balanced] = _balance(cell[balanced], mirror[balanced], draw[balanced])
    return keep, stratum, cell_1, cell_2
