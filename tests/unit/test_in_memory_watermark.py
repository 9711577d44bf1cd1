"""The O(1) change mark of a dict (langchain/dict_version.py) that an
InMemoryStore's watermark reads, and the watermark itself."""

from __future__ import annotations

import sys

import pytest
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.langchain.dict_version import dict_version
from poolsplit_adapters.langchain.prepared import watermark

KEPT = sys.implementation.name == "cpython" and (3, 9) <= sys.version_info[:2] <= (3, 13) and sys.maxsize > 2**32
U1 = ("memories", "u1")


@pytest.mark.skipif(not KEPT, reason="the interpreter keeps no dict version: the items are compared instead")
def test_every_kind_of_change_moves_the_version_and_a_read_does_not():
    d = {"a": object()}
    seen = [dict_version(d)]
    d["b"] = object()  # added
    seen.append(dict_version(d))
    d["a"] = object()  # replaced in place: the same key, the same place
    seen.append(dict_version(d))
    _ = d["a"], list(d.items()), len(d)
    assert dict_version(d) == seen[-1]
    d["a"] = d["a"]  # the same object again: nothing changed
    assert dict_version(d) == seen[-1]
    del d["b"]  # removed
    seen.append(dict_version(d))
    d.clear()
    seen.append(dict_version(d))
    assert None not in seen and len(set(seen)) == len(seen)
    assert dict_version({}) not in seen  # a new dict never carries another's value


def test_only_a_plain_dict_has_one():
    class Sub(dict):  # type: ignore[type-arg]
        pass

    assert dict_version(Sub()) is None


@pytest.mark.skipif(not KEPT, reason="the interpreter keeps no dict version: the items are compared instead")
def test_an_in_memory_stores_watermark_is_its_namespaces_versions_and_moves_with_each_write():
    store = InMemoryStore()
    memory = BaseStoreMemory(store, U1)
    assert watermark(store, [U1]) == ("versions", (None,))  # no namespace yet
    memory.put({"id": "n1", "type": "note", "content": "deploy on Fridays"})
    first = watermark(store, [U1])
    assert first[0] == "versions" and first == watermark(store, [U1])
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
