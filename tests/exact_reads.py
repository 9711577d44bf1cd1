"""Shared check: BaseStoreMemory reads every stored item exactly once per
recall, on any LangGraph store (issue: OFFSET pages over PostgresStore's
``ORDER BY updated_at`` overlapped for items of one ``put_many``)."""

from __future__ import annotations

import collections
import datetime
from typing import Any, List, Type

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
U1 = ("memories", "u1")
CORRECTIONS, FACTS, SKILLS = 3_000, 7_000, 500
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 400, 8, ("fact",))]


def counting(cls: Type[Any]) -> Type[Any]:
    """``cls`` (a LangGraph store class) recording every search op and the
    keys each returned: counts, not a mock (the real store answers)."""

    class Counting(cls):  # type: ignore[misc, valid-type]
        def batch(self, ops: Any) -> List[Any]:
            ops = list(ops)
            results = super().batch(ops)
            self.record(ops, results)
            return results

        def record(self, ops: List[Any], results: List[Any]) -> None:
            if not hasattr(self, "keys_read"):
                self.keys_read, self.searches = collections.Counter(), 0
            for op, result in zip(ops, results):
                if type(op).__name__ == "SearchOp":
                    self.searches += 1
                    self.keys_read.update(item.key for item in result)

    Counting.__name__ = "Counting" + cls.__name__
    return Counting


def one_batch() -> List[dict]:
    fixes = [
        {"id": "fix-%05d" % i, "type": "correction", "scope": "always", "content": "correction %d" % i}
        for i in range(CORRECTIONS)
    ]
    facts = [{"id": "fact-%05d" % i, "type": "fact", "content": "fact number %d" % i} for i in range(FACTS)]
    skills = [{"id": "skill-%03d" % i, "type": "skill", "content": "skill %d" % i} for i in range(SKILLS)]
    return fixes + facts + skills


def check_every_item_is_read_exactly_once(store: Any) -> None:
    """Write 10.5k items in one ``put_many``; then one recall reads each once,
    in one round trip of two searches; every correction loads; ``entries()``
    returns all 10k; one irrelevant type in the namespace is read but not kept."""
    memory = BaseStoreMemory(store, U1, token_counter=lambda text: 2)
    memory.put_many(one_batch())
    store.keys_read, store.searches = collections.Counter(), 0
    recall = memory.recall(POOLS, {"message": "fact number 42"})
    assert store.searches == 1  # one exact read of the namespace serves the plan: no pages
    assert len(store.keys_read) == CORRECTIONS + FACTS + SKILLS and set(store.keys_read.values()) == {1}
    assert len(recall.entries) == CORRECTIONS + FACTS  # no pool takes skills: read, not kept
    selection = memory.select_from(recall, POOLS, {"message": "fact number 42"}, now=NOW)
    assert sum(c.always for c in selection.chosen) == CORRECTIONS
    assert len({e["id"] for e in memory.entries()}) == CORRECTIONS + FACTS + SKILLS
