"""Ranked type searches over LangGraph's InMemoryStore(index=) from a kept
matrix: the store's own ranking (score, then its order; an item's best
vector; unscored items last), to float rounding, after every kind of write,
with the namespace matched exactly."""

from __future__ import annotations

import asyncio
import math
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore
from pg_embeddings import DIMS, hashed_ngrams

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores.langgraph.memory_store_search import InMemoryStoreSearch, serves_in_memory_store
from poolsplit_adapters.stores.langgraph.ranked_search import RankedSearch

NS, CHILD, OTHER = ("m", "u1"), ("m", "u1", "drafts"), ("m", "u2")
WORDS = ["deploy", "refund", "checkout", "staging", "invoice", "retry"]
TIE = 1e-12


class Hashed(Embeddings):
    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [hashed_ngrams(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return [0.0] * DIMS if text == "zero" else hashed_ngrams(text)


def make_store(fields: Tuple[str, ...] = ("content",)) -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMS, "embed": Hashed(), "fields": list(fields)})


def expected(
    store: InMemoryStore, search: RankedSearch, query: str, limit: Optional[int] = None
) -> List[Tuple[str, Any]]:
    """:func:`expected_with` the tests' hashed n-gram embedding."""
    ranked = expected_with(store, search, query, Hashed())
    return ranked if limit is None else ranked[:limit]


def expected_with(
    store: InMemoryStore, search: RankedSearch, query: str, embeddings: Embeddings
) -> List[Tuple[str, Any]]:
    """The store's documented ranking, in plain Python: the namespace's
    items the filter admits, each vector's cosine, sorted by score (stable:
    the store's order), an item's first (best) row, then items without
    vectors; (key, score) pairs."""
    q = embeddings.embed_query(query)
    qn = math.sqrt(sum(a * a for a in q))
    rows, loose = [], []
    for key, item in store._data.get(search.namespace, {}).items():
        kind = item.value.get("type")
        if search.untyped and kind is not None or search.type is not None and kind != search.type:
            continue
        vectors = list((store._vectors.get(search.namespace) or {}).get(key, {}).values())
        if not vectors:
            loose.append(key)
        for v in vectors:
            vn = math.sqrt(sum(a * a for a in v))
            rows.append((sum(a * b for a, b in zip(v, q)) / (vn * qn) if vn else 0.0, key))
    rows.sort(key=lambda r: r[0], reverse=True)
    seen: Dict[str, float] = {}
    for score, key in rows:
        seen.setdefault(key, score)
    return list(seen.items()) + [(k, None) for k in loose]


def assert_same_ranking(got: List[Any], store: InMemoryStore, search: RankedSearch, query: str) -> None:
    """``got`` is the expected ranking to float rounding: the same scores;
    the same items, in the same order, except among scores within
    :data:`TIE` of each other (which only float rounding orders), where the
    items are the same set (the last group: drawn from the tied ones)."""
    everything = expected(store, search, query)
    want = everything[: search.limit]
    assert len(got) == len(want)
    for item, (_key, score) in zip(got, want):
        assert item.namespace == search.namespace
        assert (item.score is None) == (score is None)
        if score is not None:
            assert abs(item.score - score) <= TIE
    start = 0
    while start < len(want):
        end = start + 1
        while end < len(want) and _tied(want[end][1], want[start][1]):
            end += 1
        mine = {i.key for i in got[start:end]}
        if end < len(want):
            assert mine == {k for k, _ in want[start:end]}
        else:  # the limit may cut a tie: any of the tied items
            assert mine <= {k for k, s in everything if _tied(s, want[start][1])}
        start = end


def _tied(a: Any, b: Any) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= TIE)


def searches(limit: int) -> List[RankedSearch]:
    return [
        RankedSearch(NS, limit, type="note"),
        RankedSearch(NS, limit, type="fact"),
        RankedSearch(NS, limit, untyped=True),
        RankedSearch(NS, limit),
        RankedSearch(NS, limit, type="absent"),
    ]


