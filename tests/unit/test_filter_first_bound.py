"""Where a pool search over ``PGVector`` switches from reading its matching
rows through the filter index to walking the HNSW index: where the two cost
the same, ``sqrt(HNSW_VISIT_COST x k x N)``, never below ``k``."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters.stores.postgres import HNSW_VISIT_COST, filter_first_bound


def test_the_bound_at_100k_rows_and_k_20():
    assert filter_first_bound(20, 100_000) == math.isqrt(HNSW_VISIT_COST * 20 * 100_000) == 4472


def test_no_filter_index_means_no_bound():
    assert filter_first_bound(20, None) is None


def test_a_table_the_planner_has_not_counted_reads_at_most_k_rows_first():
    assert filter_first_bound(20, -1) == 20  # pg_class.reltuples is -1 before the first VACUUM/ANALYZE
    assert filter_first_bound(20, 1) == 20


@given(st.integers(1, 1000), st.integers(0, 10**9))
def test_the_bound_is_at_least_k_and_grows_with_the_table(k: int, rows: int):
    bound = filter_first_bound(k, rows)
    assert bound is not None and bound >= k
    bigger = filter_first_bound(k, rows + 1000)
    assert bigger is not None and bigger >= bound
