"""The query expansion's cut (the k-th largest relevance, ties counted) is
what a partition gives, for every k and any ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters.index import _kth_largest


@given(
    st.lists(st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.75, 1.0]) | st.floats(0.0, 1.0), min_size=1, max_size=60),
    st.integers(1, 8),
)
def test_the_kth_largest_is_the_partitions(values, k):
    array = np.array(values, dtype=np.float64)
    k = min(k, len(array))
    assert _kth_largest(array, k) == np.partition(array, len(array) - k)[len(array) - k]


def test_ties_at_the_top_count():
    assert _kth_largest(np.array([0.5, 0.9, 0.9, 0.1]), 2) == 0.9
    assert _kth_largest(np.array([0.5, 0.9, 0.9, 0.1]), 3) == 0.5
