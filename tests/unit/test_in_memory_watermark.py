"""An InMemoryStore's watermark (stores/langgraph/prepared.py): the namespace's
items compared, so it moves with every write to the namespace and with
nothing else."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore

from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores.langgraph.prepared import watermark

U1 = ("memories", "u1")


def test_an_in_memory_stores_watermark_moves_with_each_write_of_its_namespace_and_nothing_else():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1)
    empty = watermark(store, [U1])  # no namespace yet
    assert empty is not None and empty == watermark(store, [U1])
    memory.put({"id": "n1", "type": "note", "content": "deploy on Fridays"})
    first = watermark(store, [U1])
    assert first != empty and first == watermark(store, [U1])
    store.get(U1, "n1")
    store.search(U1)
    assert watermark(store, [U1]) == first  # reads move nothing
    memory.put({"id": "n1", "type": "note", "content": "deploy on Mondays"})  # a rewrite of the same key
    second = watermark(store, [U1])
    assert second != first
    store.put(("memories", "u2"), "x", {"content": "another user's"})
    assert watermark(store, [U1]) == second  # another namespace's write is not ours
    store.delete(U1, "n1")
    assert watermark(store, [U1]) not in (first, second)