# -- one write: ("put", ns, key, type, words, title, index) or ("delete", ns, key) --------------
writes = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from([NS, NS, NS, CHILD, OTHER]),
        st.sampled_from(["k%d" % i for i in range(12)]),
        st.sampled_from(["note", "fact", None, "missing", 3]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        st.booleans(),
        st.sampled_from([None, None, None, False]),
    ),
    st.tuples(st.just("delete"), st.sampled_from([NS, CHILD]), st.sampled_from(["k%d" % i for i in range(12)])),
)


def apply(store: InMemoryStore, write: Tuple[Any, ...]) -> None:
    if write[0] == "delete":
        store.delete(write[1], write[2])
        return
    _, ns, key, kind, words, titled, index = write
    value: Dict[str, Any] = {"content": " ".join(words)}
    if titled:
        value["title"] = "about %s" % words[0]  # a second field, never the same text as the content
    if kind != "missing":
        value["type"] = kind
    store.put(ns, key, value, index=index)


#: Rounds of writes (a search after each round), a query, a limit.
histories = st.lists(st.lists(writes, max_size=10), min_size=1, max_size=5)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(rounds=histories, query=queries, limit=st.integers(1, 8), titled=st.booleans())
def test_the_kept_matrix_ranks_as_the_store_after_every_write(rounds, query, limit, titled):
    store = make_store(("content", "title") if titled else ("content",))
    search = InMemoryStoreSearch(store)
    for writes_now in rounds:
        for write in writes_now:
            apply(store, write)
        plan = searches(limit)
        got = search.run(plan, query)
        assert search.last_paths == ["matrix"] * len(plan)
        for one, found in zip(plan, got):
            assert_same_ranking(found, store, one, query)
            # And the store's own search, its children left out, to its float rounding.
            where = {"type": None} if one.untyped else ({"type": one.type} if one.type else None)
            own = [i for i in store.search(NS, filter=where, query=query, limit=10**6) if tuple(i.namespace) == NS]
            assert [i.key for i in found] == [i.key for i in own][: len(found)] or _same_to_rounding(found, own)


def _same_to_rounding(found: List[Any], own: List[Any]) -> bool:
    return all(_tied(a.score, b.score) for a, b in zip(found, own))


def test_ties_follow_the_stores_order_rewrites_keep_their_place_and_a_deleted_key_put_again_goes_last():
    store = make_store()
    for key in ("a", "b", "c"):
        store.put(NS, key, {"content": "deploy refund", "type": "note"})
    search = InMemoryStoreSearch(store)
    one = [RankedSearch(NS, 3, type="note")]
    assert [i.key for i in search.run(one, "deploy")[0]] == ["a", "b", "c"]
    store.put(NS, "a", {"content": "deploy refund", "type": "note", "v": 2})  # in place
    assert [i.key for i in search.run(one, "deploy")[0]] == ["a", "b", "c"]
    store.delete(NS, "a")
    store.put(NS, "a", {"content": "deploy refund", "type": "note"})  # last in the store's order now
    assert [i.key for i in search.run(one, "deploy")[0]] == ["b", "c", "a"]
    assert [i.key for i in store.search(NS, filter={"type": "note"}, query="deploy", limit=3)] == ["b", "c", "a"]


def test_an_items_best_field_ranks_it_and_items_without_vectors_come_last():
    store = make_store(("content", "title"))
    store.put(NS, "far", {"content": "invoice retry", "title": "about staging", "type": "note"})
    store.put(NS, "near", {"content": "staging checkout", "title": "about invoice", "type": "note"})
    store.put(NS, "bare", {"content": "deploy", "type": "note"}, index=False)
    got = InMemoryStoreSearch(store).run([RankedSearch(NS, 5, type="note")], "deploy staging checkout")[0]
    assert [i.key for i in got] == ["near", "far", "bare"]
    assert got[2].score is None
    best = max(
        hashed_ngrams(t) and sum(a * b for a, b in zip(hashed_ngrams(t), hashed_ngrams("deploy staging checkout")))
        for t in ("invoice retry", "about staging")
    )
    assert math.isclose(got[1].score, best, abs_tol=1e-9)


