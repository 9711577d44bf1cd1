"""An aware ``now`` is the instant it names, on every adapter surface: the
recency of a LlamaIndex retriever's and memory blocks' ranking reads it as
naive UTC, as the same call's expiry and time filters always did."""

from __future__ import annotations

import datetime

from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool
from poolsplit_adapters.llama_index import PoolSplitRetriever, poolsplit_memory_blocks

MINUS_12 = datetime.timezone(datetime.timedelta(hours=-12))
AWARE = datetime.datetime(2026, 7, 2, 0, 0, tzinfo=MINUS_12)  # 12:00 UTC
SAME_IN_UTC = datetime.datetime(2026, 7, 2, 12, 0)
WALL_TIME = datetime.datetime(2026, 7, 2, 0, 0)  # what the offset dropped read it as
POOLS = [Pool("notes", 1000, 5)]
ENTRIES = [
    {"id": "a", "content": "deploy note from the first", "created": "2026-07-01T00:00:00Z"},
    {"id": "b", "content": "deploy note from the second", "created": "2026-07-02T06:00:00Z"},
]


def _scores(selection):
    return [(c.entry["id"], c.score) for c in selection.chosen]


def test_a_retrievers_aware_now_ranks_as_its_instant_in_utc():
    # Before: scored as 00:00 UTC (the wall time), 12 hours early: "b",
    # created at 06:00 UTC, was not yet written and got no recency decay.
    nodes = [TextNode(text=e["content"], id_=e["id"], metadata={"created": e["created"]}) for e in ENTRIES]

    def scores(setting, **override):
        retriever = PoolSplitRetriever(POOLS, nodes, now=setting)
        return _scores(retriever.retrieve_with_selection("deploy", **override)[1])

    assert scores(AWARE) == scores(SAME_IN_UTC) != scores(WALL_TIME)
    assert scores(None, now=AWARE) == scores(SAME_IN_UTC)  # a per-call now too


def test_memory_blocks_aware_now_ranks_as_its_instant_in_utc():
    def scores(now):
        store = poolsplit_memory_blocks(ENTRIES, POOLS, now=now)[1].store
        return _scores(store.select_for("deploy", "s"))

    assert scores(AWARE) == scores(SAME_IN_UTC) != scores(WALL_TIME)
