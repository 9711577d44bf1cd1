"""The index's tie keys (poolsplit_adapters.ties): the core's order after
the score, ``(created or "", id or "", position)``, read from kept columns;
and the index breaking large ties as the core does, after every kind of
change to what it holds."""

from __future__ import annotations

import datetime

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters import MemoryIndex, Pool, select
from poolsplit_adapters.poolsplit import default_scorer
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.feedback import Feedback
from poolsplit_adapters.ties import TieKeys

NOW = datetime.datetime(2026, 7, 1)

# String order is not time order: "2026-01-01 23:00:00-05:00" is later in
# time than "2026-01-02T00:00:00Z" and sorts before it; the core compares the strings.
_CREATED = [None, "", "2026-01-02T00:00:00Z", "2026-01-01 23:00:00-05:00", "2025-12-31", "not a date"]
_IDS = [None, "", "a", "b", "B", "a1"]


def core_key(entry, position):
    return (entry.get("created") or "", entry.get("id") or "", position)


def test_the_smallest_follow_created_then_id_then_position():
    entries = [
        {"id": "b", "created": "2026-01-02T00:00:00Z"},  # 0
        {"id": "a", "created": "2026-01-02T00:00:00Z"},  # 1
        {"id": "z", "created": "2026-01-01 23:00:00-05:00"},  # 2: later in time, first as a string
        {"created": "2026-01-02T00:00:00Z"},  # 3: no id reads ""
        {"id": "a", "created": "2026-01-02T00:00:00Z"},  # 4: the same key as 1, after it
        {"id": "c"},  # 5: no created reads "": first of all
    ]
    keys = TieKeys()
    keys.extend(entries)
    every = np.arange(6)
    assert keys.smallest(every, 6) == [5, 2, 3, 1, 4, 0]
    assert keys.smallest(every, 3) == [5, 2, 3]
    assert keys.smallest(np.array([0, 1, 4]), 2) == [1, 4]  # two positions share the least key
    assert keys.smallest(np.array([0, 1, 4]), 9) == [1, 4, 0]  # more asked than there are
    assert keys.smallest(np.array([], dtype=np.intp), 2) == []
    scores = np.array([0.5, 0.5, 0.25, 0.5, 0.5, 0.25])
    ordered = keys.ordered(scores, every)
    assert [t[3] for t in ordered] == [3, 1, 4, 0, 5, 2]  # by score, then as above
    assert ordered[0] == (-0.5, "2026-01-02T00:00:00Z", "", 3)


_ENTRY = st.fixed_dictionaries(
    {},
    optional={"created": st.sampled_from(_CREATED), "id": st.sampled_from(_IDS)},
)


@given(entries=st.lists(_ENTRY, max_size=30), data=st.data())
def test_the_kept_keys_give_the_core_s_order_of_any_positions(entries, data):
    keys = TieKeys()
    for start in range(0, len(entries), 7):  # appended in batches, the columns growing
        keys.extend(entries[start : start + 7])
    positions = np.array(sorted(data.draw(st.sets(st.integers(0, max(0, len(entries) - 1))))) if entries else [])
    positions = positions.astype(np.intp)
    count = data.draw(st.integers(0, 6))
    expected = sorted(positions.tolist(), key=lambda p: core_key(entries[p], p))
    assert keys.smallest(positions, count) == expected[:count]
    drawn = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(positions), max_size=len(positions)))
    score = dict(zip(positions.tolist(), drawn))
    ordered = keys.ordered(np.array(drawn, dtype=np.float64), positions)
    assert [t[3] for t in ordered] == sorted(positions.tolist(), key=lambda p: (-score[p], *core_key(entries[p], p)))


def test_put_and_keep_follow_a_refresh_and_a_compaction():
    entries = [{"id": "e%d" % n, "created": "2026-01-%02d" % (10 - n)} for n in range(6)]
    keys = TieKeys()
    keys.extend(entries)
    assert keys.smallest(np.arange(6), 1) == [5]
    keys.put(0, {"id": "e0"})  # no created now: first
    assert keys.smallest(np.arange(6), 2) == [0, 5]
    keys.keep([1, 3, 5])
    assert keys.size == 3
    assert keys.smallest(np.arange(3), 3) == [2, 1, 0]  # e5, e3, e1 by their dates


def _templated(count):
    """``count`` entries of one template and length: every one scores the
    same for any message, so the cut of a pool and the feedback's sources
    fall among ties; their created strings mix formats, some have no id."""
    return [
        {
            **({"id": "m%03d" % ((n * 37) % count)} if n % 11 else {}),
            "type": "note",
            "content": "memory about deploy and refund",
            **({"created": _CREATED[2 + n % 4].replace("2026", "20%02d" % (20 + n % 7))} if n % 5 else {}),
        }
        for n in range(count)
    ]


def _chosen(selection):
    return [(id(c.entry), c.score, c.pool) for c in selection.chosen]


def _agree(index, pools, scorer_of):
    kept = scorer_of()
    if isinstance(kept, RelevanceScorer):
        kept.index_entries(index.entries)
    context = {"message": "what about the deploy"}
    expected = select(index.entries, pools, context, now=NOW, scorer=kept)
    got = index.select(pools, context, now=NOW, scorer=scorer_of())
    assert _chosen(got) == _chosen(expected)
    assert got.counts == expected.counts
    return got


def test_the_index_breaks_a_store_wide_tie_as_the_core_does_after_refresh_and_compaction():
    """Six hundred entries tie exactly: the pools' cuts and the feedback's
    two sources are picked among all of them by the core's order, by the
    index's kept keys. After a refresh rewrites some entries' created and
    id in place, and after removals compact the index, the kept keys still
    give the core's answer."""
    store = _templated(600)
    pools = [Pool("notes", 60, 5, ("note",)), Pool("rest", 40, 3)]
    feedback = lambda: RelevanceScorer(feedback=Feedback(top=2, weight=0.3))  # noqa: E731
    index = MemoryIndex(store, scorer=feedback())
    _agree(index, pools, RelevanceScorer)
    _agree(index, pools, lambda: default_scorer)
    first = _agree(index, pools, feedback)
    # Rewrite the created and id of entries the core picked, and of others.
    picked = [c.entry for c in first.chosen]
    for n, entry in enumerate(picked + store[::50]):
        entry["created"] = "2099-01-%02d" % (1 + n % 28) if n % 2 else None
        entry["id"] = "zz%03d" % n
    index.refresh_all(picked + store[::50])
    after_refresh = _agree(index, pools, feedback)
    assert _chosen(after_refresh) != _chosen(first)  # the picks moved with the new keys
    for entry in store[:400]:
        index.remove(entry)
    assert len(index._slots) < 600  # compacted: positions renumbered
    _agree(index, pools, feedback)
    _agree(index, pools, RelevanceScorer)