def test_a_child_namespace_never_takes_the_limit():
    store = make_store()
    for i in range(5):
        store.put(CHILD, "draft-%d" % i, {"content": "deploy refund checkout", "type": "note"})
    store.put(NS, "mine", {"content": "invoice", "type": "note"})
    own = store.search(NS, filter={"type": "note"}, query="deploy refund checkout", limit=5)
    assert "mine" not in [i.key for i in own]  # the premise: the store's prefix search fills the limit with children
    got = InMemoryStoreSearch(store).run([RankedSearch(NS, 5, type="note")], "deploy refund checkout")[0]
    assert [i.key for i in got] == ["mine"]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the store's own 0/0
def test_a_zero_query_is_the_stores_own_search():
    store = make_store()
    store.put(NS, "a", {"content": "deploy", "type": "note"})
    search = InMemoryStoreSearch(store)
    search.run([RankedSearch(NS, 5, type="note")], "zero")
    assert search.last_paths == ["store"]


def test_the_async_run_is_the_sync_run():
    store = make_store()
    for i, word in enumerate(WORDS):
        store.put(NS, "n%d" % i, {"content": word + " deploy", "type": "note" if i % 2 else None})
    search = InMemoryStoreSearch(store)
    plan = searches(4)
    want = [[(i.key, i.score) for i in found] for found in search.run(plan, "deploy refund")]
    got = asyncio.run(search.arun(plan, "deploy refund"))
    assert [[(i.key, i.score) for i in found] for found in got] == want


def test_the_middleware_memory_serves_its_ranked_searches_from_the_matrix():
    store = make_store()
    assert serves_in_memory_store(store) and not serves_in_memory_store(InMemoryStore())
    store.put(NS, "fix", {"content": "Quote amounts in cents.", "type": "correction", "scope": "always"})
    for i in range(30):
        store.put(NS, "n%02d" % i, {"content": "%s %s" % (WORDS[i % 6], WORDS[(i * 5) % 6]), "type": "note"})
        store.put(NS, "f%02d" % i, {"content": "%s fact %d" % (WORDS[(i * 7) % 6], i), "type": "fact"})
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 10_000, 50, ("note", "fact"))]
    memory = BaseStoreMemory(store, NS, fetch_k=6)
    recall = memory.recall(pools, {"message": "deploy refund"})
    assert memory._ranked_search is not None and set(memory._ranked_search.last_paths) == {"matrix"}
    plain = BaseStoreMemory(store, NS, fetch_k=6)
    plain._ranked_search = None  # the store's own search (no child namespace here: the same answer)
    want = plain.recall(pools, {"message": "deploy refund"})
    assert sorted(e["id"] for e in recall.entries) == sorted(e["id"] for e in want.entries)
    assert recall.scores.keys() == want.scores.keys()
    assert all(abs(recall.scores[k] - want.scores[k]) <= TIE for k in want.scores)


def test_every_memory_over_a_store_shares_one_search_and_its_kept_namespaces_are_bounded(monkeypatch):
    store = make_store()
    for n, ns in enumerate([("m", "a"), ("m", "b"), ("m", "c")]):
        store.put(ns, "k", {"content": WORDS[n], "type": "note"})
    one, two = (
        BaseStoreMemory(store, ("m", "a"), fetch_k=3),
        BaseStoreMemory(store, [("m", "b"), ("m", "a")], fetch_k=3),
    )
    assert one._ranked_search is two._ranked_search  # one matrix per namespace, whoever reads it
    search = one._ranked_search
    assert isinstance(search, InMemoryStoreSearch)
    monkeypatch.setattr(InMemoryStoreSearch, "MOST_NAMESPACES", 2)
    for ns in [("m", "a"), ("m", "b"), ("m", "c"), ("m", "a")]:
        [found] = search.run([RankedSearch(ns, 3, type="note")], "deploy")
        assert [i.key for i in found] == ["k"] and found[0].namespace == ns
    assert list(search._kept) == [("m", "c"), ("m", "a")]  # the least recently searched dropped


