"""``LargeFilters``: which pool filters skip their filter-first count, and for how long."""

from __future__ import annotations

from typing import List

from poolsplit_adapters.recall import Search
from poolsplit_adapters.stores.postgres import SKIP_COUNT, LargeFilters, filter_first_bound

FACTS = Search("pool:content", 20, types=("fact",), namespaces=("t",), pool="content")
SKILLS = Search("pool:skills", 20, types=("skill",), namespaces=("t",), pool="skills")


def memory() -> tuple[LargeFilters, List[float]]:
    now = [100.0]
    return LargeFilters(seconds=60.0, clock=lambda: now[0]), now


def test_a_filter_is_counted_until_its_count_said_many():
    large, _ = memory()
    assert large.bound(FACTS, 100_000) == filter_first_bound(20, 100_000) == 4472
    large.saw(FACTS, 4472, found=20, exact=True)  # read through the filter index: few
    large.saw(FACTS, 4472, found=0, exact=False)  # nothing found: the branch is unknown
    large.saw(FACTS, None, found=20, exact=False)  # no filter index: no count ran
    assert large.bound(FACTS, 100_000) == 4472
    large.saw(FACTS, 4472, found=20, exact=False)  # the HNSW branch ran: many
    assert large.bound(FACTS, 100_000) == SKIP_COUNT
    assert large.bound(SKILLS, 100_000) == 4472  # another filter is its own


def test_the_window_ends_and_a_skipped_count_does_not_extend_it():
    large, now = memory()
    large.saw(FACTS, 4472, found=20, exact=False)
    now[0] = 159.9
    assert large.bound(FACTS, 100_000) == SKIP_COUNT
    large.saw(FACTS, SKIP_COUNT, found=20, exact=False)
    now[0] = 160.0
    assert large.bound(FACTS, 100_000) == 4472


def test_a_new_bound_is_a_new_filter():
    """The table grew (or k changed): the bound changes, and the filter is counted at once."""
    large, _ = memory()
    large.saw(FACTS, 4472, found=20, exact=False)
    assert large.bound(FACTS, 400_000) == filter_first_bound(20, 400_000) == 8944
    assert large.bound(Search("pool:content", 40, types=("fact",), namespaces=("t",)), 100_000) == 6324
    assert large.bound(FACTS, None) is None  # no filter index: no count at all


def test_past_its_size_the_oldest_half_is_forgotten():
    large, _ = memory()
    names = [Search("pool:p", 20, types=("t%d" % i,), namespaces=("t",)) for i in range(LargeFilters.MOST + 1)]
    for search in names:
        large.saw(search, 4472, found=20, exact=False)
    assert large.bound(names[0], 100_000) == 4472
    assert large.bound(names[LargeFilters.MOST // 2 - 1], 100_000) == 4472
    assert large.bound(names[LargeFilters.MOST // 2], 100_000) == SKIP_COUNT
    assert large.bound(names[-1], 100_000) == SKIP_COUNT


def test_the_untyped_side_search_is_never_remembered():
    """Its page is never completed, so only the count makes it exact."""
    large, _ = memory()
    untyped = Search("pool:content:untyped", 20, untyped=True, namespaces=("t",), pool="content")
    large.saw(untyped, 4472, found=20, exact=False)
    assert large.bound(untyped, 100_000) == 4472
