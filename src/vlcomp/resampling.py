"""The one way every interval in the project resamples: items (or clusters of them: an
item's pairs, a scene's items, an image pair) drawn with replacement, a resample at a time
as a row of indices, in chunks that keep memory bounded. The same generator state gives the
same draws whatever the chunking, so every statistic built on these draws is reproducible.

Two statistics are built here: the ratio of sums over the clusters drawn (``ratio_of_sums``:
accuracy over pairs when items hold several, a mean over scenes) and, in
``evaluate.metrics``, the mean of column means per stratum."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Indices drawn per chunk (2e6 int64: 16 MB).
CHUNK_INDICES = 2_000_000


def bootstrap_draws(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """``resamples`` bootstrap resamples of ``n`` clusters, as (rows, n) index arrays in
    order, each resample one row."""
    chunk = max(1, CHUNK_INDICES // max(1, n))
    for start in range(0, resamples, chunk):
        yield rng.integers(0, n, size=(min(chunk, resamples - start), n))


def ratio_of_sums(
    numerators: np.ndarray, denominators: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """sum(numerator) / sum(denominator) over the clusters of each resample, (resamples,).

    When every numerator is a multiple of 1/2 and every denominator an integer (credits and
    pair counts), both sums are packed in one integer, so a resample is one gather and one
    sum, exact: the values two float sums give, faster."""
    m = len(numerators)
    halves = np.rint(2 * numerators).astype(np.int64)
    whole = np.rint(denominators).astype(np.int64)
    exact = (
        bool(np.all(halves == 2 * numerators))
        and bool(np.all(whole == denominators))
        and bool(np.all(whole >= 0))
        and m * int(np.abs(halves).max(initial=0)) < 2**30
        and m * int(whole.max(initial=0)) < 2**31
    )  # a resample's sums fit their halves of the integer
    packed = (halves << 32) + whole
    stats = []
    for draw in bootstrap_draws(m, resamples, rng):
        if exact:
            total = packed[draw].sum(axis=1)
            stats.append((total >> 32) / 2 / (total & 0xFFFFFFFF))
        else:
            stats.append(numerators[draw].sum(axis=1) / denominators[draw].sum(axis=1))
    return np.concatenate(stats) if stats else np.zeros(0)