def test_an_update_that_fails_halfway_is_forgotten_and_read_again():
    store = make_store()
    for key in ("a", "b", "c"):
        store.put(NS, key, {"content": "deploy " + key, "type": "note"})
    search = InMemoryStoreSearch(store)
    plan = [RankedSearch(NS, 5, type="note")]
    search.run(plan, "deploy")
    store.put(NS, "a", {"content": "deploy a again", "type": "note"})
    store.put(NS, "c", {"content": "deploy c again", "type": "note"})
    calls = [0]
    own = InMemoryStoreSearch._type_code

    def failing(self: InMemoryStoreSearch, value: Any) -> int:
        calls[0] += 1
        if calls[0] == 2:  # the second rewritten item: the first is read already
            raise RuntimeError("interrupted")
        return own(self, value)

    with (
        mock.patch.object(InMemoryStoreSearch, "_type_code", failing),
        pytest.raises(RuntimeError, match="interrupted"),
    ):
        search.run(plan, "deploy")
    assert sorted(i.key for i in search.run(plan, "deploy")[0]) == ["a", "b", "c"]
    assert_same_ranking(search.run(plan, "deploy")[0], store, plan[0], "deploy")


class Ragged(Embeddings):
    """Vectors whose length follows the text: no matrix holds them."""

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [[1.0] * (2 + len(t) % 3) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return [1.0] * 2


def test_vectors_of_differing_lengths_are_left_to_the_stores_own_search():
    store = InMemoryStore(index={"dims": 2, "embed": Ragged(), "fields": ["content"]})
    store.put(NS, "two", {"content": "ab", "type": "note"})
    store.put(NS, "three", {"content": "abc", "type": "note"})
    search = InMemoryStoreSearch(store)
    with pytest.raises(ValueError, match="inhomogeneous"):  # the store's own search, and its own error
        search.run([RankedSearch(NS, 5, type="note")], "q")
    with pytest.raises(ValueError, match="inhomogeneous"):
        store.search(NS, query="q", filter={"type": "note"})
    assert NS not in search._kept


def test_an_id_two_namespaces_of_a_chain_hold_keeps_each_entrys_own_store_score():
    """Scores keyed by id alone gave the shared namespace's exact match the
    user's own far entry's score, and the selection passed it over."""
    store = make_store()
    own, shared = ("memories", "u1"), ("memories", "shared")
    query = "deploy the checkout service"
    store.put(own, "n", {"content": "quarterly tax ledger archive", "type": "note"})
    store.put(shared, "n", {"content": query, "type": "note"})
    store.put(own, "m", {"content": "the checkout", "type": "note"})
    memory = BaseStoreMemory(store, [own, shared], fetch_k=5)
    recall = memory.recall([Pool("notes", 10_000, 1, ("note",))], {"message": query})
    assert recall.scores[("memories.shared", "n")] > 0.99
    assert recall.scores[("memories.u1", "n")] < 0.1 and "n" not in recall.scores and "m" in recall.scores
    chosen = memory.select([Pool("notes", 10_000, 1, ("note",))], {"message": query}).chosen
    assert [(c.entry["namespace"], c.entry["id"]) for c in chosen] == [("memories.shared", "n")]


class SmallInts(Embeddings):
    """Vectors of small integers (one count per word of a six-word
    vocabulary): every dot product and norm is exact in float64, so equal
    scores are exactly equal and the store's order alone breaks the tie."""

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        words = text.split()
        return [float(words.count(w)) for w in WORDS] + [1.0]


@settings(max_examples=60, deadline=None)
@given(rounds=histories, query=queries, limit=st.integers(1, 8), titled=st.booleans())
def test_with_exact_scores_the_order_is_the_stores_exactly(rounds, query, limit, titled):
    store = InMemoryStore(
        index={"dims": len(WORDS) + 1, "embed": SmallInts(), "fields": ["content", "title"] if titled else ["content"]}
    )
    search = InMemoryStoreSearch(store)
    for writes_now in rounds:
        for write in writes_now:
            apply(store, write)
        plan = searches(limit)
        for one, found in zip(plan, search.run(plan, query)):
            # The plain-Python ranking computes the same exact values: ties and all, the same order.
            assert [(i.key, None if i.score is None else round(i.score, 12)) for i in found] == [
                (k, None if s is None else round(s, 12)) for k, s in expected_with(store, one, query, SmallInts())
            ][: one.limit]
