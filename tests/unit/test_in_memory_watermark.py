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


def test_a_rewrite_among_many_items_is_read_alone_and_the_index_follows_it():
    # One rewritten item of a namespace (a turn closing or re-seeing a stored
    # entry) used to send every item through the per-item comparison; the
    # delta is that item alone, and the kept index holds its new text.
    from poolsplit_adapters import Pool
    from poolsplit_adapters.defaults import default_adapter_scorer
    from poolsplit_adapters.stores.langgraph.prepared import PreparedRecall, _in_memory, _in_memory_items

    store = InMemoryStore()
    ns = ("memories", "u1")
    for i in range(50):
        store.put(ns, "n%02d" % i, {"content": "note %d about the deploy" % i, "type": "note"})
        store.put(ns, "s%02d" % i, {"content": "skill %d" % i, "type": "skill"})  # no pool's type: not a candidate
    memory = BaseStoreMemory(store, ns)
    pools = [Pool("notes", 10_000, 100, ("note",))]
    prepared = PreparedRecall(memory, pools, default_adapter_scorer())
    prepared.refresh()
    store.put(ns, "n07", {"content": "note 7 moved to the refund queue", "type": "note"})
    items = _in_memory_items(_in_memory(store), memory.chain)
    changed, gone = prepared._in_memory_delta(items)
    assert [(link, key) for link, key, _, _ in changed] == [(0, "n07")] and gone == set()
    prepared.refresh()
    contents = {e["id"]: e["content"] for e in prepared.entries()}
    assert contents["n07"] == "note 7 moved to the refund queue" and len(contents) == 50


def test_the_kept_order_loses_exactly_the_leaving_keys_whatever_they_are():
    # The kept index's order drops the entries a turn rewrites or deletes by
    # bisection (prepared._without), not by a pass over the namespace: the
    # result is the pass's, for any sorted order and any subset leaving.
    from hypothesis import given
    from hypothesis import strategies as st

    from poolsplit_adapters.stores.langgraph.prepared import _without

    @given(st.lists(st.integers(0, 50), unique=True), st.data())
    def check(values: list, data: st.DataObject) -> None:
        order = [(v % 3, "k%02d" % v) for v in sorted(values, key=lambda v: (v % 3, v))]
        out = set(data.draw(st.lists(st.sampled_from(order), unique=True))) if order else set()
        before = list(order)
        kept = _without(order, out, lambda key: (key[0], int(key[1][1:])))
        assert kept == [k for k in before if k not in out]
        assert order == before  # the kept order itself is not edited

    check()


def test_a_leaving_key_out_of_place_falls_back_to_the_pass():
    from poolsplit_adapters.stores.langgraph.prepared import _without

    order = [(0, "a"), (0, "c"), (0, "b")]  # not sorted by its key: bisection cannot find "b"
    assert _without(order, {(0, "b")}, lambda key: key) == [(0, "a"), (0, "c")]
    assert _without(order, set(), lambda key: key) is order
