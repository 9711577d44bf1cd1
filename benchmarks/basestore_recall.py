"""Benchmark of BaseStoreMemory's recall over one LangGraph namespace: time
and store searches per recall, by namespace size.

    python benchmarks/basestore_recall.py                 # InMemoryStore, 10k and 100k
    python benchmarks/basestore_recall.py --sizes 10000

Each recall is one exact read per namespace (no OFFSET pages), so searches
per recall stay at 1 and the time grows linearly with the namespace (before:
one search per page of 100 per type, ~107 at 10k, each a namespace scan).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, List

from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory

TYPES = ["episode", "fact", "skill", "note", "task"]
POOLS = [
    Pool("fixes", 0, 0, ("correction",)),
    Pool("content", 400, 6, ("episode", "fact")),
    Pool("skills", 200, 3, ("skill",)),
    Pool("rest", 200, 3, ("note", "task")),
]


class CountingStore(InMemoryStore):
    """The real InMemoryStore, counting the search ops it answers."""

    searches = 0

    def batch(self, ops: Any) -> List[Any]:
        ops = list(ops)
        self.searches += sum(type(op).__name__ == "SearchOp" for op in ops)
        return super().batch(ops)


def measure(size: int, repeats: int) -> None:
    entries = [{"id": "c%d" % i, "type": "correction", "scope": "always", "content": "fix %d" % i} for i in range(20)]
    entries += [{"id": "e%d" % i, "type": TYPES[i % 5], "content": "memory %d about deploys" % i} for i in range(size)]
    store = CountingStore()
    memory = BaseStoreMemory(store, ("memories", "u1"), token_counter=lambda text: max(1, len(text) // 4))
    memory.put_many(entries)
    memory.recall(POOLS, {"message": "deploys"})  # token counts cached, as on every later turn
    times = []
    for _ in range(repeats):
        store.searches = 0
        start = time.perf_counter()
        memory.recall(POOLS, {"message": "deploys"})
        times.append(time.perf_counter() - start)
    print(
        "%8d items: recall median %.3f s, %d search(es) per recall" % (size, statistics.median(times), store.searches)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for size in args.sizes:
        measure(size, args.repeats)


if __name__ == "__main__":
    main()
