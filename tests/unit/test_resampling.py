"""The one resampling (``vlcomp.resampling``): the draws do not depend on the chunking, and the
packed exact sums give the values of two float sums."""

from __future__ import annotations

import numpy as np
import pytest

from vlcomp import resampling
from vlcomp.resampling import bootstrap_draws, ratio_of_sums


@pytest.mark.parametrize("n", [1, 7, 333])
def test_draws_are_one_stream_whatever_the_chunk(monkeypatch, n):
    whole = np.random.default_rng(3).integers(0, n, size=(50, n))
    monkeypatch.setattr(resampling, "CHUNK_INDICES", 7 * n)  # chunks of 7 resamples
    chunks = list(bootstrap_draws(n, 50, np.random.default_rng(3)))
    assert [len(c) for c in chunks] == [7] * 7 + [1]
    assert np.array_equal(np.concatenate(chunks), whole)


def test_ratio_of_sums_exact_path_equals_float_sums():
    rng = np.random.default_rng(0)
    credits = rng.integers(-4, 9, 200) / 2.0  # differences of half credits
    counts = rng.integers(1, 5, 200)
    exact = ratio_of_sums(credits, counts, 300, np.random.default_rng(9))
    draws = np.concatenate(list(bootstrap_draws(200, 300, np.random.default_rng(9))))
    floats = credits[draws].sum(axis=1) / counts[draws].sum(axis=1)
    assert exact.tobytes() == floats.tobytes()
    # any other numerators take the float sums, with the same draws
    values = credits + 0.1
    assert (
        ratio_of_sums(values, counts.astype(float), 300, np.random.default_rng(9)).tobytes()
        == (values[draws].sum(axis=1) / counts[draws].sum(axis=1)).tobytes()
    )
    assert ratio_of_sums(credits[:0], counts[:0], 0, np.random.default_rng(9)).shape == (0,)
